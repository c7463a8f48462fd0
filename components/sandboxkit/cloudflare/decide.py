"""The Cloudflare Worker's own egress decisions, asked from Python.

On target ``cloudflare`` egress is decided by JavaScript: the interceptions the Durable Object
installs and ``decideEgress`` in ``worker/src/index.js``. Rather than keep a Python copy of that
code, the kit runs it in workerd, the Workers runtime, from the binary ``npm ci`` installs in
the Worker's folder: ``worker/test-support/decide-harness.js`` (which imports ``src/index.js``)
serves JSON requests on a loopback socket the kit binds and hands over. One ``WorkerDecider``
keeps one workerd process for all its requests (about 0.1 s to start, then a millisecond or two
per request).

Example::

    with WorkerDecider() as worker:
        [probe] = worker.probe('{"mode":"deny","allow":[]}', [("pypi.org", 443)])
        assert (probe.admitted, probe.stage) == (False, "platform")
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal, Self

from sandboxkit.cloudflare.plan import COMPATIBILITY_FLAGS, DEFAULT_COMPATIBILITY_DATE
from sandboxkit.errors import MissingTool, PrerequisiteError

WORKER_DIR = Path(__file__).resolve().parent / "worker"
# Where the decider finds the Worker's package instead of WORKER_DIR: a copy of it with its npm
# dependencies installed, where the kit's own folder is read-only (an installed wheel).
WORKER_DIR_ENV = "SANDBOXKIT_WORKER_DIR"
# The modules workerd loads, relative to the Worker's folder: the harness (the main module)
# first, then every module it may import.
HARNESS_MODULE = "test-support/decide-harness.js"
MODULE_GLOBS = ("test-support/*.js", "src/**/*.js")
# workerd's npm package installs its binary from one of these packages, by platform and CPU
# (the table in node_modules/workerd/lib/main.js, workerd 1.20260730.1), keyed here by
# (sys.platform, platform.machine()).
WORKERD_PACKAGES = {
    ("linux", "x86_64"): "workerd-linux-64",
    ("linux", "aarch64"): "workerd-linux-arm64",
    ("darwin", "x86_64"): "workerd-darwin-64",
    ("darwin", "arm64"): "workerd-darwin-arm64",
}
# How long one request may take before the decider gives up on workerd.
REQUEST_TIMEOUT_SECONDS = 60.0

Stage = Literal["platform", "gateway"]


@dataclass(frozen=True)
class WorkerProbe:
    """What one connection from the container to ``host``:``port`` gets.

    Attributes:
        host: the probe's host as asked (name, IPv4, or IPv6 with or without brackets).
        port: TCP port, 1 to 65535.
        admitted: whether the request reaches its destination.
        stage: ``platform`` when Cloudflare drops it before any Worker code (no interception
            matches, or a port other than 80 and 443: documented behaviour, modelled by
            ``worker/test-support/platform.js``), ``gateway`` when ``EgressGateway`` decided it
            (the Worker's own code, run here in workerd).
        reason: the platform model's or the gateway's reason, as a sentence fragment.
        interception: the interception that routed it, e.g. ``interceptOutboundHttps("pypi.org")``;
            ``None`` when the platform dropped it.
    """

    host: str
    port: int
    admitted: bool
    stage: Stage
    reason: str
    interception: str | None


@dataclass(frozen=True)
class Interception:
    """One ``ctx.container`` call the Durable Object makes before it starts the container.

    Attributes:
        method: ``interceptOutboundHttp``, ``interceptOutboundHttps`` or
            ``interceptAllOutboundHttp`` (Durable Object Container API,
            developers.cloudflare.com/containers/api/durable-object-container/).
        pattern: the hostname or glob (``*`` matches any sequence of characters); ``None`` for
            ``interceptAllOutboundHttp``.
    """

    method: str
    pattern: str | None


class WorkerDecideError(RuntimeError):
    """The Worker's decision code could not be run, or it refused a request (message says why)."""


class WorkerSetupError(WorkerDecideError, PrerequisiteError):
    """node or the Worker's npm dependencies are missing (the message names the command)."""


def worker_dir() -> Path:
    """The Worker's package folder: ``$SANDBOXKIT_WORKER_DIR`` when set, else ``WORKER_DIR``."""
    return Path(os.environ.get(WORKER_DIR_ENV) or WORKER_DIR)


def _binary_path(folder: Path) -> Path:
    machine = platform.machine()
    package = WORKERD_PACKAGES.get((sys.platform, machine))
    if package is None:
        raise WorkerSetupError(
            f"workerd, which runs the Worker's egress code, has no build for {sys.platform} "
            f"on {machine}; run the gate on Linux or macOS (x86-64 or arm64)"
        )
    return folder / "node_modules" / "@cloudflare" / package / "bin" / "workerd"


def worker_setup(folder: Path) -> MissingTool | None:
    """What running the Worker's code from ``folder`` lacks on this machine, or ``None``: the
    Worker's package itself (``package.json`` and the decision harness: ``folder`` is not a
    copy of ``WORKER_DIR``), or workerd, which its npm dependencies install (absent or not
    executable). The install command names ``folder``, so it fixes the folder the kit reads.

    Raises:
        WorkerSetupError: when workerd has no build for this platform (nothing installs it).
    """
    named = f" ({WORKER_DIR_ENV})" if os.environ.get(WORKER_DIR_ENV) else ""
    missing = [f for f in ("package.json", HARNESS_MODULE) if not (folder / f).is_file()]
    if missing:
        return MissingTool(
            f"the Cloudflare Worker's package: {folder}{named} holds no {' or '.join(missing)} "
            f"(expected a copy of the Worker's whole folder, {WORKER_DIR})",
            f"cp -R {WORKER_DIR}/. {folder} && npm ci --prefix {folder}",
        )
    binary = _binary_path(folder)
    if not binary.is_file():
        return MissingTool(
            f"workerd, which the Worker's npm dependencies install (no "
            f"{binary.relative_to(folder)} in {folder}{named})",
            f"npm ci --prefix {folder}",
        )
    if not os.access(binary, os.X_OK):
        return MissingTool(f"workerd at {binary} is not executable", f"npm ci --prefix {folder}")
    return None


def workerd_binary(folder: Path) -> Path:
    """The workerd executable ``npm ci`` installed under ``folder`` for this platform
    (``node_modules/@cloudflare/<WORKERD_PACKAGES entry>/bin/workerd``), with the Worker's
    package beside it.

    Raises:
        WorkerSetupError: when workerd has no binary for this platform, or ``worker_setup``
            finds something missing (its sentence: what, and the command that installs it).
    """
    problem = worker_setup(folder)
    if problem is not None:
        raise WorkerSetupError(problem.sentence())
    return _binary_path(folder)


def workerd_config(folder: Path) -> str:
    """The workerd configuration (Cap'n Proto text) that serves the decision harness: its
    modules embedded from ``folder`` (pass ``folder`` as workerd's ``--import-path``), the
    deployed compatibility flags (``plan.COMPATIBILITY_FLAGS``) at the kit's default date, one
    HTTP socket named ``http``, and every outbound fetch refused with status 599 (the decision
    code is pure: a fetch would be a bug, so none leaves).
    """
    others = sorted(
        {path.relative_to(folder).as_posix() for glob in MODULE_GLOBS for path in folder.glob(glob)}
        - {HARNESS_MODULE}
    )
    modules = ",\n".join(
        f"    (name = {json.dumps(name)}, esModule = embed {json.dumps('/' + name)})"
        for name in [HARNESS_MODULE, *others]
    )
    refuse = (
        'export default { fetch: () => new Response("decider outbound refused", { status: 599 }) };'
    )
    return f"""using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [
    (name = "harness", worker = .harness),
    (name = "refuse", worker = (
      modules = [(name = "refuse.js", esModule = {json.dumps(refuse)})],
      compatibilityDate = {json.dumps(DEFAULT_COMPATIBILITY_DATE)})),
  ],
  sockets = [(name = "http", http = (), service = "harness")],
);
const harness :Workerd.Worker = (
  modules = [
{modules}
  ],
  compatibilityDate = {json.dumps(DEFAULT_COMPATIBILITY_DATE)},
  compatibilityFlags = {json.dumps(list(COMPATIBILITY_FLAGS))},
  globalOutbound = "refuse",
);
"""


class WorkerDecider:
    """A running workerd serving ``decide-harness.js``; use it as a context manager (or call
    ``close``). Each request is one HTTP exchange with a socket on 127.0.0.1 that this process
    binds and passes to workerd (``--socket-fd``), so nothing waits for workerd to
    listen and no port is raced for. POSIX only (the socket is handed over as a descriptor).

    Args:
        workerd: the workerd executable; default ``workerd_binary(worker_dir())``.

    Raises:
        WorkerSetupError: on entry, when workerd (the Worker's npm dependencies in
            ``worker_dir()``) is missing or not executable, or that folder is not the
            Worker's (no decision harness).
    """

    def __init__(self, workerd: Path | None = None) -> None:
        self._workerd = workerd
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[str] | None = None
        self._config: tempfile.TemporaryDirectory[str] | None = None
        self._port: int | None = None

    def __enter__(self) -> Self:
        folder = worker_dir()
        workerd = self._workerd or workerd_binary(folder)
        if self._workerd is not None and not (folder / HARNESS_MODULE).is_file():
            # A workerd given explicitly: the folder still has to hold the harness it serves.
            raise WorkerSetupError(
                f"{folder} holds no {HARNESS_MODULE}: {WORKER_DIR_ENV} must name a copy of "
                f"the Worker's whole folder ({WORKER_DIR}) with `npm ci` run in it"
            )
        self._config = tempfile.TemporaryDirectory(prefix="sandboxkit-decider-")
        config = Path(self._config.name) / "decider.capnp"
        config.write_text(workerd_config(folder), encoding="utf-8")
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8")
        with socket.create_server(("127.0.0.1", 0)) as listener:
            self._process = subprocess.Popen(
                [
                    str(workerd),
                    "serve",
                    f"--import-path={folder}",
                    str(config),
                    "--socket-fd",
                    f"http={listener.fileno()}",
                ],
                stdin=subprocess.DEVNULL,
                stdout=self._stderr,
                stderr=self._stderr,
                pass_fds=[listener.fileno()],
            )
            self._port = listener.getsockname()[1]
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Ends the workerd process and removes its configuration."""
        self._port = None
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            self._process = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        if self._config is not None:
            self._config.cleanup()
            self._config = None

    def probe(self, policy: str, probes: Sequence[tuple[str, int]]) -> list[WorkerProbe]:
        """Each probe's fate under ``policy`` (the ``EGRESS_POLICY`` text): the platform stage
        (interceptions of ``interceptions(policy)``), then ``EgressGateway``'s decision.

        Raises:
            WorkerDecideError: when the process failed or answered an error.
        """
        answers = self._ask(
            {"op": "probe", "policy": policy, "probes": [{"host": h, "port": p} for h, p in probes]}
        )
        return [
            WorkerProbe(
                host=host,
                port=port,
                admitted=answer["admitted"],
                stage=answer["stage"],
                reason=answer["reason"],
                interception=answer["interception"],
            )
            for (host, port), answer in zip(probes, answers, strict=True)
        ]

    def decide(self, policy: str, urls: Sequence[str]) -> list[tuple[bool, str]]:
        """``EgressGateway``'s own decision on each URL under ``policy``, whether or not the
        platform would route it there: ``(allowed, reason)`` per URL.

        Raises:
            WorkerDecideError: when the process failed or answered an error.
        """
        answers = self._ask(
            {"op": "decide", "cases": [{"policy": policy, "url": url} for url in urls]}
        )
        return [(answer["allowed"], answer["reason"]) for answer in answers]

    def interceptions(self, policy: str) -> list[Interception]:
        """The interceptions the Durable Object installs under ``policy``, in install order.

        Raises:
            WorkerDecideError: when the process failed or answered an error.
        """
        return [
            Interception(step["method"], step.get("pattern"))
            for step in self._ask({"op": "plan", "policy": policy})
        ]

    def contract(self) -> dict[str, Any]:
        """The names and ranges ``worker/src/index.js`` shares with ``sandboxkit.boundary``:
        ``bindings`` (key -> binding name), ``classes`` (exported classes), ``nonPublicIpv4``,
        ``nonPublicIpv6``, ``publicInsideNonPublicIpv4``, ``internalSuffixes``, ``tokenLimits``
        (``{clockToleranceSeconds, maxLifetimeSeconds}``).

        Raises:
            WorkerDecideError: when the process failed or answered an error.
        """
        answer = self._ask({"op": "contract"})
        assert isinstance(answer, dict)
        return answer

    def _ask(self, request: dict[str, Any]) -> Any:
        port, process = self._port, self._process
        if port is None or process is None:
            raise WorkerDecideError("WorkerDecider is not running; use it in a with block")
        # A connection per request: workerd closes idle keep-alive connections.
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT_SECONDS)
        try:
            connection.request("POST", "/", body=json.dumps(request).encode())
            response = connection.getresponse()
            body = response.read().decode("utf-8", "replace")
        except (OSError, http.client.HTTPException) as error:
            if not isinstance(error, TimeoutError):
                # A dropped connection is workerd ending: give it the moment to be reaped.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=5)
            status = process.poll()
            if status is not None:
                state = f"exited with status {status}"
            elif isinstance(error, TimeoutError):
                state = f"did not answer within {REQUEST_TIMEOUT_SECONDS:g} s"
            else:
                state = f"dropped the request ({error})"
            raise WorkerDecideError(f"workerd {state}: {self._stderr_tail()}") from None
        finally:
            connection.close()
        try:
            answer = json.loads(body)
        except json.JSONDecodeError:
            answer = None
        if isinstance(answer, dict) and "error" in answer:
            raise WorkerDecideError(f"the decision harness refused the request: {answer['error']}")
        if response.status != 200 or answer is None:
            raise WorkerDecideError(
                f"the Worker's decision code failed (HTTP {response.status}): {self._stderr_tail()}"
            )
        return answer

    def _stderr_tail(self) -> str:
        """The last 2,000 characters workerd printed, without its native stack traces: each
        error is followed by a ``stack:`` line of ``<binary path>@<address>`` entries, the
        binary's path a dozen times or more, which pushed the error itself out of the tail
        once the project's path was longer than a few dozen characters."""
        if self._stderr is None:
            return "(no output)"
        self._stderr.seek(0)
        lines = [line for line in self._stderr.read().splitlines() if not line.startswith("stack:")]
        return "\n".join(lines)[-2000:].strip() or "(no output)"
