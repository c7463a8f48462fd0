"""Resource types of the ``cloudflare`` target: terraform-provider-cloudflare v5 (plugin framework:
nested attributes are objects and lists of objects, not blocks).

See ``sandboxkit.catalog``: mock outputs for the offline render and checkov export types.
"""

from __future__ import annotations

from sandboxkit.catalog import TF_CLOUDFLARE, ResourceKind, TerraformType
from sandboxkit.cloudflare.wrangler_script import RESOURCE_TYPE as WRANGLER_SCRIPT

# A Worker script: its bindings carry EGRESS_POLICY, limits and keys (egress_reader.py reads it).
# The kit's is the WranglerScript (wrangler uploads it); a stack may hold pulumi-cloudflare's
# WorkersScript instead, in the same shape, and the reader and the pack judge both.
WORKERS_SCRIPT = "cloudflare:index/workersScript:WorkersScript"
WORKER_SCRIPTS = (WRANGLER_SCRIPT, WORKERS_SCRIPT)

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
        WRANGLER_SCRIPT,
        # The script wrangler uploads, exported as the Workers script it is: its bindings and
        # observability have terraform-provider-cloudflare's shape, so checkov's Workers checks
        # (CKV_SBX_22) read it; the container, routes and migration ledger ride along as data.
        export=TerraformType(
            "cloudflare_workers_script",
            TF_CLOUDFLARE,
            objects=frozenset(
                {
                    "observability",
                    "observability.logs",
                    "bindings",
                    "migrations",
                    "containers",
                    "routes",
                }
            ),
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
