"""The Cloudflare Worker's own egress decisions, asked from Python.

On target ``cloudflare`` egress is decided by JavaScript: the interceptions the Durable Object
installs and ``decideEgress`` in ``worker/src/index.js``. Rather than keep a Python copy of that
code, the kit runs it: ``worker/test-support/decide.mjs`` (node, miniflare, workerd on
127.0.0.1) answers one JSON line per request line. One ``WorkerDecider`` keeps one node process
for all its requests (about 2 s to start, then a few milliseconds per batch).

Example::

    with WorkerDecider() as worker:
        [probe] = worker.probe('{"mode":"deny","allow":[]}', [("pypi.org", 443)])
        assert (probe.admitted, probe.stage) == (False, "platform")
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Literal, Self

from sandboxkit.errors import PrerequisiteError

WORKER_DIR = Path(__file__).resolve().parent / "worker"
# Where the decider finds the Worker's package instead of WORKER_DIR: a copy of it with its npm
# dependencies installed, where the kit's own folder is read-only (an installed wheel).
WORKER_DIR_ENV = "SANDBOXKIT_WORKER_DIR"
# Relative to the Worker's folder.
DECIDE_SCRIPT = Path("test-support") / "decide.mjs"
# decide.mjs imports miniflare, which `npm ci` in the Worker's folder installs (.ci/run does).
_MINIFLARE = Path("node_modules") / "miniflare" / "package.json"

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


class WorkerDecider:
    """A running ``decide.mjs``; use it as a context manager (or call ``close``).

    Args:
        node: the node executable (20 or later); default ``node`` on ``PATH``.

    Raises:
        WorkerSetupError: on entry, when node or the Worker's npm dependencies (in
            ``worker_dir()``) are missing.
    """

    def __init__(self, node: str | None = None) -> None:
        self._node = node
        self._process: subprocess.Popen[str] | None = None
        self._stderr: IO[str] | None = None

    def __enter__(self) -> Self:
        node = shutil.which(self._node or "node")
        if node is None:
            raise WorkerSetupError(
                f"node (20 or later) is needed to run the Worker's egress code; "
                f"{self._node or 'node'} is not on PATH"
            )
        folder = worker_dir()
        if not (folder / _MINIFLARE).is_file():
            raise WorkerSetupError(
                f"the Worker's npm dependencies are missing: run `npm ci` in {folder}"
            )
        self._stderr = tempfile.TemporaryFile("w+", encoding="utf-8")
        self._process = subprocess.Popen(
            [node, str(folder / DECIDE_SCRIPT)],
            cwd=folder,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            encoding="utf-8",
        )
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Ends the node process (closing its stdin) and waits for it."""
        if self._process is not None:
            if self._process.stdin is not None:
                # A process that already stopped leaves unflushed input behind.
                with contextlib.suppress(BrokenPipeError):
                    self._process.stdin.close()
            self._process.wait(timeout=30)
            if self._process.stdout is not None:
                self._process.stdout.close()
            self._process = None
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

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
        """The names and ranges ``worker/src/index.js`` shares with ``sandboxkit.contract``:
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
        process = self._process
        if process is None or process.stdin is None or process.stdout is None:
            raise WorkerDecideError("WorkerDecider is not running; use it in a with block")
        try:
            process.stdin.write(json.dumps(request) + "\n")
            process.stdin.flush()
            line = process.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            raise WorkerDecideError(f"decide.mjs stopped: {self._stderr_tail()}")
        answer = json.loads(line)
        if isinstance(answer, dict) and "error" in answer:
            raise WorkerDecideError(f"decide.mjs refused the request: {answer['error']}")
        return answer

    def _stderr_tail(self) -> str:
        if self._stderr is None:
            return "(no output)"
        self._stderr.seek(0)
        return self._stderr.read()[-2000:].strip() or "(no output)"
