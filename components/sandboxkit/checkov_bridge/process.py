"""checkov's process: where the executable is, and a run whose interpreter starts (and imports
checkov) before the files it scans exist.

Standard library only, so that the console script can start checkov before the kit's own
imports (``prestart``, called by ``sandboxkit.launch`` for ``sandboxkit check``): checkov's
imports are most of a run on one stack's exports (benchmarks/README.md).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Self

if TYPE_CHECKING:  # standard library only at run time (module docstring)
    from sandboxkit.errors import MissingTool

CHECKOV_ENV = "SANDBOXKIT_CHECKOV"
CHECKOV_VERSION = "3.3.30"
DEFAULT_CHECKOV = Path(".venv-checkov/bin/checkov")
INSTALL_COMMAND = (
    f"python3 -m venv .venv-checkov && .venv-checkov/bin/pip install checkov=={CHECKOV_VERSION}"
)


class CheckovMissingError(RuntimeError):
    """checkov is not installed where the kit looks for it (the message says how to install)."""


def locate_checkov(project_dir: Path) -> Path:
    """The checkov executable: ``$SANDBOXKIT_CHECKOV`` or ``<project>/.venv-checkov/bin/checkov``.

    Raises:
        CheckovMissingError: naming where it looked, what was wrong there (missing, not an
            executable file, a path the system refuses) and the install command.
    """
    path, problem = _checkov_state(project_dir)
    if problem is None:
        return path
    raise CheckovMissingError(
        f"checkov {problem} at {path} (set {CHECKOV_ENV} or install it in its own venv, "
        f"from the project folder: {INSTALL_COMMAND})"
    )


def missing_checkov(project_dir: Path) -> MissingTool | None:
    """checkov as a ``MissingTool`` (where it was looked for, and ``INSTALL_COMMAND``) when
    ``locate_checkov`` would not find it; ``None`` when it would."""
    from sandboxkit.errors import MissingTool

    path, problem = _checkov_state(project_dir)
    if problem is None:
        return None
    other = (
        f"; {CHECKOV_ENV} names it: unset it to use the one installed below"
        if os.environ.get(CHECKOV_ENV)
        else ""
    )
    return MissingTool(f"checkov ({problem} at {path}{other})", INSTALL_COMMAND)


def _checkov_state(project_dir: Path) -> tuple[Path, str | None]:
    """Where checkov is looked for and what is wrong there (``None``: nothing)."""
    configured = os.environ.get(CHECKOV_ENV)
    path = Path(configured) if configured else project_dir / DEFAULT_CHECKOV
    try:
        if not path.exists():
            return path, "not found"
        if not (path.is_file() and os.access(path, os.X_OK)):
            return path, "is not an executable file"
    except OSError as error:  # a path too long, a folder that cannot be listed
        return path, f"not found ({error.strerror})"
    return path, None


# Run by the checkov script's own interpreter: checkov's imports (most of a small run's time)
# happen while the caller is still rendering; the command line arrives on stdin, and the script
# then runs exactly as it would have run alone.
_WARM_DRIVER = """
import os, sys  # loaded with the interpreter already: nothing on sys.path is read for them
# `python -c` puts the working folder first on sys.path; the script run as itself puts its own
# folder there (argv[1]: the executable), so no module of the working folder shadows checkov's.
sys.path[0] = os.path.dirname(os.path.realpath(sys.argv[1]))
import json, runpy, warnings
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    import checkov.main
# checkov.main reads sys.argv[1:] when it is imported (Checkov's default argument): the
# script imports it again under the real command line, its dependencies already loaded.
del sys.modules["checkov.main"]
line = sys.stdin.readline()
if line:
    sys.argv = json.loads(line)
    runpy.run_path(sys.argv[0], run_name="__main__")
