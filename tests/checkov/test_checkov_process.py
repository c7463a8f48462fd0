"""checkov started before its files exist (``CheckovProcess.warm``): only a Python script is
warmed, anything else runs as it is; what fails while starting a scan is raised when its report
is asked for. That a warmed run gives the verdicts of a plain one is checked beside the plain
run of the kit's check fixtures (test_checkov_kit_checks.py), so checkov runs once less."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from sandboxkit.checkov_bridge import process as process_module
from sandboxkit.checkov_bridge.process import (
    CHECKOV_ENV,
    DEFAULT_CHECKOV,
    CheckovMissingError,
    CheckovProcess,
    locate_checkov,
    script_interpreter,
    take_prestarted,
)
from sandboxkit.checkov_bridge.runner import checkov_reports, scan_started
from sandboxkit.gate.check import warm_checkov
from sandboxkit.launch import prestart_for

PROJECT = Path(__file__).resolve().parents[2]
COMPONENTS = PROJECT / "components"


@pytest.mark.parametrize(
    ("first_line", "expected"),
    [
        (b"#!/opt/venv/bin/python\n", ["/opt/venv/bin/python"]),
        (b"#!/usr/bin/env python3.11\n", ["python3.11"]),
        (b"#!/bin/sh\n", None),
        (b"\x7fELF\x02\x01\x01\x00", None),
    ],
)
def test_only_a_python_script_is_warmed(
    tmp_path: Path, first_line: bytes, expected: list[str] | None
) -> None:
    script = tmp_path / "checkov"
    script.write_bytes(first_line + b"print('scan')\n")
    assert script_interpreter(script) == expected


def test_a_script_that_is_not_python_runs_as_it_is(tmp_path: Path) -> None:
    script = tmp_path / "checkov"
    script.write_text('#!/bin/sh\necho \'{"results": {}, "check_type": "kubernetes"}\'\n')
    script.chmod(0o755)
    with CheckovProcess(script) as process:
        process.warm()  # nothing to warm: started by start()
        process.start([str(script)])
        code, stdout, _ = process.wait()
    assert (code, checkov_reports(code, stdout, "")) == (
        0,
        [{"results": {}, "check_type": "kubernetes"}],
    )


def test_an_interpreter_that_cannot_start_leaves_the_script_to_fail_as_it_would(
    tmp_path: Path,
) -> None:
    script = tmp_path / "checkov"
    script.write_text(f"#!{tmp_path / 'missing' / 'python'}\n")
    script.chmod(0o755)
    with CheckovProcess(script) as process:
        process.warm()
        with pytest.raises(OSError):
            process.start([str(script)])


def test_missing_checkov_is_raised_by_the_report_not_on_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SANDBOXKIT_CHECKOV", str(tmp_path / "absent"))
    with (
        scan_started(tmp_path, [], include_project_files=False) as report,
        pytest.raises(CheckovMissingError, match="checkov not found"),
    ):
        report()


def test_a_driver_that_cannot_import_checkov_reports_its_exit(tmp_path: Path) -> None:
    script = tmp_path / "checkov"
    script.write_text(f"#!{sys.executable}\n")
    with CheckovProcess(script) as process:
        process.warm()  # this interpreter has no checkov: the driver fails importing it
        process.start([str(script), "-f", "x"])
        code, stdout, stderr = process.wait()
    assert code == 1
    assert stdout == ""
    assert "No module named 'checkov'" in stderr


# --- started by the console script before the CLI's imports (``sandboxkit.launch``) ----------


def shell_interpreter(folder: Path, body: str) -> Path:
    """``folder/bin/python3``: a shell script named like an interpreter (so ``warm`` starts
    it), running ``body``; a checkov script naming it on its ``#!`` line is "warmed" by it."""
    interpreter = folder / "bin" / "python3"
    interpreter.parent.mkdir()
    interpreter.write_text(f"#!/bin/sh\n{body}\n")
    interpreter.chmod(0o755)
    return interpreter


