"""The command line as a newcomer runs it: exit codes, output shapes, no tracebacks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from support import invoke_cli as run_cli


@pytest.fixture
def bad_project(tmp_path: Path, project_dir: Path) -> Path:
    (tmp_path / "Pulumi.yaml").write_text((project_dir / "Pulumi.yaml").read_text())
    (tmp_path / "stacks").mkdir()
    return tmp_path


def write_stack(project: Path, name: str, config: dict[str, object]) -> None:
    (project / "stacks" / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": config}))


def test_preview_dev_prints_the_resource_tree_counts_map_and_outputs(project_dir: Path) -> None:
    # In this process; the same command's real process (python -m sandboxkit) is
    # test_progress.py's piped-output test.
    result = run_cli("preview", "--stack", "dev", cwd=project_dir)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "sandboxkit:index:AgentSandbox  kubernetes" in out
    assert (
        "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate  kubernetes-template" in out
    )
    # The sandbox objects, the Cilium policy and the resolver's ConfigMap, Deployment, Service
    # and NetworkPolicy.
    assert "target kubernetes: 13 resources" in out
    assert "Enforcement map" in out
    assert "limits.execTimeoutSeconds" in out and "300 (default)" in out
    assert '"sandboxTemplateName": "sandboxkit-dev"' in out


def test_preview_json_is_the_documented_shape(project_dir: Path) -> None:
    result = run_cli("preview", "--stack", "prod", "--json", cwd=project_dir)
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["stack"] == "prod"
    assert {"stack", "resources", "outputs", "enforcement", "warnings", "placeholders"} == set(
        document
    )
    for resource in document["resources"]:
        assert set(resource) == {"urn", "type", "name", "parent", "inputs"}
    types = {r["type"] for r in document["resources"]}
    assert "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxWarmPool" in types
    row = next(
        r
        for r in document["enforcement"]
        if r["target"] == "kubernetes" and r["field"] == "pool.ready"
    )
    assert row == {
        "target": "kubernetes",
        "field": "pool.ready",
        "value": 2,
        "explicit": True,
        "kind": "platform",
        "where": "SandboxWarmPool spec.replicas",
    }


def test_bad_config_exits_2_naming_the_key_without_traceback(bad_project: Path) -> None:
    write_stack(
        bad_project,
        "bad",
        {
            "sandboxkit:environment": "dev",
            "sandboxkit:targets": ["kubernetes"],
            "sandboxkit:profile": {"pool": {"ready": 9, "maxConcurrent": 3}},
            "sandboxkit:kubernetes": {"context": "c", "image": "i"},
        },
    )
    result = run_cli("preview", "--stack", "bad", cwd=bad_project)
    assert result.returncode == 2
    assert "sandboxkit:profile.pool.ready: got 9; expected at most pool.maxConcurrent (3)" in (
        result.stderr
    )
    assert "Traceback" not in result.stderr + result.stdout


def test_missing_stack_exits_2(bad_project: Path) -> None:
    result = run_cli("preview", "--stack", "nope", cwd=bad_project)
    assert result.returncode == 2
    assert "--stack: got 'nope'" in result.stderr
    assert "Traceback" not in result.stderr


def test_outside_a_project_exits_2(tmp_path: Path) -> None:
    result = run_cli("preview", "--stack", "dev", cwd=tmp_path)
    assert result.returncode == 2
    assert "--project-dir: got" in result.stderr and "Pulumi.yaml" in result.stderr
    assert "Traceback" not in result.stderr


def test_secure_values_render_as_secrets_of_unknown_value(bad_project: Path) -> None:
    write_stack(
        bad_project,
        "sec",
        {
            "sandboxkit:environment": "dev",
            "sandboxkit:targets": ["kubernetes"],
            "sandboxkit:kubernetes": {
                "context": {"secure": "v1:AAAAbm90LWEtcmVhbC1jaXBoZXJ0ZXh0"},
                "image": "i",
            },
        },
    )
    result = run_cli("preview", "--stack", "sec", cwd=bad_project)
    assert result.returncode == 2
    assert "sandboxkit:kubernetes.context: got '[secret]'; expected plain text" in result.stderr
    assert "AAAAbm90" not in result.stderr
