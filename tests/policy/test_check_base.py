"""``sandboxkit check --base REF`` in a real git repository: a pull request cannot lower the gate.

One repository per test session (``base_repo``): the project's files committed as ``main``,
with a trimmed prod stack (the three targets the issue's weakened stack used) and a dev stack,
then a branch ``pr`` whose working tree each test edits and ``repo`` resets after. The gate runs
without checkov here (checkov's fail-closed reading is in tests/checkov/); which files count
as gate files is checked on ``gate_changes`` alone, one edit at a time, without a gate run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from sandboxkit.trusted_base import GATE_CHANGE_RULE, GATE_PATHS, GateChange, gate_changes
from support import invoke_cli, open_egress

REPO = Path(__file__).resolve().parents[2]
GIT_ENV = {
    "GIT_AUTHOR_NAME": "base",
    "GIT_AUTHOR_EMAIL": "base@example.com",
    "GIT_COMMITTER_NAME": "base",
    "GIT_COMMITTER_EMAIL": "base@example.com",
}
# The prod stack the issue weakened: egress open on kubernetes, aws-microvm and gcp-cloudrun.
PROD_TARGETS = ["kubernetes", "aws-microvm", "gcp-cloudrun"]


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "HOME": str(repo), **GIT_ENV},
    )
    return done.stdout.strip()


def edit_config(repo: Path, stack: str, edit: Callable[[dict[str, Any]], None]) -> None:
    path = repo / "stacks" / f"Pulumi.{stack}.yaml"
    document = yaml.safe_load(path.read_text())
    edit(document["config"])
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def only(targets: list[str]) -> Callable[[dict[str, Any]], None]:
    """An edit keeping only ``targets`` (and their sections) in a stack's config."""

    def edit(config: dict[str, Any]) -> None:
        for target in config["sandboxkit:targets"]:
            if target not in targets:
                config.pop(f"sandboxkit:{target}", None)
        config["sandboxkit:targets"] = targets

    return edit


@pytest.fixture(scope="session")
def base_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project's files (tracked and new, none ignored) committed as ``main``, then branch
    ``pr`` checked out: made once per test session."""
    repo = tmp_path_factory.mktemp("pr-repo")
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        if source.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
    (repo / "stacks" / "Pulumi.staging.yaml").unlink()
    edit_config(repo, "prod", only(PROD_TARGETS))
    edit_config(repo, "dev", only(["kubernetes"]))
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "checkout", "-q", "-b", "pr")
    return repo


@pytest.fixture
def repo(base_repo: Path) -> Iterator[Path]:
    """The session's repository on branch ``pr``, reset to ``main`` after the test."""
    yield base_repo
    git(base_repo, "checkout", "-q", "-f", "pr")
    git(base_repo, "reset", "-q", "--hard", "main")
    git(base_repo, "clean", "-q", "-f", "-d")


def check(repo: Path, *args: str) -> tuple[int, str, str]:
    ran = invoke_cli(
        "check", "--all-stacks", "--no-checkov", *args, "--project-dir", str(repo), cwd=repo
    )
    return ran.returncode, ran.stdout, ran.stderr


def sarif_schema() -> dict[str, Any]:
    path = REPO.parent / "shared" / "reference" / "sarif" / "sarif-schema-2.1.0.json"
    document: dict[str, Any] = json.loads(path.read_text())
    return document


# -- which files are the gate's: one edit at a time, no gate run ------------------------------

GATE_EDITS = {
    "policy-packs/sandbox-guard/config/prod.json": '{"all": "advisory"}\n',
    "policy-packs/checkov/levels.json": '{"dev": "advisory", "staging": "advisory", '
    '"prod": "advisory", "project": "advisory"}\n',
    "policy-packs/checkov/baseline.yaml": None,
    "sandboxkit.yaml": "environments:\n  prod: dev\n",
    "policy-packs/sandbox-guard/policies/_common.py": None,
    "components/sandboxkit/policy_rules.py": None,
    "components/sandboxkit/egress_contract.py": None,
    "Pulumi.yaml": None,
    ".github/workflows/pr.yml": None,
}


@pytest.mark.parametrize("path", sorted(GATE_EDITS))
def test_each_edited_gate_file_is_named(repo: Path, path: str) -> None:
    file = repo / path
    text = GATE_EDITS[path]
    file.write_text(text if text is not None else file.read_text() + "\n# weakened\n")
    commit = git(repo, "rev-parse", "main")
    assert gate_changes(repo, Path(), commit) == (GateChange(path, "modified"),)


