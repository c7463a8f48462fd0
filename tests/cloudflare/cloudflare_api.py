"""A loopback stand-in for the part of the Cloudflare API ``wrangler deploy`` and ``wrangler
delete`` call, with the state and the refusals a second deploy depends on.

The real wrangler (the Worker package's pinned 4.164) runs against it through
``CLOUDFLARE_API_BASE_URL``. It keeps one account's scripts (the live ``migration_tag``, the
secrets, the last upload's metadata) and container applications, and applies the migration rule
the API applies (developers.cloudflare.com/durable-objects/reference/durable-objects-migrations/):
a migration whose ``old_tag`` is not the script's current tag, a tagless one included, is
refused with "Migration tag precondition failed; current tag is <tag>" (code 10079, as the API
answered in cloudflare/workers-sdk#705). Response envelopes are the v4 API's (``success``,
``errors``, ``messages``, ``result``). It also answers the reads of
``pulumi refresh`` (``live_script``): the script's settings with its Durable Object namespace,
its workers.dev switch, the custom domains by service and each zone's routes, all from the same
state, which a test changes out of band. A request it has no answer for gets 404 and is listed
in ``unhandled``; a path in ``refused`` gets that status (code 10000, as the API answers a
token without the permission).
"""

from __future__ import annotations

import http.server
import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

from support import LoopbackServer

ACCOUNT = "0" * 32
MIGRATION_PRECONDITION = 10079
SERVICE_NOT_FOUND = 10090
SCRIPT_NOT_FOUND = 10007


@dataclass
class Script:
    """One deployed script: its live migration tag, secrets and last upload."""

    migration_tag: str | None = None
    secrets: dict[str, str] = field(default_factory=dict)
    metadata: dict[str, Any] = field(default_factory=dict)
    modules: dict[str, bytes] = field(default_factory=dict)
    version: str = ""
    subdomain: dict[str, bool] = field(
        default_factory=lambda: {"enabled": False, "previews_enabled": False}
    )
    routes: list[dict[str, Any]] = field(default_factory=list)
    domains: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class Upload:
    """A script upload the API accepted or refused: its metadata and the answer's error code."""

    script: str
    metadata: dict[str, Any]
    modules: dict[str, bytes]
    refused: int | None


