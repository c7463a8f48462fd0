"""checkov started before its files exist (``CheckovProcess.warm``): only a Python script is
warmed, anything else runs as it is; what fails while starting a scan is raised when its report
is asked for. That a warmed run gives the verdicts of a plain one is checked beside the plain
run of the kit's check fixtures (test_checkov_kit_checks.py), so checkov runs once less."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from sandboxkit.checkov_bridge.runner import (
    CheckovMissingError,
    CheckovProcess,
    checkov_reports,
    scan_started,
    script_interpreter,
)


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
