"""The local target's escape suite: each attempt a sandboxed process makes is contained, and
each shows in the run's audit records (the egress decision, or the run's exit and limits).

Every sandbox here really runs (bubblewrap, seccomp, cgroups); traffic goes only to loopback
and to the fake internet, a network namespace the test makes (``internet.FakeInternet``).
"""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from internet import FakeInternet

from sandboxkit.config import ConfigSource, load_stack
from sandboxkit.local.plan import LocalPlan
from sandboxkit.local.runner import AuditLog, RunResult, run_sandbox

PYPI = "151.101.0.223"
FILES = "151.101.64.223"
# Names the fake resolver answers: two allowed hosts, and allowed names that answer addresses
# a sandbox must never reach (DNS rebinding).
NAMES = {
    "pypi.org": PYPI,
    "files.pythonhosted.org": FILES,
    "loopback.rebind.example.com": "127.0.0.1",
    "metadata.rebind.example.com": "169.254.169.254",
    "example.org": "93.184.215.14",
}
ALLOW = ["pypi.org:443", "files.pythonhosted.org:80", "*.rebind.example.com:443"]
SECRET = "sbx-escape-secret-5f2a"


def plan_of(egress: Mapping[str, Any], **limits: int) -> LocalPlan:
    values = {
        "environment": "dev",
        "targets": ["local"],
        "profile": {"egress": dict(egress), "limits": {"memoryMiB": 256, **limits}},
        "local": {"maxProcesses": 64, "workdirSizeMiB": 16, "tmpSizeMiB": 16},
    }
    plan: LocalPlan = load_stack(ConfigSource(values=values), "escape").plans["local"]
    return plan


@pytest.fixture(scope="module")
def internet() -> Iterator[FakeInternet]:
    with FakeInternet(NAMES) as net:
        yield net


@pytest.fixture
def audit(tmp_path: Path) -> Iterator[tuple[AuditLog, Path]]:
    path = tmp_path / "audit.jsonl"
    log = AuditLog(path, 30)
    yield log, path
    log.close()


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def python(code: str) -> list[str]:
    return ["/usr/bin/python3", "-c", code]


def run_in(
    plan: LocalPlan, command: list[str], internet: FakeInternet, audit: AuditLog
) -> RunResult:
    return run_sandbox(
        {**plan, "resolver": internet.resolver}, command, audit=audit, sockets=internet.sockets
    )


ALLOWLIST = {"mode": "allowlist", "allow": ALLOW}

# A client inside the sandbox: CONNECT through the gateway, then a TLS ClientHello naming
# ``sni`` (or plain bytes); prints the gateway's status line.
TUNNEL = """
import socket, ssl, sys
host, port, sni = sys.argv[1], int(sys.argv[2]), sys.argv[3]
s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
s.sendall(f"CONNECT {host}:{port} HTTP/1.1\\r\\nHost: {host}:{port}\\r\\n\\r\\n".encode())
status = s.recv(4096).split(b"\\r\\n")[0].decode()
print(status)
if " 200 " in status:
    if sni == "-":
        s.sendall(b"SSH-2.0-OpenSSH_9.2\\r\\n")
    else:
        ctx = ssl.create_default_context()
        try:
            ctx.wrap_socket(s, server_hostname=sni).close()
        except (ssl.SSLError, OSError) as exc:
            print("tls", type(exc).__name__)
"""


def tunnel(host: str, port: int, sni: str) -> list[str]:
    return ["/usr/bin/python3", "-c", TUNNEL, host, str(port), sni]


def test_an_allowed_name_reaches_its_address_with_its_own_server_name(internet, audit):
    log, path = audit
    result = run_in(plan_of(ALLOWLIST), tunnel("pypi.org", 443, "pypi.org"), internet, log)
    assert result.exit_code == 0
    hellos = internet.first_bytes(PYPI, 443)
    assert hellos and hellos[-1][:1] == b"\x16"
    assert b"pypi.org" in hellos[-1]
    egress = [r for r in records(path) if r["event"] == "egress"]
    assert [(r["host"], r["port"], r["protocol"], r["admitted"], r["address"]) for r in egress] == [
        ("pypi.org", 443, "tls", True, PYPI)
    ]


