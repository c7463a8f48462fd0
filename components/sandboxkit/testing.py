"""Helpers for testing components under the recording engine (used by the kit's own tests).

Example::

    with recording_engine("test") as engine:
        engine.run(lambda: AgentSandbox("kubernetes", args))
    template = one(engine.resources, SANDBOX_TEMPLATE_TYPE)
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from sandboxkit.config import ConfigSource, load_stack, read_stack_file
from sandboxkit.project import stack_file
from sandboxkit.render import Recorder, RenderedResource, RenderedStack, render_source
from sandboxkit.targets import KitContext, get_target


def of_type(resources: Iterable[RenderedResource], type_token: str) -> list[RenderedResource]:
    """The resources of one type token, in registration order."""
    return [r for r in resources if r.type == type_token]


def one(resources: Iterable[RenderedResource], type_token: str) -> RenderedResource:
    """The only resource of ``type_token``. Raises ``AssertionError`` unless exactly one."""
    found = of_type(resources, type_token)
    assert len(found) == 1, f"expected one {type_token}, found {[r.name for r in found]}"
    return found[0]


def named(resources: Iterable[RenderedResource], name: str) -> RenderedResource:
    """The resource with logical name ``name``. Raises ``AssertionError`` unless exactly one."""
    found = [r for r in resources if r.name == name]
    assert len(found) == 1, f"expected one resource named {name}, found {len(found)}"
    return found[0]


def build_target(
    engine: Recorder,
    target: str,
    settings: Mapping[str, Any],
    profile: Mapping[str, Any] | None = None,
    *,
    environment: str = "prod",
) -> list[RenderedResource]:
    """Validate a one-target config as stack ``test`` and build the target under ``engine``.

    ``settings`` are the ``sandboxkit:<target>`` values and ``profile`` the
    ``sandboxkit:profile`` values (default profile when ``None``), both in their camelCase
    config form. The component is named ``target``, as ``program.main`` names it. Returns
    every resource registered so far.

    Raises:
        ConfigError: the config does not validate (as ``load_stack``).
    """
    values: dict[str, Any] = {
        "environment": environment,
        "targets": [target],
        target: dict(settings),
    }
    if profile is not None:
        values["profile"] = dict(profile)
    spec = load_stack(ConfigSource(values=values), "test")
    context = KitContext(stack=spec.stack, environment=spec.environment, target=target)
    engine.run(lambda: get_target(target).build(spec.profile, spec.settings[target], context))
    return engine.resources


# Pass as ``value`` to ``with_input`` to remove the key instead of setting it.
REMOVE = object()


def with_input(
    rendered: RenderedStack, name: str, path: Sequence[str | int], value: Any
) -> RenderedStack:
    """A copy of ``rendered`` with one input of resource ``name`` set (or ``REMOVE``d).

    ``path`` walks the wire-form inputs: keys for mappings, indexes for lists, e.g.
    ``("spec", "podTemplate", "spec", "containers", 0, "securityContext", "privileged")``.
    Missing mappings along the path are created.
    """
    target = named(rendered.resources, name)
    inputs = copy.deepcopy(dict(target.inputs))
    node: Any = inputs
    for step in path[:-1]:
        node = node.setdefault(step, {}) if isinstance(step, str) else node[step]
    if value is REMOVE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    changed = replace(target, inputs=inputs)
    return replace(
        rendered, resources=tuple(changed if r is target else r for r in rendered.resources)
    )


def without(rendered: RenderedStack, name: str) -> RenderedStack:
    """A copy of ``rendered`` without resource ``name``."""
    target = named(rendered.resources, name)
    return replace(rendered, resources=tuple(r for r in rendered.resources if r is not target))


def stack_values(project_dir: Path, stack: str) -> dict[str, Any]:
    """An editable copy of a stack file's ``sandboxkit:*`` values (``secure:`` left unknown)."""
    return copy.deepcopy(dict(read_stack_file(stack_file(project_dir, stack)).values))


def render_values(project_dir: Path, stack: str, values: dict[str, Any]) -> RenderedStack:
    """Render config values offline as stack ``stack`` (e.g. a weakened copy of its file)."""
    return render_source(project_dir, stack, ConfigSource(values=values))