class CloudflareAPI(LoopbackServer):
    """The fake API on ``127.0.0.1``; ``base_url`` is what ``CLOUDFLARE_API_BASE_URL`` takes.

    Attributes:
        scripts: script name -> ``Script``.
        applications: container applications, as the API returns them.
        uploads: every script upload, in order.
        calls: ``(method, path)`` of every request, query dropped.
        tokens: the bearer token of every request.
        unhandled: requests it had no answer for.
        zone_routes: zone id -> the zone's routes (``id``, ``pattern``, ``script``).
        refused: path -> HTTP status answered instead (401 or 403).
    """

    def __init__(self) -> None:
        self.scripts: dict[str, Script] = {}
        self.applications: list[dict[str, Any]] = []
        self.uploads: list[Upload] = []
        self.calls: list[tuple[str, str]] = []
        self.tokens: list[str] = []
        self.unhandled: list[tuple[str, str]] = []
        self.zone_routes: dict[str, list[dict[str, Any]]] = {}
        self.refused: dict[str, int] = {}
        self._lock = threading.Lock()
        super().__init__()
        self.base_url = f"http://127.0.0.1:{self.port}/client/v4"

    # --- answers ----------------------------------------------------------------------------

    def _answer(
        self, method: str, path: str, query: str, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any, list[dict[str, Any]]]:
        prefix = f"/client/v4/accounts/{ACCOUNT}"
        if path in self.refused:
            return self.refused[path], None, [{"code": 10000, "message": "Authentication error"}]
        if path == "/client/v4/zones" and method == "GET":
            names = re.findall(r"(?:^|&)name=([^&]+)", query)
            return 200, [{"id": _zone_id(name), "name": name} for name in names], []
        zone = re.fullmatch(r"/client/v4/zones/([0-9a-f]{32})/workers/routes", path)
        if zone and method == "GET":
            return 200, self.zone_routes.get(zone[1], []), []
        if not path.startswith(prefix):
            return 404, None, [{"code": 7003, "message": "Could not route to " + path}]
        route = path.removeprefix(prefix)
        match = re.fullmatch(r"/workers/(services|scripts|workers)/([a-z0-9-]+)(/.*)?", route)
        if match:
            return self._script(
                method, match[1], match[2], rest=match[3] or "", headers=headers, body=body
            )
        if route == "/workers/domains" and method == "GET":
            service = dict(re.findall(r"(?:^|&)([^=&]+)=([^&]*)", query)).get("service")
            return 200, self._domains(service), []
        if route == "/workers/subdomain" and method == "GET":
            return 200, {"subdomain": "sandboxkit-test"}, []
        if route == "/storage/kv/namespaces" and method == "GET":
            return 200, [], []
        if route == "/workers/durable_objects/namespaces" and method == "GET":
            return 200, self._namespaces(), []
        if route == "/containers/applications" and method == "GET":
            return 200, self.applications, []
        if route == "/containers/dash/applications" and method == "GET":
            idle = {"active": 0, "failed": 0, "starting": 0, "scheduling": 0}
            apps = [{**a, "instances": 0, "health": {"instances": idle}} for a in self.applications]
            return 200, apps, []
        if route == "/containers/applications" and method == "POST":
            app = {**json.loads(body), "id": uuid.uuid4().hex, "version": 1}
            self.applications.append(app)
            return 200, app, []
        app_match = re.fullmatch(r"/containers/applications/([0-9a-f]+)(/rollouts)?", route)
        if app_match:
            return self._application(method, app_match[1], bool(app_match[2]), body)
        return 404, None, [{"code": 7003, "message": f"No route for {method} {route}"}]

    def _namespaces(self) -> list[dict[str, Any]]:
        return [
            {"id": _namespace_id(name), "class": b["class_name"], "script": name}
            for name, script in self.scripts.items()
            for b in script.metadata.get("bindings", [])
            if b.get("type") == "durable_object_namespace"
        ]

    def _domains(self, service: str | None) -> list[dict[str, Any]]:
        return [
            {
                "id": _zone_id(f"{name}:{domain['hostname']}"),
                "hostname": domain["hostname"],
                "service": name,
                "environment": "production",
                "zone_id": _zone_id(domain["hostname"].partition(".")[2]),
            }
            for name, script in self.scripts.items()
            for domain in script.domains
            if service in (None, name)
        ]

    def _put_routes(self, name: str, routes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        # PUT .../scripts/{name}/routes replaces the script's routes in every zone.
        for zone, listed in self.zone_routes.items():
            self.zone_routes[zone] = [r for r in listed if r["script"] != name]
        published = []
        for route in routes:
            zone = route.get("zone_id") or _zone_id(route["zone_name"])
            live = {"id": uuid.uuid4().hex, "pattern": route["pattern"], "script": name}
            self.zone_routes.setdefault(zone, []).append(live)
            published.append({**route, **live})
        return published

    def _application(
        self, method: str, app_id: str, rollout: bool, body: bytes
    ) -> tuple[int, Any, list[dict[str, Any]]]:
        found = [app for app in self.applications if app["id"] == app_id]
        if not found:
            return 404, None, [{"code": 1000, "message": "application not found"}]
        app = found[0]
        if method == "PATCH" and not rollout:
            app.update(json.loads(body))
            app["version"] += 1
            return 200, app, []
        if method == "POST" and rollout:
            return 200, {"id": uuid.uuid4().hex, "status": "progressing"}, []
        if method == "DELETE" and not rollout:
            self.applications.remove(app)
            return 200, {}, []
        return 404, None, [{"code": 7003, "message": f"No route for {method} application"}]

    def _script(
        self,
        method: str,
        collection: str,
        name: str,
        *,
        rest: str,
        headers: dict[str, str],
        body: bytes,
    ) -> tuple[int, Any, list[dict[str, Any]]]:
        script = self.scripts.get(name)
        if collection == "scripts" and rest == "" and method == "PUT":
            return self._upload(name, script, headers, body)
        if collection == "services" and rest == "" and method == "DELETE":
            if script is None:
                return 404, None, [_not_found(SCRIPT_NOT_FOUND)]
            del self.scripts[name]
            return 200, None, []
        if script is None:
            code = SERVICE_NOT_FOUND if collection == "services" else SCRIPT_NOT_FOUND
            return 404, None, [_not_found(code)]
        if collection == "workers" and rest == "" and method in ("GET", "PATCH"):
            if method == "PATCH":
                script.subdomain.update(json.loads(body).get("subdomain", {}))
            return 200, {"id": name, "name": name, "subdomain": script.subdomain}, []
        if collection == "services" and rest == "" and method == "GET":
            live = {"id": name, "tag": script.version, "migration_tag": script.migration_tag}
            environment = {"environment": "production", "script": live}
            return 200, {"id": name, "default_environment": environment}, []
        if rest == "/secrets" and method == "GET":
            return 200, [{"name": key, "type": "secret_text"} for key in script.secrets], []
        if rest == "/deployments" and method == "GET":
            return 200, {"deployments": []}, []
        if rest == "/settings" and method == "GET":
            return 200, {"bindings": self._live_bindings(name, script)}, []
        if rest == "/routes" and method == "PUT":
            script.routes = json.loads(body)
            return 200, self._put_routes(name, script.routes), []
        if rest == "/domains/changeset" and method == "POST":
            changes = {"added": json.loads(body), "removed": [], "updated": [], "conflicting": []}
            return 200, changes, []
        if rest == "/domains/records" and method == "PUT":
            script.domains = json.loads(body)["origins"]
            return 200, [], []
        if rest == "/subdomain" and method in ("GET", "POST"):
            if method == "POST":
                script.subdomain.update(json.loads(body))
            return 200, script.subdomain, []
        if rest == f"/versions/{script.version}" and method == "GET":
            bindings = self._live_bindings(name, script)
            return 200, {"id": script.version, "resources": {"bindings": bindings}}, []
        return 404, None, [{"code": 7003, "message": f"No route for {method} {rest}"}]

    @staticmethod
    def _live_bindings(name: str, script: Script) -> list[dict[str, Any]]:
        return [
            {**b, "namespace_id": _namespace_id(name)}
            if b.get("type") == "durable_object_namespace"
            else b
            for b in script.metadata.get("bindings", [])
        ]

    def _upload(
        self, name: str, script: Script | None, headers: dict[str, str], body: bytes
    ) -> tuple[int, Any, list[dict[str, Any]]]:
        parts = _multipart(headers.get("content-type", ""), body)
        metadata = json.loads(parts.pop("metadata"))
        current = script.migration_tag if script else None
        migrations = metadata.get("migrations")
        refused = None
        if migrations is not None and migrations.get("old_tag") != current:
            refused = MIGRATION_PRECONDITION
        self.uploads.append(Upload(name, metadata, parts, refused))
        if refused is not None:
            message = f"Migration tag precondition failed; current tag is {current}"
            return 400, None, [{"code": refused, "message": message}]
        script = script or Script()
        if migrations is not None:
            script.migration_tag = migrations["new_tag"]
        for binding in metadata.get("bindings", []):
            if binding.get("type") == "secret_text":
                script.secrets[binding["name"]] = binding["text"]
        script.metadata, script.modules = metadata, parts
        script.version = str(uuid.uuid4())
        self.scripts[name] = script
        # The upload names its version without hyphens; GET .../versions/{id} takes the UUID.
        version = script.version.replace("-", "")
        result = {"id": name, "etag": uuid.uuid4().hex, "deployment_id": version}
        return 200, {**result, "startup_time_ms": 1, "has_modules": True}, []

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        api = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def _handle(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                path, _, query = self.path.partition("?")
                headers = {key.lower(): value for key, value in self.headers.items()}
                with api._lock:
                    api.calls.append((self.command, path))
                    api.tokens.append(headers.get("authorization", ""))
                    status, result, errors = api._answer(self.command, path, query, headers, body)
                    if status == 404 and errors and errors[0]["code"] == 7003:
                        api.unhandled.append((self.command, path))
                envelope = {"success": status < 400, "errors": errors, "messages": []}
                raw = json.dumps({**envelope, "result": result}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle  # noqa: N815

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def _zone_id(name: str) -> str:
    return uuid.uuid5(uuid.NAMESPACE_DNS, name).hex


def _namespace_id(script: str) -> str:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"durable-object:{script}").hex


def _not_found(code: int) -> dict[str, Any]:
    return {"code": code, "message": "This Worker does not exist on your account."}


def _multipart(content_type: str, body: bytes) -> dict[str, bytes]:
    """The parts of a ``multipart/form-data`` body, by form field name."""
    message = BytesParser(policy=HTTP).parsebytes(
        f"Content-Type: {content_type}\r\n\r\n".encode() + body
    )
    parts = {}
    for part in message.iter_parts():
        payload = part.get_payload(decode=True)
        assert isinstance(payload, bytes)
        parts[str(part.get_param("name", header="content-disposition"))] = payload
    return parts