@pytest.mark.parametrize(
    "case",
    [
        ("pypi.org", 443, "example.org", "tls"),  # another server name inside the tunnel
        ("pypi.org", 443, "-", "tcp"),  # plain TCP to a name entry
        ("pypi.org", 8443, "pypi.org", "tcp"),  # another port
        ("example.org", 443, "example.org", "tcp"),  # not listed
        ("dns.google", 443, "dns.google", "tcp"),  # DNS over HTTPS
        ("169.254.169.254", 80, "-", "tcp"),  # the metadata endpoint
        ("[::ffff:169.254.169.254]", 80, "-", "tcp"),
        ("[64:ff9b::a9fe:a9fe]", 80, "-", "tcp"),
        ("127.0.0.1", 22, "-", "tcp"),  # a host service
    ],
)
def test_what_the_contract_refuses_is_refused_and_recorded(internet, audit, case):
    host, port, sni, protocol = case
    log, path = audit
    before = {key: len(value) for key, value in internet.received.items()}
    run_in(plan_of(ALLOWLIST), tunnel(host, port, sni), internet, log)
    assert {key: len(value) for key, value in internet.received.items()} == before
    egress = [r for r in records(path) if r["event"] == "egress"]
    assert len(egress) == 1 and egress[0]["admitted"] is False
    assert egress[0]["host"] == host.strip("[]") and egress[0]["protocol"] == protocol


@pytest.mark.parametrize("name", ["loopback.rebind.example.com", "metadata.rebind.example.com"])
def test_an_allowed_name_answering_a_non_public_address_is_refused(internet, audit, name):
    log, path = audit
    result = run_in(plan_of(ALLOWLIST), tunnel(name, 443, name), internet, log)
    assert result.exit_code == 0
    (decision,) = [r for r in records(path) if r["event"] == "egress"]
    assert decision["admitted"] is False
    assert decision["reason"].startswith(f"{name} resolved to a refused address: ")
    assert decision["address"] == ""


def test_plain_http_needs_its_host_header_to_name_the_request_host(internet, audit):
    log, path = audit
    code = """
import socket
for host in ("files.pythonhosted.org", "example.org"):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=5)
    url = "http://files.pythonhosted.org/simple/"
    s.sendall(f"GET {url} HTTP/1.1\\r\\nHost: {host}\\r\\n\\r\\n".encode())
    print(s.recv(4096).split(b"\\r\\n")[0].decode())
"""
    run_in(plan_of(ALLOWLIST), python(code), internet, log)
    (sent,) = internet.first_bytes(FILES, 80)
    assert sent.startswith(b"GET /simple/ HTTP/1.1\r\n")
    assert b"Connection: close" in sent
    decisions = [(r["admitted"], r["protocol"]) for r in records(path) if r["event"] == "egress"]
    assert decisions == [(True, "http"), (False, "http")]


# Each attempt below prints one word: what it could do. A contained attempt prints "refused".
DIRECT = """
import socket, sys
family, address = {"4": (socket.AF_INET, "151.101.0.223"), "6": (socket.AF_INET6, "2606:4700::1"),
                   "mapped": (socket.AF_INET6, "::ffff:151.101.0.223")}[sys.argv[1]]
kind = {"tcp": socket.SOCK_STREAM, "udp": socket.SOCK_DGRAM}[sys.argv[2]]
try:
    s = socket.socket(family, kind)
    s.connect((address, 443))
    # A QUIC Initial's first byte (long header): a datagram only fails when it is sent.
    s.send(b"\\xc0" + bytes(1199))
    print("connected")
except OSError:
    print("refused")
"""


@pytest.mark.parametrize("mode", ["deny", "allowlist"])
@pytest.mark.parametrize(
    "attempt", [f"{form} {kind}" for form in ("4", "6", "mapped") for kind in ("tcp", "udp")]
)
def test_no_address_is_reachable_directly(internet, audit, capfd, mode, attempt):
    """Neither TCP nor UDP (QUIC on 443) reaches an address, by IPv4, IPv6 or a mapped form:
    the sandbox's namespace has no route out (the local reader grants no UDP)."""
    log, _ = audit
    egress = {"mode": "deny"} if mode == "deny" else ALLOWLIST
    result = run_in(plan_of(egress), [*python(DIRECT), *attempt.split()], internet, log)
    assert result.exit_code == 0
    assert capfd.readouterr().out.strip().splitlines()[-1] == "refused"


