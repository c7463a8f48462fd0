"""The local target: settings and refusals, its render and reader, the gateway's parts, the
audit log, ``sandboxkit run`` and ``sandboxkit verify`` from the CLI."""

from __future__ import annotations

import json
import os
import ssl
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from internet import FakeInternet
from test_escapes import plan_of

from sandboxkit.config import ConfigSource, load_stack
from sandboxkit.effective_egress import ResourceView, contract_probes
from sandboxkit.errors import ConfigError
from sandboxkit.explain import explain_stack
from sandboxkit.local import type_tokens
from sandboxkit.local.egress_reader import read_egress
from sandboxkit.local.gateway import answer_refusal, server_name
from sandboxkit.local.runner import AuditLog
from sandboxkit.local.verify import probes_of, verify
from sandboxkit.render import render_stack
from support import build_target, invoke_cli, make_project

ALLOWLIST = {"mode": "allowlist", "allow": ["pypi.org:443", "*.pythonhosted.org:443"]}
STACK = """config:
  sandboxkit:environment: dev
  sandboxkit:targets: [local]
  sandboxkit:profile:
    egress:
      mode: allowlist
      allow: ["pypi.org:443", "*.pythonhosted.org:443", "151.101.0.223:8443"]
    limits:
      memoryMiB: 256
"""

# A stack without the local target: sandboxkit run refuses it.
OTHER = f"""config:
  sandboxkit:environment: dev
  sandboxkit:targets: [kubernetes]
  sandboxkit:kubernetes:
    context: kind-test
    image: ghcr.io/example/agent@sha256:{"ab" * 32}
"""

EGRESS_GATEWAY_POLICY = type_tokens.EGRESS_GATEWAY_POLICY.token


def test_the_component_records_the_gateway_policy(engine):
    resources = build_target(engine, "local", {"proxyPort": 3129}, {"egress": ALLOWLIST})
    assert [(r.type, r.name) for r in resources] == [
        ("sandboxkit:index:LocalSandbox", "local"),
        (EGRESS_GATEWAY_POLICY, "local-egress-policy"),
    ]
    inputs = {k: v for k, v in resources[1].inputs.items() if not k.startswith("__")}
    assert inputs == {
        "mode": "allowlist",
        "allow": ["pypi.org:443", "*.pythonhosted.org:443"],
        "proxyPort": 3129,
        "limits": {
            "vcpu": 1.0,
            "memoryMiB": 2048,
            "maxProcesses": 256,
            "execTimeoutSeconds": 300,
            "workdirSizeMiB": 1024,
            "tmpSizeMiB": 256,
        },
        "auditLog": "~/.local/state/sandboxkit/test/local-audit.jsonl",
        "retentionDays": 30,
        "labels": {
            "managed-by": "sandboxkit",
            "sandboxkit-stack": "test",
            "sandboxkit-environment": "prod",
            "sandboxkit-target": "local",
        },
        "environment": {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": "/workspace",
            "LANG": "C.UTF-8",
        },
        "policyFile": "~/.local/state/sandboxkit/test/local-egress-policy.json",
    }


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"workdirSizeMiB": 0}, "sandboxkit:local.workdirSizeMiB"),
        ({"maxProcesses": 2}, "sandboxkit:local.maxProcesses"),
        ({"proxyPort": 80}, "sandboxkit:local.proxyPort"),
        ({"resolver": "dns.example.com"}, "sandboxkit:local.resolver"),
        ({"resolver": "9.9.9.9:0"}, "sandboxkit:local.resolver"),
        ({"environment": {"HTTPS_PROXY": "x"}}, "sandboxkit:local.environment"),
        ({"environment": {"A-B": "x"}}, "sandboxkit:local.environment"),
        ({"workdir": 1}, "sandboxkit:local.workdir"),
        # newcomer F14: these were accepted, the audit trail discarded or a system file appended.
        ({"auditLog": "/dev/null"}, "sandboxkit:local.auditLog"),
        ({"auditLog": "/etc/passwd"}, "sandboxkit:local.auditLog"),
        ({"auditLog": "/var/tmp/../../usr/lib/x.jsonl"}, "sandboxkit:local.auditLog"),
        ({"auditLog": "/var/log/sandboxkit/"}, "sandboxkit:local.auditLog"),
    ],
)
def test_bad_settings_name_their_key(settings, key):
    values = {"environment": "dev", "targets": ["local"], "local": settings}
    with pytest.raises(ConfigError) as caught:
        load_stack(ConfigSource(values=values), "test")
    assert caught.value.keys[0].startswith(key)


