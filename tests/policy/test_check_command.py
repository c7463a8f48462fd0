"""``sandboxkit check``: exit codes, the three formats, per-environment levels, bad config.

CrossGuard only (``--no-checkov``): checkov's part of the gate is in
tests/checkov/test_checkov_gate.py, which keeps its slow checkov runs few.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from google.protobuf import empty_pb2

import support
from sandboxkit import gate
from sandboxkit.cloudflare.decide import WORKER_DIR
from sandboxkit.errors import ConfigError
from sandboxkit.gate.pack_config import policy_config
from support import PROGRESS_ENV, Ran, invoke_cli, kit_program

COMPONENTS = Path(__file__).resolve().parents[2] / "components"


def run_cli(*args: str, cwd: Path) -> Ran:
    """``sandboxkit ARGS --no-checkov`` in this process (fast); ``cwd`` is the ``--project-dir``."""
    return invoke_cli(*args, "--no-checkov", "--project-dir", str(cwd), cwd=cwd)


def test_the_installed_entry_point_checks_prod_and_exits_0(project_dir: Path) -> None:
    # Piped, as tests/core/test_progress.py's real preview: no progress on stderr either.
    env = {**os.environ, "PYTHONPATH": str(COMPONENTS)}
    for name in PROGRESS_ENV:
        env.pop(name, None)
    result = subprocess.run(
        [sys.executable, "-m", "sandboxkit", "check", "--stack", "prod", "--no-checkov"],
        cwd=project_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == (
        "Stack prod (prod): 0 violation(s), 0 mandatory, 0 advisory\n"
        "  checkov: skipped (--no-checkov)\n"
        "  passed\n"
    )
    assert result.stderr == ""


@pytest.fixture
def project_copy(tmp_path: Path, project_dir: Path) -> Path:
    """Pulumi.yaml, stacks/ and the pack copied to a scratch project to weaken."""
    shutil.copy(project_dir / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    kit_program(tmp_path)
    shutil.copytree(project_dir / "stacks", tmp_path / "stacks")
    shutil.copytree(
        project_dir / "policy-packs",
        tmp_path / "policy-packs",
        ignore=shutil.ignore_patterns("venv", "__pycache__"),
    )
    return tmp_path


def edit_stack(project: Path, stack: str, edit: Any) -> None:
    path = project / "stacks" / f"Pulumi.{stack}.yaml"
    document = yaml.safe_load(path.read_text())
    edit(document["config"])
    path.write_text(yaml.safe_dump(document, sort_keys=False))


def cloudflare_only(config: dict[str, Any]) -> None:
    for target in config["sandboxkit:targets"]:
        if target != "cloudflare":
            del config[f"sandboxkit:{target}"]
    config["sandboxkit:targets"] = ["cloudflare"]


def test_a_cloudflare_check_without_the_workers_npm_packages_exits_2_saying_what_to_run(
    project_copy: Path, tmp_path: Path
) -> None:
    # The gate runs the Worker's own egress code in workerd, which the Worker's npm packages
    # install: without `npm ci` in the Worker's folder that is a missing prerequisite (exit 2),
    # not a crash (exit 70).
    edit_stack(project_copy, "prod", cloudflare_only)
    empty = tmp_path / "worker-without-node-modules"
    empty.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "sandboxkit", "check", "--stack", "prod", "--no-checkov"],
        cwd=project_copy,
        env={**os.environ, "PYTHONPATH": str(COMPONENTS), "SANDBOXKIT_WORKER_DIR": str(empty)},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert (result.returncode, result.stdout) == (2, "")
    # Issue 31 item 19: the folder holds no package.json, so "run npm ci there" cannot help.
    assert " ".join(result.stderr.split()) == (
        f"error: missing what the gate runs: the Cloudflare Worker's package: {empty} "
        "(SANDBOXKIT_WORKER_DIR) holds no package.json or test-support/decide-harness.js "
        f"(expected a copy of the Worker's whole folder, {WORKER_DIR}). Install it from "
        f"{project_copy} with: cp -R {WORKER_DIR}/. {empty} && npm ci --prefix {empty}"
    )


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_shipped_stacks_pass_with_no_mandatory_violation(project_dir: Path, stack: str) -> None:
    result = run_cli("check", "--stack", stack, "--format", "json", cwd=project_dir)
    assert result.returncode == 0, result.stdout + result.stderr
    document = json.loads(result.stdout)
    assert document["stack"] == stack
    assert document["summary"]["mandatory"] == 0
    assert all(v["enforcement"] != "mandatory" for v in document["violations"])


def test_prod_is_clean_and_exits_0_in_text(project_dir: Path) -> None:
    result = run_cli("check", "--stack", "prod", cwd=project_dir)
    assert result.returncode == 0
    assert result.stdout.splitlines()[0] == (
        "Stack prod (prod): 0 violation(s), 0 mandatory, 0 advisory"
    )


def open_egress(config: dict[str, Any]) -> None:
    support.open_egress(config, "sandboxkit:")


def test_open_egress_with_azure_sessions_exits_2_naming_the_key(project_copy: Path) -> None:
    def open_everywhere(config: dict[str, Any]) -> None:
        config["sandboxkit:profile"]["egress"] = {"mode": "open"}

    edit_stack(project_copy, "prod", open_everywhere)
    result = run_cli("check", "--stack", "prod", cwd=project_copy)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(
        "error: invalid input\n  sandboxkit:profile.egress.mode: got 'open'; expected deny"
    )
    assert "Traceback" not in result.stderr


def test_open_egress_in_prod_exits_1_naming_the_policy_per_resource(project_copy: Path) -> None:
    edit_stack(project_copy, "prod", open_egress)
    result = run_cli("check", "--stack", "prod", cwd=project_copy)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    # The local gateway's open mode was not reported before (a prod stack listing only local
    # passed the gate with egress open).
    assert lines[0] == "Stack prod (prod): 8 violation(s), 8 mandatory, 0 advisory"
    resources = {line.rsplit("::", 1)[-1] for line in lines[1:-2:2]}
    assert resources == {
        "kubernetes-network-policy",
        "aws-microvm-connector-sg",
        "aws-microvm-fw-ip-rules",
        "aws-microvm-fw-policy",
        "gcp-cloudrun-allow-public-ipv4",
        "gcp-cloudrun-allow-public-ipv6",
        "gcp-gke-agent-sandbox-network-policy",
        "local-egress-policy",
    }
    findings = dict(zip(lines[1:-2:2], lines[2:-2:2], strict=True))
    policy_line = next(f for r, f in findings.items() if r.endswith("::aws-microvm-fw-policy"))
    # Open egress has no resolved-IP validation: a named host may be sent to any address.
    assert policy_line.startswith("    SBX-NET-003 [high, mandatory, crossguard] ")
    assert all(
        line.startswith("    SBX-NET-001 [critical, mandatory, crossguard] ")
        for line in findings.values()
        if line != policy_line
    )
    assert lines[-2:] == ["  checkov: skipped (--no-checkov)", "  FAILED: mandatory violations"]


def without_tags(violations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Violations but the shipped dev and staging images' tags (SBX-SEC-003, advisory)."""
    return [v for v in violations if v["policy"] != "SBX-SEC-003"]


