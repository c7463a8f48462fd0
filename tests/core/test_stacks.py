"""The shipped example stacks render offline, and say what their comments promise."""

from __future__ import annotations

from pathlib import Path

import pytest
from pulumi.runtime import resource as pulumi_resource
from pulumi.runtime.proto import source_pb2

from sandboxkit.project import list_stacks
from sandboxkit.render import render_stack
from support import registration_stack_traces, shipped_render

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
    project_dir: Path,
) -> None:
    # tests/conftest.py sends the mocks empty stack traces for the whole session; every
    # resource, input, output and warning must be what the SDK's own capture gives.
    assert pulumi_resource._get_stack_trace is source_pb2.StackTrace
    without = render_stack(project_dir, "prod")
    with registration_stack_traces(captured=True):
        assert pulumi_resource._get_stack_trace is not source_pb2.StackTrace
        captured = render_stack(project_dir, "prod")
    assert len(captured.resources) > 100
    assert without == captured
