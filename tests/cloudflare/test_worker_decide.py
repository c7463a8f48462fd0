"""The Python side of the decider: the Worker's own egress code answers, run in workerd."""

from __future__ import annotations

import json
import os
import platform
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from sandboxkit.cloudflare import decide
from sandboxkit.cloudflare.decide import (
    Interception,
    WorkerDecideError,
    WorkerDecider,
    WorkerProbe,
    WorkerSetupError,
)

COMPONENTS = Path(__file__).resolve().parents[2] / "components"

ALLOWLIST = json.dumps(
    {
        "mode": "allowlist",
        "allow": [
            {"host": "pythonhosted.org", "port": 443, "wildcard": True},
            {"host": "github.com", "port": 80, "wildcard": False},
        ],
    }
)


def dropped(host: str, port: int, shown: str | None = None) -> WorkerProbe:
    where = shown or f"{host}:{port}"
    reason = f"no interception for {where}; enableInternet false drops it"
    return WorkerProbe(host, port, False, "platform", reason, None)


def test_probes_take_the_platform_stage_then_the_gateway(worker_decider: WorkerDecider) -> None:
    probes = [
        ("a.b.c.pythonhosted.org", 443),
        ("pythonhosted.org", 443),
        ("github.com", 80),
        ("github.com", 443),
        ("GitHub.com.", 80),
        ("169.254.169.254", 80),
        ("64:ff9b::a9fe:a9fe", 80),
        ("github.com", 8443),
    ]
    assert worker_decider.probe(ALLOWLIST, probes) == [
        WorkerProbe(
            "a.b.c.pythonhosted.org",
            443,
            True,
            "gateway",
            "a.b.c.pythonhosted.org:443 matches *.pythonhosted.org:443",
            'interceptOutboundHttps("*.pythonhosted.org")',
        ),
        dropped("pythonhosted.org", 443),
        WorkerProbe(
            "github.com",
            80,
            True,
            "gateway",
            "github.com:80 matches github.com:80",
            'interceptOutboundHttp("github.com")',
        ),
        dropped("github.com", 443),
        WorkerProbe(
            "GitHub.com.",
            80,
            True,
            "gateway",
            "github.com:80 matches github.com:80",
            'interceptOutboundHttp("github.com")',
        ),
        dropped("169.254.169.254", 80),
        dropped("64:ff9b::a9fe:a9fe", 80, "[64:ff9b::a9fe:a9fe]:80"),
        WorkerProbe(
            "github.com",
            8443,
            False,
            "platform",
            "port 8443 is never intercepted (only 80 and 443 are); enableInternet false drops it",
            None,
        ),
    ]


def test_open_reaches_the_gateway_which_refuses_non_public(worker_decider: WorkerDecider) -> None:
    [metadata, nat64, public] = worker_decider.probe(
        '{"mode":"open"}',
        [("169.254.169.254", 80), ("[64:ff9b::a9fe:a9fe]", 443), ("pypi.org", 443)],
    )
    assert (metadata.admitted, metadata.stage, metadata.reason) == (
        False,
        "gateway",
        "169.254.169.254:80 is not a public address (169.254.0.0/16)",
    )
    assert (nat64.admitted, nat64.reason) == (
        False,
        "[64:ff9b::a9fe:a9fe]:443 is not a public address (::/8)",
    )
    assert (public.admitted, public.interception) == (True, 'interceptOutboundHttps("*")')


def test_the_gateway_alone_decides_urls(worker_decider: WorkerDecider) -> None:
    urls = ["https://pythonhosted.org/", "https://a.b.pythonhosted.org/", "http://github.com/"]
    assert worker_decider.decide(ALLOWLIST, urls) == [
        (False, "pythonhosted.org:443 is not in the allowlist"),
        (True, "a.b.pythonhosted.org:443 matches *.pythonhosted.org:443"),
        (True, "github.com:80 matches github.com:80"),
    ]


def test_interceptions_per_mode(worker_decider: WorkerDecider) -> None:
    assert worker_decider.interceptions(ALLOWLIST) == [
        Interception("interceptOutboundHttps", "*.pythonhosted.org"),
        Interception("interceptOutboundHttp", "github.com"),
    ]
    assert worker_decider.interceptions('{"mode":"deny","allow":[]}') == []
    assert worker_decider.interceptions('{"mode":"open"}') == [
        Interception("interceptAllOutboundHttp", None),
        Interception("interceptOutboundHttps", "*"),
    ]


