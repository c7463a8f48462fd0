"""What the Cloudflare API token of the deployer needs: per resource type, the API token
permission groups (Cloudflare's "API token permissions" and "API token templates":
``Workers Scripts Write`` uploads, configures and deletes scripts, their workers.dev subdomain
and custom domains, the API's "Attach Domain" accepted permission), ``Containers Write`` for the
container application ``wrangler deploy`` creates and the image ``wrangler containers push``
uploads (wrangler's own ``containers:write`` scope), both on the one account ``accountId``
names. A script with zone routes adds, on the account's zones, ``Workers Routes Write`` (the
"Edit Cloudflare Workers" template's zone group: wrangler's ``PUT .../workers/scripts/{name}/
routes``) and ``Zone Read`` (wrangler finds a route's zone by ``GET /zones?name=``).
``pulumi refresh`` reads the same objects back (``live_script``): each Write group also grants
its reads. The workers.dev switch is the script's (wrangler's ``POST .../subdomain``, Workers
Scripts Write); ``WORKERS_SUBDOMAIN`` is granted for a program that sets it with
pulumi-cloudflare instead.
"""

from __future__ import annotations

from collections.abc import Sequence

from sandboxkit.cloudflare.type_tokens import WORKERS_SCRIPT, WORKERS_SUBDOMAIN, WRANGLER_SCRIPT
from sandboxkit.deployer import DeployerPolicy, granted, union
from sandboxkit.effective_egress import ResourceView
from sandboxkit.type_tokens import TypeToken

SCRIPTS_WRITE = "Workers Scripts Write"
CONTAINERS_WRITE = "Containers Write"
ROUTE_GROUPS = ("Workers Routes Write", "Zone Read")

GRANTS: dict[TypeToken, tuple[str, ...]] = {
    # wrangler deploy uploads the script and creates or modifies its container application.
    WRANGLER_SCRIPT: (CONTAINERS_WRITE, SCRIPTS_WRITE),
    WORKERS_SCRIPT: (SCRIPTS_WRITE,),
    WORKERS_SUBDOMAIN: (SCRIPTS_WRITE,),
}

# Pushing the image to Cloudflare's registry before the first deploy (`wrangler containers
# push`) and reading it back.
WRANGLER_GROUPS = (CONTAINERS_WRITE,)


def _has_zone_routes(view: ResourceView) -> bool:
    routes = view.props.get("routes") if WRANGLER_SCRIPT.matches(view.type) else None
    return isinstance(routes, list) and any(
        isinstance(r, dict) and not r.get("customDomain") for r in routes
    )


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
    account = f"com.cloudflare.api.account.{account_id}"
    policies = [
        {
            "effect": "allow",
            "resources": {account: "*"},
            "permission_groups": [{"name": name} for name in groups],
        }
    ]
    if any(_has_zone_routes(view) for view in resources):
        policies.append(
            {
                "effect": "allow",
                # Every zone of the account: a route names its zone by name, not id.
                "resources": {account: {"com.cloudflare.api.account.zone.*": "*"}},
                "permission_groups": [{"name": name} for name in ROUTE_GROUPS],
            }
        )
    document = {"policies": policies}
    return DeployerPolicy(
        target,
        document,
        "create an account API token with these permission groups on account "
        f"{account_id} (dashboard: My Profile > API Tokens > Create Custom Token), then "
        "`pulumi config set --secret cloudflare:apiToken TOKEN` (pulumi up hands the same "
        "secret to wrangler in its environment), or export CLOUDFLARE_API_TOKEN=TOKEN where "
        "pulumi up and wrangler containers push run",
    )
