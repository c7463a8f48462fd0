"""The pack on the local target's gateway policy: its limits and audit retention (SBX-RES-001,
SBX-RES-002, SBX-LOG-001), a failing input and the silence for a good one."""

from __future__ import annotations

from pack_calls import resource_reports

from sandboxkit.local import type_tokens

EGRESS_GATEWAY_POLICY = type_tokens.EGRESS_GATEWAY_POLICY.token


def _policy(**limits: object) -> dict[str, object]:
    base = {"vcpu": 1, "memoryMiB": 2048, "execTimeoutSeconds": 300}
    return {"mode": "deny", "allow": [], "limits": {**base, **limits}, "retentionDays": 30}


def test_the_pack_judges_the_local_limits_and_retention():
    assert resource_reports("sbx-res-001", EGRESS_GATEWAY_POLICY, _policy(), "p") == []
    assert resource_reports("sbx-res-001", EGRESS_GATEWAY_POLICY, _policy(vcpu=64), "p") == [
        "Local sandbox policy p allows 64 vCPU, above the maximum of 8; lower "
        "sandboxkit:profile.limits.vcpu."
    ]
    long_run = _policy(execTimeoutSeconds=90000)
    assert resource_reports("sbx-res-002", EGRESS_GATEWAY_POLICY, long_run, "p") == [
        "Local sandbox policy p sets execTimeoutSeconds to 90000 s, above the maximum of "
        "28800 s; lower sandboxkit:profile.limits.execTimeoutSeconds."
    ]
    short = {**_policy(), "retentionDays": 7}
    assert resource_reports("sbx-log-001", EGRESS_GATEWAY_POLICY, short, "p") == [
        "Local audit log p keeps logs 7 days, fewer than 30; raise "
        "sandboxkit:profile.audit.logRetentionDays."
    ]
