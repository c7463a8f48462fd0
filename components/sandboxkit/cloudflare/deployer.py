"""What the Cloudflare API token of the deployer needs: per resource type, the API token
permission groups (Cloudflare's "API token permissions" and "API token templates":
``Workers Scripts Write`` uploads, configures and deletes scripts and their workers.dev
subdomain), and those of the wrangler step the stack's container application needs
(``wrangler deploy`` and ``wrangler containers push``: ``Containers Write``, wrangler's own
``containers:write`` scope). Every group is account-scoped: the token's resources are the one
account ``accountId`` names.
"""

from __future__ import annotations

from collections.abc import Sequence

from sandboxkit.cloudflare.type_tokens import WORKERS_SCRIPT, WORKERS_SUBDOMAIN
from sandboxkit.deployer import DeployerPolicy, granted, union
from sandboxkit.effective_egress import ResourceView
from sandboxkit.type_tokens import TypeToken

SCRIPTS_WRITE = "Workers Scripts Write"
CONTAINERS_WRITE = "Containers Write"

GRANTS: dict[TypeToken, tuple[str, ...]] = {
    WORKERS_SCRIPT: (SCRIPTS_WRITE,),
    WORKERS_SUBDOMAIN: (SCRIPTS_WRITE,),
}

# The container application and its image are wrangler's (``sandboxkit external-config``):
# pushing the image and deploying the application.
WRANGLER_GROUPS = (CONTAINERS_WRITE, SCRIPTS_WRITE)


def cloudflare_policy(
    target: str, account_id: str, resources: Sequence[ResourceView]
) -> DeployerPolicy:
    """An API token policy (the shape of Cloudflare's ``POST /user/tokens`` ``policies``, with
    permission groups by name) for ``resources`` and the wrangler step.

    Raises:
        MissingGrantError: for a resource type ``GRANTS`` lacks.
    """
    found = granted(target, GRANTS, resources)
    groups = union([*found.values(), WRANGLER_GROUPS])
    document = {
        "policies": [
            {
                "effect": "allow",
                "resources": {f"com.cloudflare.api.account.{account_id}": "*"},
                "permission_groups": [{"name": name} for name in groups],
            }
        ]
    }
    return DeployerPolicy(
        target,
        document,
        "create an account API token with these permission groups on account "
        f"{account_id} (dashboard: My Profile > API Tokens > Create Custom Token), then "
        "`pulumi config set --secret cloudflare:apiToken TOKEN` for Pulumi and "
        "CLOUDFLARE_API_TOKEN=TOKEN for wrangler",
    )
