"""A deployed Worker script read back through the Cloudflare API, for ``pulumi refresh``.

``WranglerScriptProvider.read`` compares the live script with the last deployed inputs through
the endpoints wrangler itself calls (API v4, ``https://api.cloudflare.com/client/v4``, or
``CLOUDFLARE_API_BASE_URL`` as for wrangler):

- ``GET /accounts/{account}/workers/services/{script}``: the script exists (404, codes 10090 or
  10007, when it does not) and its ``default_environment.script.migration_tag``, the tag
  ``wrangler deploy`` reads before it uploads the migrations after it;
- ``GET /accounts/{account}/workers/scripts/{script}/settings``: the bindings, among them the
  Durable Object namespace (``namespace_id``) of the ``SANDBOX`` binding
  (developers.cloudflare.com/api/resources/workers/subresources/scripts/subresources/
  script_and_version_settings/methods/get/);
- ``GET /accounts/{account}/containers/applications``: the container applications; one is the
  script's when its ``durable_objects.namespace_id`` is that namespace
  (developers.cloudflare.com/containers/platform-details/ and wrangler's own containers list);
- ``GET /accounts/{account}/workers/scripts/{script}/subdomain``: ``enabled`` (workers.dev) and
  ``previews_enabled`` (.../scripts/subresources/subdomain/methods/get/);
- ``GET /accounts/{account}/workers/domains?service={script}``: the custom domains
  (.../workers/subresources/domains/methods/list/);
- ``GET /zones?name={zone}`` and ``GET /zones/{zone_id}/workers/routes``: the routes of each zone
  the deployed routes name (.../api/resources/zones/methods/list/,
  .../workers/subresources/routes/methods/list/). A route added out of band in another zone is
  not seen: the token may read only the zones it names.

The token is the one wrangler gets (the ``apiToken`` input, else ``CLOUDFLARE_API_TOKEN``), sent
as a bearer header only: never in a URL, an argument or an error.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from sandboxkit.boundary import DURABLE_OBJECT_BINDING
from sandboxkit.cloudflare.deployer import CONTAINERS_WRITE, ROUTE_GROUPS, SCRIPTS_WRITE

API_BASE_URL = "https://api.cloudflare.com/client/v4"
# One API answer: seconds to connect and to read.
READ_TIMEOUT_SECONDS = 30.0
# The Cloudflare API's answers for a script that does not exist (wrangler's
# suppressNotFoundError: workers.api.error.script_not_found and service_not_found).
NOT_FOUND_CODES = (10007, 10090)
_ZONE_READ, _ROUTES_WRITE = ROUTE_GROUPS[1], ROUTE_GROUPS[0]


class CloudflareApiError(RuntimeError):
    """The Cloudflare API refused a read (message names the script, the request, the HTTP
    status and, for 401 or 403, the permission group the token lacks)."""


class _Api:
    """GET requests for one script, with the token as a bearer header."""

    def __init__(self, props: Mapping[str, Any]) -> None:
        # requests is imported here, not at the top: a render imports this module and never
        # reads a live script (requests costs about 0.5 s to import).
        import requests

        token = props.get("apiToken") or os.environ.get("CLOUDFLARE_API_TOKEN")
        self.script = str(props["scriptName"])
        self.account = str(props["accountId"])
        if not token:
            raise CloudflareApiError(
                f"reading Worker script {self.script}: no API token (set the stack's secret "
                "cloudflare:apiToken or export CLOUDFLARE_API_TOKEN)"
            )
        self.base = os.environ.get("CLOUDFLARE_API_BASE_URL", API_BASE_URL).rstrip("/")
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def get(self, path: str, group: str, params: Mapping[str, str] | None = None) -> Any:
        """The ``result`` of ``GET path``; ``None`` for a 404.

        Raises:
            CloudflareApiError: for any other failure; 401 and 403 name ``group``.
        """
        import requests

        try:
            answer = self.session.get(self.base + path, params=params, timeout=READ_TIMEOUT_SECONDS)
        except requests.RequestException as error:
            raise CloudflareApiError(
                f"reading Worker script {self.script}: GET {path} failed: {type(error).__name__}"
            ) from error
        if answer.status_code == 404:
            return None
        try:
            body = answer.json()
        except ValueError:
            body = {}
        if answer.status_code >= 400 or not body.get("success", False):
            messages = "; ".join(
                f"{e.get('message', '')} [code: {e.get('code')}]" for e in body.get("errors", [])
            )
            hint = ""
            if answer.status_code in (401, 403):
                hint = (
                    f": the API token lacks the permission group {group} on account "
                    f"{self.account} (sandboxkit deployer-policy --target cloudflare)"
                )
            raise CloudflareApiError(
                f"reading Worker script {self.script}: GET {path} answered "
                f"{answer.status_code}{hint}" + (f" ({messages})" if messages else "")
            )
        return body.get("result")


def read_live(props: Mapping[str, Any]) -> dict[str, Any] | None:
    """The last deployed ``WranglerScript`` outputs ``props`` with what the live script says in
    place of ``migrations``, ``containers``, ``workersDev``, ``previewUrls`` and ``routes``;
    ``None`` when the script is gone.

    Each live value takes the deployed shape, so an unchanged script reads back equal to
    ``props`` and a drifted one differs where it drifted: ``migrations`` ends at the live tag
    (``[{"tag": TAG}]`` for a tag the ledger lacks), a container application absent or bound to
    another namespace drops out of ``containers`` and a live one carries its image, instance
    type and maximum instances, ``routes`` holds the deployed routes still live, then the live
    ones not deployed (``customDomain`` or ``zoneId``).

    Raises:
        CloudflareApiError: for a refusal other than a 404; 401 or 403 names the missing
            permission group.
    """
    api = _Api(props)
    scripts = f"/accounts/{api.account}/workers/scripts/{api.script}"
    service = api.get(f"/accounts/{api.account}/workers/services/{api.script}", SCRIPTS_WRITE)
    settings = api.get(f"{scripts}/settings", SCRIPTS_WRITE)
    subdomain = api.get(f"{scripts}/subdomain", SCRIPTS_WRITE)
    if service is None or settings is None or subdomain is None:
        return None
    live_tag = service.get("default_environment", {}).get("script", {}).get("migration_tag")
    return {
        **props,
        "migrations": _migrations_to(props["migrations"], live_tag),
        "containers": _containers(api, props["containers"], settings),
        "workersDev": bool(subdomain.get("enabled", False)),
        "previewUrls": bool(subdomain.get("previews_enabled", False)),
        "routes": _routes(api, props["routes"]),
    }


def _migrations_to(ledger: list[dict[str, Any]], tag: str | None) -> list[dict[str, Any]]:
    if tag is None:
        return []
    tags = [migration["tag"] for migration in ledger]
    return ledger[: tags.index(tag) + 1] if tag in tags else [{"tag": tag}]


def _containers(
    api: _Api, deployed: list[dict[str, Any]], settings: Mapping[str, Any]
) -> list[dict[str, Any]]:
    namespaces = {
        b.get("namespace_id")
        for b in settings.get("bindings", [])
        if b.get("type") == "durable_object_namespace" and b.get("name") == DURABLE_OBJECT_BINDING
    }
    listed = api.get(f"/accounts/{api.account}/containers/applications", CONTAINERS_WRITE) or []
    bound = {
        app.get("name"): app
        for app in listed
        if app.get("durable_objects", {}).get("namespace_id") in namespaces - {None}
    }
    live = []
    for container in deployed:
        app = bound.get(container["name"])
        if app is not None:
            configuration = app.get("configuration", {})
            live.append(
                {
                    **container,
                    "image": configuration.get("image"),
                    "instanceType": configuration.get("instance_type"),
                    "maxInstances": app.get("max_instances"),
                }
            )
    return live


def _routes(api: _Api, deployed: list[dict[str, Any]]) -> list[dict[str, Any]]:
    domains = api.get(
        f"/accounts/{api.account}/workers/domains", SCRIPTS_WRITE, {"service": api.script}
    )
    hosts = [d["hostname"] for d in domains or [] if d.get("service") == api.script]
    zone_of: dict[str, str | None] = {}
    for route in deployed:
        if not route.get("customDomain"):
            zone = route.get("zoneId") or _zone_id(api, str(route["zoneName"]))
            zone_of[str(route["pattern"])] = zone
    patterns: dict[str, str] = {}
    for zone in sorted({z for z in zone_of.values() if z is not None}):
        for live in api.get(f"/zones/{zone}/workers/routes", _ROUTES_WRITE) or []:
            if live.get("script") == api.script:
                patterns[str(live["pattern"])] = zone
    kept = [
        route
        for route in deployed
        if (
            route["pattern"] in hosts if route.get("customDomain") else route["pattern"] in patterns
        )
    ]
    known = {str(route["pattern"]) for route in kept}
    return [
        *kept,
        *({"pattern": host, "customDomain": True} for host in hosts if host not in known),
        *({"pattern": p, "zoneId": z} for p, z in patterns.items() if p not in known),
    ]


def _zone_id(api: _Api, name: str) -> str | None:
    zones = api.get("/zones", _ZONE_READ, {"name": name, "account.id": api.account}) or []
    return str(zones[0]["id"]) if zones else None
