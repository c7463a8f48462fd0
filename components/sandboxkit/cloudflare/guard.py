"""The sandbox-guard checks of what the cloudflare target creates: the Worker script (its
bindings carry the egress policy, limits and keys) and its workers.dev subdomain."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from sandboxkit.contract import EGRESS_POLICY_BINDING
from sandboxkit.guard import CheckContext, Handler, items, plain_bindings
from sandboxkit.guard_checks import entries_problems

WORKERS_SCRIPT = "cloudflare:index/workersScript:WorkersScript"


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


HANDLERS = (
    Handler("SBX-NET-001", (WORKERS_SCRIPT,), _worker_egress),
    Handler("SBX-NET-002", (WORKERS_SCRIPT,), _worker_entries),
)
