"""Every rendered resource of every shipped stack and docs/examples stack against its provider
SDK's args class: input names (the wire names of ``pulumi.getter``), nesting, types, enums and
literals, required inputs. A `pulumi up` sends these inputs to the provider as they are; a name
the SDK does not know is dropped or refused there, never under the mocks."""

from __future__ import annotations

import collections.abc
import enum
import importlib
import importlib.util
import inspect
import json
import re
import sys
import types
import typing
from functools import cache
from pathlib import Path
from typing import Any

import pulumi
import pytest
from pulumi import _types as pulumi_types
from pulumi.runtime import rpc

from sandboxkit.render import RenderedResource, RenderedStack, is_secret_value

PACKAGES = (
    "pulumi_aws",
    "pulumi_gcp",
    "pulumi_azure_native",
    "pulumi_cloudflare",
    "pulumi_kubernetes",
)
# Custom resources the SDKs have no args class for, each checked elsewhere: the agent-sandbox
# CRDs (tests/kubernetes, against ../shared/reference) and Cilium's CRD (tests/kubernetes).
NO_SDK_CLASS = {
    "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate",
    "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxWarmPool",
    "kubernetes:cilium.io/v2:CiliumNetworkPolicy",
}
# The kit's own dynamic providers call the cloud's API themselves (tests/aws: botocore's
# Stubber against the service model).
DYNAMIC = "pulumi-python:dynamic/"


@cache
def sdk_classes() -> dict[str, tuple[str, str]]:
    """Type token -> (module, class name) from each SDK's own registration table (the
    ``resource_modules`` and ``resource_packages`` JSON its ``__init__`` hands Pulumi)."""
    found: dict[str, tuple[str, str]] = {}
    for package in PACKAGES:
        spec = importlib.util.find_spec(package)
        assert spec is not None and spec.origin is not None
        text = Path(spec.origin).read_text()
        modules = re.search(r'resource_modules="""\n?(.*?)"""', text, re.S)
        packages = re.search(r'resource_packages="""\n?(.*?)"""', text, re.S)
        assert modules is not None and packages is not None, package
        for entry in json.loads(modules.group(1)):
            for token, name in entry["classes"].items():
                found[token] = (entry["fqn"], name)
        for entry in json.loads(packages.group(1)):
            found[entry["token"]] = (entry["fqn"], entry["class"])
    return found


def args_class(type_token: str) -> type:
    """The ``@pulumi.input_type`` class of a resource's constructor arguments."""
    module_name, class_name = sdk_classes()[type_token]
    resource = getattr(importlib.import_module(module_name), class_name)
    module = sys.modules[resource.__module__]
    for candidate in (f"{class_name}InitArgs", f"{class_name}Args", "ProviderArgs"):
        found = getattr(module, candidate, None)
        if isinstance(found, type) and pulumi_types.is_input_type(found):
            return found
    raise AssertionError(f"{type_token}: no args class in {module.__name__}")


def _resolve(hint: Any, module: types.ModuleType) -> Any:
    """A forward reference evaluated in the SDK module that wrote it; ``None`` for
    ``Output[T]`` (an Output is never a rendered value)."""
    text = hint.__forward_arg__ if isinstance(hint, typing.ForwardRef) else hint
    if not isinstance(text, str):
        return hint
    if text.startswith("Output["):
        return None
    return eval(text, vars(module))


def _field_hints(cls: type) -> dict[str, tuple[Any, bool]]:
    """Python parameter name -> (annotation, required) of an input type's ``__init__``."""
    parameters = inspect.signature(cls.__init__).parameters  # type: ignore[misc]
    return {
        name: (p.annotation, p.default is inspect.Parameter.empty)
        for name, p in parameters.items()
        if name not in ("self", "__self__", "resource_name", "opts")
        and p.kind is inspect.Parameter.KEYWORD_ONLY
    }


def _is_unknown(value: Any) -> bool:
    return value == rpc.UNKNOWN


def _is_asset(value: Any) -> bool:
    return isinstance(value, dict) and value.get(rpc._special_sig_key) in (
        rpc._special_asset_sig,
        rpc._special_archive_sig,
    )


def problems(value: Any, hint: Any, module: types.ModuleType, path: str) -> list[str]:
    """Why ``value`` (wire form) does not fit annotation ``hint``; empty when it does."""
    if is_secret_value(value):
        value = value["value"]
    if _is_unknown(value):
        return []
    hint = _resolve(hint, module)
    if hint is None or hint is Any or hint is object:
        return []
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [
            _resolve(a, module)
            for a in typing.get_args(hint)
            if typing.get_origin(a) is not collections.abc.Awaitable
        ]
        options = [o for o in options if o is not None]
        if value is None:
            return [] if type(None) in options else [f"{path}: null where a value is required"]
        enums = [o for o in options if isinstance(o, type) and issubclass(o, enum.Enum)]
        if enums and isinstance(value, str):
            # azure-native types an enum as ``Union[str, SomeEnum]`` (the API may add values);
            # the kit sends only values the installed SDK names.
            allowed = {member.value for e in enums for member in e}
            return (
                [] if value in allowed else [f"{path}: {value!r} is not one of {sorted(allowed)}"]
            )
        found = [
            problems(value, option, module, path) for option in options if option is not type(None)
        ]
        if any(not f for f in found):
            return []
        return min(found, key=len)
    if value is None:
        return [f"{path}: null"]
    if origin is typing.Literal:
        literals = typing.get_args(hint)
        return [] if value in literals else [f"{path}: {value!r} is none of {literals}"]
    if origin in (collections.abc.Sequence, list, tuple):
        if not isinstance(value, list):
            return [f"{path}: {type(value).__name__} where a list is expected"]
        (item,) = typing.get_args(hint)[:1]
        return [p for i, v in enumerate(value) for p in problems(v, item, module, f"{path}[{i}]")]
    if origin in (collections.abc.Mapping, dict):
        if not isinstance(value, dict):
            return [f"{path}: {type(value).__name__} where a map is expected"]
        item = typing.get_args(hint)[1]
        return [p for k, v in value.items() for p in problems(v, item, module, f"{path}.{k}")]
    if isinstance(hint, type):
        return _class_problems(value, hint, path)
    raise AssertionError(f"{path}: annotation {hint!r} not understood by this test")