def test_new_and_deleted_gate_files_are_named_and_stack_files_are_not(repo: Path) -> None:
    (repo / "policy-packs/sandbox-guard/policies/_common.py").unlink()
    (repo / "policy-packs/sandbox-guard/policies/allow_all.py").write_text("ALLOW = True\n")
    (repo / "components/sandboxkit/data/extra.txt").write_text("x\n")
    git(repo, "add", "components/sandboxkit/data/extra.txt")
    git(repo, "commit", "-q", "-m", "committed on the branch counts too")
    # Not gate files: the stacks judged, the docs, the tests, what git ignores.
    (repo / "stacks/Pulumi.prod-eu.yaml").write_text("config: {}\n")
    (repo / "README.md").write_text("changed\n")
    (repo / "tests/core/test_cli.py").write_text("changed\n")
    (repo / "components/sandboxkit/__pycache__").mkdir(exist_ok=True)
    (repo / "components/sandboxkit/__pycache__/x.pyc").write_bytes(b"\0")
    assert gate_changes(repo, Path(), git(repo, "rev-parse", "main")) == (
        GateChange("components/sandboxkit/data/extra.txt", "added"),
        GateChange("policy-packs/sandbox-guard/policies/_common.py", "deleted"),
        GateChange("policy-packs/sandbox-guard/policies/allow_all.py", "added"),
    )


