"""Resource types of the ``local`` target (see ``sandboxkit.catalog``)."""

from __future__ import annotations

from sandboxkit.catalog import ResourceKind
from sandboxkit.local.type_tokens import EGRESS_GATEWAY_POLICY

KINDS: tuple[ResourceKind, ...] = (
    ResourceKind(
        EGRESS_GATEWAY_POLICY.token,
        not_exported=(
            "a file on the host the kit's egress gateway enforces, no cloud resource: checkov "
            "has no framework for it; judged by the CrossGuard pack (SBX-NET-008 through "
            "local/egress_reader.py)"
        ),
    ),
)