def test_open_egress_in_dev_is_advisory_and_exits_0(project_copy: Path) -> None:
    edit_stack(project_copy, "dev", open_egress)
    result = run_cli("check", "--stack", "dev", "--format", "json", cwd=project_copy)
    assert result.returncode == 0
    violations = without_tags(json.loads(result.stdout)["violations"])
    assert {(v["policy"], v["enforcement"]) for v in violations} == {
        ("SBX-NET-001", "advisory"),
        ("SBX-NET-003", "advisory"),
    }


def host_kernel_runtime(config: dict[str, Any]) -> None:
    config["sandboxkit:kubernetes"]["runtimeClass"] = {"name": "runc", "create": False}


@pytest.mark.parametrize(
    ("stack", "level", "code"), [("prod", "mandatory", 1), ("staging", "advisory", 0)]
)
def test_a_host_kernel_runtime_class_fails_prod_only(
    project_copy: Path, stack: str, level: str, code: int
) -> None:
    edit_stack(project_copy, stack, host_kernel_runtime)
    result = run_cli("check", "--stack", stack, "--format", "json", cwd=project_copy)
    assert result.returncode == code
    violations = without_tags(json.loads(result.stdout)["violations"])
    # Staging's allowlist also admits its names by resolved address only (advisory there).
    by_address = {("SBX-NET-006", "advisory", "gcp-cloudrun-allow-fqdn-443")}
    assert {(v["policy"], v["enforcement"], v["urn"].rsplit("::", 1)[-1]) for v in violations} == {
        ("SBX-K8S-004", level, "kubernetes-template"),
        # The referenced class lives outside the stack: the gate cannot see its handler.
        ("SBX-K8S-009", level, "kubernetes-template"),
        *(by_address if stack == "staging" else ()),
    }


