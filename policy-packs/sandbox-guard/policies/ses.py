"""SES: who may reach a sandbox session, and with which identifier."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy import Severity

from sandboxkit.guard import items, launcher_env

from ._common import WORKERS_SCRIPT, Context, ResourceRule, Rule


def _bindings(props: Mapping[str, Any], kind: str) -> list[str]:
    return [
        str(b.get("name", ""))
        for b in items(props.get("bindings"))
        if isinstance(b, Mapping) and b.get("type") == kind
    ]


def _matching(names: Sequence[str], patterns: Sequence[str]) -> list[str]:
    return [n for n in names if any(p.upper() in n.upper() for p in patterns)]


SERVER_CHOSEN_IDS = ResourceRule(
    Rule(
        id="SBX-SES-001",
        title="Session identifiers are not client-chosen",
        severity=Severity.HIGH,
        description="Checks that a Worker routing requests to sandbox Durable Objects holds a "
        "secret key to derive object ids (an HMAC of tenant and session), so a client cannot "
        "pick or guess another tenant's sandbox.",
        remediation="Bind the kit's session-id key as a secret_text binding and derive Durable "
        "Object ids from it, never from a raw client-supplied id.",
        properties={
            "sessionKeyBindings": {
                "type": "array",
                "items": {"type": "string"},
                "default": ["SESSION_KEY", "HMAC", "ID_KEY"],
                "description": "Name fragments of the secret binding holding the id key.",
            }
        },
    )
)


@SERVER_CHOSEN_IDS.on(WORKERS_SCRIPT)
def _id_key(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    if not _bindings(props, "durable_object_namespace"):
        return
    if not _matching(_bindings(props, "secret_text"), ctx.setting("sessionKeyBindings")):
        yield (
            f"Worker {ctx.name} routes to Durable Objects without a secret id key binding, so "
            "object ids come from client input; add the session-id key as a secret_text "
            "binding."
        )


AUTHENTICATED_WORKER = ResourceRule(
    Rule(
        id="SBX-SES-002",
        title="Worker requests are authenticated",
        severity=Severity.HIGH,
        description="Checks that a sandbox Worker holds the secret it authenticates every "
        "request with, and is not exposed on workers.dev unless the organisation allows it.",
        remediation="Bind the bearer or JWT key as a secret_text binding and keep the "
        "workers.dev subdomain disabled.",
        properties={
            "authBindings": {
                "type": "array",
                "items": {"type": "string"},
                "default": ["AUTH", "TOKEN", "JWT"],
                "description": "Name fragments of the secret binding that authenticates callers.",
            },
            "allowWorkersDev": {
                "type": "boolean",
                "default": False,
                "description": "Allow the workers.dev subdomain for sandbox Workers.",
            },
        },
    )
)


@AUTHENTICATED_WORKER.on(WORKERS_SCRIPT)
def _auth_key(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    if not _matching(_bindings(props, "secret_text"), ctx.setting("authBindings")):
        yield (
            f"Worker {ctx.name} has no secret binding to authenticate requests with; bind the "
            "bearer or JWT key as a secret_text binding and reject other requests with 401."
        )


@AUTHENTICATED_WORKER.on("cloudflare:index/workersScriptSubdomain:WorkersScriptSubdomain")
def _workers_dev(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    if props.get("enabled") is True and not ctx.setting("allowWorkersDev"):
        yield (
            f"{ctx.name} exposes the sandbox Worker on workers.dev; set enabled to false and "
            "route through the account's own domain."
        )


SIGNED_WEBHOOKS = ResourceRule(
    Rule(
        id="SBX-SES-003",
        title="Webhooks are signature-checked",
        severity=Severity.HIGH,
        description="Checks that a sandbox launcher function is given the webhook signing "
        "secret it verifies every webhook with.",
        remediation="Pass the launcher the webhook secret's reference (a Secrets Manager ARN) "
        "and keep the kit's signature check.",
        properties={
            "webhookSecretVariables": {
                "type": "array",
                "items": {"type": "string"},
                "default": ["WEBHOOK_SECRET"],
                "description": "Name fragments of the launcher variable naming the secret.",
            }
        },
    )
)


@SIGNED_WEBHOOKS.on("aws:lambda/function:Function")
def _webhook_secret(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    variables = launcher_env(props)
    if variables is None:
        return
    if not _matching(list(variables), ctx.setting("webhookSecretVariables")):
        yield (
            f"Launcher function {ctx.name} is not given a webhook signing secret, so it cannot "
            "verify webhooks; pass the secret's ARN in its environment and verify each "
            "signature."
        )


RULES = [SERVER_CHOSEN_IDS, AUTHENTICATED_WORKER, SIGNED_WEBHOOKS]
