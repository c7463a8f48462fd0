"""checkov decides by the kit's command line alone: nothing a pull request or the caller's
machine holds drops a check. Found by a newcomer's PR trial: a `# checkov:skip=` comment in a
Dockerfile, or a `.checkov.yaml` with `skip-check`, turned a failing Dockerfile green, and the
skipped checks were not even counted."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from checkov_support import require_checkov

from sandboxkit.checkov_bridge.process import hermetic_environment
from sandboxkit.checkov_bridge.runner import CheckovFinding, scan

# Fails CKV_DOCKER_2 (no HEALTHCHECK), CKV_DOCKER_3 (no USER) and CKV_DOCKER_7 (latest tag).
WEAK_DOCKERFILE = "FROM debian:latest\nRUN echo hi\n"
SKIPS = (
    "# checkov:skip=CKV_DOCKER_2:no healthcheck needed\n"
    "# checkov:skip=CKV_DOCKER_3:root is fine\n"
    "# checkov:skip=CKV_DOCKER_7:latest is fine\n"
)
SKIP_CONFIG = "skip-check:\n  - CKV_DOCKER_2\n  - CKV_DOCKER_3\n  - CKV_DOCKER_7\n"
WEAK_CHECKS = ["CKV_DOCKER_2", "CKV_DOCKER_3", "CKV_DOCKER_7"]


def _project(root: Path, dockerfile: str) -> Path:
    (root / "images" / "agent").mkdir(parents=True)
    (root / "images" / "agent" / "Dockerfile").write_text(dockerfile)
    return root


def _failed(findings: list[CheckovFinding]) -> list[str]:
    return sorted(f.policy for f in findings if not f.passed and f.accepted is None)


@pytest.fixture(scope="module")
def checkov_bin() -> Path:
    return require_checkov()


def test_inline_skip_comments_count_as_failures_naming_the_comment(
    tmp_path: Path, checkov_bin: Path
) -> None:
    project = _project(tmp_path, SKIPS + WEAK_DOCKERFILE)
    report = scan(project, [], executable=checkov_bin, baseline=[])
    assert _failed(report.findings) == WEAK_CHECKS
    healthcheck = next(f for f in report.findings if f.policy == "CKV_DOCKER_2")
    assert healthcheck.suppressed == "no healthcheck needed"
    assert healthcheck.message.endswith(
        "An inline checkov:skip comment ('no healthcheck needed') suppresses it in the file; "
        "the gate does not honour inline suppressions: fix it, or accept it in "
        "policy-packs/checkov/baseline.yaml with a reason."
    )


def test_a_checkov_config_in_the_project_the_caller_or_home_skips_nothing(
    tmp_path: Path, checkov_bin: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(tmp_path / "project", WEAK_DOCKERFILE)
    (project / ".checkov.yaml").write_text(SKIP_CONFIG)
    caller = tmp_path / "caller"
    caller.mkdir()
    (caller / ".checkov.yml").write_text(SKIP_CONFIG)
    home = tmp_path / "home"
    home.mkdir()
    (home / ".checkov.yaml").write_text(SKIP_CONFIG)
    monkeypatch.chdir(caller)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CKV_SKIP_CHECK", ",".join(WEAK_CHECKS))
    report = scan(project, [], executable=checkov_bin, baseline=[])
    assert _failed(report.findings) == WEAK_CHECKS
    assert all(f.suppressed is None for f in report.findings)


def test_the_environment_checkov_gets_has_none_of_its_option_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("CKV_SKIP_CHECK", "BC_API_KEY", "PRISMA_API_URL", "CHECKOV_X"):
        monkeypatch.setenv(name, "CKV_DOCKER_2")
    environment = hermetic_environment(tmp_path)
    assert environment["HOME"] == str(tmp_path)
    assert [k for k in environment if k.startswith(("CKV_", "BC_", "PRISMA_", "CHECKOV_"))] == []
    assert environment["PATH"] == os.environ["PATH"]
