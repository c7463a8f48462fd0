"""The ``local`` target's policy handlers (``sandboxkit.guard``): its gateway policy's limits
and audit retention, judged as every target's are. Its egress is judged by SBX-NET-008 through
``local/egress_reader.py``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from sandboxkit.guard import CheckContext, Handler, dig
from sandboxkit.guard_checks import retention_problems, size_problems, time_problems
from sandboxkit.local.type_tokens import EGRESS_GATEWAY_POLICY
from sandboxkit.policy_rules import RETENTION, SIZE_LIMITS, TIME_LIMITS

_KIND = "Local sandbox policy"


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


HANDLERS = (
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
)
