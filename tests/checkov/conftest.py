"""Fixtures for the checkov bridge: checkov itself (a test FAILS when it is missing) and one
checkov run over every shipped stack and the kit's own files, shared by the tests that read it."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandboxkit.checkov_bridge.runner import (
    CheckovMissingError,
    CheckovReport,
    locate_checkov,
    scan_rendered,
)
from sandboxkit.project import list_stacks
from sandboxkit.render import render_stack

PROJECT_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def checkov_bin() -> Path:
    """checkov from ``$SANDBOXKIT_CHECKOV`` or ``.venv-checkov``; fails (never skips) without."""
    try:
        return locate_checkov(PROJECT_DIR)
    except CheckovMissingError as exc:
        pytest.fail(str(exc))


@pytest.fixture(scope="session")
def shipped_report(checkov_bin: Path) -> CheckovReport:
    """One checkov run over every stack in stacks/ plus the Dockerfiles and workflows."""
    rendered = [render_stack(PROJECT_DIR, stack) for stack in list_stacks(PROJECT_DIR)]
    return scan_rendered(PROJECT_DIR, rendered)
