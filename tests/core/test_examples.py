"""docs/examples: one complete stack per target, which `sandboxkit preview` and the offline
gate accept as a newcomer copies it (into stacks/ of a project)."""

from __future__ import annotations

import re
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
    # The kit's own sandboxkit.yaml (a stack it does not map is prod), then each example's
    # header followed: the copy under a new name, and the environments: entry it says to add.
    kit_map = (ROOT / "sandboxkit.yaml").read_text()
    entries = "".join(
        f"  try-{target}: {documented_environment(target)}\n" for target in TARGET_MODULES
    )
    (root / "sandboxkit.yaml").write_text(
        kit_map.replace("environments:\n", f"environments:\n{entries}")
    )
    for target in TARGET_MODULES:
        shutil.copy(EXAMPLES / f"{target}.yaml", root / "stacks" / f"Pulumi.try-{target}.yaml")
    return root


def documented_environment(target: str) -> str:
    """The environment the example's header says to map the copy to in sandboxkit.yaml."""
    text = (EXAMPLES / f"{target}.yaml").read_text()
    header = " ".join(line.removeprefix("# ") for line in text.split("\nconfig:")[0].splitlines())
    step = re.search(
        r"copy it to stacks/Pulumi\.<your stack>\.yaml and add `<your stack>: (\w+)` under "
        r"`environments:` in sandboxkit\.yaml \(a stack it does not map is prod, and this file "
        r"says (\w+)\)",
        header,
    )
    assert step is not None, f"{target}: the header names no environments: entry to add"
    environment = yaml.safe_load(text)["config"]["sandboxkit:environment"]
    assert step.groups() == (environment, environment)
    return environment


@pytest.mark.parametrize("target", TARGET_MODULES)
def test_a_copy_without_the_documented_entry_exits_2_naming_it(project: Path, target: str) -> None:
    shutil.copy(EXAMPLES / f"{target}.yaml", project / "stacks" / f"Pulumi.mine-{target}.yaml")
    try:
        result = CliRunner().invoke(
            app, ["preview", "--stack", f"mine-{target}", "--project-dir", str(project)]
        )
    finally:
        (project / "stacks" / f"Pulumi.mine-{target}.yaml").unlink()
    environment = documented_environment(target)
    assert result.exit_code == 2, result.output
    assert (
        f"to make it {environment}, add 'mine-{target}: {environment}' first under "
        "environments: in sandboxkit.yaml"
    ) in " ".join(result.output.split())


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