@pytest.fixture
def fake_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose .venv-checkov/bin/checkov is a Python script of this interpreter (its
    warm driver fails importing checkov, after the test is done with it); nothing prestarted."""
    (tmp_path / "Pulumi.yaml").write_text("name: sandboxkit\nruntime: python\n")
    script = tmp_path / DEFAULT_CHECKOV
    script.parent.mkdir(parents=True)
    script.write_text(f"#!{sys.executable}\n")
    script.chmod(0o755)
    monkeypatch.delenv(CHECKOV_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(process_module, "_PRESTARTED", [])
    return tmp_path


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--stack", "prod"],
        ["check", "--all-stacks", "--format", "sarif"],
        ["check", "--stack", "prod", "--project-dir", "."],
        ["check", "--project-dir=.", "--stack", "prod"],
    ],
)
def test_a_check_that_runs_checkov_starts_it_before_the_cli(
    fake_project: Path, argv: list[str]
) -> None:
    prestart_for(argv)
    executable = fake_project / DEFAULT_CHECKOV
    taken = take_prestarted(executable)
    assert taken is not None
    with taken as process:
        assert process.executable.resolve() == executable.resolve()
        # Already warm: the driver started by prestart is the one a scan is sent to.
        assert process.warm() is process
    assert take_prestarted(executable) is None  # taken once


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["preview", "--stack", "prod"],
        ["check", "--stack", "prod", "--no-checkov"],
        ["check", "--help"],
        ["checkov", "--stack", "prod"],
        ["check", "--stack", "prod", "--project-dir", "no-such-folder"],
    ],
)
def test_anything_else_starts_nothing(fake_project: Path, argv: list[str]) -> None:
    prestart_for(argv)
    assert process_module._PRESTARTED == []


def test_missing_checkov_starts_nothing(
    fake_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CHECKOV_ENV, str(fake_project / "absent"))
    prestart_for(["check", "--stack", "prod"])
    assert process_module._PRESTARTED == []


def test_the_gate_takes_the_prestarted_process_for_its_own_executable_only(
    fake_project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    prestart_for(["check", "--stack", "prod"])
    [prestarted] = process_module._PRESTARTED
    other = tmp_path_factory.mktemp("other")
    (other / DEFAULT_CHECKOV).parent.mkdir(parents=True)
    (other / DEFAULT_CHECKOV).write_bytes((fake_project / DEFAULT_CHECKOV).read_bytes())
    (other / DEFAULT_CHECKOV).chmod(0o755)
    with warm_checkov(other) as own:
        assert own is not None and own is not prestarted
    with warm_checkov(fake_project) as taken:
        assert taken is prestarted
    assert process_module._PRESTARTED == []


def test_a_prestarted_process_nobody_takes_is_killed_at_exit(fake_project: Path) -> None:
    # An "interpreter" that records its pid and sleeps: only the exit of the process that
    # started it can end it in time.
    interpreter = shell_interpreter(
        fake_project, f"echo $$ > {fake_project / 'pid'}\nexec sleep 300"
    )
    (fake_project / DEFAULT_CHECKOV).write_text(f"#!{interpreter}\n")
    started = subprocess.run(
        [
            sys.executable,
            "-c",
            "import os, time\n"
            "from sandboxkit.launch import prestart_for\n"
            "prestart_for(['check', '--stack', 'prod'])\n"
            "while not os.path.exists('pid'):\n"
            "    time.sleep(0.01)\n",
        ],
        cwd=fake_project,
        env={**os.environ, "PYTHONPATH": str(COMPONENTS)},
        timeout=60,
        check=False,
    )
    assert started.returncode == 0
    pid = int((fake_project / "pid").read_text())
    assert not Path(f"/proc/{pid}").exists()


def test_close_ends_every_process_the_run_started(tmp_path: Path) -> None:
    # An "interpreter" that starts a process of its own (as checkov forks a runner per
    # framework) and records both pids; killing the script alone left such runners behind.
    interpreter = shell_interpreter(
        tmp_path, f"sleep 300 &\necho $$ $! > {tmp_path / 'pids'}\nexec sleep 300"
    )
    script = tmp_path / "checkov"
    script.write_text(f"#!{interpreter}\n")
    with CheckovProcess(script) as process:
        process.warm()
        while not (tmp_path / "pids").exists() or not (tmp_path / "pids").read_text():
            time.sleep(0.01)
    pids = [int(pid) for pid in (tmp_path / "pids").read_text().split()]
    assert len(pids) == 2
    for _ in range(100):  # the runner is reparented, then reaped by init
        if not any(Path(f"/proc/{pid}").exists() for pid in pids):
            break
        time.sleep(0.05)
    assert [pid for pid in pids if Path(f"/proc/{pid}").exists()] == []


def test_the_warm_driver_puts_the_scripts_folder_first_on_sys_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A module in the working folder must not shadow one of checkov's: run cold, the script's
    # own folder comes first, never the working folder. A stand-in checkov.main records it.
    fake = tmp_path / "site" / "checkov"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "main.py").write_text("")
    script = tmp_path / "venv" / "bin" / "checkov"
    script.parent.mkdir(parents=True)
    script.write_text(f"#!{sys.executable}\nimport sys\nprint(sys.path[0])\n")
    script.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    (work / "json.py").write_text("raise ImportError('the working folder was read first')\n")
    monkeypatch.chdir(work)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "site"))
    with CheckovProcess(script) as process:
        process.warm()
        process.start([str(script)])
        code, stdout, stderr = process.wait()
    assert (code, stdout, stderr) == (0, f"{script.parent}\n", "")


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (lambda path: None, "not found"),
        (lambda path: path.write_text("#!/bin/sh\n"), "is not an executable file"),
        (lambda path: path.mkdir(), "is not an executable file"),
    ],
)
def test_a_checkov_that_cannot_run_is_named_with_what_is_wrong(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make: Any, problem: str
) -> None:
    path = tmp_path / "checkov"
    make(path)
    monkeypatch.setenv(CHECKOV_ENV, str(path))
    with pytest.raises(CheckovMissingError) as caught:
        locate_checkov(tmp_path)
    assert str(caught.value).startswith(f"checkov {problem} at {path} (set {CHECKOV_ENV} ")


def test_a_path_the_system_refuses_is_missing_checkov_not_a_crash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / ("a" * 300)
    monkeypatch.setenv(CHECKOV_ENV, str(path))
    with pytest.raises(CheckovMissingError) as caught:
        locate_checkov(tmp_path)
    assert str(caught.value).startswith(f"checkov not found (File name too long) at {path} ")
    prestart_for(["check", "--stack", "prod", "--project-dir", str(PROJECT)])
    assert process_module._PRESTARTED == []
