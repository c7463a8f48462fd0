"""Tests for the in-guest worker against a loopback stand-in for the control plane."""

from __future__ import annotations

import base64
import http.client
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sandboxkit.aws.worker import main as worker
from support import LoopbackHTTP

SESSION_ID = "sess_01HZX3Y7"
JOB_ID = "job_42"
JOB_PATH = f"/v1/jobs/{JOB_ID}"
RESULTS_PATH = f"/v1/jobs/{JOB_ID}/results"


class ControlPlane(LoopbackHTTP):
    """The loopback stand-in with the worker's job routes."""

    def job(self, *commands: list[str]) -> None:
        self.answer("GET", JOB_PATH, 200, {"jobId": JOB_ID, "commands": list(commands)})
        self.answer("POST", RESULTS_PATH, 204, b"")

    def posted_results(self) -> dict[str, Any]:
        posts = [r for r in self.requests if r.method == "POST"]
        assert len(posts) == 1
        report: dict[str, Any] = json.loads(posts[0].body)
        return report


@pytest.fixture
def plane() -> Iterator[ControlPlane]:
    with ControlPlane() as stand_in:
        yield stand_in


# An hour from the test run: the credentials below are alive unless a test says otherwise.
EXPIRES = int(time.time()) + 3600


def _credential(
    audience: str, *, job_id: str = JOB_ID, session_id: str = SESSION_ID, expires: int = EXPIRES
) -> str:
    """A credential of the launcher's shape; the MAC is opaque to the worker (it holds no key)."""
    claims = {
        "v": 1,
        "aud": audience,
        "jobId": job_id,
        "sessionId": session_id,
        "sandboxId": "sbx-0",
        "iat": expires - 3600,
        "exp": expires,
    }
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return f"sbxw1.{body}.MAC_DO_NOT_PRINT_7c1f"


def _config(plane: ControlPlane, **overrides: Any) -> worker.WorkerConfig:
    values: dict[str, Any] = {
        "session_id": SESSION_ID,
        "job_id": JOB_ID,
        "control_plane_url": plane.url,
        "credential": _credential(plane.url),
        "credential_expires_at": EXPIRES,
        "exec_timeout_seconds": 10,
    }
    values.update(overrides)
    return worker.WorkerConfig(**values)


def _payload(plane: ControlPlane, **overrides: Any) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "v": 2,
        "sessionId": SESSION_ID,
        "jobId": JOB_ID,
        "controlPlaneUrl": plane.url,
        "credential": _credential(plane.url),
        "execTimeoutSeconds": 10,
    }
    payload.update(overrides)
    return payload


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


def _run(plane: ControlPlane, **overrides: Any) -> tuple[int, Sleeps]:
    sleeps = Sleeps()
    status = worker.run_job(_config(plane, **overrides), backoff_seconds=0.5, sleep=sleeps)
    return status, sleeps


def _without_durations(report: dict[str, Any]) -> dict[str, Any]:
    for result in report["results"]:
        duration = result.pop("durationSeconds")
        assert isinstance(duration, float | int) and duration >= 0
    return report


# --- the happy path ----------------------------------------------------------------------------


def test_fetches_job_with_bearer_key_runs_commands_and_reports_exact_results(
    plane: ControlPlane,
) -> None:
    plane.job(
        ["sh", "-c", "printf 'out'; printf 'err' >&2; exit 3"],
        [sys.executable, "-c", "print('héllo')"],
    )

    status, sleeps = _run(plane)

    assert status == worker.EXIT_OK
    assert sleeps == []
    assert plane.calls() == [("GET", JOB_PATH), ("POST", RESULTS_PATH)]
    for request in plane.requests:
        assert request.headers["Authorization"] == f"Bearer {_credential(plane.url)}"
    assert plane.requests[1].headers["Content-Type"] == "application/json"
    common = {"timedOut": False, "error": None, "stdoutTruncated": False, "stderrTruncated": False}
    assert _without_durations(plane.posted_results()) == {
        "jobId": JOB_ID,
        "sessionId": SESSION_ID,
        "results": [
            {
                "argv": ["sh", "-c", "printf 'out'; printf 'err' >&2; exit 3"],
                "exitCode": 3,
                "stdout": "out",
                "stderr": "err",
                **common,
            },
            {
                "argv": [sys.executable, "-c", "print('héllo')"],
                "exitCode": 0,
                "stdout": "héllo\n",
                "stderr": "",
                **common,
            },
        ],
    }


