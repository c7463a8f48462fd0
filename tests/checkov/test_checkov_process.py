"""checkov started before its files exist (``CheckovProcess.warm``) gives the verdicts a plain
run gives; what fails while starting a scan is raised when its report is asked for."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from checkov_support import PROJECT_DIR, require_checkov

from sandboxkit.checkov_bridge.runner import (
    KIT_CHECKS_DIR,
    CheckovMissingError,
    CheckovProcess,
    checkov_command,
    checkov_reports,
    run_checkov,
    scan_started,
    script_interpreter,
)

FIXTURE = Path(__file__).parent / "fixtures" / "kit_checks" / "kubernetes.yaml"


def verdicts(reports: list[dict[str, object]]) -> set[tuple[str, str, str]]:
    found = set()
    for report in reports:
        results = report["results"]
        assert isinstance(results, dict)
        for status in ("passed_checks", "failed_checks"):
            found |= {(r["check_id"], r["resource"], status) for r in results.get(status, [])}
    return found


def test_a_warmed_process_gives_the_verdicts_of_a_plain_run() -> None:
    checkov = require_checkov()
    assert script_interpreter(checkov) is not None, "the venv's checkov is a Python script"
    checks = PROJECT_DIR / KIT_CHECKS_DIR
    plain = run_checkov(checkov, [FIXTURE], ["kubernetes"], checks)
    with CheckovProcess(checkov) as process:
        process.warm()
        process.start(checkov_command(checkov, [FIXTURE], ["kubernetes"], checks))
        warmed = checkov_reports(*process.wait())
    assert any(v[0] == "CKV_SBX_1" for v in verdicts(plain))
    assert verdicts(warmed) == verdicts(plain)


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
