"""The console script's first module: what a command will wait for starts before the CLI's
imports (about 0.9 s of the kit, pulumi, typer and rich), then ``cli.main`` runs the command.

Today that is checkov for ``sandboxkit check``: its interpreter imports checkov (about 2.7 s of
CPU, most of checkov's own run: benchmarks/README.md) beside the CLI's imports instead of after
them (``checkov_bridge.process.prestart``). The command line is only glanced at here; typer
parses it in ``cli``. A guess that turns out wrong (an argument error, ``--help``) costs a
process that is killed at exit, never a different result: ``gate.check.warm_checkov`` takes
the prestarted process only for the executable the command resolves.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

# Flags after which `check` runs no checkov.
_NO_CHECKOV_FLAGS = frozenset({"--no-checkov", "--help"})


def project_dir_given(argv: Sequence[str]) -> Path | None:
    """The ``--project-dir`` value in ``argv`` (``--project-dir DIR`` or ``--project-dir=DIR``),
    else ``None``."""
    for index, word in enumerate(argv):
        if word.startswith("--project-dir="):
            return Path(word.split("=", 1)[1])
        if word == "--project-dir" and index + 1 < len(argv):
            return Path(argv[index + 1])
    return None


def prestart_for(argv: Sequence[str]) -> None:
    """Start checkov now when ``argv`` (without the program name) is a ``check`` that will run
    it; nothing otherwise, or when the project or checkov cannot be found (``project_root`` and
    ``locate_checkov`` name a removed working folder or a path too long as such): the command
    reports that itself, with its exit code."""
    if not argv or argv[0] != "check" or _NO_CHECKOV_FLAGS.intersection(argv):
        return
    if any(word == "--base" or word.startswith("--base=") for word in argv):
        return  # the base's own gate runs checkov, in its own process
    from sandboxkit.checkov_bridge.process import prestart
    from sandboxkit.errors import ConfigError
    from sandboxkit.project import project_root

    try:
        project = project_root(project_dir_given(argv))
    except ConfigError:
        return
    prestart(project)


def exit_on_sigterm() -> None:
    """Make SIGTERM (a cancelled CI job, ``timeout``) end the process as ``SystemExit(143)``
    does, so that ``with`` blocks and ``atexit`` end what it started (checkov's process group,
    the Cloudflare decider's workerd) instead of leaving them to run on. Python's default for
    SIGTERM ends the process without either."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, handler)


def main() -> None:
    """Console-script entry point (``sandboxkit``, ``python -m sandboxkit``): ``exit_on_sigterm``,
    ``prestart_for`` the command line, then ``cli.main`` (its exit codes)."""
    exit_on_sigterm()
    prestart_for(sys.argv[1:])
    from sandboxkit.cli import main as cli_main

    cli_main()
