"""Worker that runs inside one Lambda MicroVM: fetch one job, run its commands, report, exit.

Standard library only, and only relative imports, so the same three modules run from the repo
(``python -m sandboxkit.aws.worker``) and from the code artifact (``python -m sandboxkit_worker``,
see :mod:`sandboxkit.aws.worker.build`).

How the worker receives its configuration
-----------------------------------------
In a MicroVM the launcher's ``runHookPayload`` is delivered as the request body of the ``/run``
lifecycle hook, ``POST /aws/lambda-microvms/runtime/v1/run`` on the image's hooks port (AWS
agent-toolkit ``aws-lambda-microvms`` lifecycle-model reference; the botocore
``lambda-microvms`` model documents ``runHookPayload`` as "delivered as the request body of the
/run lifecycle hook"). The worker therefore starts a small
hooks listener (``--hooks-host``/``--hooks-port``, env ``SANDBOXKIT_HOOKS_HOST`` /
``SANDBOXKIT_HOOKS_PORT``, default ``0.0.0.0:9000``) that

* answers ``/ready`` and ``/validate`` (image build hooks) with 200 once it listens, so the
  image snapshot is taken with the worker waiting for a job;
* answers the first valid ``/run`` with 200 at once (the hook must finish within
  ``runTimeoutInSeconds``, 1-60 s) and hands the payload to the main thread, which runs the job;
  an invalid payload gets 400 and the worker exits with :data:`EXIT_BAD_CONFIG`;
* answers ``/suspend``, ``/resume`` and ``/terminate`` with 200 (the launcher's idle policy
  never resumes, so nothing needs saving).

For local runs and tests ``--payload-file PATH`` reads the same JSON from a file instead.

Payload (version 2, written by ``sandboxkit.aws.launcher.handler.build_run_hook_payload``)::

    {"v": 2, "sessionId": str, "jobId": str, "controlPlaneUrl": str,
     "credential": str, "execTimeoutSeconds": int >= 1,
     "outputLimitBytes": int >= 1 (optional, default 65536)}

Version 1 carried ``workerKey``, a static key shared by every MicroVM; it is refused.

The credential
--------------
``credential`` is the launcher's per-launch worker credential (``sbxw1.<claims>.<mac>``, see
the launcher's "Worker credentials"): signed with a key only the launcher and the platform's
verifier hold, so the worker cannot check the signature and does not try; the platform does.
What the worker checks is that the credential is for this payload and still alive: its claims
name the payload's ``jobId``, ``sessionId`` and ``controlPlaneUrl`` (``aud``), and ``exp`` (unix
seconds) is in the future. Anything else is refused at ``/run`` (400, exit
:data:`EXIT_BAD_CONFIG`), and once ``exp`` has passed the worker sends nothing more: a
control-plane call fails at once with status 401 and no request leaves the guest. The
credential is the only secret the worker presents, and the only one it accepts.

Control plane protocol
----------------------
``GET {controlPlaneUrl}/v1/jobs/{jobId}`` with ``Authorization: Bearer <credential>`` returns::

    {"jobId": str (optional, must match), "commands": [[str, ...], ...]}

Each command is an argv list run without a shell. ``POST {controlPlaneUrl}/v1/jobs/{jobId}/results``
then sends::

    {"jobId": str, "sessionId": str, "results": [
        {"argv": [str, ...], "exitCode": int | null, "timedOut": bool,
         "durationSeconds": float, "stdout": str, "stdoutTruncated": bool,
         "stderr": str, "stderrTruncated": bool, "error": str | null}, ...]}

``exitCode`` is the process's status (negative signal number when killed, e.g. -9 after a
timeout), or null when the command could not be started (``error`` says why). Output is decoded
as UTF-8 with replacement characters, after cutting each stream at ``outputLimitBytes``.

Transient failures (network errors, 408, 429, 5xx) are retried :data:`RETRY_ATTEMPTS` times in
all; any other non-2xx, including a redirect, fails at once. The results POST is therefore sent
more than once only after a failure. The platform accepts one results POST per credential
(launcher ``accept_results``) and answers any later one 409, which is not retried: a retry after
an answer lost on the way ends with :data:`EXIT_CONTROL_PLANE` although the platform holds the
results, and a command that stole the credential cannot replace them.

Isolation inside the guest
--------------------------
* Each command runs in its own session and process group; on timeout the whole group is killed
  (SIGKILL), and whatever is left of the group when the command's main process exits is killed
  too. A process that starts its own session escapes the group; the MicroVM's
  ``maximumDurationInSeconds`` is the backstop.
* Commands get a fresh empty working directory and a minimal environment (``PATH``, ``HOME``,
  ``LANG``, ``SANDBOXKIT_SESSION_ID``, ``SANDBOXKIT_JOB_ID``); the credential is never in it.
* When ``SANDBOXKIT_COMMAND_UID`` / ``SANDBOXKIT_COMMAND_GID`` are set and the worker runs as
  root, commands run under that uid/gid with no supplementary groups. The worker also marks
  itself non-dumpable (``PR_SET_DUMPABLE`` 0), so an unprivileged process cannot read its memory
  through ``/proc``.
* HTTP proxies from the environment are ignored and redirects are never followed, so the
  credential only ever goes to ``controlPlaneUrl``, which must be ``https://`` (``http://`` is
  accepted only for loopback hosts, for tests).

Exit status: :data:`EXIT_OK` once the results are accepted (whatever the commands' own
statuses), :data:`EXIT_CONTROL_PLANE` when the control plane fails, :data:`EXIT_BAD_CONFIG` for
a bad payload or arguments, :data:`EXIT_BAD_JOB` for a malformed job. The credential is never
printed; logs are JSON lines on stderr.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import contextlib
import ctypes
import http.server
import ipaddress
import json
import os
import queue
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, urlsplit

EXIT_OK = 0
EXIT_CONTROL_PLANE = 1
EXIT_BAD_CONFIG = 2
EXIT_BAD_JOB = 3

PAYLOAD_VERSION = 2
# The launcher's worker credentials: prefix and claims version (launcher module docstring).
CREDENTIAL_PREFIX = "sbxw1"
CREDENTIAL_CLAIMS_VERSION = 1
# Commonly used hooks port in the AWS examples; the image's Hooks.port must match.
DEFAULT_HOOKS_PORT = 9000
HOOK_PATH_PREFIX = "/aws/lambda-microvms/runtime/v1/"
RUN_HOOK_PATH = HOOK_PATH_PREFIX + "run"
# The developer guide allows a 16 KB runHookPayload (the API model says 4096); accept up to 16 KiB.
MAX_PAYLOAD_BYTES = 16 * 1024
# Enough for the agent to read a failure, small enough that many commands fit in one report.
DEFAULT_OUTPUT_LIMIT_BYTES = 64 * 1024
# A job is a list of argv arrays; anything bigger than this is not a job.
MAX_JOB_BYTES = 1024 * 1024
HTTP_TIMEOUT_SECONDS = 15.0
RETRY_ATTEMPTS = 3
RETRY_BACKOFF_SECONDS = 1.0  # doubled after each failed attempt
# After SIGKILL, or after the main process exits, how long to keep draining pipes held by
# processes outside the group before giving up on them.
DRAIN_GRACE_SECONDS = 2.0
COMMAND_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
_READ_CHUNK = 64 * 1024
_PR_SET_DUMPABLE = 4


class ConfigError(Exception):
    """The run-hook payload or the command line is invalid; the message is safe to log."""


class JobError(Exception):
    """The job document from the control plane is malformed; the message is safe to log."""


class ControlPlaneError(Exception):
    """A control-plane call failed for good; ``status`` is the last HTTP status, if any."""

    def __init__(self, message: str, status: int | None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class WorkerConfig:
    """Validated run-hook payload. ``credential`` is excluded from ``repr``;
    ``credential_expires_at`` is its ``exp`` claim, unix seconds."""

    session_id: str
    job_id: str
    control_plane_url: str
    credential: str = field(repr=False)
    credential_expires_at: int
    exec_timeout_seconds: int
    output_limit_bytes: int = DEFAULT_OUTPUT_LIMIT_BYTES


@dataclass(frozen=True)
class CommandResult:
    """Outcome of one command; :meth:`to_json` gives the wire shape."""

    argv: list[str]
    exit_code: int | None
    timed_out: bool
    duration_seconds: float
    stdout: bytes
    stdout_truncated: bool
    stderr: bytes
    stderr_truncated: bool
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "argv": self.argv,
            "exitCode": self.exit_code,
            "timedOut": self.timed_out,
            "durationSeconds": round(self.duration_seconds, 3),
            "stdout": self.stdout.decode("utf-8", errors="replace"),
            "stdoutTruncated": self.stdout_truncated,
            "stderr": self.stderr.decode("utf-8", errors="replace"),
            "stderrTruncated": self.stderr_truncated,
            "error": self.error,
        }


# Wall clock for the credential's expiry, replaceable in tests.
wall_clock: Callable[[], float] = time.time


def log(event: str, **fields: Any) -> None:
    """Write one JSON log line to stderr. Callers never pass the credential."""
    sys.stderr.write(json.dumps({"event": event, **fields}, sort_keys=True, default=str) + "\n")
    sys.stderr.flush()


# --- configuration -----------------------------------------------------------------------------


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def validate_control_plane_url(url: str) -> str:
    """Return ``url`` without a trailing slash, or raise :class:`ConfigError`.

    ``https://`` is required; ``http://`` is allowed only for loopback hosts (local tests).
    """
    parts = urlsplit(url)
    host = parts.hostname or ""
    if not host or parts.username or parts.password or parts.query or parts.fragment:
        raise ConfigError("controlPlaneUrl must be a plain URL with a host")
    if parts.scheme != "https" and not (parts.scheme == "http" and _is_loopback(host)):
        raise ConfigError("controlPlaneUrl must use https")
    return url.rstrip("/")


def _positive_int(data: Mapping[str, Any], key: str, default: int | None = None) -> int:
    value = data.get(key, default)
    # bool is an int subclass; true/false is not a number of seconds or bytes.
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ConfigError(f"{key} must be a positive integer")
    return value


def credential_claims(credential: str) -> dict[str, Any]:
    """The claims of a worker credential, unverified (the worker has no key; the platform
    verifies the signature).

    Raises:
        ConfigError: when ``credential`` is not ``sbxw1.<base64url JSON object>.<mac>`` with
            claims version 1 and an integer ``exp``.
    """
    parts = credential.split(".")
    if len(parts) != 3 or parts[0] != CREDENTIAL_PREFIX or not all(parts):
        raise ConfigError("credential is not a worker credential")
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError):
        raise ConfigError("credential claims are not JSON") from None
    if not isinstance(claims, dict) or claims.get("v") != CREDENTIAL_CLAIMS_VERSION:
        raise ConfigError(f"credential claims version must be {CREDENTIAL_CLAIMS_VERSION}")
    expires = claims.get("exp")
    if not isinstance(expires, int) or isinstance(expires, bool):
        raise ConfigError("credential exp must be an integer")
    return claims


def parse_payload(raw: bytes) -> WorkerConfig:
    """Parse and validate a run-hook payload (shape in the module docstring).

    Raises:
        ConfigError: for a malformed payload, a version-1 payload or any ``workerKey`` (a
            static key is never accepted), or a credential for another job, session or
            control plane, or one already expired.
    """
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ConfigError("payload is not JSON") from None
    if not isinstance(data, dict):
        raise ConfigError("payload must be a JSON object")
    if "workerKey" in data:
        raise ConfigError("workerKey is not accepted: the worker uses its per-job credential")
    if data.get("v") != PAYLOAD_VERSION:
        raise ConfigError(f"payload version must be {PAYLOAD_VERSION}")
    strings = {}
    for key in ("sessionId", "jobId", "controlPlaneUrl", "credential"):
        value = data.get(key)
        if not isinstance(value, str) or not value:
            raise ConfigError(f"{key} must be a non-empty string")
        strings[key] = value
    url = validate_control_plane_url(strings["controlPlaneUrl"])
    claims = credential_claims(strings["credential"])
    for claim, expected in (
        ("jobId", strings["jobId"]),
        ("sessionId", strings["sessionId"]),
        ("aud", url),
    ):
        if claims.get(claim) != expected:
            raise ConfigError(f"credential is for another {claim}")
    if wall_clock() >= claims["exp"]:
        raise ConfigError("credential expired")
    return WorkerConfig(
        session_id=strings["sessionId"],
        job_id=strings["jobId"],
        control_plane_url=url,
        credential=strings["credential"],
        credential_expires_at=claims["exp"],
        exec_timeout_seconds=_positive_int(data, "execTimeoutSeconds"),
        output_limit_bytes=_positive_int(data, "outputLimitBytes", DEFAULT_OUTPUT_LIMIT_BYTES),
    )


# --- control plane -----------------------------------------------------------------------------


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Refuse redirects: urllib would replay the Authorization header to the new location."""

    def redirect_request(  # noqa: PLR0917 - urllib's signature
        self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> None:
        return None


_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


def _transient(status: int | None) -> bool:
    return status is None or status in (408, 429) or status >= 500


def _http(
    config: WorkerConfig, method: str, path: str, body: bytes | None, max_bytes: int
) -> bytes:
    """One request; returns the body of a 2xx answer or raises :class:`ControlPlaneError`.

    An expired credential is never sent: the call fails at once with status 401.
    """
    if wall_clock() >= config.credential_expires_at:
        raise ControlPlaneError(f"{method} {path} not sent: credential expired", 401)
    request = urllib.request.Request(config.control_plane_url + path, data=body, method=method)
    request.add_header("Authorization", "Bearer " + config.credential)
    request.add_header("Accept", "application/json")
    request.add_header("User-Agent", "sandboxkit-worker/1")
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with _OPENER.open(request, timeout=HTTP_TIMEOUT_SECONDS) as response:
            data: bytes = response.read(max_bytes + 1)
            status = int(response.status)
    except urllib.error.HTTPError as error:
        error.close()
        raise ControlPlaneError(f"{method} {path} answered {error.code}", error.code) from None
    except (urllib.error.URLError, OSError) as error:
        raise ControlPlaneError(f"{method} {path} failed: {type(error).__name__}", None) from None
    if not 200 <= status < 300:
        raise ControlPlaneError(f"{method} {path} answered {status}", status)
    if len(data) > max_bytes:
        raise ControlPlaneError(f"{method} {path} answer larger than {max_bytes} bytes", status)
    return data


def call_with_retry(
    config: WorkerConfig,
    method: str,
    path: str,
    body: bytes | None = None,
    *,
    max_bytes: int = MAX_JOB_BYTES,
    attempts: int = RETRY_ATTEMPTS,
    backoff_seconds: float = RETRY_BACKOFF_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
) -> bytes:
    """:func:`_http` with at most ``attempts`` tries for transient failures (see module doc)."""
    delay = backoff_seconds
    for attempt in range(1, attempts + 1):
        try:
            return _http(config, method, path, body, max_bytes)
        except ControlPlaneError as error:
            log("control_plane_error", attempt=attempt, status=error.status, detail=str(error))
            if attempt == attempts or not _transient(error.status):
                raise
        sleep(delay)
        delay *= 2
    raise AssertionError("unreachable")


def parse_job(raw: bytes, job_id: str) -> list[list[str]]:
    """Validate a job document and return its commands (argv lists)."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise JobError("job is not JSON") from None
    if not isinstance(data, dict):
        raise JobError("job must be a JSON object")
    if "jobId" in data and data["jobId"] != job_id:
        raise JobError("job id does not match the payload")
    commands = data.get("commands")
    if not isinstance(commands, list):
        raise JobError("commands must be a list")
    result: list[list[str]] = []
    for index, argv in enumerate(commands):
        if (
            not isinstance(argv, list)
            or not argv
            or not all(isinstance(arg, str) and "\x00" not in arg for arg in argv)
        ):
            raise JobError(f"command {index} must be a non-empty list of strings")
        result.append(list(argv))
    return result


# --- running commands --------------------------------------------------------------------------


@dataclass
class _Capture:
    limit: int
    data: bytearray = field(default_factory=bytearray)
    truncated: bool = False

    def feed(self, chunk: bytes) -> None:
        room = self.limit - len(self.data)
        if len(chunk) > room:
            self.truncated = True
        if room > 0:
            self.data += chunk[:room]


def _killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the group is already empty
        os.killpg(pgid, signal.SIGKILL)


def _has_exited(pid: int) -> bool:
    """True once ``pid`` has exited, without reaping it (its pid and group id stay reserved)."""
    result = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    return result is not None


def run_command(
    argv: Sequence[str],
    *,
    timeout_seconds: float,
    output_limit_bytes: int,
    cwd: str,
    env: Mapping[str, str],
    uid: int | None = None,
    gid: int | None = None,
) -> CommandResult:
    """Run ``argv`` without a shell in a new process group, bounded in time and output.

    Args:
        timeout_seconds: wall-clock limit in seconds; past it the process group gets SIGKILL.
        output_limit_bytes: bytes kept per stream; the rest is read and discarded.
        uid, gid: run as this user/group (requires root), with no supplementary groups.
    """
    argv = list(argv)
    start = time.monotonic()
    credentials: dict[str, Any] = {}
    if uid is not None:
        credentials = {"user": uid, "group": gid if gid is not None else uid, "extra_groups": []}
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=dict(env),
            start_new_session=True,
            close_fds=True,
            **credentials,
        )
    except (OSError, ValueError, subprocess.SubprocessError) as error:
        return CommandResult(
            argv=argv,
            exit_code=None,
            timed_out=False,
            duration_seconds=time.monotonic() - start,
            stdout=b"",
            stdout_truncated=False,
            stderr=b"",
            stderr_truncated=False,
            error=f"spawn failed: {type(error).__name__}: {error}",
        )
    assert process.stdout is not None and process.stderr is not None
    out_fd, err_fd = process.stdout.fileno(), process.stderr.fileno()
    captures = {out_fd: _Capture(output_limit_bytes), err_fd: _Capture(output_limit_bytes)}
    pgid = process.pid  # start_new_session: the child leads a new session and process group
    deadline = start + timeout_seconds
    timed_out = False
    group_killed_at: float | None = None
    with selectors.DefaultSelector() as selector:
        for stream in (process.stdout, process.stderr):
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            now = time.monotonic()
            if group_killed_at is None:
                if _has_exited(process.pid):
                    _killpg(pgid)  # leftovers of a finished command do not outlive it
                    group_killed_at = now
                elif now >= deadline:
                    timed_out = True
                    _killpg(pgid)
                    group_killed_at = now
            elif now - group_killed_at >= DRAIN_GRACE_SECONDS:
                break  # a process outside the group still holds a pipe; stop reading
            wait = 0.05 if group_killed_at is not None else min(0.05, max(0.0, deadline - now))
            for key, _ in selector.select(wait):
                chunk = os.read(key.fd, _READ_CHUNK)
                if chunk:
                    captures[key.fd].feed(chunk)
                else:
                    selector.unregister(key.fileobj)
    if group_killed_at is None:
        # Both pipes closed before the main process was seen to exit: wait for it, bounded, and
        # without reaping it, so its pid and group id cannot be reused before the kill below.
        while not _has_exited(process.pid):
            if time.monotonic() >= deadline:
                timed_out = True
                break
            time.sleep(0.01)
        _killpg(pgid)
    exit_code = process.wait()
    process.stdout.close()
    process.stderr.close()
    out, err = captures[out_fd], captures[err_fd]
    return CommandResult(
        argv=argv,
        exit_code=exit_code,
        timed_out=timed_out,
        duration_seconds=time.monotonic() - start,
        stdout=bytes(out.data),
        stdout_truncated=out.truncated,
        stderr=bytes(err.data),
        stderr_truncated=err.truncated,
    )


def _command_credentials() -> tuple[int | None, int | None]:
    """uid/gid for commands from ``SANDBOXKIT_COMMAND_UID``/``_GID``; only honoured as root."""
    raw_uid = os.environ.get("SANDBOXKIT_COMMAND_UID", "").strip()
    raw_gid = os.environ.get("SANDBOXKIT_COMMAND_GID", "").strip()
    if not raw_uid or os.geteuid() != 0:
        return None, None
    try:
        uid = int(raw_uid)
        gid = int(raw_gid) if raw_gid else uid
    except ValueError:
        raise ConfigError("SANDBOXKIT_COMMAND_UID/GID must be integers") from None
    return uid, gid


def make_undumpable() -> bool:
    """Set ``PR_SET_DUMPABLE`` 0 on Linux (best effort); True when it took effect."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def run_job(
    config: WorkerConfig,
    *,
    backoff_seconds: float = RETRY_BACKOFF_SECONDS,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Fetch the job, run every command, post the results; return the process exit status."""
    log("job_started", sessionId=config.session_id, jobId=config.job_id)
    job_path = "/v1/jobs/" + quote(config.job_id, safe="")
    retry: dict[str, Any] = {"backoff_seconds": backoff_seconds, "sleep": sleep}
    try:
        uid, gid = _command_credentials()
    except ConfigError as error:
        log("config_invalid", detail=str(error))
        return EXIT_BAD_CONFIG
    try:
        commands = parse_job(call_with_retry(config, "GET", job_path, **retry), config.job_id)
    except ControlPlaneError as error:
        log("job_fetch_failed", status=error.status)
        return EXIT_CONTROL_PLANE
    except JobError as error:
        log("job_invalid", detail=str(error))
        return EXIT_BAD_JOB

    workdir = tempfile.mkdtemp(prefix="sbx-job-")
    try:
        if uid is not None:
            os.chown(workdir, uid, gid if gid is not None else uid)
        env = {
            "PATH": COMMAND_PATH,
            "HOME": workdir,
            "LANG": "C.UTF-8",
            "SANDBOXKIT_SESSION_ID": config.session_id,
            "SANDBOXKIT_JOB_ID": config.job_id,
        }
        results = []
        for index, argv in enumerate(commands):
            result = run_command(
                argv,
                timeout_seconds=config.exec_timeout_seconds,
                output_limit_bytes=config.output_limit_bytes,
                cwd=workdir,
                env=env,
                uid=uid,
                gid=gid,
            )
            log(
                "command_finished",
                index=index,
                exitCode=result.exit_code,
                timedOut=result.timed_out,
                durationSeconds=round(result.duration_seconds, 3),
            )
            results.append(result.to_json())
    finally:
        shutil.rmtree(workdir, ignore_errors=True)

    report = {"jobId": config.job_id, "sessionId": config.session_id, "results": results}
    try:
        call_with_retry(
            config, "POST", job_path + "/results", json.dumps(report).encode("utf-8"), **retry
        )
    except ControlPlaneError as error:
        log("results_post_failed", status=error.status)
        return EXIT_CONTROL_PLANE
    log("job_finished", commands=len(results))
    return EXIT_OK


# --- lifecycle hooks ---------------------------------------------------------------------------


class HookServer(http.server.ThreadingHTTPServer):
    """Lifecycle-hook listener; the first valid ``/run`` payload lands in :attr:`runs`."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int]) -> None:
        super().__init__(address, _HookHandler)
        self.runs: queue.Queue[WorkerConfig | ConfigError] = queue.Queue()
        self._run_claimed = threading.Lock()
        self.run_received = False

    def claim_run(self) -> bool:
        with self._run_claimed:
            if self.run_received:
                return False
            self.run_received = True
            return True


class _HookHandler(http.server.BaseHTTPRequestHandler):
    server: HookServer
    protocol_version = "HTTP/1.1"

    def _reply(self, status: int) -> None:
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _read_body(self) -> bytes | int:
        """The request body, or the error status: 413 past MAX_PAYLOAD_BYTES, 400 if malformed.

        Accepts ``Content-Length`` and ``Transfer-Encoding: chunked`` bodies: how Lambda frames
        the hook requests is not documented.
        """
        if self.headers.get("Transfer-Encoding", "").strip().lower() == "chunked":
            body = bytearray()
            while True:
                try:
                    size = int(self.rfile.readline(64).split(b";", 1)[0].strip(), 16)
                except ValueError:
                    return 400
                if size < 0:
                    return 400
                if size == 0:
                    while self.rfile.readline(1024).strip():
                        pass  # trailer fields, up to the empty line
                    return bytes(body)
                if len(body) + size > MAX_PAYLOAD_BYTES:
                    return 413
                body += self.rfile.read(size)
                self.rfile.readline(8)  # the CRLF closing the chunk
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            return 400
        if length < 0:
            return 400
        if length > MAX_PAYLOAD_BYTES:
            return 413
        return self.rfile.read(length)

    def do_POST(self) -> None:
        if not self.path.startswith(HOOK_PATH_PREFIX):
            self.close_connection = True
            self._reply(404)
            return
        hook = self.path[len(HOOK_PATH_PREFIX) :]
        body = self._read_body()
        if isinstance(body, int):
            self.close_connection = True  # an unread body must not be parsed as a request
            self._reply(body)
            return
        if hook == "run":
            if not self.server.claim_run():
                self._reply(409)  # one MicroVM, one job
                return
            try:
                config: WorkerConfig | ConfigError = parse_payload(body)
            except ConfigError as error:
                config = error
            # Reply before the job starts: the hook has only runTimeoutInSeconds (1-60 s).
            self._reply(400 if isinstance(config, ConfigError) else 200)
            self.server.runs.put(config)
        elif hook in ("ready", "validate", "suspend", "resume", "terminate"):
            self._reply(200)
        else:
            self._reply(404)

    def log_message(self, format: str, *args: Any) -> None:
        log("hook_request", path=self.path.split("?", 1)[0])


def start_hook_server(host: str, port: int) -> HookServer:
    """Bind the hooks listener and serve it from a daemon thread."""
    server = HookServer((host, port))
    threading.Thread(target=server.serve_forever, name="hooks", daemon=True).start()
    return server


# --- entry point -------------------------------------------------------------------------------


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="sandboxkit-worker",
        description="Run one sandboxkit job inside a Lambda MicroVM and report its results.",
    )
    parser.add_argument(
        "--payload-file",
        help="read the run-hook payload from this file instead of waiting for the /run hook",
    )
    # All interfaces: Lambda calls the hooks over the guest's network, not its loopback.
    default_host = os.environ.get("SANDBOXKIT_HOOKS_HOST", "0.0.0.0")
    parser.add_argument(
        "--hooks-host",
        default=default_host,
        help="address of the lifecycle-hook listener (default 0.0.0.0)",
    )
    parser.add_argument(
        "--hooks-port",
        type=int,
        default=int(os.environ.get("SANDBOXKIT_HOOKS_PORT", DEFAULT_HOOKS_PORT)),
        help=f"port of the lifecycle-hook listener (default {DEFAULT_HOOKS_PORT}; 0 picks one)",
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point; returns the process exit status (see module docstring)."""
    args = _parse_args(argv)
    make_undumpable()
    server: HookServer | None = None
    try:
        if args.payload_file:
            try:
                with open(args.payload_file, "rb") as handle:
                    raw = handle.read(MAX_PAYLOAD_BYTES + 1)
                if len(raw) > MAX_PAYLOAD_BYTES:
                    raise ConfigError("payload file too large")
                config = parse_payload(raw)
            except OSError as error:
                log("config_invalid", detail=f"cannot read payload file: {type(error).__name__}")
                return EXIT_BAD_CONFIG
            except ConfigError as error:
                log("config_invalid", detail=str(error))
                return EXIT_BAD_CONFIG
        else:
            server = start_hook_server(args.hooks_host, args.hooks_port)
            log("hooks_listening", host=args.hooks_host, port=server.server_address[1])
            received = server.runs.get()
            if isinstance(received, ConfigError):
                log("config_invalid", detail=str(received))
                return EXIT_BAD_CONFIG
            config = received
        return run_job(config)
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()