def sandboxed_output(plan: LocalPlan, code: str, capfd: pytest.CaptureFixture[str]) -> str:
    result = run_sandbox(plan, python(code))
    out = capfd.readouterr().out.strip()
    assert result.exit_code == 0, out
    return out


DNS = """
import socket
answers = []
for kind in (socket.SOCK_DGRAM, socket.SOCK_STREAM):
    s = socket.socket(socket.AF_INET, kind)
    s.settimeout(1)
    try:
        s.connect(("8.8.8.8", 53)); s.send(b"\\x00" * 12); s.recv(512); answers.append("answered")
    except OSError:
        answers.append("refused")
print(" ".join(answers))
"""


def test_dns_to_any_resolver_goes_nowhere(capfd):
    assert sandboxed_output(plan_of(ALLOWLIST), DNS, capfd) == "refused refused"


def _host_addresses() -> list[str]:
    """The host's own addresses besides loopback (``ip -j addr``)."""
    shown = json.loads(subprocess.run(["ip", "-j", "addr"], capture_output=True, check=True).stdout)
    return [
        a["local"]
        for link in shown
        if link["ifname"] != "lo"
        for a in link.get("addr_info", [])
        if a.get("scope") == "global"
    ]


@pytest.mark.parametrize("mode", ["deny", "allowlist"])
def test_host_services_are_out_of_reach(capfd, mode):
    listeners = []
    for family, address in ((socket.AF_INET, "0.0.0.0"), (socket.AF_INET6, "::")):
        listener = socket.socket(family)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((address, 0))
        listener.listen()
        listeners.append(listener)
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(b"\0sandboxkit-escape-test")
    abstract.listen()
    port4, port6 = (listener.getsockname()[1] for listener in listeners)
    targets = [("127.0.0.1", port4), ("::1", port6)] + [
        (a, port6 if ":" in a else port4) for a in _host_addresses()
    ]
    code = f"""
import socket
found = []
for host, port in {targets!r}:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        socket.socket(family).connect((host, port)); found.append("connected")
    except OSError:
        found.append("refused")
try:
    socket.socket(socket.AF_UNIX).connect(b"\\0sandboxkit-escape-test"); found.append("connected")
except OSError:
    found.append("refused")
print(" ".join(found))
"""
    egress = {"mode": "deny"} if mode == "deny" else ALLOWLIST
    try:
        out = sandboxed_output(plan_of(egress), code, capfd)
    finally:
        for listener in (*listeners, abstract):
            listener.close()
    assert out == " ".join(["refused"] * (len(targets) + 1))


def test_other_processes_and_the_gateway_are_invisible(capfd, monkeypatch):
    monkeypatch.setenv("SBX_ESCAPE_SECRET", SECRET)
    code = f"""
import os
seen = []
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        seen.append(open(f"/proc/{{pid}}/environ", "rb").read())
    except OSError:
        pass
print("leaked" if any(b"{SECRET}" in e for e in seen) else "refused", len(os.listdir("/proc")) < 80)
"""
    assert sandboxed_output(plan_of(ALLOWLIST), code, capfd) == "refused True"


WRITES = """
import os
found = []
for path in ("/etc/sbx", "/usr/sbx", "/sbx", "/workspace/ok", "/tmp/ok"):
    try:
        open(path, "w").write("x"); found.append("wrote")
    except OSError:
        found.append("refused")
print(" ".join(found))
"""


def test_only_the_workdir_and_tmp_are_writable(capfd):
    out = sandboxed_output(plan_of({"mode": "deny"}), WRITES, capfd)
    assert out == "refused refused refused wrote wrote"