def test_commands_get_a_minimal_environment_and_a_fresh_workdir(plane: ControlPlane) -> None:
    plane.job(["env"], ["sh", "-c", "pwd; ls -A | wc -l"])

    assert _run(plane)[0] == worker.EXIT_OK

    env_out, pwd_out = (r["stdout"] for r in plane.posted_results()["results"])
    env = dict(line.split("=", 1) for line in env_out.splitlines())
    assert set(env) == {"PATH", "HOME", "LANG", "SANDBOXKIT_SESSION_ID", "SANDBOXKIT_JOB_ID"}
    assert env["SANDBOXKIT_JOB_ID"] == JOB_ID
    workdir, entries = pwd_out.split()
    assert workdir == env["HOME"] and Path(workdir).name.startswith("sbx-job-")
    assert entries == "0"
    assert not Path(workdir).exists()  # removed after the job


def test_argv_is_not_interpreted_by_a_shell(plane: ControlPlane, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    plane.job(["echo", f"; touch {marker}", "$(id)"])

    assert _run(plane)[0] == worker.EXIT_OK

    assert plane.posted_results()["results"][0]["stdout"] == f"; touch {marker} $(id)\n"
    assert not marker.exists()


def test_unstartable_command_is_reported_and_the_job_goes_on(plane: ControlPlane) -> None:
    plane.job(["/nonexistent/tool"], ["true"])

    assert _run(plane)[0] == worker.EXIT_OK

    first, second = plane.posted_results()["results"]
    assert first["exitCode"] is None and first["error"].startswith("spawn failed: FileNotFound")
    assert second["exitCode"] == 0 and second["error"] is None


# --- timeouts and output bounds ----------------------------------------------------------------


def _dead(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")  # a zombie no longer runs; its reaper is outside this test


def test_timeout_kills_the_whole_process_group(plane: ControlPlane, tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    plane.job(
        ["sh", "-c", f"sleep 60 & echo $! > {pidfile}; echo started; wait"],
        ["echo", "next"],
    )
    started = time.monotonic()

    status, _ = _run(plane, exec_timeout_seconds=1)

    elapsed = time.monotonic() - started
    assert status == worker.EXIT_OK
    slow, following = plane.posted_results()["results"]
    assert slow["timedOut"] is True
    assert slow["exitCode"] == -9
    assert slow["stdout"] == "started\n"
    assert 1 <= slow["durationSeconds"] < 5
    assert elapsed < 10
    grandchild = int(pidfile.read_text())
    deadline = time.monotonic() + 2
    while not _dead(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _dead(grandchild), "the backgrounded grandchild survived the timeout"
    assert following == {**following, "exitCode": 0, "stdout": "next\n", "timedOut": False}


def test_leftover_background_processes_do_not_outlive_their_command(
    plane: ControlPlane, tmp_path: Path
) -> None:
    pidfile = tmp_path / "daemon.pid"
    plane.job(["sh", "-c", f"sleep 60 & echo $! > {pidfile}; echo done"])
    started = time.monotonic()

    assert _run(plane, exec_timeout_seconds=30)[0] == worker.EXIT_OK

    result = plane.posted_results()["results"][0]
    assert (result["exitCode"], result["timedOut"], result["stdout"]) == (0, False, "done\n")
    assert time.monotonic() - started < 5  # did not wait for the sleep holding stdout open
    assert _dead(int(pidfile.read_text()))


def test_output_is_capped_per_stream_and_marked_truncated(plane: ControlPlane) -> None:
    plane.job(
        [
            sys.executable,
            "-c",
            "import sys; sys.stdout.write('x' * 100000); sys.stderr.write('tail')",
        ]
    )

    assert _run(plane, output_limit_bytes=16)[0] == worker.EXIT_OK

    result = plane.posted_results()["results"][0]
    assert (result["stdout"], result["stdoutTruncated"]) == ("x" * 16, True)
    assert (result["stderr"], result["stderrTruncated"]) == ("tail", False)
    assert result["exitCode"] == 0  # the child was drained, not blocked on a full pipe


def test_output_exactly_at_the_limit_is_not_truncated(plane: ControlPlane) -> None:
    plane.job(["printf", "0123456789abcdef"])

    assert _run(plane, output_limit_bytes=16)[0] == worker.EXIT_OK

    result = plane.posted_results()["results"][0]
    assert (result["stdout"], result["stdoutTruncated"]) == ("0123456789abcdef", False)


# --- control-plane failures --------------------------------------------------------------------


@pytest.mark.parametrize("status", [401, 403, 404])
def test_client_errors_on_fetch_exit_nonzero_without_retry(
    plane: ControlPlane, status: int
) -> None:
    plane.answer("GET", JOB_PATH, status, {"error": "nope"})

    code, sleeps = _run(plane)

    assert code == worker.EXIT_CONTROL_PLANE
    assert plane.calls() == [("GET", JOB_PATH)]
    assert sleeps == []


def test_server_errors_are_retried_a_bounded_number_of_times(plane: ControlPlane) -> None:
    plane.answer("GET", JOB_PATH, 500, {"error": "down"})

    code, sleeps = _run(plane)

    assert code == worker.EXIT_CONTROL_PLANE
    assert plane.calls() == [("GET", JOB_PATH)] * worker.RETRY_ATTEMPTS
    assert sleeps == [0.5, 1.0]  # backoff doubles between the three attempts


def test_a_transient_error_then_success_completes_the_job(plane: ControlPlane) -> None:
    plane.answer("GET", JOB_PATH, 503)
    plane.job(["true"])

    code, sleeps = _run(plane)

    assert code == worker.EXIT_OK
    assert plane.calls() == [("GET", JOB_PATH), ("GET", JOB_PATH), ("POST", RESULTS_PATH)]
    assert sleeps == [0.5]


def test_results_rejected_exits_nonzero(plane: ControlPlane) -> None:
    plane.answer("GET", JOB_PATH, 200, {"commands": [["true"]]})
    plane.answer("POST", RESULTS_PATH, 500)

    code, _ = _run(plane)

    assert code == worker.EXIT_CONTROL_PLANE
    assert plane.calls() == [("GET", JOB_PATH)] + [("POST", RESULTS_PATH)] * 3


def test_unreachable_control_plane_exits_nonzero(plane: ControlPlane) -> None:
    code, sleeps = _run(plane, control_plane_url="http://127.0.0.1:9")

    assert code == worker.EXIT_CONTROL_PLANE
    assert sleeps == [0.5, 1.0]


def test_redirects_are_not_followed_so_the_key_stays_home(plane: ControlPlane) -> None:
    with LoopbackHTTP() as thief:
        plane.answer("GET", JOB_PATH, 302, b"", headers={"Location": f"{thief.url}/steal"})

        code, _ = _run(plane)

    assert code == worker.EXIT_CONTROL_PLANE
    assert plane.calls() == [("GET", JOB_PATH)]
    assert thief.requests == []


@pytest.mark.parametrize(
    "job",
    [
        b"not json",
        {"commands": "rm -rf /"},
        {"commands": [[]]},
        {"commands": [["echo", 3]]},
        {"commands": [["echo", "a\x00b"]]},
        {"jobId": "job_other", "commands": [["true"]]},
    ],
)
def test_malformed_job_runs_nothing(plane: ControlPlane, job: Any) -> None:
    plane.answer("GET", JOB_PATH, 200, job)

    code, _ = _run(plane)

    assert code == worker.EXIT_BAD_JOB
    assert plane.calls() == [("GET", JOB_PATH)]


def test_job_id_is_escaped_in_the_url(plane: ControlPlane) -> None:
    plane.answer("GET", "/v1/jobs/a%2F..%2Fadmin", 200, {"commands": []})
    plane.answer("POST", "/v1/jobs/a%2F..%2Fadmin/results", 204, b"")

    code, _ = _run(plane, job_id="a/../admin")

    assert code == worker.EXIT_OK
    assert plane.calls()[0] == ("GET", "/v1/jobs/a%2F..%2Fadmin")


# --- the key stays secret ----------------------------------------------------------------------


def test_main_never_prints_the_key(
    plane: ControlPlane,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    plane.answer("GET", JOB_PATH, 200, {"commands": [["env"], ["sh", "-c", "echo o; echo e >&2"]]})
    plane.answer("POST", RESULTS_PATH, 500)  # failures are logged too
    payload_file = tmp_path / "payload.json"
    payload_file.write_text(json.dumps(_payload(plane)))
    original = worker.call_with_retry

    def without_backoff(*args: Any, **kwargs: Any) -> bytes:
        kwargs.update(backoff_seconds=0.0)
        return original(*args, **kwargs)

    monkeypatch.setattr(worker, "call_with_retry", without_backoff)

    code = worker.main(["--payload-file", str(payload_file)])

    captured = capsys.readouterr()
    assert code == worker.EXIT_CONTROL_PLANE
    assert '"event": "results_post_failed"' in captured.err
    credential = _credential(plane.url)
    assert credential not in captured.out + captured.err
    posted = [r.body.decode() for r in plane.requests if r.method == "POST"]
    assert posted and all(credential not in body for body in posted)
    assert credential not in repr(_config(plane))


def test_commands_run_as_the_configured_unprivileged_user(
    plane: ControlPlane, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if os.geteuid() != 0:
        pytest.skip("dropping to another uid needs root")
    secret_file = tmp_path / "root-only"
    secret_file.write_text("root secret")
    secret_file.chmod(0o600)
    monkeypatch.setenv("SANDBOXKIT_COMMAND_UID", "65534")
    monkeypatch.setenv("SANDBOXKIT_COMMAND_GID", "65534")
    plane.job(["id", "-u"], ["id", "-G"], ["cat", str(secret_file)], ["touch", "written"])

    assert _run(plane)[0] == worker.EXIT_OK

    uid, groups, cat, touch = plane.posted_results()["results"]
    assert uid["stdout"] == "65534\n"
    assert groups["stdout"] == "65534\n"  # no supplementary groups kept from root
    assert cat["exitCode"] != 0 and "root secret" not in cat["stdout"]
    assert touch["exitCode"] == 0  # the workdir belongs to the command user


def test_worker_marks_itself_undumpable() -> None:
    # In a fresh interpreter: the flag is process-wide and must not leak into the test process.
    code = (
        "import ctypes, importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('w', {worker.__file__!r})\n"
        "w = sys.modules['w'] = importlib.util.module_from_spec(spec)\n"
        "spec.loader.exec_module(w)\n"
        "libc = ctypes.CDLL(None)\n"
        "before = libc.prctl(3, 0, 0, 0, 0)\n"
        "assert w.make_undumpable()\n"
        "print(before, libc.prctl(3, 0, 0, 0, 0))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=30
    ).stdout

    assert out.split() == ["1", "0"]


# --- payload parsing ---------------------------------------------------------------------------


def test_payload_parses_into_config(plane: ControlPlane) -> None:
    config = worker.parse_payload(json.dumps(_payload(plane, outputLimitBytes=99)).encode())

    assert config == _config(plane, output_limit_bytes=99)


def test_payload_written_by_the_launcher_is_accepted() -> None:
    from sandboxkit.aws.launcher import handler

    launcher_config = handler.load_config(
        {
            "IMAGE_ARN": "arn:aws:lambda:us-east-1:123456789012:microvm-image:w",
            "CONNECTOR_ARN": "arn:aws:lambda:us-east-1:123456789012:network-connector:c",
            "INGRESS_CONNECTOR_ARN": "arn:aws:lambda:us-east-1:aws:network-connector:"
            "aws-network-connector:HTTP_INGRESS",
            "WEBHOOK_SECRET_ARN": "arn:w",
            "CREDENTIAL_KEY_SECRET_ARN": "arn:k",
            "MAX_DURATION_SECONDS": "600",
            "IDLE_TIMEOUT_SECONDS": "300",
            "EXEC_TIMEOUT_SECONDS": "45",
            "CONTROL_PLANE_URL": "https://agents.example.com/",
        }
    )
    launched_at = int(time.time())
    claims = handler.worker_credential_claims(launcher_config, SESSION_ID, JOB_ID, launched_at)
    credential = handler.mint_worker_credential(b"launcher-only-key", claims)
    payload = handler.build_run_hook_payload(launcher_config, SESSION_ID, JOB_ID, credential)

    config = worker.parse_payload(payload.encode())

    assert config == worker.WorkerConfig(
        session_id=SESSION_ID,
        job_id=JOB_ID,
        control_plane_url="https://agents.example.com",
        credential=credential,
        # The idle limit (300 s) ends the MicroVM before its maximum duration (600 s).
        credential_expires_at=launched_at + 300,
        exec_timeout_seconds=45,
    )
    assert "launcher-only-key" not in payload


@pytest.mark.parametrize(
    "change",
    [
        {"v": 1},
        {"credential": ""},
        {"credential": "wk_static_shared_key"},
        {"credential": "sbxw1.e30.mac"},  # claims {} carry no version
        {"jobId": None},
        {"execTimeoutSeconds": 0},
        {"execTimeoutSeconds": True},
        {"execTimeoutSeconds": "10"},
        {"outputLimitBytes": -1},
        {"controlPlaneUrl": "http://agents.example.com"},
        {"controlPlaneUrl": "https://user:pw@agents.example.com"},
        {"controlPlaneUrl": "ftp://127.0.0.1"},
    ],
)
def test_invalid_payloads_are_refused(plane: ControlPlane, change: dict[str, Any]) -> None:
    with pytest.raises(worker.ConfigError):
        worker.parse_payload(json.dumps(_payload(plane, **change)).encode())


def test_a_static_worker_key_is_refused_even_beside_a_credential(plane: ControlPlane) -> None:
    payload = _payload(plane, workerKey="wk_static_shared_key")

    with pytest.raises(worker.ConfigError, match="workerKey is not accepted"):
        worker.parse_payload(json.dumps(payload).encode())


@pytest.mark.parametrize(
    ("claims", "refusal"),
    [
        ({"job_id": "job_43"}, "credential is for another jobId"),
        ({"session_id": "sess_other"}, "credential is for another sessionId"),
        ({"audience": "https://agents.example.com"}, "credential is for another aud"),
        ({"expires": int(time.time()) - 1}, "credential expired"),
    ],
)
def test_a_credential_of_another_job_or_an_expired_one_is_refused(
    plane: ControlPlane, claims: dict[str, Any], refusal: str
) -> None:
    audience = claims.pop("audience", plane.url)
    payload = _payload(plane, credential=_credential(audience, **claims))

    with pytest.raises(worker.ConfigError) as raised:
        worker.parse_payload(json.dumps(payload).encode())

    assert str(raised.value) == refusal


def test_an_expired_credential_is_never_sent(
    plane: ControlPlane, monkeypatch: pytest.MonkeyPatch
) -> None:
    plane.job(["true"])
    # Alive when parsed; past its exp by the time the worker would call the control plane.
    monkeypatch.setattr(worker, "wall_clock", lambda: float(EXPIRES))

    status, sleeps = _run(plane)

    assert status == worker.EXIT_CONTROL_PLANE
    assert sleeps == []  # 401: not retried
    assert plane.requests == []


@pytest.mark.parametrize("raw", [b"", b"[]", b"\xff", b"{"])
def test_non_object_payloads_are_refused(raw: bytes) -> None:
    with pytest.raises(worker.ConfigError):
        worker.parse_payload(raw)


def test_main_with_a_bad_payload_file_exits_with_bad_config(tmp_path: Path) -> None:
    missing = tmp_path / "absent.json"
    bad = tmp_path / "bad.json"
    bad.write_text("{}")

    assert worker.main(["--payload-file", str(missing)]) == worker.EXIT_BAD_CONFIG
    assert worker.main(["--payload-file", str(bad)]) == worker.EXIT_BAD_CONFIG


# --- lifecycle hooks ---------------------------------------------------------------------------


def _post(port: int, path: str, body: bytes = b"") -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("POST", path, body=body)
        return connection.getresponse().status
    finally:
        connection.close()


@pytest.fixture
def hooks() -> Iterator[worker.HookServer]:
    # As start_hook_server serves it, polled every 50 ms instead of its 0.5 s: shutdown() waits
    # for the next poll. start_hook_server itself runs in test_worker_build's unpacked artifact.
    server = worker.HookServer(("127.0.0.1", 0))
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_hooks_answer_the_lifecycle_and_hand_over_the_first_run(
    hooks: worker.HookServer, plane: ControlPlane
) -> None:
    port = hooks.server_address[1]
    prefix = worker.HOOK_PATH_PREFIX
    payload = json.dumps(_payload(plane)).encode()

    assert _post(port, prefix + "ready") == 200
    assert _post(port, prefix + "validate") == 200
    assert hooks.runs.empty()
    assert _post(port, worker.RUN_HOOK_PATH, payload) == 200
    assert hooks.runs.get(timeout=5) == _config(plane)
    assert _post(port, worker.RUN_HOOK_PATH, payload) == 409
    assert hooks.runs.empty()
    for hook in ("suspend", "resume", "terminate"):
        assert _post(port, prefix + hook) == 200
    assert _post(port, prefix + "unknown") == 404
    assert _post(port, "/run") == 404


def test_invalid_run_payload_is_400_and_reported_to_main(hooks: worker.HookServer) -> None:
    assert _post(hooks.server_address[1], worker.RUN_HOOK_PATH, b'{"v": 1}') == 400
    assert isinstance(hooks.runs.get(timeout=5), worker.ConfigError)


def test_oversized_run_payload_is_refused(hooks: worker.HookServer) -> None:
    body = b"x" * (worker.MAX_PAYLOAD_BYTES + 1)

    assert _post(hooks.server_address[1], worker.RUN_HOOK_PATH, body) == 413
    assert hooks.runs.empty()


def test_chunked_run_payload_is_accepted(hooks: worker.HookServer, plane: ControlPlane) -> None:
    payload = json.dumps(_payload(plane)).encode()
    connection = http.client.HTTPConnection("127.0.0.1", hooks.server_address[1], timeout=5)
    try:
        halves = iter([payload[:10], payload[10:]])
        connection.request("POST", worker.RUN_HOOK_PATH, body=halves, encode_chunked=True)
        status = connection.getresponse().status
    finally:
        connection.close()

    assert status == 200
    assert hooks.runs.get(timeout=5) == _config(plane)


def test_oversized_chunked_run_payload_is_refused(hooks: worker.HookServer) -> None:
    chunks = iter([b"x" * 8192] * 3)
    connection = http.client.HTTPConnection("127.0.0.1", hooks.server_address[1], timeout=5)
    try:
        connection.request("POST", worker.RUN_HOOK_PATH, body=chunks, encode_chunked=True)
        status = connection.getresponse().status
    finally:
        connection.close()

    assert status == 413
    assert hooks.runs.empty()
