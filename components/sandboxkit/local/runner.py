"""``sandboxkit run``: one command in a ``local`` sandbox, under the stack's profile.

``run_sandbox`` puts the pieces together: the cgroups (``isolation.CgroupLimits``), the seccomp
filter, the network (bubblewrap's loopback-only namespace for ``deny``; the gateway's namespace
otherwise, ``network.SandboxNetwork`` with ``gateway.Gateway`` serving it from a thread of this
process), bubblewrap itself, the wall-clock kill and the audit records.

Exit codes are the command's, as a shell gives them: 126 for a command that cannot be run,
127 for one that is not found, 128+N for one killed by signal N; 137 (SIGKILL) when the kit
kills the sandbox for a limit, with the reason on stderr.
"""

from __future__ import annotations

import asyncio
import json
import logging
import logging.handlers
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any

from sandboxkit.local.gateway import Decision, Gateway, SocketFactory
from sandboxkit.local.isolation import CgroupLimits, Limits, Usage, bwrap_argv, seccomp_filter
from sandboxkit.local.network import SandboxNetwork, enter
from sandboxkit.local.plan import LocalPlan
from sandboxkit.local.spec import check_audit_file, system_resolver

KILLED = 128 + signal.SIGKILL
# What the kit's own shell line does before the command: copy the seed into the workdir, then
# run the command in place of the shell, so 126 and 127 are the shell's.
_SEEDED = 'cp -R /.sandboxkit/seed/. . && exec "$@"'
_DIRECT = 'exec "$@"'


@dataclass
class RunResult:
    """How one sandboxed command ended.

    Attributes:
        exit_code: the command's exit code (see the module docstring).
        wall_seconds: start to end, seconds.
        usage: what the cgroups recorded.
        limits_hit: the limits that ended it (``limits.execTimeoutSeconds``,
            ``limits.memoryMiB``) or refused it something (``sandboxkit:local.maxProcesses``).
        decisions: the gateway's egress decisions, in order.
        output: the command's standard output lines, when the caller captured it.
    """

    exit_code: int
    wall_seconds: float
    usage: Usage
    limits_hit: list[str] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)
    output: list[str] = field(default_factory=list)


