"""Progress on long work: steps on an interactive stderr only; piped output is unchanged."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from sandboxkit import progress
from sandboxkit.cli import app
from support import PROGRESS_ENV

COMPONENTS = Path(__file__).resolve().parents[2] / "components"


def terminal(buffer: io.StringIO) -> Console:
    return Console(file=buffer, force_terminal=True, force_interactive=True, width=100)


def test_a_terminal_shows_each_step() -> None:
    buffer = io.StringIO()
    with progress.terminal_steps(True, terminal(buffer)) as step:
        step("rendering prod: kubernetes")
        step("CrossGuard: prod (125 resources)")
    shown = buffer.getvalue()
    assert "rendering prod: kubernetes" in shown
    assert "CrossGuard: prod (125 resources)" in shown


def test_machine_readable_output_shows_nothing_even_on_a_terminal() -> None:
    buffer = io.StringIO()
    with progress.terminal_steps(False, terminal(buffer)) as step:
        step("rendering prod: kubernetes")
    assert step is progress.no_steps
    assert buffer.getvalue() == ""


def test_a_file_that_is_not_a_terminal_shows_nothing() -> None:
    buffer = io.StringIO()
    with progress.terminal_steps(True, Console(file=buffer)) as step:
        step("rendering prod: kubernetes")
    assert buffer.getvalue() == ""


@pytest.fixture
def shown(monkeypatch: pytest.MonkeyPatch) -> io.StringIO:
    """What the CLI shows on a (forced) interactive stderr."""
    buffer = io.StringIO()
    monkeypatch.setattr(progress, "stderr_console", lambda: terminal(buffer))
    return buffer


def test_preview_on_a_terminal_names_each_target_as_it_renders(
    shown: io.StringIO, project_dir: Path
) -> None:
    result = CliRunner().invoke(
        app, ["preview", "--stack", "dev", "--project-dir", str(project_dir)]
    )
    assert result.exit_code == 0, result.output
    assert "rendering dev: kubernetes" in shown.getvalue()
    assert "rendering dev: aws-microvm" in shown.getvalue()


def test_check_on_a_terminal_names_the_renders_and_crossguard(
    shown: io.StringIO, project_dir: Path
) -> None:
    args = ["check", "--stack", "dev", "--no-checkov", "--project-dir", str(project_dir)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    for text in ("rendering dev: kubernetes", "rendering dev: aws-microvm", "CrossGuard: dev"):
        assert text in shown.getvalue()


@pytest.mark.parametrize(
    "args",
    [
        ["preview", "--stack", "dev", "--json"],
        ["check", "--stack", "dev", "--no-checkov", "--format", "json"],
        ["check", "--stack", "dev", "--no-checkov", "--format", "sarif"],
    ],
)
def test_json_and_sarif_show_nothing_on_a_terminal(
    shown: io.StringIO, project_dir: Path, args: list[str]
) -> None:
    result = CliRunner().invoke(app, [*args, "--project-dir", str(project_dir)])
    assert result.exit_code == 0, result.output
    assert shown.getvalue() == ""


def test_text_output_piped_has_an_empty_stderr(project_dir: Path) -> None:
    # check's real process, piped the same way: tests/policy/test_check_command.py's
    # entry-point test (check prod --no-checkov: exact stdout, empty stderr).
    env = {**os.environ, "PYTHONPATH": str(COMPONENTS)}
    for name in PROGRESS_ENV:
        env.pop(name, None)
    result = subprocess.run(
        [sys.executable, "-m", "sandboxkit", "preview", "--stack", "dev"],
        cwd=project_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert "rendering" not in result.stdout
