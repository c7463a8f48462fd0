"""The sandbox-guard checks of what the cloudflare target creates: the Worker script (its
bindings carry the egress policy, limits and keys; its workersDev switch the exposure), and a
program's own WorkersScriptSubdomain."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sandboxkit.boundary import (
    CONTAINER_IMAGE_BINDING,
    EGRESS_POLICY_BINDING,
    EXEC_TIMEOUT_BINDING,
    IDLE_TIMEOUT_BINDING,
    JWT_MAX_LIFETIME_BINDING,
    JWT_SIGNING_KEY_BINDING,
    MAX_LIFETIME_BINDING,
)
from sandboxkit.cloudflare.egress_reader import worker_code_problems
from sandboxkit.cloudflare.type_tokens import WORKER_SCRIPTS, WORKERS_SUBDOMAIN, WRANGLER_SCRIPT
from sandboxkit.guard import (
    CheckContext,
    Handler,
    SecretSink,
    StackHandler,
    StackResource,
    dig,
    items,
    number,
    of_kind,
    plain_binding_entries,
    plain_bindings,
)
from sandboxkit.guard_checks import (
    entries_problems,
    inline_secrets,
    listed_variables,
    matching,
    seconds_of,
    time_problems,
    unpinned_images,
)
from sandboxkit.policy_rules import (
    ALLOWLIST_SPECIFIC,
    AUDIT_LOGS,
    AUTHENTICATED_WORKER,
    DEFAULT_DENY,
    DIGEST_PINNED,
    EGRESS_CLOSED,
    PLAINTEXT_ENV,
    SERVER_CHOSEN_IDS,
    TIME_LIMITS,
)


def _egress_policy(props: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The parsed ``EGRESS_POLICY`` binding of a Worker, or ``None`` if absent or unreadable."""
    text = plain_bindings(props).get(EGRESS_POLICY_BINDING)
    try:
        policy = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return None
    return policy if isinstance(policy, Mapping) else None


# --- SBX-NET-001 -------------------------------------------------------------------------------


