"""``sandboxkit check`` names every missing tool at once, before it renders (issue 31 item 19):
after README's command 1 alone, the Worker's npm packages and checkov were named one per run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandboxkit import gate
from sandboxkit.checkov_bridge.process import CHECKOV_ENV, INSTALL_COMMAND
from sandboxkit.cli import app
from sandboxkit.cloudflare import decide
from sandboxkit.gate import check as gate_check

REPO = Path(__file__).resolve().parents[2]


def worker_without_node_modules(folder: Path) -> Path:
    """The Worker's package (package.json, lock file, decision harness) as README's command 1
    leaves it: no ``npm ci`` run, so no workerd."""
    for name in ("package.json", "package-lock.json", decide.HARNESS_MODULE):
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(decide.WORKER_DIR / name, folder / name)
    return folder


@pytest.fixture
def nothing_installed(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    worker = worker_without_node_modules(tmp_path / "worker")
    monkeypatch.setenv(CHECKOV_ENV, str(tmp_path / "no-checkov"))
    monkeypatch.setenv(decide.WORKER_DIR_ENV, str(worker))
    return tmp_path


def test_checkov_and_workerd_are_named_together_with_one_command(nothing_installed: Path) -> None:
    worker = nothing_installed / "worker"
    with pytest.raises(gate.MissingToolsError) as caught:
        gate.preflight(REPO, ["prod"], checkov=True)
    message = str(caught.value)
    assert message.startswith(
        f"missing what the gate runs: checkov (not found at {nothing_installed}/no-checkov; "
        "SANDBOXKIT_CHECKOV names it: unset it to use the one installed below); workerd, which "
        "the Worker's npm dependencies install (no node_modules/@cloudflare/"
    )
    assert f"/bin/workerd in {worker} (SANDBOXKIT_WORKER_DIR)). Install them all from " in message
    assert message.endswith(
        f"{REPO} with: {INSTALL_COMMAND} && npm ci --prefix {worker}; or pass --no-checkov to "
        "skip checkov explicitly"
    )


def test_with_no_checkov_only_the_workers_tool_is_named(nothing_installed: Path) -> None:
    worker = nothing_installed / "worker"
    with pytest.raises(gate.MissingToolsError) as caught:
        gate.preflight(REPO, ["prod"], checkov=False)
    message = str(caught.value)
    assert "checkov (" not in message and "--no-checkov" not in message
    assert message.endswith(f"Install it from {REPO} with: npm ci --prefix {worker}")


def test_a_stack_without_cloudflare_needs_no_workerd(nothing_installed: Path) -> None:
    # dev lists kubernetes, aws-microvm and local: only checkov is the gate's to run.
    with pytest.raises(gate.MissingToolsError) as caught:
        gate.preflight(REPO, ["dev"], checkov=True)
    assert "workerd" not in str(caught.value)
    gate.preflight(REPO, ["dev"], checkov=False)


def test_with_everything_installed_the_preflight_is_silent() -> None:
    gate.preflight(REPO, ["dev", "staging", "prod"], checkov=True)


def test_check_exits_2_naming_both_before_it_renders(
    nothing_installed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_render(*_: object, **__: object) -> None:
        raise AssertionError("rendered before the preflight")

    monkeypatch.setattr(gate_check, "render_stacks", no_render)
    result = CliRunner().invoke(app, ["check", "--stack", "prod", "--project-dir", str(REPO)])
    assert (result.exit_code, result.stdout) == (2, "")
    message = " ".join(result.stderr.split())
    assert message.startswith("error: missing what the gate runs: checkov (not found at ")
    assert "; workerd, which the Worker's npm dependencies install" in message
    assert f"with: {INSTALL_COMMAND} && npm ci --prefix {nothing_installed / 'worker'};" in message
