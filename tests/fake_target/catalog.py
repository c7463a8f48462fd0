"""Resource types of the ``flyio`` fake target."""

from __future__ import annotations

from typing import Any

from pulumi.runtime import MockResourceArgs

from fake_target.type_tokens import MACHINE
from sandboxkit.catalog import ResourceKind, mock_hash


def _machine(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    return {"machineId": mock_hash(resource_id)}


KINDS = (
    ResourceKind(
        MACHINE.token,
        not_exported="checkov has no framework that reads Fly.io machines",
        mock_outputs=_machine,
    ),
)
