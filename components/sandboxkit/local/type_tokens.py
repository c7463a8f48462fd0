"""The local target's resource types, each stated once.

The catalog, the policy handlers and the egress reader match rendered resources through
``TypeToken.matches``.
"""

from __future__ import annotations

from sandboxkit.type_tokens import TypeToken

# The egress gateway's policy (the kit's dynamic resource sandboxkit.local.component's
# EgressGatewayPolicy): local/egress_reader.py reads it.
EGRESS_GATEWAY_POLICY = TypeToken("pulumi-python:dynamic/local:EgressGatewayPolicy")