"""


def script_interpreter(executable: Path) -> list[str] | None:
    """The Python interpreter a console script names on its ``#!`` line, else ``None``.

    pip writes ``#!<venv>/bin/python`` into a venv's ``checkov`` script; ``#!/usr/bin/env
    python3`` is read too. A binary, a shell wrapper or an unreadable file gives ``None``.
    """
    try:
        with executable.open("rb") as script:
            first = script.readline(512)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode(errors="replace").split()
    if words and Path(words[0]).name == "env":
        words = words[1:]
    if not words or not re.fullmatch(r"python[0-9.]*", Path(words[0]).name):
        return None
    return words


# What checkov reads besides its command line: its environment variables (configargparse
# ``env_var``s of checkov 3.3.30's ext_argument_parser: CKV_SKIP_CHECK, CKV_CHECK, CKV_FRAMEWORK,
# BC_API_KEY, PRISMA_API_URL, ...) and ``.checkov.yaml``/``.checkov.yml`` in the working folder
# and the home folder (checkov.common.util.config_utils.get_default_config_paths).
_CHECKOV_VARIABLE = re.compile(r"(CKV|BC|PRISMA|CHECKOV)_")


def hermetic_environment(home: Path) -> dict[str, str]:
    """This process's environment for checkov, less every variable checkov reads as an option
    (``CKV_*``, ``BC_*``, ``PRISMA_*``, ``CHECKOV_*``), with ``HOME`` at ``home``: a
    ``CKV_SKIP_CHECK`` or a ``~/.checkov.yaml`` must not drop checks the gate runs."""
    kept = {k: v for k, v in os.environ.items() if not _CHECKOV_VARIABLE.match(k)}
    return {**kept, "HOME": str(home)}


class CheckovProcess:
    """One checkov run whose process can start before the files it scans exist.

    checkov runs hermetic: in an empty folder of its own, as working folder and ``HOME``, with
    ``hermetic_environment``, so a ``.checkov.yaml`` of the project (a file a pull request
    controls), of the caller's folder or home, or a ``CKV_*`` variable, cannot skip a check.

    ``warm`` starts the script's interpreter now, importing checkov (about two thirds of a
    run on one stack's exports: benchmarks/README.md), when the executable is a Python script
    (``script_interpreter``); ``start`` sends it the command line, or starts the command as it
    is when nothing was warmed; ``wait`` returns ``(exit code, stdout, stderr)``. Output goes
    to temporary files, so a process nobody reads yet never blocks on a full pipe. Use it as a
    context manager: ``close`` kills a process still running.

    Args:
        executable: the checkov executable (``locate_checkov``).
    """

    def __init__(self, executable: Path) -> None:
        # Absolute: the process runs in a folder of its own.
        self.executable = Path(os.path.abspath(executable))
        self._process: subprocess.Popen[str] | None = None
        self._warm = False
        self._outputs: tuple[IO[str], IO[str]] | None = None
        self._folder: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> Self:
        # Entered again by the owner of a prestarted process: its output files stay.
        if self._outputs is None:
            self._outputs = (
                tempfile.TemporaryFile("w+", encoding="utf-8"),
                tempfile.TemporaryFile("w+", encoding="utf-8"),
            )
            self._folder = tempfile.TemporaryDirectory(prefix="sandboxkit-checkov-")
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _popen(self, command: Sequence[str], stdin: int) -> subprocess.Popen[str]:
        assert self._outputs is not None and self._folder is not None, (
            "use CheckovProcess as a context manager"
        )
        # Its own process group: checkov forks a runner per framework, and ``close`` ends them
        # with it (killing the script alone left a runner blocked on a pipe for good).
        folder = Path(self._folder.name)
        return subprocess.Popen(
            list(command),
            stdin=stdin,
            stdout=self._outputs[0],
            stderr=self._outputs[1],
            text=True,
            encoding="utf-8",
            start_new_session=True,
            cwd=folder,
            env=hermetic_environment(folder),
        )

    def warm(self) -> Self:
        """Start the interpreter and checkov's imports now, if the executable allows it."""
        interpreter = script_interpreter(self.executable)
        if interpreter is not None and self._process is None:
            try:
                self._process = self._popen(
                    [*interpreter, "-c", _WARM_DRIVER, str(self.executable)], subprocess.PIPE
                )
            except OSError:
                return self  # an interpreter that cannot start: ``start`` runs the script as is
            self._warm = True
        return self

    def start(self, command: Sequence[str]) -> None:
        """Run ``command`` (``checkov_command``): in the warmed process, else as a new one."""
        if self._warm:
            assert self._process is not None and self._process.stdin is not None
            try:
                self._process.stdin.write(json.dumps(list(command)) + "\n")
                self._process.stdin.close()
            except BrokenPipeError:
                pass  # it died while importing: its exit code and stderr tell why
        else:
            self._process = self._popen(command, subprocess.DEVNULL)

    def wait(self) -> tuple[int, str, str]:
        """Wait for the run ``start`` began; ``(exit code, stdout, stderr)``."""
        assert self._process is not None and self._outputs is not None
        code = self._process.wait()
        self._process = None
        stdout, stderr = self._outputs
        stdout.seek(0)
        stderr.seek(0)
        return code, stdout.read(), stderr.read()

    def close(self) -> None:
        """Kill a process still running with every process it started (its process group),
        and drop its output files."""
        if self._process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._process.pid, signal.SIGKILL)
            self._process.wait()
            self._process = None
        for stream in self._outputs or ():
            stream.close()
        self._outputs = None
        if self._folder is not None:
            self._folder.cleanup()
            self._folder = None


# A checkov started by ``prestart`` for the command this process runs, until ``take_prestarted``.
_PRESTARTED: list[CheckovProcess] = []


def prestart(project_dir: Path) -> None:
    """Start checkov's interpreter for ``project_dir``'s checkov now (``CheckovProcess.warm``),
    for a later ``take_prestarted``; nothing when checkov is missing (``locate_checkov``: the
    scan reports that in its turn). A process nobody takes is killed at exit."""
    try:
        executable = locate_checkov(project_dir)
    except CheckovMissingError:
        return
    process = CheckovProcess(executable).__enter__().warm()
    atexit.register(process.close)
    _PRESTARTED.append(process)


def take_prestarted(executable: Path) -> CheckovProcess | None:
    """The process ``prestart`` started for ``executable`` (its owner closes it from now on),
    else ``None``."""
    for process in _PRESTARTED:
        if process.executable.resolve() == executable.resolve():
            _PRESTARTED.remove(process)
            return process
    return None
