"""The pack on the local target's gateway policy: its egress mode, entries and ports
(SBX-NET-001, SBX-NET-002), limits and audit retention (SBX-RES-001, SBX-RES-002, SBX-LOG-001),
a failing input and the silence for a good one."""

from __future__ import annotations

from pack_calls import resource_reports

from sandboxkit.local import type_tokens

EGRESS_GATEWAY_POLICY = type_tokens.EGRESS_GATEWAY_POLICY.token


def _policy(mode: str = "deny", allow: tuple[str, ...] = (), **limits: object) -> dict[str, object]:
    base = {"vcpu": 1, "memoryMiB": 2048, "execTimeoutSeconds": 300}
    return {"mode": mode, "allow": list(allow), "limits": {**base, **limits}, "retentionDays": 30}


def test_open_egress_on_the_local_gateway_is_reported():
    # The prod gate passed `egress.mode: open` on a stack listing only local (no SBX-NET-001
    # handler read the gateway policy), while every other target's open egress failed it.
    assert resource_reports("sbx-net-001", EGRESS_GATEWAY_POLICY, _policy("open"), "p") == [
        "Local sandbox policy p lets its sandboxes egress with mode open; set "
        "sandboxkit:profile.egress.mode to deny or allowlist."
    ]
    for mode, allow in (("deny", ()), ("allowlist", ("pypi.org:443", "*.pythonhosted.org:443"))):
        policy = _policy(mode, allow)
        assert resource_reports("sbx-net-001", EGRESS_GATEWAY_POLICY, policy, "p") == []


def test_local_allowlist_ports_beyond_the_allowed_ones_are_reported():
    policy = _policy("allowlist", ("pypi.org:443", "pypi.org:8443"))
    assert resource_reports("sbx-net-001", EGRESS_GATEWAY_POLICY, policy, "p") == [
        "Local sandbox policy p allowlist admits egress on port 8443, beyond ports 443, 80, 53; "
        "allow only hosts on those ports in sandboxkit:profile.egress.allow, or add the port to "
        "sbx-net-001's allowedPorts in the pack config."
    ]


def test_local_allowlist_entries_are_specific_public_hosts():
    good = _policy("allowlist", ("pypi.org:443", "*.pythonhosted.org:443", "93.184.216.34:443"))
    assert resource_reports("sbx-net-002", EGRESS_GATEWAY_POLICY, good, "p") == []
    bad = _policy("allowlist", ("*.com:443", "169.254.169.254:80"))
    reports = resource_reports("sbx-net-002", EGRESS_GATEWAY_POLICY, bad, "p")
    assert [r.split(":")[0] for r in reports] == [
        "Local sandbox policy p allows '*.com",
        "Local sandbox policy p allows '169.254.169.254",
    ]


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


def test_a_credential_in_the_local_environment_is_reported():
    # newcomer F13: the rendered policy held no environment, so SBX-SEC-001/002 never saw it.
    policy = {
        **_policy(),
        "environment": {
            "PATH": "/usr/bin",
            "GITHUB_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
            "FOO": "AKIAIOSFODNN7EXAMPLE",
        },
    }
    assert resource_reports("sbx-sec-001", EGRESS_GATEWAY_POLICY, policy, "p") == [
        "Local sandbox policy p sets GITHUB_TOKEN inline, where anyone who can read the "
        "configuration reads the secret; move it to a secret store and pass a reference."
    ]
    reports = resource_reports("sbx-sec-002", EGRESS_GATEWAY_POLICY, policy, "p")
    assert len(reports) == 2 and all("environment." in r for r in reports)
    clean = {**_policy(), "environment": {"PATH": "/usr/bin", "LOG_LEVEL": "debug"}}
    for rule in ("sbx-sec-001", "sbx-sec-002"):
        assert resource_reports(rule, EGRESS_GATEWAY_POLICY, clean, "p") == []