def test_a_credential_in_the_environment_exits_2_without_its_value():
    # newcomer F13: these reached the sandbox, preview and check exiting 0.
    environment = {
        "GITHUB_TOKEN": "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
        "password": "hunter2hunter2",
        "FOO": "AKIAIOSFODNN7EXAMPLE",
        "LOG_LEVEL": "debug",
    }
    values = {"environment": "prod", "targets": ["local"], "local": {"environment": environment}}
    with pytest.raises(ConfigError) as caught:
        load_stack(ConfigSource(values=values), "test")
    problems = caught.value.problems
    assert [p.key for p in problems] == [
        "sandboxkit:local.environment.GITHUB_TOKEN",
        "sandboxkit:local.environment.password",
        "sandboxkit:local.environment.FOO",
    ]
    shown = "\n".join(str(p) for p in problems)
    assert "ghp_" not in shown and "hunter2" not in shown and "AKIA" not in shown
    assert "no credential" in problems[0].expected


def test_a_secret_in_the_environment_exits_2_without_its_value():
    values = {
        "environment": "dev",
        "targets": ["local"],
        "local": {"environment": {"API": "s3cr3t-text"}},
    }
    source = ConfigSource(values=values, secret_paths=frozenset({"local.environment.API"}))
    with pytest.raises(ConfigError) as caught:
        load_stack(source, "test")
    assert [p.key for p in caught.value.problems] == ["sandboxkit:local.environment.API"]
    assert "s3cr3t" not in str(caught.value.problems[0])


def test_one_shot_fields_set_explicitly_must_be_acknowledged():
    values = {"environment": "dev", "targets": ["local"], "profile": {"pool": {"ready": 1}}}
    with pytest.raises(ConfigError) as caught:
        load_stack(ConfigSource(values=values), "test")
    assert any("pool.ready" in key for key in caught.value.keys)
    values["local"] = {"unenforced": ["pool.ready"]}
    assert load_stack(ConfigSource(values=values), "test").targets == ("local",)


@pytest.mark.parametrize(
    ("egress", "connect", "resolve"),
    [
        ({"mode": "deny"}, [], []),
        (
            ALLOWLIST,
            [("pypi.org", "exact", "name-l7"), ("pythonhosted.org", "below", "name-l7")],
            [("pypi.org", "exact"), ("pythonhosted.org", "below")],
        ),
        (
            {"mode": "open"},
            [
                ("*", "any", "name-l7"),
                ("0.0.0.0/0", "exact", "address"),
                ("::/0", "exact", "address"),
            ],
            [("*", "any")],
        ),
    ],
)
def test_the_reader_reads_the_rendered_policy(engine, egress, connect, resolve):
    resources = build_target(engine, "local", {}, {"egress": egress})
    views = [ResourceView.of(r.type, r.name, r.inputs) for r in resources]
    effective = read_egress(views)
    assert [(g.host, g.scope, g.enforced) for g in effective.connect] == connect
    assert [(g.host, g.scope) for g in effective.resolve] == resolve
    assert {g.basis for g in (*effective.connect, *effective.resolve)} <= {"kit-code"}


def test_the_reader_refuses_a_policy_it_cannot_read():
    view = ResourceView.of(EGRESS_GATEWAY_POLICY, "p", {"mode": "everything"})
    with pytest.raises(ValueError, match="mode 'everything'"):
        read_egress([view])


def test_explain_egress_shows_no_difference(tmp_path):
    project = make_project(tmp_path, {"local": STACK})
    (explained,) = explain_stack(render_stack(project, "local"))
    assert explained.differences == ()


