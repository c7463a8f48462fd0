"""The cloudflare target's resource types (pulumi-cloudflare v6), each stated once.

The catalog, the policy handlers, the stack checks and the egress reader match rendered
resources through ``TypeToken.matches`` (pulumi-cloudflare tokens carry no API version, so a
match is the exact token).
"""

from __future__ import annotations

from sandboxkit.type_tokens import TypeToken

# The Worker script: its bindings carry EGRESS_POLICY, limits and keys (egress_reader.py reads it).
WORKERS_SCRIPT = TypeToken("cloudflare:index/workersScript:WorkersScript")
WORKERS_SUBDOMAIN = TypeToken("cloudflare:index/workersScriptSubdomain:WorkersScriptSubdomain")
PROVIDER = TypeToken("pulumi:providers:cloudflare")
