"""Every resource type any documented setting can create is declared in its target's catalog:
exported to checkov or listed as not exported (with why), so no setting breaks the full gate.

Each enumerated setting (a ``Literal`` or ``bool`` field of a target's settings model, nested
models included) is rendered with each of its values on the shipped dev and prod stacks, one
target at a time; a value the config refuses in that stack is skipped, and each value must
render on at least one of them.
"""

from __future__ import annotations

import copy
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

import support as testing
from sandboxkit import targets
from sandboxkit.checkov_bridge.mapping import export_type
from sandboxkit.errors import ConfigError

PROJECT = Path(__file__).resolve().parents[2]
BASES = ("dev", "prod")


def _choices(annotation: Any) -> list[Any]:
    if typing.get_origin(annotation) is typing.Literal:
        return list(typing.get_args(annotation))
    if annotation is bool:
        return [True, False]
    return [c for arg in typing.get_args(annotation) for c in _choices(arg)]


def _models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _models(arg)]


def enumerated(model: type[BaseModel], path: tuple[str, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """``(path, value)`` for each value of each enumerated field of ``model`` and its nested
    models, ``path`` in config (alias) names."""
    for name, field in model.model_fields.items():
        key = (*path, field.alias or name)
        for value in _choices(field.annotation):
            yield key, value
        for nested in _models(field.annotation):
            yield from enumerated(nested, key)


CASES = [
    (target, path, value)
    for target in targets.TARGET_MODULES
    for path, value in enumerated(targets.get_target(target).settings_model)
]


# Settings a value needs beside it to be valid on the shipped stacks: (target, path, value) ->
# (path, value or REMOVE) edits made first.
COMPANIONS: dict[tuple[str, tuple[str, ...], Any], list[tuple[tuple[str, ...], Any]]] = {
    # Microsoft's image: no image of the stack's own, no port or pull identity for it.
    ("azure-sessions", ("containerType",), "PythonLTS"): [
        (("image",), testing.REMOVE),
        (("targetPort",), testing.REMOVE),
        (("identity",), testing.REMOVE),
        (
            ("unenforced",),
            ["limits.maxLifetimeSeconds", "limits.vcpu", "limits.memoryMiB", "pool.ready"],
        ),
    ],
    # The IP endpoint reaches the deployer only as a public one (a private endpoint lies in the
    # VPC the stack creates, which the kit refuses).
    ("gcp-gke", ("controlPlaneAccess",), "authorizedNetworks"): [
        (("privateEndpoint",), False),
    ],
    # A route to set customDomain on: a host for a custom domain, a pattern and zone for a route.
    ("cloudflare", ("routes", "customDomain"), True): [
        (("routes",), [{"pattern": "sandbox.example.com"}]),
    ],
    ("cloudflare", ("routes", "customDomain"), False): [
        (("routes",), [{"pattern": "example.com/sandbox/*", "zoneName": "example.com"}]),
    ],
    # 4 GiB is valid with every Cloud Run vCPU choice (1 vCPU: up to 4 GiB; 8 vCPU: 4 GiB up).
    **{
        ("gcp-cloudrun", ("instance", "vcpu"), vcpu): [(("instance", "memoryMiB"), 4096)]
        for vcpu in (2, 4, 6, 8)
    },
}
# Values no shipped stack can take, with why (the type set does not depend on them).
REFUSED = {
    ("gcp-cloudrun", ("instance", "vcpu"), 1): "one vCPU cannot hold a sandbox and the launcher",
}


def _set(node: Any, path: tuple[str, ...], value: Any) -> None:
    """Set ``path`` in a settings mapping; a list on the way (``executors``) gets it in every
    element."""
    if isinstance(node, list):
        for element in node:
            _set(element, path, value)
        return
    key = path[0]
    if len(path) == 1:
        if value is testing.REMOVE:
            node.pop(key, None)
        else:
            node[key] = value
        return
    if not isinstance(node.get(key), dict | list):
        node[key] = {}
    _set(node[key], path[1:], value)


def _types(stack: str, target: str, path: tuple[str, ...], value: Any) -> set[str] | None:
    values = copy.deepcopy(testing.stack_values(PROJECT, stack))
    if target not in values["targets"]:
        return None
    values = {k: v for k, v in values.items() if k not in set(values["targets"]) - {target}}
    values["targets"] = [target]
    for companion, companion_value in COMPANIONS.get((target, path, value), []):
        _set(values[target], companion, companion_value)
    _set(values[target], path, value)
    try:
        rendered = testing.render_values(PROJECT, stack, values)
    except ConfigError:
        return None
    return {r.type for r in rendered.resources}


def test_the_aws_ingress_policy_is_among_the_cases() -> None:
    assert ("aws-microvm", ("ingress",), "authToken") in CASES
    assert ("cloudflare", ("workersDev",), True) in CASES


@pytest.mark.parametrize(
    ("target", "path", "value"), CASES, ids=[f"{t}.{'.'.join(p)}={v}" for t, p, v in CASES]
)
def test_every_type_a_setting_creates_is_in_the_catalog(
    target: str, path: tuple[str, ...], value: Any
) -> None:
    if (target, path, value) in REFUSED:
        assert _types("prod", target, path, value) is None
        return
    found = [_types(stack, target, path, value) for stack in BASES]
    rendered = [types for types in found if types is not None]
    assert rendered, f"{target}.{'.'.join(path)}={value!r} renders on no shipped stack"
    for types in rendered:
        for type_token in sorted(types):
            export_type(type_token)  # raises UnmappedTypeError for an undeclared type