def _class_problems(value: Any, hint: type, path: str) -> list[str]:
    if pulumi_types.is_input_type(hint):
        if not isinstance(value, dict):
            return [f"{path}: {type(value).__name__} where {hint.__name__} is expected"]
        return input_problems(value, hint, path)
    if issubclass(hint, enum.Enum):
        allowed = {member.value for member in hint}
        return [] if value in allowed else [f"{path}: {value!r} is not one of {sorted(allowed)}"]
    if issubclass(hint, (pulumi.Asset, pulumi.Archive)):
        return [] if _is_asset(value) else [f"{path}: not an asset or archive"]
    if hint is bool:
        return [] if isinstance(value, bool) else [f"{path}: {value!r} is not a bool"]
    if hint in (int, float):
        whole = isinstance(value, int) or (isinstance(value, float) and value.is_integer())
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        fits = number and (whole or hint is float)
        return [] if fits else [f"{path}: {value!r} is not a {hint.__name__}"]
    if hint is str:
        return [] if isinstance(value, str) else [f"{path}: {value!r} is not a string"]
    raise AssertionError(f"{path}: class {hint!r} not understood by this test")


def input_problems(value: dict[str, Any], cls: type, path: str) -> list[str]:
    """Names, required inputs and each value of ``value`` against input type ``cls``."""
    module = sys.modules[cls.__module__]
    wire = pulumi_types.input_type_py_to_pulumi_names(cls)
    fields = _field_hints(cls)
    by_wire = {wire.get(name, name): (hint, required) for name, (hint, required) in fields.items()}
    found = [f"{path}.{key}: not an input of {cls.__name__}" for key in value if key not in by_wire]
    for key, (hint, required) in by_wire.items():
        if key not in value:
            if required:
                found.append(f"{path}.{key}: required by {cls.__name__}, missing")
            continue
        found += problems(value[key], hint, module, f"{path}.{key}")
    return found


def _provider_value(value: Any) -> Any:
    """A provider input as the provider reads it: the engine hands a provider every non-string
    config value JSON-encoded (``"false"``, ``"[...]"``)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _custom(renders: list[RenderedStack]) -> list[tuple[str, RenderedResource]]:
    return [(r.stack, res) for r in renders for res in r.resources if res.custom]


def test_every_rendered_resource_fits_its_sdk_args_class(renders: list[RenderedStack]) -> None:
    found: list[str] = []
    checked: set[str] = set()
    for stack, resource in _custom(renders):
        if resource.type in NO_SDK_CLASS or resource.type.startswith(DYNAMIC):
            continue
        checked.add(resource.type)
        inputs = {k: v for k, v in resource.inputs.items() if not k.startswith("__")}
        if resource.type.startswith("pulumi:providers:"):
            inputs = {k: _provider_value(v) for k, v in inputs.items()}
        found += input_problems(inputs, args_class(resource.type), f"{stack}:{resource.name}")
    assert found == [], "\n".join(found)
    # Every type the SDKs know was checked: the list above names only what they do not.
    unchecked = {r.type for _, r in _custom(renders)} - checked
    assert {t for t in unchecked if not t.startswith(DYNAMIC)} == NO_SDK_CLASS


@pytest.mark.parametrize(
    ("inputs", "expected"),
    [
        ({"name": "x", "autoCreateSubnetworks": False, "mtu": 1460}, []),
        (
            {"name": "x", "autoCreateSubnetwork": False},
            ["t.autoCreateSubnetwork: not an input of NetworkArgs"],
        ),
        ({"name": "x", "mtu": "1460"}, ["t.mtu: '1460' is not a int"]),
        ({"name": 7}, ["t.name: 7 is not a string"]),
    ],
    ids=["fits", "misspelt", "string-for-int", "int-for-string"],
)
def test_the_check_reports_names_and_types(inputs: dict[str, Any], expected: list[str]) -> None:
    assert input_problems(inputs, args_class("gcp:compute/network:Network"), "t") == expected


def test_the_check_reports_nesting_enums_and_required_inputs() -> None:
    cls = args_class("gcp:cloudrunv2/service:Service")
    inputs = {"location": "us-central1", "template": {"containers": [{"imagee": "x"}]}}
    assert input_problems(inputs, cls, "t") == [
        "t.template.containers[0].imagee: not an input of ServiceTemplateContainerArgs",
        "t.template.containers[0].image: required by ServiceTemplateContainerArgs, missing",
    ]
    pool = args_class("azure-native:app:ContainerAppsSessionPool")
    bad = {"resourceGroupName": "rg", "poolManagementType": "Manually"}
    assert input_problems(bad, pool, "p") == [
        "p.poolManagementType: 'Manually' is not one of ['Dynamic', 'Manual']"
    ]
