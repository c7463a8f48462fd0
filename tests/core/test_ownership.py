"""Who owns a resource, one rule everywhere: its top-level ancestor below the stack
(``guard.owner_of``), asked of the render (``render.RenderedStackResource``) as of the gate's
stack checks; the per-resource checks read the kit's label (``guard.labelled_target``), which
names the same target."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from sandboxkit.boundary import TARGET_LABEL
from sandboxkit.guard import STACK_TYPE, labelled_target, owner_of, target_views
from sandboxkit.render import RenderedResource, stack_resources
from support import shipped_render

STACK_URN = "urn:pulumi:t::p::pulumi:pulumi:Stack::p-t"


def rendered(name: str, parent: str | None, type_token: str = "x:index:Thing") -> RenderedResource:
    return RenderedResource(
        urn=f"urn:{name}",
        type=type_token,
        name=name,
        parent=parent,
        custom=True,
        inputs={"labels": {TARGET_LABEL: "kubernetes"}, "secret": "plain"},
    )


# A component named after its target with a child and a grandchild, and a resource the
# project's program made outside every component (its parent the stack's own URN).
RESOURCES = (
    rendered("kubernetes", STACK_URN, "sandboxkit:index:AgentSandbox"),
    rendered("kubernetes-policy", "urn:kubernetes"),
    rendered("kubernetes-policy-rule", "urn:kubernetes-policy"),
    rendered("acme-route", STACK_URN),
)


def test_the_render_links_each_parent_among_its_resources() -> None:
    views = stack_resources(RESOURCES)
    assert [v.resource for v in views] == list(RESOURCES)
    assert [v.parent.name if v.parent else None for v in views] == [
        None,
        "kubernetes",
        "kubernetes-policy",
        None,
    ]
    assert [owner_of(v) for v in views] == ["kubernetes"] * 3 + ["acme-route"]
    assert views[1].resource_type == "x:index:Thing"
    assert views[1].props == {"labels": {TARGET_LABEL: "kubernetes"}, "secret": "plain"}


@dataclass
class PolicyResource:
    """pulumi-policy's ``PolicyResource`` as a stack policy gets it: the parent an object."""

    resource_type: str
    name: str
    parent: PolicyResource | None = None
    urn: str = ""
    props: Any = field(default_factory=dict)


def test_the_walk_stops_below_the_stacks_own_resource() -> None:
    # The engine may hand a stack policy the stack's resource as every chain's root.
    stack = PolicyResource(STACK_TYPE, "p-t")
    component = PolicyResource("sandboxkit:index:AgentSandbox", "kubernetes", stack)
    child = PolicyResource("kubernetes:core/v1:Namespace", "kubernetes-ns", component)
    route = PolicyResource("aws:route53/record:Record", "acme-route", stack)
    assert [owner_of(r) for r in (component, child, route)] == [
        "kubernetes",
        "kubernetes",
        "acme-route",
    ]
    # Without the stack's resource (the render never records it): the same owners.
    component.parent = route.parent = None
    assert [owner_of(r) for r in (component, child, route)] == [
        "kubernetes",
        "kubernetes",
        "acme-route",
    ]
    # A target reads its own resources and the program's; a target with no component none.
    views = target_views([stack, component, child, route], "kubernetes")
    assert [v.name for v in views] == ["p-t", "kubernetes", "kubernetes-ns", "acme-route"]
    assert target_views([component, child, route], "cloudflare") == []


@pytest.mark.parametrize("stack", ["dev", "staging", "prod"])
def test_the_label_names_the_target_whose_component_owns_the_resource(
    project_dir: Path, stack: str
) -> None:
    shipped = shipped_render(project_dir, stack)
    by_urn = {view.urn: view for view in shipped.stack_resources()}
    labelled = 0
    for resource in shipped.resources:
        label = labelled_target(by_urn[resource.urn].props)
        owner = shipped.target_of(resource)
        assert owner in shipped.spec.targets, resource.urn
        if label is not None:
            labelled += 1
            assert label == owner, resource.urn
    # Every listed target labels its children that take labels or tags; Cloudflare's Worker
    # resources take neither.
    assert labelled > len(shipped.spec.targets)
    assert {
        owner
        for resource in shipped.resources
        if labelled_target(by_urn[resource.urn].props) is not None
        and (owner := shipped.target_of(resource))
    } == set(shipped.spec.targets) - {"cloudflare"}