def kubernetes_only(config: dict[str, Any]) -> None:
    for target in config["sandboxkit:targets"]:
        if target != "kubernetes":
            del config[f"sandboxkit:{target}"]
    config["sandboxkit:targets"] = ["kubernetes"]


def kubernetes_with_open_egress(config: dict[str, Any]) -> None:
    kubernetes_only(config)
    open_egress(config)


CONFIG_MUTATIONS = {
    "egress-open": ("egress", {"mode": "open"}, "SBX-NET-001"),
    "vcpu-above-max": ("limits", {"vcpu": 16}, "SBX-RES-001"),
    "lifetime-above-max": ("limits", {"maxLifetimeSeconds": 86400}, "SBX-RES-002"),
    "pool-above-max": ("pool", {"ready": 2, "maxConcurrent": 2000}, "SBX-RES-003"),
}


@pytest.mark.parametrize("case", CONFIG_MUTATIONS, ids=list(CONFIG_MUTATIONS))
def test_each_mutated_stack_exits_1_naming_its_policy_under_a_strict_config(
    project_copy: Path, case: str
) -> None:
    section, value, policy = CONFIG_MUTATIONS[case]

    def weaken(config: dict[str, Any]) -> None:
        # Some values are beyond another target's cap, which config validation refuses (exit 2).
        kubernetes_only(config)
        config["sandboxkit:profile"][section] = value

    edit_stack(project_copy, "prod", weaken)
    strict = project_copy / "strict.json"
    strict.write_text(json.dumps({"all": "mandatory"}))
    result = run_cli(
        "check",
        "--stack",
        "prod",
        "--format",
        "json",
        "--policy-pack-config",
        str(strict),
        cwd=project_copy,
    )
    assert result.returncode == 1
    violations = json.loads(result.stdout)["violations"]
    assert {v["policy"] for v in violations} == {policy}
    assert {v["enforcement"] for v in violations} == {"mandatory"}


def test_json_has_the_documented_shape(project_copy: Path) -> None:
    edit_stack(project_copy, "prod", kubernetes_with_open_egress)
    result = run_cli("check", "--stack", "prod", "--format", "json", cwd=project_copy)
    document = json.loads(result.stdout)
    assert set(document) == {
        "stack",
        "environment",
        "violations",
        "accepted",
        "checkov",
        "lowered",
        "summary",
    }
    assert document["summary"] == {
        "total": 1,
        "mandatory": 1,
        "advisory": 0,
        "accepted": 0,
        "disabled": 0,
    }
    assert document["checkov"] == "skipped"
    assert document["accepted"] == []
    (violation,) = document["violations"]
    assert set(violation) == {"policy", "severity", "enforcement", "urn", "message", "source"}
    assert violation["policy"] == "SBX-NET-001"
    assert violation["severity"] == "critical"
    assert violation["source"] == "crossguard"
    assert violation["urn"].endswith(
        "kubernetes:networking.k8s.io/v1:NetworkPolicy::kubernetes-network-policy"
    )


