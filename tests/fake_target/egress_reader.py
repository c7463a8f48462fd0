"""The ``flyio`` fake target's egress reader: a Fly machine has no egress filter."""

from __future__ import annotations

from collections.abc import Sequence

from fake_target.type_tokens import MACHINE
from sandboxkit.effective_egress import EffectiveEgress, Grant, ResourceView
from sandboxkit.type_tokens import of_type

FLY_DOC = "fly.io/docs/machines: machines reach the internet; Fly has no egress filter"


def read_egress(resources: Sequence[ResourceView]) -> EffectiveEgress:
    """Every address, every port, every name, for each machine."""
    machines = of_type(resources, MACHINE)
    connect = tuple(
        Grant(block, "exact", "any", "address", "platform-doc", FLY_DOC, m.name)
        for m in machines
        for block in ("0.0.0.0/0", "::/0")
    )
    resolve = tuple(
        Grant("*", "any", "any", "query-name", "platform-doc", FLY_DOC, m.name) for m in machines
    )
    return EffectiveEgress("flyio", connect, resolve)
