"""The shipped example stacks render offline, and say what their comments promise."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sandboxkit import program
from sandboxkit.config import stack_source
from sandboxkit.project import list_stacks
from sandboxkit.render import RecordingMonitor, recording_engine, render_stack
from support import shipped_render

STACKS = list_stacks(Path(__file__).resolve().parents[2])


def test_the_three_environments_ship() -> None:
    assert {"dev", "staging", "prod"} <= set(STACKS)


@pytest.mark.parametrize("stack", STACKS)
def test_stack_renders_and_names_its_environment(project_dir: Path, stack: str) -> None:
    rendered = shipped_render(project_dir, stack)
    if stack in ("dev", "staging", "prod"):
        assert rendered.spec.environment == stack
    for target in rendered.spec.targets:
        owned = [r for r in rendered.resources if rendered.target_of(r) == target]
        assert owned, f"target {target} created nothing"
    assert set(rendered.outputs) == set(rendered.spec.targets)


def test_prod_denies_egress_and_dev_allows_only_package_indexes(project_dir: Path) -> None:
    assert shipped_render(project_dir, "prod").spec.profile.egress.mode == "deny"
    dev = shipped_render(project_dir, "dev").spec.profile.egress
    assert dev.mode == "allowlist"
    assert [str(rule) for rule in dev.allow] == ["pypi.org:443", "*.pythonhosted.org:443"]


def test_open_egress_is_rendered_with_a_visible_warning(project_dir: Path) -> None:
    from sandboxkit.config import ConfigSource
    from sandboxkit.render import render_source

    values = {
        "environment": "dev",
        "targets": ["kubernetes"],
        "profile": {"egress": {"mode": "open"}},
        "kubernetes": {
            "context": "kind-test",
            "image": "example.com/sandbox:1",
            "resolver": {"image": "example.com/resolver:1"},
        },
    }
    rendered = render_source(project_dir, "dev", ConfigSource(values=values))
    assert rendered.warnings == (
        "sandboxkit:profile.egress.mode is open: sandboxes can reach any public host; the "
        "policy gate reports this (mandatory in prod by default)",
    )
    assert shipped_render(project_dir, "prod").warnings == ()


def test_a_render_is_the_same_without_the_sdks_registration_stack_traces(
    project_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The offline render (render_stack, as preview and check run it) sends the mocks empty
    # stack traces: every resource, input, output and warning must be what the SDK's own
    # capture gives.
    frames: list[int] = []
    register = RecordingMonitor.RegisterResource

    def counting(monitor: RecordingMonitor, request: Any) -> Any:
        frames.append(len(request.stackTrace.frames))
        return register(monitor, request)

    monkeypatch.setattr(RecordingMonitor, "RegisterResource", counting)
    rendered = render_stack(project_dir, "prod")
    assert len(frames) > 100
    assert set(frames) == {0}
    frames.clear()
    source = stack_source(project_dir, "prod")
    with recording_engine("prod", source, stack_traces=True) as recorder:
        recorder.run(lambda: program.main(project_dir))
    assert len(frames) == len(rendered.resources) + 1  # and the stack itself
    assert min(frames) > 0
    assert list(rendered.resources) == sorted(recorder.resources, key=lambda r: r.urn)
    assert dict(rendered.outputs) == recorder.outputs
    assert list(rendered.warnings) == recorder.warnings