SYSCALLS = """
import ctypes, errno, os, subprocess
libc = ctypes.CDLL(None, use_errno=True)
found = []
# mount, unshare(CLONE_NEWUSER), ptrace(PTRACE_TRACEME), keyctl, bpf, setns, perf_event_open
calls = ((165, (b"x", b"/tmp", b"tmpfs", 0, 0)), (272, (0x10000000,)), (101, (0, 0, 0, 0)),
         (250, (0,)), (321, (0, 0, 0)), (308, (0, 0)), (298, (0, 0, 0, 0, 0)))
for number, args in calls:
    ctypes.set_errno(0)
    refused = libc.syscall(number, *args) == -1 and ctypes.get_errno() == errno.EPERM
    found.append("refused" if refused else "allowed")
found.append(str(os.geteuid()))
su = subprocess.run(["/usr/bin/su", "-c", "id -u", "root"], capture_output=True)
found.append(str(su.returncode != 0))
print(" ".join(found))
"""


def test_privileged_syscalls_and_setuid_binaries_are_refused(capfd):
    out = sandboxed_output(plan_of({"mode": "deny"}), SYSCALLS, capfd)
    assert out == " ".join(["refused"] * 7 + ["65534", "True"])


def test_a_fork_bomb_meets_the_process_cap(audit):
    log, path = audit
    plan = plan_of({"mode": "deny"}, execTimeoutSeconds=10)
    result = run_sandbox(plan, ["/bin/sh", "-c", "b() { b | b & }; b; sleep 1; exit 0"], audit=log)
    assert "sandboxkit:local.maxProcesses" in result.limits_hit
    (run,) = [r for r in records(path) if r["event"] == "run"]
    assert "sandboxkit:local.maxProcesses" in run["limitsHit"]


def test_a_memory_hog_is_killed_at_the_memory_limit(audit):
    log, path = audit
    result = run_sandbox(
        plan_of({"mode": "deny"}), python("x = bytearray(400 * 1024 * 1024)"), audit=log
    )
    assert (result.exit_code, result.limits_hit) == (137, ["limits.memoryMiB"])
    (run,) = [r for r in records(path) if r["event"] == "run"]
    assert (run["exit"], run["limitsHit"], run["peakMemoryMiB"]) == (137, ["limits.memoryMiB"], 256)


def test_sleeping_past_the_timeout_kills_the_whole_sandbox(audit):
    log, path = audit
    plan = plan_of({"mode": "deny"}, execTimeoutSeconds=1)
    result = run_sandbox(plan, ["/bin/sh", "-c", "sleep 30 & sleep 30"], audit=log)
    assert (result.exit_code, result.limits_hit) == (137, ["limits.execTimeoutSeconds"])
    assert 1 <= result.wall_seconds < 5
    (run,) = [r for r in records(path) if r["event"] == "run"]
    assert run["limitsHit"] == ["limits.execTimeoutSeconds"]


def test_exit_codes_are_the_commands(tmp_path):
    plan = plan_of({"mode": "deny"})
    assert run_sandbox(plan, ["/bin/sh", "-c", "exit 3"]).exit_code == 3
    assert run_sandbox(plan, ["no-such-command"]).exit_code == 127
    assert run_sandbox(plan, ["/etc/passwd"]).exit_code == 126
    assert run_sandbox(plan, ["/bin/sh", "-c", "kill -TERM $$"]).exit_code == 143
    (tmp_path / "seed.txt").write_text("seeded")
    assert (
        run_sandbox(
            plan, ["/bin/sh", "-c", 'test "$(cat seed.txt)" = seeded'], seed=tmp_path
        ).exit_code
        == 0
    )


def test_the_environment_is_only_what_the_profile_passes(capfd, monkeypatch):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    out = sandboxed_output(plan_of(ALLOWLIST), "import os; print(sorted(os.environ))", capfd)
    assert out == str(
        sorted(
            [
                "HOME",
                "LANG",
                "PATH",
                "PWD",
                "HTTPS_PROXY",
                "HTTP_PROXY",
                "https_proxy",
                "http_proxy",
            ]
        )
    )


def test_the_run_record_names_stack_argv_exit_wall_and_memory(audit):
    log, path = audit
    run_sandbox(plan_of({"mode": "deny"}), ["/bin/true"], audit=log, stack="escape")
    (run,) = records(path)
    assert set(run) == {
        "event",
        "time",
        "stack",
        "argv",
        "exit",
        "wallSeconds",
        "peakMemoryMiB",
        "limitsHit",
    }
    assert (run["stack"], run["argv"], run["exit"], run["limitsHit"]) == (
        "escape",
        ["/bin/true"],
        0,
        [],
    )
