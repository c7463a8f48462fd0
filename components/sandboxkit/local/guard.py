"""The ``local`` target's policy handlers (``sandboxkit.guard``): its gateway policy's egress
mode, entries and ports, limits, audit retention and the command's environment (SBX-SEC-001),
judged as every target's are. Its egress
is also compared with the contract by SBX-NET-008 through ``local/egress_reader.py``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from sandboxkit.egress_contract import parse_rule
from sandboxkit.guard import CheckContext, Handler, dig, items
from sandboxkit.guard_checks import (
    entries_problems,
    inline_secrets,
    mapped_variables,
    ports_problem,
    retention_problems,
    size_problems,
    time_problems,
)
from sandboxkit.local.type_tokens import EGRESS_GATEWAY_POLICY
from sandboxkit.policy_rules import (
    ALLOWLIST_SPECIFIC,
    EGRESS_CLOSED,
    PLAINTEXT_ENV,
    RETENTION,
    SIZE_LIMITS,
    TIME_LIMITS,
)

_KIND = "Local sandbox policy"


def _entries(props: Mapping[str, Any]) -> list[str]:
    return [str(entry) for entry in items(props.get("allow"))]


def _egress(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    # The gateway admits by its mode: open dials any public address on any port.
    mode = props.get("mode")
    if mode not in ("deny", "allowlist"):
        yield (
            f"{_KIND} {ctx.name} lets its sandboxes egress with mode {mode}; set "
            "sandboxkit:profile.egress.mode to deny or allowlist."
        )
        return
    ports: list[tuple[int, int]] = []
    for entry in _entries(props):
        try:
            port = parse_rule(entry).port
        except ValueError:
            continue  # SBX-NET-002 reports an entry the contract refuses
        ports.append((port, port))
    yield from ports_problem(f"{_KIND} {ctx.name} allowlist", ports, ctx)


def _allowlist(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    yield from entries_problems(_KIND, ctx.name, _entries(props))


def _limits(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    limits = dig(props, "limits", {}) or {}
    memory = limits.get("memoryMiB")
    yield from size_problems(
        _KIND, ctx.name, limits.get("vcpu"), None if memory is None else f"{memory}Mi", ctx
    )


def _timeout(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    # A local sandbox lives for one command: its command timeout is its lifetime.
    value = dig(props, "limits.execTimeoutSeconds")
    yield from time_problems(
        ctx, f"{_KIND} {ctx.name}", "execTimeoutSeconds", value, "execTimeoutSeconds"
    )


def _retention(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    yield from retention_problems(
        "Local audit log", ctx.name, props.get("retentionDays"), ctx, False
    )


def _environment(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    variables = mapped_variables(props.get("environment"))
    yield from inline_secrets(_KIND, ctx.name, variables, ctx)


HANDLERS = (
    Handler(
        EGRESS_CLOSED,
        (EGRESS_GATEWAY_POLICY,),
        _egress,
        "the local sandbox policy: egress mode deny or allowlist, entries on allowed ports",
    ),
    Handler(
        ALLOWLIST_SPECIFIC,
        (EGRESS_GATEWAY_POLICY,),
        _allowlist,
        "the local sandbox policy: each allowlist entry a specific public host",
    ),
    Handler(
        SIZE_LIMITS, (EGRESS_GATEWAY_POLICY,), _limits, "the local sandbox policy: vCPU and memory"
    ),
    Handler(
        TIME_LIMITS,
        (EGRESS_GATEWAY_POLICY,),
        _timeout,
        "the local sandbox policy: execTimeoutSeconds (a sandbox lives for one command)",
    ),
    Handler(RETENTION, (EGRESS_GATEWAY_POLICY,), _retention, "the local audit log: retentionDays"),
    Handler(
        PLAINTEXT_ENV,
        (EGRESS_GATEWAY_POLICY,),
        _environment,
        "the local sandbox policy: the command's environment variables",
    ),
)
