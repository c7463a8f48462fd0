"""docs/examples: one complete stack per target, which `sandboxkit preview` and the offline
gate accept as a newcomer copies it (into stacks/ of a project)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from sandboxkit.cli import app
from sandboxkit.targets import TARGET_MODULES
from support import kit_program

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"


def test_every_target_has_one_example_listing_only_itself() -> None:
    assert sorted(p.stem for p in EXAMPLES.glob("*.yaml")) == sorted(TARGET_MODULES)
    for target in TARGET_MODULES:
        config = yaml.safe_load((EXAMPLES / f"{target}.yaml").read_text())["config"]
        assert config["sandboxkit:targets"] == [target]
        # Nested, as YAML needs: no dotted key copied from a table.
        assert not [key for key in config if "." in key]


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("examples")
    shutil.copy(ROOT / "Pulumi.yaml", root / "Pulumi.yaml")
    kit_program(root)
    shutil.copytree(
        ROOT / "policy-packs",
        root / "policy-packs",
        ignore=shutil.ignore_patterns("venv", "__pycache__"),
    )
    (root / "stacks").mkdir()
    for target in TARGET_MODULES:
        shutil.copy(EXAMPLES / f"{target}.yaml", root / "stacks" / f"Pulumi.try-{target}.yaml")
    return root


@pytest.mark.parametrize("target", TARGET_MODULES)
def test_preview_of_the_example_exits_0(project: Path, target: str) -> None:
    result = CliRunner().invoke(
        app, ["preview", "--stack", f"try-{target}", "--project-dir", str(project)]
    )
    assert result.exit_code == 0, result.output
    assert f"target {target}: " in result.output


@pytest.mark.parametrize("target", TARGET_MODULES)
def test_the_example_passes_the_gate_with_no_finding(project: Path, target: str) -> None:
    result = CliRunner().invoke(
        app,
        ["check", "--stack", f"try-{target}", "--no-checkov", "--project-dir", str(project)],
    )
    assert result.exit_code == 0, result.output
    assert result.output.startswith(
        f"Stack try-{target} (dev): 0 violation(s), 0 mandatory, 0 advisory\n"
    )