def _client_hello(name: str | None) -> bytes:
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    context = ssl.create_default_context()
    if name is None:
        context.check_hostname = False
    tls = context.wrap_bio(incoming, outgoing, server_hostname=name)
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def test_server_name_reads_a_real_client_hello():
    assert server_name(_client_hello("files.pythonhosted.org")) == "files.pythonhosted.org"
    assert server_name(_client_hello(None)) is None
    hello = _client_hello("pypi.org")
    for cut in (10, 50, len(hello) - 1):
        with pytest.raises(ValueError):
            server_name(hello[:cut])
    with pytest.raises(ValueError, match="not a TLS ClientHello"):
        server_name(b"GET / HTTP/1.1\r\n\r\n")


@pytest.mark.parametrize(
    ("address", "refused"),
    [
        ("151.101.0.223", False),
        ("127.0.0.1", True),
        ("10.1.2.3", True),
        ("169.254.169.254", True),
        ("::ffff:151.101.0.223", True),
        ("8.8.8.8", True),
        ("2606:4700::1111", False),
    ],
)
def test_resolved_answers_are_judged_as_addresses(address, refused):
    from ipaddress import ip_address

    assert (answer_refusal(ip_address(address)) is not None) is refused


def test_the_audit_log_rotates_and_keeps_retention_days(tmp_path):
    path = tmp_path / "audit.jsonl"
    today = datetime.now(UTC).date()
    for age in (1, 5, 40):
        (tmp_path / f"audit.jsonl.{today - timedelta(days=age)}").write_text("{}\n")
    path.write_text('{"event": "run"}\n')
    yesterday = (datetime.now(UTC) - timedelta(days=1)).timestamp()
    os.utime(path, (yesterday, yesterday))
    log = AuditLog(path, 30)
    log.write({"event": "run", "exit": 0})
    log.close()
    rotated = sorted(p.name for p in tmp_path.glob("audit.jsonl.*"))
    assert f"audit.jsonl.{today - timedelta(days=40)}" not in rotated
    assert f"audit.jsonl.{today - timedelta(days=5)}" in rotated
    (line,) = path.read_text().splitlines()
    assert json.loads(line)["exit"] == 0