class AuditLog:
    """The ``local`` target's audit log: one JSON object per line, rotated at UTC midnight,
    rotated files older than ``retention_days`` deleted on rotation
    (``profile.audit.logRetentionDays``).

    Args:
        path: the log file (``sandboxkit:local.auditLog``).
        retention_days: days a rotated file is kept.

    Raises:
        ConfigError: ``path`` is no file the kit may write (``spec.check_audit_file``).
    """

    def __init__(self, path: Path, retention_days: int) -> None:
        check_audit_file(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        self.retention_days = retention_days
        self._handler = logging.handlers.TimedRotatingFileHandler(
            path, when="midnight", utc=True, encoding="utf-8"
        )
        self._handler.setFormatter(logging.Formatter("%(message)s"))
        self._handler.rotator = self._rotate
        self._lock = threading.Lock()

    def _rotate(self, source: str, dest: str) -> None:
        os.replace(source, dest)
        cutoff = datetime.now(UTC) - timedelta(days=self.retention_days)
        folder, stem = Path(source).parent, Path(source).name
        for rotated in folder.glob(f"{stem}.*"):
            try:
                day = datetime.strptime(rotated.name[len(stem) + 1 :], "%Y-%m-%d").replace(
                    tzinfo=UTC
                )
            except ValueError:
                continue
            if day < cutoff:
                rotated.unlink(missing_ok=True)

    def write(self, record: dict[str, object]) -> None:
        """Append ``record`` (with its ``time``, UTC ISO 8601) as one line."""
        line = json.dumps(
            {"time": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"), **record},
            sort_keys=True,
        )
        with self._lock:
            self._handler.emit(logging.makeLogRecord({"msg": line, "args": None}))

    def close(self) -> None:
        """Flush and close the file."""
        self._handler.close()


class _GatewayThread:
    """The gateway's event loop, in a thread of the ``sandboxkit run`` process."""

    def __init__(self, gateway: Gateway, network: SandboxNetwork) -> None:
        self.loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(
            target=self._main, args=(gateway, network), name="egress-gateway", daemon=True
        )
        self._thread.start()
        self._ready.wait()

    def _main(self, gateway: Gateway, network: SandboxNetwork) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(gateway.serve(network.listener))
        self._ready.set()
        self.loop.run_forever()
        server.close()
        self.loop.run_until_complete(server.wait_closed())
        self.loop.close()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)


def run_sandbox(
    plan: LocalPlan,
    command: Sequence[str],
    *,
    seed: Path | None = None,
    audit: AuditLog | None = None,
    sockets: SocketFactory | None = None,
    stack: str = "",
    stdin: bytes | None = None,
    gateway: bool = False,
) -> RunResult:
    """Run ``command`` in a sandbox built from ``plan`` and wait for it.

    Args:
        plan: the stack's ``local`` plan (``LocalSpec.plan``).
        command: the program and its arguments (looked up on the sandbox's ``PATH``).
        seed: a host folder whose contents are copied into the workdir first (``--workdir``).
        audit: where the run and each egress decision are recorded.
        sockets: how the gateway opens outbound sockets (tests dial a namespace of their own).
        stack: the stack name, for the audit record.
        stdin: bytes for the command's standard input; its standard output is then captured
            (``RunResult.output``). Default: the caller's terminal, or nothing.
        gateway: start the gateway even for ``deny`` (``verify`` shows it refusing).

    Raises:
        HostError: when the host cannot enforce a limit, or bubblewrap is missing.
    """
    limits: Limits = plan["limits"]
    cgroups = CgroupLimits(limits)
    decisions: list[Decision] = []

    def record(decision: Decision) -> None:
        decisions.append(decision)
        if audit is not None:
            audit.write({"event": "egress", "stack": stack, **vars(decision)})

    network: SandboxNetwork | None = None
    serving: _GatewayThread | None = None
    env = dict(plan["environment"])
    try:
        if gateway or plan["contract"].mode != "deny" or plan["contract"].control_plane:
            network = SandboxNetwork.create(plan["proxy_port"])
            proxy = f"http://127.0.0.1:{plan['proxy_port']}"
            env.update(HTTPS_PROXY=proxy, HTTP_PROXY=proxy, https_proxy=proxy, http_proxy=proxy)
            kwargs = {} if sockets is None else {"sockets": sockets}
            serving = _GatewayThread(
                Gateway(plan["contract"], plan["resolver"] or system_resolver(), record, **kwargs),
                network,
            )
        with tempfile.TemporaryFile() as rules:
            seccomp_filter(rules)
            rules.seek(0)
            shell = _SEEDED if seed is not None else _DIRECT
            argv = bwrap_argv(
                ["/bin/sh", "-c", shell, "sh", *command],
                limits,
                env,
                seccomp_fd=rules.fileno(),
                own_network=network is None,
                seed=seed,
            )
            netns_fd = None if network is None else network.netns_fd

            def first_process() -> None:
                cgroups.join()
                if netns_fd is not None:
                    enter(netns_fd)

            started = time.monotonic()
            process = subprocess.Popen(
                argv,
                pass_fds=(rules.fileno(),),
                # bubblewrap's own process stays in the sandbox as its pid 1, whose environ
                # the command can read: it gets none of the caller's environment either.
                env={},
                preexec_fn=first_process,  # noqa: PLW1509 (sets the cgroups and namespace)
                stdin=_stdin(stdin),
                stdout=None if stdin is None else subprocess.PIPE,
            )
            hit: list[str] = []
            # The deadline is a timer that kills bubblewrap (its pid namespace goes with it),
            # while this thread blocks in waitpid: Popen's own timeout polls with sleeps, which
            # cost a short command about 8 ms (benchmarks/local.py).
            expired = threading.Event()

            def expire() -> None:
                expired.set()
                process.kill()

            deadline = threading.Timer(limits.timeout_seconds, expire)
            deadline.start()
            try:
                output = process.communicate(stdin)[0] or b""
            finally:
                deadline.cancel()
            if expired.is_set():
                hit.append("limits.execTimeoutSeconds")
            code = process.returncode
            _kill_all(cgroups)
            wall = time.monotonic() - started
        usage = cgroups.usage()
        if usage.memory_limit_hit:
            hit.append("limits.memoryMiB")
        if usage.pids_limit_hit:
            hit.append("sandboxkit:local.maxProcesses")
        if "limits.execTimeoutSeconds" in hit or (usage.memory_limit_hit and code == KILLED):
            code = KILLED
        elif code < 0:
            code = 128 - code
        lines = output.decode("utf-8", "replace").splitlines()
        result = RunResult(code, wall, usage, hit, decisions, lines)
        if audit is not None:
            audit.write(
                {
                    "event": "run",
                    "stack": stack,
                    "argv": list(command),
                    "exit": code,
                    "wallSeconds": round(wall, 3),
                    "peakMemoryMiB": usage.peak_memory_mib,
                    "limitsHit": hit,
                }
            )
        return result
    finally:
        if serving is not None:
            serving.stop()
        if network is not None:
            network.close()
        _kill_all(cgroups)
        cgroups.remove()


def _stdin(given: bytes | None) -> int | IO[Any]:
    if given is not None:
        return subprocess.PIPE
    return sys.stdin if sys.stdin is not None and sys.stdin.isatty() else subprocess.DEVNULL


def _kill_all(cgroups: CgroupLimits) -> None:
    """SIGKILL whatever is left in the sandbox's cgroup and wait until it is empty (a process
    that left bubblewrap's pid namespace by no means the kit knows of must still end)."""
    deadline = time.monotonic() + 5
    while (pids := cgroups.pids()) and time.monotonic() < deadline:
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
        time.sleep(0.005)