def test_the_configuration_loads_every_module_the_harness_may_import() -> None:
    config = decide.workerd_config(decide.WORKER_DIR)
    modules = [line.strip() for line in config.splitlines() if "esModule = embed" in line]
    assert modules == [
        '(name = "test-support/decide-harness.js", '
        'esModule = embed "/test-support/decide-harness.js"),',
        '(name = "src/index.js", esModule = embed "/src/index.js"),',
        '(name = "test-support/platform.js", esModule = embed "/test-support/platform.js")',
    ]
    assert 'compatibilityDate = "2026-07-01",' in config
    assert 'compatibilityFlags = ["global_fetch_strictly_public"],' in config
    assert 'globalOutbound = "refuse",' in config


def test_without_npm_dependencies_it_names_the_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # The Worker's package without its node_modules: npm ci in that folder installs workerd.
    for name in ("package.json", "package-lock.json", decide.HARNESS_MODULE):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(decide.WORKER_DIR / name, tmp_path / name)
    monkeypatch.setenv(decide.WORKER_DIR_ENV, str(tmp_path))
    with pytest.raises(WorkerSetupError) as caught, WorkerDecider():
        pass
    package = decide.WORKERD_PACKAGES[(sys.platform, platform.machine())]
    assert str(caught.value) == (
        f"workerd, which the Worker's npm dependencies install (no node_modules/@cloudflare/"
        f"{package}/bin/workerd in {tmp_path} (SANDBOXKIT_WORKER_DIR)): run "
        f"`npm ci --prefix {tmp_path}`"
    )


