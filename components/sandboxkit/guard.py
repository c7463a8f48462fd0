"""What a target's policy handlers are made of, and the input walkers their checks use.

The sandbox-guard pack (``policy-packs/sandbox-guard``) owns each policy's id, severity,
description and config schema; the targets own the checks. A target declares them beside its
spec, in ``<folder>/guard.py``, as a module-level ``HANDLERS`` tuple of ``Handler`` and
``StackHandler`` records; the pack's rule for a policy id runs every registered target's handlers
for that id (``sandboxkit.targets.target_parts("guard", "HANDLERS")``).

This module imports neither pulumi-policy nor a cloud SDK: the kit and its tests read handlers
without the pack. Inputs reach a check as pulumi-policy proxies (``Mapping``/``Sequence``, never
``dict``/``list``), in the engine's wire form (camelCase keys), so every walker here tests against
the abstract types. Reading an input that is unknown during a preview raises inside the proxy;
pulumi-policy reports that as advisory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sandboxkit.contract import LAUNCHER_MARKERS, TARGET_LABEL
from sandboxkit.reach import ResourceView
from sandboxkit.targets import plain_number


class CheckContext(Protocol):
    """What a check reads besides the inputs (the pack's ``Context`` provides it).

    Attributes:
        name: the resource's logical name (empty for a stack check).
        urn: the resource's URN (empty for a stack check).
        resource_type: the resource's type token (empty for a stack check).
        target: the kit target that created the resource (its ``sandboxkit-target`` label), or
            ``None`` for a resource the kit did not label.
    """

    name: str
    urn: str
    resource_type: str
    target: str | None

    def setting(self, key: str) -> Any:
        """The policy's threshold ``key`` from the pack config, else its schema default.

        Raises:
            KeyError: when the policy's config schema has no property ``key``.
        """
        ...


class StackResource(Protocol):
    """One resource of the stack as a stack check sees it (pulumi-policy's ``PolicyResource``)."""

    resource_type: str
    props: Mapping[str, Any]
    urn: str
    name: str

    @property
    def parent(self) -> StackResource | None:
        """The resource's parent (a component), ``None`` at the top of the stack."""
        ...


Check = Callable[[Mapping[str, Any], CheckContext], Iterable[str]]
StackCheck = Callable[[Sequence[StackResource], CheckContext], Iterable[tuple[str, str | None]]]


@dataclass(frozen=True)
class Handler:
    """One check a target contributes to one resource policy of the pack.

    Attributes:
        policy: the pack policy's id, ``SBX-<AREA>-NNN`` (e.g. ``SBX-NET-001``); the check runs
            with that policy's severity, enforcement level and config.
        types: the resource type tokens the check reads (``aws:lambda/function:Function``), or
            ``kubernetes:*:<Kind>`` for a kind in any API group and version.
        check: ``(props, ctx) -> sentences``: one full sentence per violation, saying what is
            wrong and the fix; nothing for a resource that complies.
    """

    policy: str
    types: tuple[str, ...]
    check: Check

    def applies_to(self, resource_type: str) -> bool:
        """Whether the check reads resources of ``resource_type``."""
        return any(type_matches(resource_type, pattern) for pattern in self.types)


@dataclass(frozen=True)
class StackHandler:
    """One check a target contributes to one stack policy of the pack.

    Attributes:
        policy: the pack policy's id, ``SBX-<AREA>-NNN`` (e.g. ``SBX-NET-005``).
        check: ``(resources, ctx) -> (sentence, urn or None)`` for each violation, over every
            resource of the stack (whichever target created it).
    """

    policy: str
    check: StackCheck


def type_matches(resource_type: str, pattern: str) -> bool:
    """Exact match, or ``kubernetes:*:<Kind>`` for any API group/version of a kind."""
    if pattern.startswith("kubernetes:*:"):
        return (
            resource_type.startswith("kubernetes:")
            and resource_type.rsplit(":", 1)[-1] == pattern.rsplit(":", 1)[-1]
        )
    return resource_type == pattern


def of_kind(resources: Sequence[StackResource], suffix: str) -> list[StackResource]:
    """The resources whose type token ends with ``suffix`` (``:NetworkPolicy``,
    ``lambdamicrovms/image:Image``), in stack order."""
    return [r for r in resources if r.resource_type.endswith(suffix)]


def owner_of(resource: StackResource) -> str:
    """The name of the resource's top-level ancestor: the target whose component created it
    (``sandboxkit.program`` names each target's component after the target)."""
    while resource.parent is not None:
        resource = resource.parent
    return resource.name


def target_views(resources: Sequence[StackResource], target: str) -> list[ResourceView]:
    """The resources ``target``'s component created, as its egress reader reads them (the
    ``resource_views`` of those resources): what ``preview --explain-egress`` reads."""
    return resource_views([r for r in resources if owner_of(r) == target])


def resource_views(resources: Sequence[StackResource], prefix: str = "") -> list[ResourceView]:
    """The stack's resources whose type starts with ``prefix``, as the egress readers read them
    (``sandboxkit.reach.ResourceView``), in stack order.

    Resources whose inputs carry an asset or archive (function code) are left out: they are
    not JSON-like, and no egress reader reads them.
    """
    views = []
    for resource in resources:
        if not resource.resource_type.startswith(prefix):
            continue
        try:
            views.append(ResourceView.of(resource.resource_type, resource.name, resource.props))
        except TypeError:
            continue
    return views


# Thresholds and inputs arrive as protobuf doubles (1000 as 1000.0): print them as the kit does.
number = plain_number


def numbers(values: Iterable[Any]) -> str:
    """Numbers as a comma-separated list for a message (``443, 80, 53``)."""
    return ", ".join(number(v) for v in values)


def dig(value: Any, path: str, default: Any = None) -> Any:
    """The value at a dotted path of mappings (``spec.podTemplate.spec``), else ``default``."""
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return default
        value = value[part]
    return value


def items(value: Any) -> list[Any]:
    """A sequence input as a list (strings and absent values give ``[]``)."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return list(value)
    return []


def labels_of(props: Mapping[str, Any]) -> Mapping[str, Any]:
    """The kit's labels/tags of a resource, wherever its provider keeps them."""
    for path in ("metadata.labels", "tags", "labels"):
        found = dig(props, path)
        if isinstance(found, Mapping):
            return found
    return {}


def target_of(props: Mapping[str, Any]) -> str | None:
    """The kit target that created the resource, from its labels."""
    value = labels_of(props).get(TARGET_LABEL)
    return value if isinstance(value, str) else None


def walk_strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string in a nested input as ``(dotted path, text)``."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key in value:
            yield from walk_strings(value[key], f"{path}.{key}" if path else str(key))
    elif isinstance(value, Sequence):
        for index, element in enumerate(value):
            yield from walk_strings(element, f"{path}[{index}]")


# Kinds whose pod template is a sandbox (kubernetes-sigs/agent-sandbox, any API version).
SANDBOX_POD_KINDS = ("kubernetes:*:SandboxTemplate", "kubernetes:*:Sandbox")


def sandbox_pod_spec(props: Mapping[str, Any]) -> Mapping[str, Any]:
    """The pod spec of a SandboxTemplate or Sandbox (``spec.podTemplate.spec``)."""
    found = dig(props, "spec.podTemplate.spec", {})
    return found if isinstance(found, Mapping) else {}


def containers_of(pod_spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Containers and init containers of a pod spec."""
    return [
        c
        for c in items(pod_spec.get("containers")) + items(pod_spec.get("initContainers"))
        if isinstance(c, Mapping)
    ]


def launcher_env(props: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The environment of a MicroVM launcher function, or ``None`` for any other function."""
    variables = dig(props, "environment.variables", {}) or {}
    if isinstance(variables, Mapping) and all(k in variables for k in LAUNCHER_MARKERS):
        return variables
    return None


def plain_bindings(props: Mapping[str, Any]) -> dict[str, Any]:
    """A Worker's ``plain_text`` bindings as name -> text (the kit's runtime settings)."""
    return {
        str(b.get("name")): b.get("text")
        for b in items(props.get("bindings"))
        if isinstance(b, Mapping) and b.get("type") == "plain_text"
    }
