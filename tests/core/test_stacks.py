"""The shipped example stacks render offline, and say what their comments promise."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandboxkit.project import list_stacks
from sandboxkit.render import render_stack

STACKS = list_stacks(Path(__file__).resolve().parents[2])


def test_the_three_environments_ship() -> None:
    assert {"dev", "staging", "prod"} <= set(STACKS)


@pytest.mark.parametrize("stack", STACKS)
def test_stack_renders_and_names_its_environment(project_dir: Path, stack: str) -> None:
    rendered = render_stack(project_dir, stack)
    assert rendered.spec.environment == stack
    for target in rendered.spec.targets:
        owned = [r for r in rendered.resources if rendered.target_of(r) == target]
        assert owned, f"target {target} created nothing"
    assert set(rendered.outputs) == set(rendered.spec.targets)


def test_prod_denies_egress_and_dev_allows_only_package_indexes(project_dir: Path) -> None:
    assert render_stack(project_dir, "prod").spec.profile.egress.mode == "deny"
    dev = render_stack(project_dir, "dev").spec.profile.egress
    assert dev.mode == "allowlist"
    assert [str(rule) for rule in dev.allow] == ["pypi.org:443", "*.pythonhosted.org:443"]