def test_sarif_validates_and_points_at_the_key_to_fix(project_copy: Path, shared_dir: Path) -> None:
    edit_stack(project_copy, "prod", kubernetes_with_open_egress)
    result = run_cli("check", "--stack", "prod", "--format", "sarif", cwd=project_copy)
    assert result.returncode == 1
    log = json.loads(result.stdout)
    schema = json.loads((shared_dir / "reference/sarif/sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(log, schema)
    (run,) = log["runs"]
    rules = {r["id"]: r for r in run["tool"]["driver"]["rules"]}
    assert len(rules) == 37
    rule = rules["SBX-NET-001"]
    assert rule["help"]["text"].startswith("Set sandboxkit:profile.egress.mode to deny")
    assert rule["properties"]["security-severity"] == "9.5"
    assert rule["fullDescription"]["text"].startswith("Prohibits ")
    (finding,) = run["results"]
    assert finding["ruleId"] == "SBX-NET-001"
    assert run["tool"]["driver"]["rules"][finding["ruleIndex"]]["id"] == "SBX-NET-001"
    assert finding["level"] == "error"
    location = finding["locations"][0]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == "stacks/Pulumi.prod.yaml"
    line = location["physicalLocation"]["region"]["startLine"]
    stack_lines = (project_copy / "stacks/Pulumi.prod.yaml").read_text().splitlines()
    assert stack_lines[line - 1].strip() == "mode: open"  # the key the fix changes
    assert location["logicalLocations"][0]["fullyQualifiedName"] == finding_urn(result)


def finding_urn(result: Ran) -> str:
    return json.loads(result.stdout)["runs"][0]["results"][0]["locations"][0]["logicalLocations"][
        0
    ]["fullyQualifiedName"]


def test_sarif_of_clean_stacks_validates(project_dir: Path, shared_dir: Path) -> None:
    result = run_cli("check", "--all-stacks", "--format", "sarif", cwd=project_dir)
    assert result.returncode == 0
    log = json.loads(result.stdout)
    schema = json.loads((shared_dir / "reference/sarif/sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(log, schema)
    # Only advisory findings: dev and staging ship sandbox images by tag, and staging's
    # gcp-cloudrun allowlist admits its two names by resolved address only.
    found = [
        (r["ruleId"], r["level"], r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"])
        for r in log["runs"][0]["results"]
    ]
    assert sorted(found) == [
        ("SBX-NET-006", "warning", "stacks/Pulumi.staging.yaml"),
        ("SBX-NET-006", "warning", "stacks/Pulumi.staging.yaml"),
        ("SBX-SEC-003", "warning", "stacks/Pulumi.dev.yaml"),
        ("SBX-SEC-003", "warning", "stacks/Pulumi.staging.yaml"),
        ("SBX-SEC-003", "warning", "stacks/Pulumi.staging.yaml"),
    ]


def test_all_stacks_checks_each_stack_file(project_dir: Path) -> None:
    result = run_cli("check", "--all-stacks", "--format", "json", cwd=project_dir)
    assert result.returncode == 0
    assert [d["stack"] for d in json.loads(result.stdout)["stacks"]] == ["dev", "prod", "staging"]


def check_with_pack_config(project: Path, document: dict[str, Any], fmt: str) -> Ran:
    """``check --stack prod`` (kubernetes only, egress open) with pack config ``document``."""
    edit_stack(project, "prod", kubernetes_with_open_egress)
    config = project / "pack.json"
    config.write_text(json.dumps(document))
    return run_cli(
        "check",
        "--stack",
        "prod",
        "--format",
        fmt,
        "--policy-pack-config",
        str(config),
        cwd=project,
    )


ALL_POLICY_IDS = sorted(
    rule.id for rule in gate.load_policies(gate.pack_dir(COMPONENTS.parent)).RULES_BY_NAME.values()
)


def test_text_names_the_policies_the_pack_config_disabled(project_copy: Path) -> None:
    result = check_with_pack_config(project_copy, {"all": "disabled"}, "text")
    assert result.returncode == 0
    assert result.stdout == (
        "Stack prod (prod): 0 violation(s), 0 mandatory, 0 advisory\n"
        f"  disabled by the pack config (37): {', '.join(ALL_POLICY_IDS)}\n"
        "  checkov: skipped (--no-checkov)\n"
        "  passed\n"
    )


def test_one_disabled_policy_is_named_beside_the_findings(project_copy: Path) -> None:
    result = check_with_pack_config(
        project_copy, {"all": "mandatory", "sbx-k8s-001": "disabled"}, "text"
    )
    assert result.returncode == 1
    assert result.stdout.splitlines()[:2] == [
        "Stack prod (prod): 1 violation(s), 1 mandatory, 0 advisory",
        "  disabled by the pack config (1): SBX-K8S-001",
    ]


def test_json_summary_counts_disabled_policies(project_copy: Path) -> None:
    result = check_with_pack_config(project_copy, {"all": "disabled"}, "json")
    assert json.loads(result.stdout)["summary"] == {
        "total": 0,
        "mandatory": 0,
        "advisory": 0,
        "accepted": 0,
        "disabled": 37,
    }


def test_sarif_run_properties_list_disabled_policies(project_copy: Path, shared_dir: Path) -> None:
    result = check_with_pack_config(
        project_copy, {"all": "mandatory", "sbx-net-001": "disabled"}, "sarif"
    )
    log = json.loads(result.stdout)
    schema = json.loads((shared_dir / "reference/sarif/sarif-schema-2.1.0.json").read_text())
    jsonschema.validate(log, schema)
    (run,) = log["runs"]
    assert run["results"] == []
    assert run["properties"] == {
        "disabledPolicies": [{"stack": "prod", "count": 1, "policies": ["SBX-NET-001"]}]
    }


def test_bad_stack_config_exits_2_without_traceback(project_copy: Path) -> None:
    edit_stack(project_copy, "prod", lambda c: c["sandboxkit:profile"]["limits"].update(vcpu=-1))
    result = run_cli("check", "--stack", "prod", cwd=project_copy)
    assert result.returncode == 2
    assert "sandboxkit:profile.limits.vcpu" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_pack_config_exits_2_naming_the_policy(project_copy: Path) -> None:
    bad = project_copy / "bad.json"
    bad.write_text(
        json.dumps({"sbx-log-001": {"minimumRetentionDays": "thirty"}, "sbx-nope": "mandatory"})
    )
    result = run_cli("check", "--stack", "prod", "--policy-pack-config", str(bad), cwd=project_copy)
    assert result.returncode == 2
    assert (
        f"{bad}: sbx-log-001.minimumRetentionDays: got 'thirty'; expected a whole number"
        in result.stderr
    )
    assert f"{bad}: sbx-nope: got 'mandatory'; expected a policy of the pack or 'all'" in (
        result.stderr
    )


def test_stack_and_all_stacks_together_exit_2(project_dir: Path) -> None:
    result = run_cli("check", "--stack", "prod", "--all-stacks", cwd=project_dir)
    assert result.returncode == 2
    assert "--stack/--all-stacks" in result.stderr


def test_pack_config_reconciles_like_the_cli(project_dir: Path) -> None:
    analyzer = gate.InProcessAnalyzer(gate.pack_dir(project_dir))
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    config = policy_config(
        info,
        {
            "all": "mandatory",
            "sbx-log-001": {"enforcementLevel": "advisory", "minimumRetentionDays": 90},
        },
        "test.json",
    )
    assert config["sbx-log-001"] == ("advisory", {"minimumRetentionDays": 90})
    assert config["sbx-res-001"] == ("mandatory", {"maxVcpu": 8, "maxMemoryMiB": 32768})
    assert config["sbx-net-005"] == ("mandatory", {})
    with pytest.raises(ConfigError) as caught:
        policy_config(info, {"all": "strict"}, "test.json")
    assert caught.value.keys == ("test.json: all",)