def _worker_egress(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    policy = _egress_policy(props)
    if policy is None:
        yield (
            f"Worker {ctx.name} has no readable {EGRESS_POLICY_BINDING} binding, and Cloudflare "
            "containers reach the internet by default; deploy the kit's Worker with its egress "
            "policy binding."
        )
    elif policy.get("mode") not in ("deny", "allowlist"):
        yield (
            f"Worker {ctx.name} lets its containers egress with mode {policy.get('mode')}; set "
            "sandboxkit:profile.egress.mode to deny or allowlist."
        )


# --- SBX-NET-002 -------------------------------------------------------------------------------


def _worker_entries(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    policy = _egress_policy(props) or {}
    entries = [
        f"{'*.' if e.get('wildcard') else ''}{e.get('host')}:{e.get('port', 443)}"
        for e in items(policy.get("allow"))
        if isinstance(e, Mapping)
    ]
    yield from entries_problems("Worker egress policy", ctx.name, entries)


# --- SBX-NET-003 -------------------------------------------------------------------------------


def _worker_code(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    # Interceptions only for the listed hosts are the kit's Worker code, not its binding.
    yield from worker_code_problems(ctx.name, props)


# --- SBX-SES-001, SBX-SES-002 ------------------------------------------------------------------


def _bindings(props: Mapping[str, Any], kind: str) -> list[str]:
    return [
        str(b.get("name", ""))
        for b in items(props.get("bindings"))
        if isinstance(b, Mapping) and b.get("type") == kind
    ]


def _id_key(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if not _bindings(props, "durable_object_namespace"):
        return
    secrets = _bindings(props, "secret_text")
    if not matching(secrets, ctx.setting("sessionKeyBindings")):
        yield (
            f"Worker {ctx.name} routes to Durable Objects without a secret id key binding, so "
            "object ids come from client input; add the session-id key as a secret_text "
            "binding."
        )
    if not matching(secrets, ctx.setting("credentialKeyBindings")):
        # The HMAC only hides object ids: without a verified credential the tenant is whatever
        # the request path says, and one shared bearer token opens every tenant's sandboxes.
        yield (
            f"Worker {ctx.name} routes to Durable Objects without a key to verify client "
            "tokens with, so the tenant and session a request touches come from its path and "
            "any holder of a shared bearer token reaches every tenant's sandboxes; bind the "
            f"token signing key as secret_text ({JWT_SIGNING_KEY_BINDING}) and take the tenant "
            "and session scope from the verified token's claims."
        )


def _auth_key(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if not matching(_bindings(props, "secret_text"), ctx.setting("authBindings")):
        yield (
            f"Worker {ctx.name} has no secret binding to authenticate requests with; bind the "
            "bearer or JWT key as a secret_text binding and reject other requests with 401."
        )


def _workers_dev(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    # wrangler writes the kit's switch (the script's workersDev); a program of pulumi-cloudflare's
    # own WorkersScript sets it with a WorkersScriptSubdomain (enabled).
    key = "workersDev" if WRANGLER_SCRIPT.matches(ctx.resource_type) else "enabled"
    if props.get(key) is True and not ctx.setting("allowWorkersDev"):
        yield (
            f"{ctx.name} exposes the sandbox Worker on workers.dev ({key} true, from "
            "sandboxkit:cloudflare.workersDev); set sandboxkit:cloudflare.workersDev to false "
            "and route through the account's own domain."
        )


# --- SBX-RES-002 -------------------------------------------------------------------------------


def _worker_limits(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    bindings = plain_bindings(props)
    label = f"Worker {ctx.name}"
    for binding, key in (
        (MAX_LIFETIME_BINDING, "maxLifetimeSeconds"),
        (IDLE_TIMEOUT_BINDING, "idleTimeoutSeconds"),
        (EXEC_TIMEOUT_BINDING, "execTimeoutSeconds"),
    ):
        yield from time_problems(ctx, label, f"binding {binding}", bindings.get(binding), key)


# --- SBX-LOG-002 -------------------------------------------------------------------------------


def _workers_without_observability(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    for script in of_kind(resources, *WORKER_SCRIPTS):
        if dig(script.props, "observability.enabled") is not True:
            yield (
                f"Worker {script.name} has observability off, so commands leave no audit "
                "trail; set observability.enabled to true.",
                script.urn,
            )


# --- SBX-SEC-001 -------------------------------------------------------------------------------


def _plain_secrets(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    plain = plain_binding_entries(props)
    yield from inline_secrets("Worker", ctx.name, listed_variables(plain, "text"), ctx)


def _token_lifetime(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if not _bindings(props, "durable_object_namespace"):
        return
    text = plain_bindings(props).get(JWT_MAX_LIFETIME_BINDING)
    if text is None:
        return  # SBX-SES-001 reports a Worker without client-token checks
    seconds = seconds_of(text)
    ceiling = ctx.setting("maxTokenLifetimeSeconds")
    if seconds is None or seconds > ceiling:
        yield (
            f"Worker {ctx.name} accepts client tokens spanning up to {text} s "
            f"({JWT_MAX_LIFETIME_BINDING}), beyond the ceiling of {number(ceiling)} s, so a "
            "stolen token opens its tenant's sandboxes that long; lower "
            "sandboxkit:cloudflare.tokenMaxLifetimeSeconds."
        )


# --- SBX-SEC-003 -------------------------------------------------------------------------------


def _container_image(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    # The Worker's Durable Objects start the wrangler config's container; the image it runs is
    # the one the Worker carries (no Pulumi resource holds a Containers application).
    if not _bindings(props, "durable_object_namespace"):
        return
    image = plain_bindings(props).get(CONTAINER_IMAGE_BINDING)
    if image is None:
        yield (
            f"Worker {ctx.name} does not name the container image its sandboxes run (plain "
            f"binding {CONTAINER_IMAGE_BINDING}), so the gate cannot tell whether it is pinned; "
            "deploy the kit's component, which carries sandboxkit:cloudflare.image."
        )
        return
    yield from unpinned_images("Worker", ctx.name, [image], "sandboxkit:cloudflare.image")


def _secret_binding_text(props: Mapping[str, Any], path: str) -> bool:
    """Whether ``path`` is the text of a ``secret_text`` binding (a Worker secret)."""
    match = re.fullmatch(r"bindings\[(\d+)\]\.text", path)
    if not match:
        return False
    binding = props["bindings"][int(match.group(1))]
    return isinstance(binding, Mapping) and binding.get("type") == "secret_text"


# A secret_text binding holds a Worker secret: SBX-SEC-002 does not read its text.
SECRET_SINKS = tuple(SecretSink(t, holds=_secret_binding_text) for t in WORKER_SCRIPTS)

HANDLERS = (
    Handler(
        EGRESS_CLOSED,
        WORKER_SCRIPTS,
        _worker_egress,
        "the Worker's EGRESS_POLICY binding: mode and ports",
    ),
    Handler(
        ALLOWLIST_SPECIFIC,
        WORKER_SCRIPTS,
        _worker_entries,
        "the Worker's EGRESS_POLICY allowlist entries",
    ),
    Handler(
        DEFAULT_DENY,
        WORKER_SCRIPTS,
        _worker_code,
        "the Worker's code and compatibility flags: the kit's module, global_fetch_strictly_public",
    ),
    Handler(
        SERVER_CHOSEN_IDS,
        WORKER_SCRIPTS,
        _id_key,
        "the Worker: a secret sandbox id key and token verification key",
    ),
    Handler(
        AUTHENTICATED_WORKER,
        WORKER_SCRIPTS,
        _auth_key,
        "the Worker: client tokens verified with a secret key",
    ),
    Handler(
        AUTHENTICATED_WORKER,
        (WRANGLER_SCRIPT, WORKERS_SUBDOMAIN),
        _workers_dev,
        "the Worker's workers.dev switch (workersDev, or a WorkersScriptSubdomain's enabled): "
        "no workers.dev exposure",
    ),
    Handler(
        TIME_LIMITS,
        WORKER_SCRIPTS,
        _worker_limits,
        "the Worker's idle, exec and lifetime limits",
    ),
    StackHandler(AUDIT_LOGS, _workers_without_observability, "each Worker: observability enabled"),
    Handler(PLAINTEXT_ENV, WORKER_SCRIPTS, _plain_secrets, "the Worker's plain_text bindings"),
    Handler(
        AUTHENTICATED_WORKER,
        WORKER_SCRIPTS,
        _token_lifetime,
        "the Worker: client tokens' maximum lifetime",
    ),
    Handler(DIGEST_PINNED, WORKER_SCRIPTS, _container_image, "the Worker's container image"),
)