def test_every_gate_path_has_a_code_owner() -> None:
    # The review that lets a change to the gate merge is the code owners'.
    rules = [
        line.split()
        for line in (REPO / ".github/CODEOWNERS").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    owned = {pattern.strip("/"): owners for pattern, *owners in rules}
    assert sorted(owned) == sorted(GATE_PATHS)
    assert all(owners for owners in owned.values())


# -- the gate of the base decides ---------------------------------------------------------------


def test_an_untouched_branch_passes_and_names_its_base(repo: Path) -> None:
    commit = git(repo, "rev-parse", "main")
    code, out, err = check(repo, "--base", "main")
    assert (code, err) == (0, ""), out + err
    assert out.endswith(f"  passed\nbase: the gate of main ({commit[:12]})\n")
    assert "note:" not in out


def test_a_lowered_pack_config_and_baseline_are_the_bases_again_and_named(repo: Path) -> None:
    # (a): prod's egress open, the pack config lowered to advisory and a baseline entry added.
    edit_config(repo, "prod", lambda c: open_egress(c, "sandboxkit:"))
    (repo / "policy-packs/sandbox-guard/config/prod.json").write_text('{"all": "advisory"}\n')
    baseline = repo / "policy-packs/checkov/baseline.yaml"
    baseline.write_text(
        baseline.read_text()
        + "  - check: CKV_SBX_1\n    urn: 'urn:pulumi:prod::*'\n    reason: reviewed\n"
    )
    # Without --base the pull request's own files decide: it passes.
    assert check(repo)[0] == 0
    code, out, _ = check(repo, "--base", "main")
    assert code == 1
    assert "SBX-NET-001 [critical, mandatory, crossguard]" in out
    assert out.splitlines()[-1] == (
        f"note: this tree changes 2 gate file(s) against the base main "
        f"({git(repo, 'rev-parse', 'main')[:12]}): policy-packs/checkov/baseline.yaml "
        "(modified), policy-packs/sandbox-guard/config/prod.json (modified); the verdict is "
        "the base's gate, and the change needs the code owners' review (.github/CODEOWNERS)"
    )


def test_a_stack_renamed_to_dev_by_sandboxkit_yaml_exits_2_in_valid_sarif(repo: Path) -> None:
    # (b): `prod: dev` in sandboxkit.yaml and `environment: dev` in the stack.
    (repo / "sandboxkit.yaml").write_text("environments:\n  prod: dev\n  dev: dev\n")
    edit_config(repo, "prod", lambda c: open_egress(c, "sandboxkit:"))
    edit_config(repo, "prod", lambda c: c.update({"sandboxkit:environment": "dev"}))
    assert check(repo)[0] == 0
    code, out, _ = check(repo, "--base", "main", "--format", "sarif")
    assert code == 2
    log = json.loads(out)
    jsonschema.validate(log, sarif_schema())
    [invocation] = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is False
    [refused] = invocation["toolExecutionNotifications"]
    assert refused["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "stacks/Pulumi.prod.yaml", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 2},
    }
    assert refused["message"]["text"].startswith(
        "stack prod not judged: sandboxkit:environment: got 'dev'; expected prod"
    )
    [changed] = invocation["toolConfigurationNotifications"]
    assert changed["descriptor"] == {"id": GATE_CHANGE_RULE}
    assert changed["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "sandboxkit.yaml"
    )
    # The dev stack is still judged.
    judged = log["runs"][0]["properties"]["disabledPolicies"]
    assert [entry["stack"] for entry in judged] == ["dev"]


def test_a_new_stack_no_pattern_maps_is_prod_and_exits_2_in_json(repo: Path) -> None:
    # (c): no gate file touched, only a new stack saying `environment: dev`.
    prod = yaml.safe_load((repo / "stacks/Pulumi.prod.yaml").read_text())
    open_egress(prod["config"], "sandboxkit:")
    prod["config"]["sandboxkit:environment"] = "dev"
    (repo / "stacks/Pulumi.prod-eu.yaml").write_text(yaml.safe_dump(prod, sort_keys=False))
    code, out, err = check(repo, "--base", "main", "--format", "json")
    assert code == 2
    document = json.loads(out)
    assert document["gate_changes"] == []
    [bad] = document["bad_files"]
    assert (bad["stack"], bad["file"]) == ("prod-eu", "stacks/Pulumi.prod-eu.yaml")
    assert bad["problems"][0]["line"] == 2
    assert "expected prod" in bad["problems"][0]["problem"]
    assert [s["stack"] for s in document["stacks"]] == ["dev", "prod"]
    assert "stack prod-eu not judged: stacks/Pulumi.prod-eu.yaml" in err


def test_an_unknown_base_or_a_pack_config_of_its_own_exits_2_naming_the_option(
    repo: Path,
) -> None:
    code, _, err = check(repo, "--base", "no-such-branch")
    assert code == 2
    assert f"--base: got 'no-such-branch'; expected a commit of the repository at {repo}" in err
    code, _, err = check(repo, "--base", "main", "--policy-pack-config", "weak.json")
    assert code == 2
    assert "--policy-pack-config: got 'weak.json'; expected no file with --base" in err


# -- the workflow's gate job, as shipped -------------------------------------------------------


def test_the_gate_jobs_steps_pass_on_a_clean_clone(base_repo: Path, tmp_path: Path) -> None:
    # The shipped job installed no Node and no Worker packages, so it could not pass. Its shell
    # steps, read from the workflow, run in order on a fresh clone of a pull request's merge
    # commit (HEAD^1 the base), with nothing installed beforehand; uv's and npm's caches are
    # what .ci/run left.
    workflow = yaml.safe_load((REPO / ".github/workflows/pr.yml").read_text())
    steps = [step["run"] for step in workflow["jobs"]["gate"]["steps"] if "run" in step]
    assert steps == ["bash .ci/gate install", "bash .ci/gate check > sandboxkit.sarif"]
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(base_repo), str(clone)], check=True)
    git(clone, "commit", "-q", "--allow-empty", "-m", "GitHub's merge commit")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("VIRTUAL_ENV", "PYTHON", "SANDBOXKIT_"))
    }
    env["GITHUB_EVENT_NAME"] = "pull_request"
    for step in steps:
        done = subprocess.run(
            ["bash", "-e", "-c", step],
            cwd=clone,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, f"{step}: {done.stderr[-2000:]}"
    log = json.loads((clone / "sandboxkit.sarif").read_text())
    jsonschema.validate(log, sarif_schema())
    [invocation] = log["runs"][0]["invocations"]
    assert invocation["executionSuccessful"] is True
    assert invocation["properties"]["base"]["commit"] == git(clone, "rev-parse", "HEAD^1")
    assert invocation["toolConfigurationNotifications"] == []  # the merge changes no gate file
    assert {run["tool"]["driver"]["name"] for run in log["runs"]} == {"sandbox-guard", "checkov"}


def test_gate_install_refuses_tools_the_commit_under_review_brings(
    base_repo: Path, tmp_path: Path
) -> None:
    # A newcomer's PR trial: install reused a force-added .venv/, whose .pth file then ran in
    # every interpreter of the gate, the base's gate included.
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(base_repo), str(clone)], check=True)
    planted = clone / ".venv/lib/python3.11/site-packages/zz.pth"
    planted.parent.mkdir(parents=True)
    planted.write_text("import os; os.system('touch /tmp/owned')\n")
    git(clone, "add", "-f", str(planted))
    git(clone, "commit", "-q", "-m", "bring my own venv")
    done = subprocess.run(
        ["bash", ".ci/gate", "install"], cwd=clone, capture_output=True, text=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr == (
        "error: the commit tracks files where the gate installs its tools; remove them from "
        "the repository (git rm -r --cached PATH) and let 'bash .ci/gate install' build them: "
        ".venv/lib/python3.11/site-packages/zz.pth\n"
    )
    assert not (clone / ".venv/bin").exists()
