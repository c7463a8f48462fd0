"""Locating checkov for the tests: a test that needs it FAILS (never skips) when it is missing.

A helper module rather than a second ``conftest.py``: mypy checks ``tests/`` without packages,
where two modules named ``conftest`` collide.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sandboxkit.checkov_bridge.process import CheckovMissingError, locate_checkov
from sandboxkit.checkov_bridge.runner import CheckovReport, scan_rendered
from sandboxkit.project import list_stacks
from support import shipped_render

PROJECT_DIR = Path(__file__).resolve().parents[2]


def require_checkov() -> Path:
    """checkov from ``$SANDBOXKIT_CHECKOV`` or ``.venv-checkov``; fails the test without."""
    try:
        return locate_checkov(PROJECT_DIR)
    except CheckovMissingError as exc:
        pytest.fail(str(exc))


def scan_shipped(checkov_bin: Path) -> CheckovReport:
    """One checkov run over every stack in stacks/ plus the Dockerfiles and workflows."""
    rendered = [shipped_render(PROJECT_DIR, stack) for stack in list_stacks(PROJECT_DIR)]
    return scan_rendered(PROJECT_DIR, rendered)
