"""Resource types of the ``local`` target (see ``sandboxkit.catalog``)."""

from __future__ import annotations

from sandboxkit.catalog import ResourceKind

# The egress gateway's policy: local/egress_reader.py reads it.
EGRESS_GATEWAY_POLICY = "pulumi-python:dynamic/local:EgressGatewayPolicy"

KINDS: tuple[ResourceKind, ...] = (
    ResourceKind(
        EGRESS_GATEWAY_POLICY,
        not_exported=(
            "a file on the host the kit's egress gateway enforces, no cloud resource: checkov "
            "has no framework for it; judged by the CrossGuard pack (SBX-NET-008 through "
            "local/egress_reader.py)"
        ),
    ),
)
