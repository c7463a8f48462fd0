"""The PR workflow: jobs and steps as intended, least privilege, fork-safe SARIF upload, pinned
actions. checkov's github_actions checks judge it in test_checkov_baseline.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

WORKFLOW = Path(__file__).resolve().parents[2] / ".github" / "workflows" / "pr.yml"
SAME_REPO = "github.event.pull_request.head.repo.full_name == github.repository"


@pytest.fixture(scope="module")
def workflow() -> dict[Any, Any]:
    document = yaml.safe_load(WORKFLOW.read_text())
    assert isinstance(document, dict)
    return document


def _uses(job: dict[str, Any]) -> list[str]:
    return [step["uses"].split("@")[0] for step in job["steps"] if "uses" in step]


def test_runs_on_pull_requests_and_pushes_to_main(workflow: dict[Any, Any]) -> None:
    # PyYAML reads the key `on` as True.
    assert workflow[True] == {"pull_request": None, "push": {"branches": ["main"]}}
    assert "pull_request_target" not in workflow[True]


def test_jobs_and_least_privilege(workflow: dict[Any, Any]) -> None:
    jobs = workflow["jobs"]
    assert set(jobs) == {"tests", "gate", "upload-sarif", "preview"}
    assert workflow["permissions"] == {"contents": "read"}
    assert {name: job["permissions"] for name, job in jobs.items()} == {
        "tests": {"contents": "read"},
        "gate": {"contents": "read"},
        "upload-sarif": {"contents": "read", "actions": "read", "security-events": "write"},
        "preview": {"contents": "read"},
    }


def test_tests_job_runs_ci_run(workflow: dict[Any, Any]) -> None:
    steps = workflow["jobs"]["tests"]["steps"]
    assert [s.get("run") for s in steps if "run" in s] == ["bash .ci/run"]


def test_gate_runs_check_on_all_stacks_and_keeps_sarif_even_when_it_fails(
    workflow: dict[Any, Any],
) -> None:
    steps = workflow["jobs"]["gate"]["steps"]
    names = [s.get("name") for s in steps]
    check = steps[names.index("sandboxkit check --all-stacks")]
    assert check["run"] == (
        ".venv/bin/sandboxkit check --all-stacks --format sarif > sandboxkit.sarif"
    )
    assert "continue-on-error" not in check  # its exit code is the gate
    keep = steps[names.index("Keep the SARIF for code scanning")]
    assert names.index("Keep the SARIF for code scanning") > names.index(
        "sandboxkit check --all-stacks"
    )
    assert keep["if"] == "always()"
    assert keep["with"]["path"] == "sandboxkit.sarif"
    install = steps[names.index("Install the kit, and checkov in its own venv")]["run"]
    assert ".venv-checkov/bin/pip install --quiet checkov==3.3.30" in install


def test_sarif_upload_never_runs_for_forks(workflow: dict[Any, Any]) -> None:
    job = workflow["jobs"]["upload-sarif"]
    assert job["needs"] == "gate"
    condition = " ".join(job["if"].split())
    assert SAME_REPO in condition
    assert "github.event_name == 'push'" in condition
    assert "!cancelled()" in condition
    assert _uses(job) == ["actions/download-artifact", "github/codeql-action/upload-sarif"]
    assert job["steps"][-1]["with"]["sarif_file"] == "sandboxkit.sarif"


def test_preview_runs_only_with_credentials_configured(workflow: dict[Any, Any]) -> None:
    job = workflow["jobs"]["preview"]
    condition = " ".join(job["if"].split())
    assert "vars.SANDBOXKIT_CLOUD_PREVIEW == 'true'" in condition
    assert SAME_REPO in condition
    assert job["strategy"]["matrix"]["stack"] == ["dev", "staging", "prod"]
    command = " ".join(job["steps"][-1]["run"].split())
    assert "--policy-pack policy-packs/sandbox-guard" in command
    assert (
        '--policy-pack-config "policy-packs/sandbox-guard/config/${{ matrix.stack }}.json"'
        in command
    )


def test_every_action_is_pinned_by_sha_but_the_baselined_one(workflow: dict[Any, Any]) -> None:
    unpinned = {
        step["uses"]
        for job in workflow["jobs"].values()
        for step in job["steps"]
        if "uses" in step and not re.fullmatch(r"[^@]+@[0-9a-f]{40}", step["uses"])
    }
    assert unpinned == {"pulumi/actions@v6"}
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            if step.get("uses", "").startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False
