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
        "preview": {"contents": "read", "id-token": "write"},
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
    # .ci/gate check: `check --all-stacks --format sarif`, with `--base HEAD^1` in a pull request.
    assert check["run"] == "bash .ci/gate check > sandboxkit.sarif"
    assert "continue-on-error" not in check  # its exit code is the gate
    keep = steps[names.index("Keep the SARIF for code scanning")]
    assert names.index("Keep the SARIF for code scanning") > names.index(
        "sandboxkit check --all-stacks"
    )
    assert keep["if"] == "always()"
    assert keep["with"]["path"] == "sandboxkit.sarif"
    install = "Install the kit, checkov in its own venv, and the Worker's npm packages"
    assert steps[names.index(install)]["run"] == "bash .ci/gate install"
    # Node for the Worker's npm packages, and the merge commit's base (HEAD^1) checked out.
    assert "actions/setup-node" in _uses(workflow["jobs"]["gate"])
    assert steps[0]["with"]["fetch-depth"] == 2
    ci_run, ci_gate = (WORKFLOW.parents[2] / ".ci" / name for name in ("run", "gate"))
    [version] = set(re.findall(r"CHECKOV_VERSION=(\S+)", ci_run.read_text() + ci_gate.read_text()))
    assert version == "3.3.30"


def test_sarif_upload_never_runs_for_forks(workflow: dict[Any, Any]) -> None:
    job = workflow["jobs"]["upload-sarif"]
    assert job["needs"] == "gate"
    condition = " ".join(job["if"].split())
    assert SAME_REPO in condition
    assert "github.event_name == 'push'" in condition
    assert "!cancelled()" in condition
    assert _uses(job) == ["actions/download-artifact", "github/codeql-action/upload-sarif"]
    assert job["steps"][-1]["with"]["sarif_file"] == "sandboxkit.sarif"


def test_preview_runs_only_approved_with_short_lived_credentials(
    workflow: dict[Any, Any],
) -> None:
    job = workflow["jobs"]["preview"]
    condition = " ".join(job["if"].split())
    assert "vars.SANDBOXKIT_CLOUD_PREVIEW == 'true'" in condition
    assert SAME_REPO in condition
    # Required reviewers live on the environment; the job asks for an OIDC token only.
    assert job["environment"] == "cloud-preview"
    assert job["permissions"] == {"contents": "read", "id-token": "write"}
    assert job["strategy"]["matrix"]["stack"] == ["dev", "staging", "prod"]
    secrets = re.findall(r"secrets\.(\w+)", WORKFLOW.read_text())
    assert secrets == ["CLOUDFLARE_PREVIEW_API_TOKEN"]  # Cloudflare has no OIDC exchange
    assert _uses(job)[2:5] == [
        "pulumi/auth-actions",
        "aws-actions/configure-aws-credentials",
        "google-github-actions/auth",
    ]
    assert job["env"]["ARM_USE_OIDC"] == "true"
    command = " ".join(job["steps"][-1]["run"].split())
    assert command == (
        '.venv/bin/sandboxkit pack-config --stack "$STACK" --out "pack-config-$STACK.json" '
        'pulumi preview --stack "$STACK" --non-interactive --diff \\ --policy-pack '
        'policy-packs/sandbox-guard --policy-pack-config "pack-config-$STACK.json"'
    )


def test_every_action_is_pinned_by_a_full_commit_sha(workflow: dict[Any, Any]) -> None:
    uses = [
        (step["uses"], step.get("with", {}))
        for job in workflow["jobs"].values()
        for step in job["steps"]
        if "uses" in step
    ]
    assert [u for u, _ in uses if not re.fullmatch(r"[^@]+@[0-9a-f]{40}", u)] == []
    # Each pin says its release in a comment: `uses: owner/name@<sha> # vX.Y.Z`.
    lines = [line for line in WORKFLOW.read_text().splitlines() if "uses:" in line]
    assert all(re.search(r"@[0-9a-f]{40} # v\d+\.\d+\.\d+$", line) for line in lines)
    for step, given in uses:
        if step.startswith("actions/checkout@"):
            assert given["persist-credentials"] is False
