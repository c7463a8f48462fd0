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
# The kit's Worker script, uploaded by wrangler: pulumi-python names a dynamic resource's type
# after its module and class (sandboxkit.cloudflare.wrangler_script.WranglerScript). It has the
# WorkersScript's shape, so every check and the reader judge both.
WRANGLER_SCRIPT = TypeToken("pulumi-python:dynamic/cloudflare:WranglerScript")
WORKER_SCRIPTS = (WRANGLER_SCRIPT, WORKERS_SCRIPT)
