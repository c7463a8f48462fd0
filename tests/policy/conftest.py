"""Fixtures for the policy gate: the pack in-process, stack configs to weaken, a checker.

No mocks are installed here: ``render_source`` runs its own recording engine and restores
Pulumi's settings after.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sandboxkit import gate
from sandboxkit.config import ConfigSource, read_stack_file
from sandboxkit.render import RenderedStack, render_source

Checker = Callable[..., gate.CheckResult]


@pytest.fixture(scope="session")
def pack(project_dir_path: Path) -> Path:
    """The sandbox-guard pack folder."""
    return gate.pack_dir(project_dir_path)


@pytest.fixture(scope="session")
def project_dir_path() -> Path:
    """The repository root, session-scoped (``project_dir`` is per test)."""
    return Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def analyzer(pack: Path) -> gate.InProcessAnalyzer:
    """The pack's analyzer servicer in this process (reconfigured by every check)."""
    return gate.InProcessAnalyzer(pack)


@pytest.fixture
def stack_values(project_dir_path: Path) -> Callable[[str], dict[str, Any]]:
    """A fresh, editable copy of a shipped stack's ``sandboxkit:*`` values."""

    def values(stack: str) -> dict[str, Any]:
        path = project_dir_path / "stacks" / f"Pulumi.{stack}.yaml"
        return copy.deepcopy(dict(read_stack_file(path).values))

    return values


@pytest.fixture
def render(project_dir_path: Path) -> Callable[[str, dict[str, Any]], RenderedStack]:
    """Render config values offline as stack ``stack`` (the stack file names the environment)."""

    def run(stack: str, values: dict[str, Any]) -> RenderedStack:
        return render_source(project_dir_path, stack, ConfigSource(values=values))

    return run


@pytest.fixture
def check(analyzer: gate.InProcessAnalyzer, project_dir_path: Path) -> Checker:
    """Apply the pack to a rendered stack as ``sandboxkit check`` does."""

    def run(rendered: RenderedStack, pack_config: Path | None = None) -> gate.CheckResult:
        return gate.check_rendered(analyzer, rendered, project_dir_path, pack_config)

    return run
