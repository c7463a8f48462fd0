"""A seventh target added from one folder (tests/fake_target) plus the registry line: it
renders, the checkov export says why it is not exported, the pack's generic rules check it and
``sandboxkit preview`` explains where it enforces each field."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandboxkit import cli
from sandboxkit.checkov_bridge.exporters import export_stack
from sandboxkit.checkov_bridge.mapping import export_type
from sandboxkit.render import Recorder, render_stack
from sandboxkit.targets import TARGET_MODULES
from support import build_target, kit_program, named

MACHINE = "flyio:index/machine:Machine"
SETTINGS = {"app": "agents", "image": "registry.fly.io/agents:v1"}
STACK_FILE = """config:
  sandboxkit:environment: prod
  sandboxkit:targets: [flyio]
  sandboxkit:flyio:
    app: agents
    image: registry.fly.io/agents:v1
    metadata: {{owner: {owner}}}
"""


@pytest.fixture(autouse=True)
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The one registry line a new target adds."""
    monkeypatch.setitem(TARGET_MODULES, "flyio", "fake_target.spec")
    yield


def project(tmp_path: Path, owner: str) -> Path:
    (tmp_path / "Pulumi.yaml").write_text(
        "name: sandboxkit\nruntime: python\nstackConfigDir: stacks\n"
    )
    kit_program(tmp_path, ".")
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.t.yaml").write_text(STACK_FILE.format(owner=owner))
    return tmp_path


def test_it_renders_with_its_mock_outputs(engine: Recorder) -> None:
    resources = build_target(engine, "flyio", SETTINGS, {"limits": {"vcpu": 1.5}})
    machine = named(resources, "flyio-machine")
    assert machine.type == MACHINE
    assert machine.inputs["config"]["guest"] == {"cpus": 2, "memoryMb": 2048}
    assert machine.inputs["config"]["metadata"]["sandboxkit-target"] == "flyio"
    assert named(resources, "flyio").type == "sandboxkit:index:FlyMachine"


def test_checkov_export_lists_it_as_not_exported_with_the_reason(tmp_path: Path) -> None:
    assert export_type(MACHINE) is None
    rendered = render_stack(project(tmp_path, "team-a"), "t")
    assert rendered.outputs["flyio"]["machineId"]
    export = export_stack(rendered, strict=True)
    assert MACHINE not in {r.type for r in export.resources}


def test_preview_explains_where_it_enforces_each_field(tmp_path: Path) -> None:
    root = project(tmp_path, "team-a")
    result = CliRunner().invoke(cli.app, ["preview", "--stack", "t", "--project-dir", str(root)])
    assert result.exit_code == 0, result.output
    assert "config.guest.memoryMb" in result.output
    assert "Fly Machines have no egress filter" in result.output


def test_preview_explains_its_egress_against_the_contract(tmp_path: Path) -> None:
    root = project(tmp_path, "team-a")
    arguments = ["preview", "--stack", "t", "--explain-egress", "--json"]
    result = CliRunner().invoke(cli.app, [*arguments, "--project-dir", str(root)])
    assert result.exit_code == 0, result.output
    [flyio] = json.loads(result.output)["egress"]
    assert (flyio["target"], flyio["mode"], flyio["read"]) == ("flyio", "deny", True)
    assert flyio["matchesContract"] is False
    metadata = next(p for p in flyio["probes"] if p["probe"] == "169.254.169.254:80")
    assert metadata["connect"]["target"] is True and metadata["connect"]["contract"] is False
    assert metadata["connect"]["basis"] == ["platform-doc"]
    # The machine's grants of whole address families are probed at their lowest public address.
    assert [d.split(" is admitted")[0] for d in flyio["differences"]] == [
        "wider: 169.254.169.254:80 over tcp",
        "wider: [64:ff9b::a9fe:a9fe]:80 over tcp",
        "wider: 1.0.0.0:8443 over tcp (grant of flyio-machine)",
        "wider: [2000::]:8443 over tcp (grant of flyio-machine)",
    ]
