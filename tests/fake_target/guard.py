"""The ``flyio`` fake target's sandbox-guard checks: one resource handler, one stack handler."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from fake_target.type_tokens import MACHINE
from sandboxkit.guard import CheckContext, Handler, StackHandler, StackResource, dig, of_kind
from sandboxkit.guard_checks import size_problems
from sandboxkit.policy_rules import EGRESS_ATTACHED, SIZE_LIMITS


def _guest_size(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    guest = dig(props, "config.guest", {}) or {}
    memory = guest.get("memoryMb")
    memory_mib = f"{memory}Mi" if memory is not None else None
    yield from size_problems("Fly machine", ctx.name, guest.get("cpus"), memory_mib, ctx)


def _machines_without_egress_control(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    for machine in of_kind(resources, MACHINE):
        yield (
            f"Fly machine {machine.name} has no egress control (Fly Machines have no egress "
            "filter); run sandboxes that need egress rules on a target that filters egress.",
            machine.urn,
        )


HANDLERS = (
    Handler(SIZE_LIMITS, (MACHINE,), _guest_size, "Fly machines: guest CPUs and memory"),
    StackHandler(
        EGRESS_ATTACHED,
        _machines_without_egress_control,
        "each Fly machine: refused, Fly Machines have no egress filter",
    ),
)
