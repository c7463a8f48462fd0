"""Resource types of the ``cloudflare`` target: terraform-provider-cloudflare v5 (plugin framework:
nested attributes are objects and lists of objects, not blocks).

See ``sandboxkit.catalog``: mock outputs for the offline render and checkov export types.
"""

from __future__ import annotations

from sandboxkit.catalog import TF_CLOUDFLARE, ResourceKind, TerraformType

# The Worker script: its bindings carry EGRESS_POLICY, limits and keys (egress_reader.py reads it).
WORKERS_SCRIPT = "cloudflare:index/workersScript:WorkersScript"

KINDS: tuple[ResourceKind, ...] = (
    ResourceKind(
        WORKERS_SCRIPT,
        export=TerraformType(
            "cloudflare_workers_script",
            TF_CLOUDFLARE,
            objects=frozenset({"observability", "observability.logs", "migrations", "bindings"}),
        ),
    ),
    ResourceKind(
        "cloudflare:index/workersScriptSubdomain:WorkersScriptSubdomain",
        export=TerraformType("cloudflare_workers_script_subdomain", TF_CLOUDFLARE),
        settings={"CKV_SBX_23": "workersDev"},
    ),
    ResourceKind(
        "pulumi:providers:cloudflare",
        not_exported=(
            "provider configuration (API token), not a Cloudflare resource; checkov's "
            "resource checks do not read it"
        ),
    ),
)
