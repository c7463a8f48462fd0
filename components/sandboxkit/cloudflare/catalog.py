"""Resource types of the ``cloudflare`` target: terraform-provider-cloudflare v5 (plugin framework:
nested attributes are objects and lists of objects, not blocks).

See ``sandboxkit.catalog``: mock outputs for the offline render and checkov export types.
"""

from __future__ import annotations

from sandboxkit.catalog import TF_CLOUDFLARE, ResourceKind, TerraformType
from sandboxkit.cloudflare.type_tokens import (
    PROVIDER,
    WORKERS_SCRIPT,
    WORKERS_SUBDOMAIN,
    WRANGLER_SCRIPT,
)

KINDS: tuple[ResourceKind, ...] = (
    ResourceKind(
        WORKERS_SCRIPT.token,
        export=TerraformType(
            "cloudflare_workers_script",
            TF_CLOUDFLARE,
            objects=frozenset({"observability", "observability.logs", "migrations", "bindings"}),
        ),
    ),
    ResourceKind(
        WRANGLER_SCRIPT.token,
        # The script wrangler uploads, exported as the Workers script it is: its bindings and
        # observability have terraform-provider-cloudflare's shape, so checkov's Workers checks
        # (CKV_SBX_22) read it; the container, routes and migration ledger ride along as data,
        # and CKV_SBX_23 reads the workers.dev and preview URL switches wrangler writes.
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
        settings={"CKV_SBX_23": "workersDev"},
    ),
    ResourceKind(
        WORKERS_SUBDOMAIN.token,
        export=TerraformType("cloudflare_workers_script_subdomain", TF_CLOUDFLARE),
        settings={"CKV_SBX_23": "workersDev"},
    ),
    ResourceKind(
        PROVIDER.token,
        not_exported=(
            "provider configuration (API token), not a Cloudflare resource; checkov's "
            "resource checks do not read it"
        ),
    ),
)