def test_an_empty_worker_folder_is_named_as_no_worker_package(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Issue 31 item 19: "run npm ci in <empty dir>" could not work: it holds no package.json.
    monkeypatch.setenv(decide.WORKER_DIR_ENV, str(tmp_path))
    with pytest.raises(WorkerSetupError) as caught, WorkerDecider():
        pass
    assert str(caught.value) == (
        f"the Cloudflare Worker's package: {tmp_path} (SANDBOXKIT_WORKER_DIR) holds no "
        f"package.json or test-support/decide-harness.js (expected a copy of the Worker's "
        f"whole folder, {decide.WORKER_DIR}): run `cp -R {decide.WORKER_DIR}/. {tmp_path} && "
        f"npm ci --prefix {tmp_path}`"
    )


def test_on_a_platform_workerd_does_not_build_for_it_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(decide.sys, "platform", "win32")
    monkeypatch.setattr(decide.platform, "machine", lambda: "AMD64")
    with pytest.raises(WorkerSetupError) as caught:
        decide.workerd_binary(decide.WORKER_DIR)
    assert str(caught.value) == (
        "workerd, which runs the Worker's egress code, has no build for win32 on AMD64; "
        "run the gate on Linux or macOS (x86-64 or arm64)"
    )


def test_outside_a_with_block_it_refuses() -> None:
    with pytest.raises(WorkerDecideError, match="is not running; use it in a with block"):
        WorkerDecider().interceptions('{"mode":"deny"}')


def test_a_process_that_stops_is_reported_with_its_output(tmp_path: Path) -> None:
    stops = tmp_path / "workerd"
    stops.write_text("#!/bin/sh\necho 'no such config' >&2\nexit 3\n", encoding="utf-8")
    stops.chmod(0o755)
    with WorkerDecider(workerd=stops) as stopped, pytest.raises(WorkerDecideError) as caught:
        stopped.interceptions('{"mode":"deny"}')
    assert str(caught.value) == "workerd exited with status 3: no such config"


def harness_folder(tmp_path: Path, harness: str) -> Path:
    """A Worker folder whose harness is ``harness``, beside the real Worker module."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "index.js").write_bytes(
        (decide.WORKER_DIR / "src" / "index.js").read_bytes()
    )
    (tmp_path / "test-support").mkdir()
    (tmp_path / decide.HARNESS_MODULE).write_text(harness, encoding="utf-8")
    return tmp_path


def test_an_error_answer_is_raised(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(decide.WORKER_DIR_ENV, str(harness_folder(tmp_path, REFUSING_HARNESS)))
    workerd = decide.workerd_binary(decide.WORKER_DIR)
    with WorkerDecider(workerd=workerd) as refusing, pytest.raises(WorkerDecideError) as caught:
        refusing.contract()
    assert str(caught.value) == "the decision harness refused the request: unknown op"


def test_code_that_throws_is_reported_with_what_workerd_printed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(decide.WORKER_DIR_ENV, str(harness_folder(tmp_path, THROWING_HARNESS)))
    workerd = decide.workerd_binary(decide.WORKER_DIR)
    with WorkerDecider(workerd=workerd) as throwing, pytest.raises(WorkerDecideError) as caught:
        throwing.contract()
    assert str(caught.value).startswith("the Worker's decision code failed (HTTP 500): ")
    assert "Error: the harness broke" in str(caught.value)


def test_the_error_is_kept_however_long_the_workerd_path(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Found in a worktree under a longer path: workerd's native stack line names its binary
    # once per frame, and the last 2,000 characters of its output were that line alone.
    monkeypatch.setenv(decide.WORKER_DIR_ENV, str(harness_folder(tmp_path, THROWING_HARNESS)))
    deep = tmp_path / ("d" * 200) / ("e" * 200)
    deep.mkdir(parents=True)
    (deep / "workerd").symlink_to(decide.workerd_binary(decide.WORKER_DIR))
    with (
        WorkerDecider(workerd=deep / "workerd") as throwing,
        pytest.raises(WorkerDecideError) as caught,
    ):
        throwing.contract()
    assert "Error: the harness broke" in str(caught.value)
    assert "workerd@" not in str(caught.value)


def test_the_decision_code_cannot_fetch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(decide.WORKER_DIR_ENV, str(harness_folder(tmp_path, FETCHING_HARNESS)))
    workerd = decide.workerd_binary(decide.WORKER_DIR)
    with WorkerDecider(workerd=workerd) as fetching:
        assert fetching.contract() == {"status": 599, "body": "decider outbound refused"}


REFUSING_HARNESS = """\
export default {
  fetch: () => Response.json({ error: "unknown op" }, { status: 400 }),
};
"""
THROWING_HARNESS = """\
export default {
  fetch() { throw new Error("the harness broke"); },
};
"""
FETCHING_HARNESS = """\
export default {
  async fetch() {
    const response = await fetch("https://pypi.org/simple/");
    return Response.json({ status: response.status, body: await response.text() });
  },
};
"""


def test_a_folder_that_is_not_the_workers_is_a_setup_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # workerd installed, but no decision harness beside it (a folder with node_modules only).
    package = decide.WORKERD_PACKAGES[(sys.platform, platform.machine())]
    binary = tmp_path / "node_modules" / "@cloudflare" / package / "bin" / "workerd"
    binary.parent.mkdir(parents=True)
    binary.symlink_to(decide.workerd_binary(decide.WORKER_DIR))
    monkeypatch.setenv(decide.WORKER_DIR_ENV, str(tmp_path))
    with pytest.raises(WorkerSetupError) as caught, WorkerDecider():
        pass
    assert str(caught.value) == (
        f"the Cloudflare Worker's package: {tmp_path} (SANDBOXKIT_WORKER_DIR) holds no "
        f"package.json or test-support/decide-harness.js (expected a copy of the Worker's "
        f"whole folder, {decide.WORKER_DIR}): run `cp -R {decide.WORKER_DIR}/. {tmp_path} && "
        f"npm ci --prefix {tmp_path}`"
    )
    for name in ("package.json", decide.HARNESS_MODULE):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(decide.WORKER_DIR / name, tmp_path / name)
    binary.unlink()
    binary.write_text("")
    with pytest.raises(WorkerSetupError) as caught:
        decide.workerd_binary(tmp_path)
    assert str(caught.value) == (
        f"workerd at {binary} is not executable: run `npm ci --prefix {tmp_path}`"
    )


def test_sigterm_ends_workerd_with_the_process_that_started_it(tmp_path: Path) -> None:
    # Python's default for SIGTERM skips atexit and with blocks; launch.exit_on_sigterm makes
    # it a SystemExit, so the decider's workerd and its configuration go with the process.
    script = (
        "import os, sys, time\n"
        "from sandboxkit.launch import exit_on_sigterm\n"
        "from sandboxkit.cloudflare.decide import WorkerDecider\n"
        "exit_on_sigterm()\n"
        "with WorkerDecider() as worker:\n"
        "    worker.contract()\n"
        "    print(worker._process.pid, worker._config.name, flush=True)\n"
        "    time.sleep(60)\n"
    )
    process = subprocess.Popen(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(COMPONENTS)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    pid, config = process.stdout.readline().split()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 128 + signal.SIGTERM
    assert not Path(f"/proc/{pid}").exists()
    assert not Path(config).exists()
