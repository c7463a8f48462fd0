"""``sandboxkit check`` with checkov merged in: CKV ids on the right URNs next to CrossGuard's,
levels per environment, the baseline's accepted findings apart, the kit's own files once.

checkov runs take seconds each, so each module fixture runs it once: a weakened copy of the
project through the command line, a library run over two mutated stacks, and --all-stacks. The
command runs in this process (``support.invoke_cli``; checkov in its own as always): the real
process is tests/policy/test_check_command.py's entry-point test.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from checkov_support import PROJECT_DIR, require_checkov
from typer.testing import CliRunner

from sandboxkit import gate
from sandboxkit.checkov_bridge.baseline import load_baseline
from sandboxkit.checkov_bridge.process import CHECKOV_ENV, INSTALL_COMMAND
from sandboxkit.cli import app
from sandboxkit.errors import ConfigError
from sandboxkit.gate.checkov_merge import CHECKOV_LEVELS, checkov_levels
from sandboxkit.render import RenderedStack
from support import (
    Ran,
    assert_golden_text,
    invoke_cli,
    kit_program,
    open_egress,
    shipped_render,
    with_input,
)

TEMPLATE_TYPE = "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate"
LOG_GROUP_URN = (
    "urn:pulumi:prod::sandboxkit::sandboxkit:index:MicrovmSandbox"
    "$aws:cloudwatch/logGroup:LogGroup::aws-microvm-flow-logs"
)
READ_ONLY_ROOT = (
    "spec",
    "podTemplate",
    "spec",
    "containers",
    0,
    "securityContext",
    "readOnlyRootFilesystem",
)
TAGGED_IMAGE = "ghcr.io/example/agent-python-sandbox:3.12"
GOLDEN_DIR = Path(__file__).parent / "golden"
RULE = "gcp:compute/networkFirewallPolicyRule:NetworkFirewallPolicyRule"
CM = ("checkov", "mandatory")


def urn(component: str, child: str, stack: str = "prod") -> str:
    return f"urn:pulumi:{stack}::sandboxkit::sandboxkit:index:{component}${child}"


def template_urn(stack: str) -> str:
    return urn("AgentSandbox", f"{TEMPLATE_TYPE}::kubernetes-template", stack)


def run_check(*args: str, cwd: Path, checkov: Path) -> Ran:
    """``sandboxkit check ARGS`` from folder ``cwd`` as CI runs it, with checkov from
    ``checkov``."""
    return invoke_cli("check", *args, cwd=cwd, env={CHECKOV_ENV: str(checkov)})


def assert_golden(name: str, returncode: int, document: dict[str, Any]) -> None:
    """The exit code and the whole JSON document equal ``golden/check-<name>.json``, recorded
    from the gate before it overlapped checkov with CrossGuard (checkov's findings sorted)."""
    found = {"exit_code": returncode, "document": document}
    assert_golden_text(GOLDEN_DIR / f"check-{name}.json", json.dumps(found, indent=2) + "\n")


def weakened_project(root: Path) -> Path:
    """A project copy whose prod stack opens egress (CrossGuard) and follows an image tag in
    the kubernetes target (checkov: CKV_K8S_43, baselined only for dev and staging)."""
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", root / "Pulumi.yaml")
    kit_program(root)
    shutil.copytree(PROJECT_DIR / "stacks", root / "stacks")
    shutil.copytree(
        PROJECT_DIR / "policy-packs",
        root / "policy-packs",
        ignore=shutil.ignore_patterns("venv", "__pycache__"),
    )
    path = root / "stacks" / "Pulumi.prod.yaml"
    document = yaml.safe_load(path.read_text())
    config = document["config"]
    open_egress(config, "sandboxkit:")
    config["sandboxkit:kubernetes"]["image"] = TAGGED_IMAGE
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return root


@pytest.fixture(scope="module")
def checkov_bin() -> Path:
    return require_checkov()


@pytest.fixture(scope="module")
def weakened_prod(
    tmp_path_factory: pytest.TempPathFactory, checkov_bin: Path
) -> tuple[int, dict[str, Any]]:
    project = weakened_project(tmp_path_factory.mktemp("weakened"))
    result = run_check("--stack", "prod", "--format", "json", cwd=project, checkov=checkov_bin)
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


def test_weakened_prod_json_is_the_golden_document(
    weakened_prod: tuple[int, dict[str, Any]],
) -> None:
    assert_golden("weakened-prod", *weakened_prod)


def test_prod_json_lists_checkov_and_crossguard_findings_on_their_urns(
    weakened_prod: tuple[int, dict[str, Any]],
) -> None:
    returncode, document = weakened_prod
    assert returncode == 1
    assert document["stack"] == "prod"
    found = {(v["policy"], v["urn"], v["source"], v["enforcement"]) for v in document["violations"]}
    assert {v["source"] for v in document["violations"]} == {"crossguard", "checkov"}
    # The moving tag: checkov's image checks on the template; open egress: the kit's checks on
    # the Cloud Run firewall rules (azure-sessions refuses open egress, so it is left out).
    # All mandatory in prod.
    assert {f for f in found if f[2] == "checkov"} == {
        ("CKV_K8S_43", template_urn("prod"), "checkov", "mandatory"),
        ("CKV_K8S_15", template_urn("prod"), "checkov", "mandatory"),
        ("CKV_SBX_20", urn("CloudRunSandbox", f"{RULE}::gcp-cloudrun-allow-public-ipv4"), *CM),
        ("CKV_SBX_20", urn("CloudRunSandbox", f"{RULE}::gcp-cloudrun-allow-public-ipv6"), *CM),
    }
    # The tag also trips the pack's digest-pinning policy (advisory).
    # Open egress also has no resolved-IP validation on aws-microvm (SBX-NET-003).
    assert {f[0] for f in found if f[2] == "crossguard"} == {
        "SBX-NET-001",
        "SBX-NET-003",
        "SBX-SEC-003",
    }
    checkov_violation = next(v for v in document["violations"] if v["policy"] == "CKV_K8S_43")
    assert set(checkov_violation) == {
        "policy",
        "severity",
        "enforcement",
        "urn",
        "message",
        "source",
    }
    assert checkov_violation["message"].startswith("Image should use digest (checkov CKV_K8S_43")
    counts = document["summary"]
    assert counts["total"] == len(document["violations"])
    # prod's pack config makes every policy mandatory, digest pinning included.
    assert (counts["mandatory"], counts["advisory"]) == (counts["total"], 0)
    assert document["checkov"]["failed"] == 4
    assert document["checkov"]["passed"] > 300


def test_accepted_findings_are_listed_apart_with_the_baselines_reason(
    weakened_prod: tuple[int, dict[str, Any]],
) -> None:
    _, document = weakened_prod
    reasons = {(e.check, e.pattern): e.reason for e in load_baseline(PROJECT_DIR)}
    accepted = {(a["policy"], a["urn"]): a for a in document["accepted"]}
    probe = accepted[("CKV_K8S_8", template_urn("prod"))]
    assert probe["reason"] == reasons[("CKV_K8S_8", TEMPLATE_TYPE)]
    # Issue 31 item 18: prod's level, not "advisory", with the acceptance said beside it.
    assert (probe["enforcement"], probe["accepted"], probe["source"]) == (
        "mandatory",
        True,
        "checkov",
    )
    assert {a["enforcement"] for a in document["accepted"]} == {"mandatory"}
    # Accepted findings never count toward the gate's mandatory violations.
    assert document["summary"]["mandatory"] == sum(
        v["enforcement"] == "mandatory" for v in document["violations"]
    )
    assert accepted[("CKV_AWS_338", LOG_GROUP_URN)]["reason"].startswith("Retention follows")
    assert all(a["reason"] for a in document["accepted"])
    assert not {a["policy"] for a in document["accepted"]} & {
        v["policy"] for v in document["violations"]
    }
    assert document["summary"]["accepted"] == document["checkov"]["accepted"] == len(accepted)
    # The kit's own files are reported with --all-stacks only, never per stack.
    assert not [v for v in document["violations"] + document["accepted"] if "file:" in v["urn"]]


def mutated(stack: str) -> RenderedStack:
    """``stack`` rendered with the sandbox template's root filesystem writable."""
    return with_input(
        shipped_render(PROJECT_DIR, stack), "kubernetes-template", READ_ONLY_ROOT, False
    )


@pytest.fixture(scope="module")
def writable_root(checkov_bin: Path) -> dict[str, gate.CheckResult]:
    """prod and dev with a writable root filesystem, checked in one checkov run."""
    results = gate.check_stacks([mutated("prod"), mutated("dev")], PROJECT_DIR)
    return {r.stack: r for r in results}


def findings_on_template(result: gate.CheckResult) -> set[tuple[str, str, str]]:
    urn = template_urn(result.stack)
    return {(v.policy, v.source, v.enforcement) for v in result.violations if v.urn == urn}


def test_a_writable_root_yields_the_ckv_and_the_crossguard_finding_on_the_template(
    writable_root: dict[str, gate.CheckResult],
) -> None:
    assert findings_on_template(writable_root["prod"]) == {
        ("CKV_K8S_22", "checkov", "mandatory"),
        ("SBX-K8S-001", "crossguard", "mandatory"),
    }
    # Nothing else changed: no other checkov failure anywhere in the stack.
    assert [v.policy for v in writable_root["prod"].violations if v.source == "checkov"] == [
        "CKV_K8S_22"
    ]
    # Both fail prod; the checkov finding alone would too (see the dev case below for the level
    # each source takes outside prod).
    assert gate.exit_code([writable_root["prod"]]) == 1


def test_outside_prod_the_checkov_failure_is_advisory(
    writable_root: dict[str, gate.CheckResult],
) -> None:
    # dev ships its image by tag, so the digest-pinning policy is there too (advisory).
    assert findings_on_template(writable_root["dev"]) == {
        ("CKV_K8S_22", "checkov", "advisory"),
        ("SBX-K8S-001", "crossguard", "advisory"),
        ("SBX-SEC-003", "crossguard", "advisory"),
    }
    assert gate.exit_code([writable_root["dev"]]) == 0


def test_text_shows_both_sources_and_checkovs_counts(
    writable_root: dict[str, gate.CheckResult],
) -> None:
    text = gate.format_text([writable_root["prod"]])
    lines = text.splitlines()
    urn_line = lines.index(f"  {template_urn('prod')}")
    block = lines[urn_line + 1 : urn_line + 3]
    assert sorted(line.split(" ", 5)[4] for line in block) == ["CKV_K8S_22", "SBX-K8S-001"]
    assert any(line.startswith("    CKV_K8S_22 [high, mandatory, checkov] ") for line in block)
    counts = writable_root["prod"].checkov
    assert counts is not None
    assert lines[-2] == (
        f"  checkov: {counts['passed']} passed, 1 failed, {counts['accepted']} accepted by the "
        "baseline (reasons: --format json)"
    )
    assert lines[-1] == "  FAILED: mandatory violations"


def test_sarif_with_both_sources_validates_with_rule_metadata_and_locations(
    writable_root: dict[str, gate.CheckResult], shared_dir: Path
) -> None:
    log = gate.format_sarif(list(writable_root.values()))
    schema = json.loads((shared_dir / "reference/sarif/sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(log, schema)
    runs = {run["tool"]["driver"]["name"]: run for run in log["runs"]}
    assert set(runs) == {"sandbox-guard", "checkov"}
    run = runs["checkov"]
    rules = run["tool"]["driver"]["rules"]
    results = [r for r in run["results"] if r["properties"]["stack"] == "prod"]
    (result,) = [r for r in results if "suppressions" not in r]
    rule = rules[result["ruleIndex"]]
    assert rule["id"] == result["ruleId"] == "CKV_K8S_22"
    assert (
        rule["shortDescription"]["text"] == "Use read-only filesystem for containers where possible"
    )
    assert "policy-packs/checkov/baseline.yaml" in rule["help"]["text"]
    assert rule["properties"]["tags"] == ["security", "checkov", "kubernetes"]
    assert result["level"] == "error"
    location = result["locations"][0]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == "stacks/Pulumi.prod.yaml"
    line = location["physicalLocation"]["region"]["startLine"]
    stack_lines = (PROJECT_DIR / "stacks/Pulumi.prod.yaml").read_text().splitlines()
    assert stack_lines[line - 1] == "  sandboxkit:kubernetes:"
    assert location["logicalLocations"][0]["fullyQualifiedName"] == template_urn("prod")
    (dev_result,) = [
        r for r in run["results"] if r["properties"]["stack"] == "dev" and "suppressions" not in r
    ]
    assert dev_result["level"] == "warning"
    # The baseline's acceptances in SARIF's place for them, each at its stack's level.
    reasons = {(e.check, e.pattern): e.reason for e in load_baseline(PROJECT_DIR)}
    suppressed = [r for r in results if "suppressions" in r]
    probe = next(r for r in suppressed if r["ruleId"] == "CKV_K8S_8")
    assert (probe["level"], probe["suppressions"]) == (
        "error",
        [
            {
                "kind": "external",
                "status": "accepted",
                "justification": reasons[("CKV_K8S_8", TEMPLATE_TYPE)],
            }
        ],
    )
    assert len(suppressed) == writable_root["prod"].summary()["accepted"]
    assert {r["ruleId"] for r in runs["sandbox-guard"]["results"]} >= {"SBX-K8S-001"}


@pytest.fixture(scope="module")
def all_stacks(checkov_bin: Path) -> tuple[int, dict[str, Any]]:
    result = run_check("--all-stacks", "--format", "json", cwd=PROJECT_DIR, checkov=checkov_bin)
    return result.returncode, json.loads(result.stdout)


def test_all_stacks_json_is_the_golden_document(all_stacks: tuple[int, dict[str, Any]]) -> None:
    # The stacks' documents; the project's files (Dockerfiles, workflows) change too often.
    returncode, document = all_stacks
    assert_golden("all-stacks", returncode, {"stacks": document["stacks"]})


def test_all_stacks_reports_the_kits_own_files_once(all_stacks: tuple[int, dict[str, Any]]) -> None:
    returncode, document = all_stacks
    assert returncode == 0
    assert set(document) == {"stacks", "project", "bad_files"}
    assert document["bad_files"] == []
    assert [d["stack"] for d in document["stacks"]] == ["dev", "prod", "staging"]
    for stack in document["stacks"]:
        assert stack["checkov"]["passed"] > 0
        urns = {v["urn"] for v in stack["violations"] + stack["accepted"]}
        assert all(u.startswith(f"urn:pulumi:{stack['stack']}::") for u in urns)
    project = document["project"]
    assert (project["stack"], project["environment"]) == ("project", "project")
    assert project["violations"] == []
    # Every action is pinned by its commit SHA: the baseline accepts nothing in the workflow.
    assert project["accepted"] == []
    assert project["checkov"]["passed"] > 0


def test_missing_checkov_exits_2_naming_the_install_command_and_the_explicit_skip() -> None:
    result = CliRunner().invoke(
        app,
        ["check", "--stack", "prod", "--project-dir", str(PROJECT_DIR)],
        env={CHECKOV_ENV: "/nonexistent/checkov"},
    )
    assert result.exit_code == 2
    assert result.stdout == ""
    message = " ".join(result.stderr.split())
    assert message.startswith(
        "error: missing what the gate runs: checkov (not found at /nonexistent/checkov; "
        "SANDBOXKIT_CHECKOV names it: unset it to use the one installed below)"
    )
    assert INSTALL_COMMAND in message
    assert message.endswith("; or pass --no-checkov to skip checkov explicitly")


def test_no_checkov_gives_crossguard_only_and_says_so(tmp_path: Path) -> None:
    project = weakened_project(tmp_path)
    result = CliRunner().invoke(
        app,
        [
            "check",
            "--stack",
            "prod",
            "--format",
            "json",
            "--no-checkov",
            "--project-dir",
            str(project),
        ],
        env={CHECKOV_ENV: "/nonexistent/checkov"},
    )
    assert result.exit_code == 1
    document = json.loads(result.stdout)
    assert {v["source"] for v in document["violations"]} == {"crossguard"}
    assert (document["checkov"], document["accepted"]) == ("skipped", [])


def test_checkov_levels_are_read_per_environment_and_validated(tmp_path: Path) -> None:
    assert checkov_levels(PROJECT_DIR) == {
        "dev": "advisory",
        "staging": "advisory",
        "prod": "mandatory",
        "project": "mandatory",
    }
    path = tmp_path / CHECKOV_LEVELS
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"dev": "advisory", "staging": "strict", "prd": "mandatory"}))
    with pytest.raises(ConfigError) as caught:
        checkov_levels(tmp_path)
    assert caught.value.keys == (
        "policy-packs/checkov/levels.json: staging",
        "policy-packs/checkov/levels.json: prod",
        "policy-packs/checkov/levels.json: project",
        "policy-packs/checkov/levels.json: prd",
    )