def test_the_audit_log_is_never_a_file_the_kit_did_not_write(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("not json\n")
    (tmp_path / "null").symlink_to("/dev/null")
    os.mkfifo(tmp_path / "pipe")
    for path, expected in (
        (victim, "JSON-lines audit logs"),
        (tmp_path / "null", "outside the system's folders"),
        (tmp_path / "pipe", "a regular file"),
    ):
        with pytest.raises(ConfigError) as caught:
            AuditLog(path, 30)
        [problem] = caught.value.problems
        assert (problem.key, problem.value) == ("sandboxkit:local.auditLog", str(path))
        assert expected in problem.expected
    assert victim.read_text() == "not json\n"
    kept = tmp_path / "kept.jsonl"
    kept.write_text('{"event": "run"}\n')
    AuditLog(kept, 30).close()


def test_run_refuses_an_audit_log_that_is_another_file(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("not json\n")
    stack = STACK + f"  sandboxkit:local:\n    auditLog: {victim}\n"
    project = make_project(tmp_path, {"local": stack})
    ran = invoke_cli("run", "--stack", "local", "--", "/bin/true", cwd=project)
    assert ran.returncode == 2 and "sandboxkit:local.auditLog" in ran.stderr
    assert victim.read_text() == "not json\n"


def test_run_exits_with_the_commands_code_and_names_limits(tmp_path):
    project = make_project(tmp_path, {"local": STACK, "other": OTHER})
    state = {"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path)}
    assert (
        invoke_cli(
            "run", "--stack", "local", "--", "/bin/sh", "-c", "exit 7", cwd=project, env=state
        ).returncode
        == 7
    )
    ran = invoke_cli("run", "--stack", "other", "--", "/bin/true", cwd=project, env=state)
    assert ran.returncode == 2 and "sandboxkit:targets" in ran.stderr
    ran = invoke_cli(
        "run",
        "--stack",
        "local",
        "--workdir",
        str(tmp_path / "none"),
        "--",
        "/bin/true",
        cwd=project,
        env=state,
    )
    assert ran.returncode == 2 and "--workdir" in ran.stderr


def test_verify_shows_no_difference_against_a_fake_internet():
    names = {"pypi.org": "151.101.0.223", "pythonhosted.org": "151.101.64.223"}
    egress = {
        "mode": "allowlist",
        "allow": ["pypi.org:443", "*.pythonhosted.org:443", "151.101.0.223:8443"],
    }
    with FakeInternet(names) as internet:
        for profile in (egress, {"mode": "deny"}):
            plan = plan_of(profile)
            plan["resolver"] = internet.resolver
            observations = verify(plan, sockets=internet.sockets)
            assert [o for o in observations if o.differs] == []
            kinds = {o.kind for o in observations}
            assert {"metadata", "metadata-nat64", "resolver"} <= kinds
        admitted = {(o.host, o.port, o.protocol) for o in observations if o.observed}
    assert admitted == set()


def test_verify_asks_explains_probes_in_their_protocols():
    # The same list --explain-egress asks (host, port, protocol, kind), then the endpoints; an
    # HTTP entry is asked over HTTP, each name entry once more as plain TCP, which is refused.
    names = {"pypi.org": "151.101.0.223", "example.org": "151.101.64.223"}
    plan = plan_of({"mode": "allowlist", "allow": ["pypi.org:443", "example.org:80"]})
    explained = [(p.host, p.port, p.kind, p.protocol) for p in contract_probes(plan["contract"])]
    asked = [(h, port, kind, protocol) for h, port, kind, protocol, _ in probes_of(plan)]
    assert asked[: len(explained)] == explained
    assert {kind for *_, kind, _ in asked[len(explained) :]} == {"resolver"}
    with FakeInternet(names) as internet:
        plan["resolver"] = internet.resolver
        observations = verify(plan, sockets=internet.sockets)
        http = internet.first_bytes("151.101.64.223", 80)
    assert [o for o in observations if o.differs] == []
    assert {(o.host, o.port, o.protocol) for o in observations if o.observed} == {
        ("pypi.org", 443, "tls"),
        ("example.org", 80, "http"),
    }
    plain = {(o.host, o.port, o.observed) for o in observations if o.kind == "plain-tcp"}
    assert plain == {("pypi.org", 443, False), ("example.org", 80, False)}
    assert [first.split(b"\r\n")[:2] for first in http] == [
        [b"GET / HTTP/1.1", b"Host: example.org"]
    ]


def test_verify_reports_a_difference_when_the_gateway_is_wider(monkeypatch):
    from sandboxkit.local.gateway import Gateway

    with FakeInternet({"pypi.org": "151.101.0.223"}) as internet:
        allow = {"mode": "allowlist", "allow": ["pypi.org:443"]}
        plan = plan_of(allow)
        plan["resolver"] = internet.resolver
        monkeypatch.setattr(Gateway, "_admitted", lambda self, host, port, protocol: True)
        observations = verify(plan, sockets=internet.sockets)
    # Names the contract may not resolve stay unreachable (the gateway resolves only those):
    # the wider admission shows on the listed name's other port.
    assert {(o.host, o.port, o.kind) for o in observations if o.differs} == {
        ("pypi.org", 8443, "other-port")
    }


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_verify_shows_no_difference_for_the_shipped_stacks(stack):
    from sandboxkit.config import load_stack_file

    plan = load_stack_file(Path(__file__).resolve().parents[2], stack).plans["local"]
    names = {"pypi.org": "151.101.0.223", "pythonhosted.org": "151.101.64.223"}
    with FakeInternet(names) as internet:
        plan["resolver"] = internet.resolver
        observations = verify(plan, sockets=internet.sockets)
    assert [o for o in observations if o.differs] == []
    reached = {(o.host, o.port) for o in observations if o.observed}
    assert reached == {(h, p) for h, p in REACHED[stack]}


# What each shipped stack's sandbox reaches of the fake internet: its entries' probes only.
REACHED = {
    "dev": [
        ("sbx-probe.pythonhosted.org", 443),
        ("sbx-probe-2.sbx-probe.pythonhosted.org", 443),
        ("pypi.org", 443),
    ],
    "staging": [("pypi.org", 443), ("files.pythonhosted.org", 443)],
    "prod": [],
}
