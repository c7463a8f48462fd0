"""Every setting of a kind, found by walking the settings models, and the prod stack's values
with one of them changed: the fuzzed-input tests (``tests/core/test_fuzzed_kinds.py``) and the
long-values benchmark (``benchmarks/long_values.py``) try each kind in every setting, so a new
setting of the kind is tried too.

A path is a config path below ``sandboxkit:``: ``profile.egress.allow[0]``,
``gcp-cloudrun.templates[0].image``; ``[0]`` stands for a list's first item.
"""

from __future__ import annotations

import copy
import itertools
import re
import typing
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from sandboxkit.config import ConfigSource, StackSpec, load_stack, read_stack_file
from sandboxkit.errors import ConfigError
from sandboxkit.profile import SandboxProfile
from sandboxkit.project import stack_file
from sandboxkit.targets import TARGET_MODULES, get_target

PROJECT_DIR = Path(__file__).resolve().parents[1]
PROD = dict(read_stack_file(stack_file(PROJECT_DIR, "prod")).values)
SECRET_PATHS = read_stack_file(stack_file(PROJECT_DIR, "prod")).secret_paths
# What a list item needs beside the setting changed, where prod's list is empty.
LIST_ENTRIES: dict[str, Any] = {
    "gcp-cloudrun.templates[0]": {"name": "extra", "image": "ghcr.io/example/extra:1"},
}


def _models_in(annotation: Any) -> Iterator[tuple[type[BaseModel], bool]]:
    """The models an annotation holds, each with whether it is a list's item."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        yield annotation, False
        return
    listed = typing.get_origin(annotation) in (tuple, list)
    for argument in typing.get_args(annotation):
        for model, inner in _models_in(argument):
            yield model, listed or inner


def _leaves(annotation: Any) -> Iterator[tuple[Any, bool]]:
    """The non-model types an annotation holds (``Annotated`` kept), each with whether it is a
    list's item."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        yield annotation, False
        yield from _leaves(typing.get_args(annotation)[0])
        return
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return
    if origin is None:
        yield annotation, False
        return
    listed = origin in (tuple, list)
    for argument in typing.get_args(annotation):
        if argument is not Ellipsis:
            for leaf, inner in _leaves(argument):
                yield leaf, listed or inner


Kind = Callable[[Any, FieldInfo], bool]
"""Whether a leaf type (with the field it is in) is of the kind sought."""


def setting_paths(kind: Kind) -> list[str]:
    """Every path of the profile and every target's settings whose value (or list item) is of
    ``kind``, in model order (profile first, then targets as ``TARGET_MODULES`` lists them)."""

    def walk(model: type[BaseModel], prefix: str) -> Iterator[str]:
        for name, info in model.model_fields.items():
            key = prefix + (info.alias or name)
            found = {listed for leaf, listed in _leaves(info.annotation) if kind(leaf, info)}
            if kind(info.annotation, info):
                found.add(False)
            for listed in sorted(found):
                yield f"{key}[0]" if listed else key
            for nested, listed in _models_in(info.annotation):
                yield from walk(nested, f"{key}[0]." if listed else f"{key}.")

    found = list(walk(SandboxProfile, "profile."))
    for target in TARGET_MODULES:
        found += walk(get_target(target).settings_model, f"{target}.")
    return list(dict.fromkeys(found))


def validated_by(check: Callable[..., Any]) -> Kind:
    """The kind of leaf a validator function (``AfterValidator(check)``) checks."""

    def is_it(leaf: Any, info: FieldInfo) -> bool:
        metadata = list(info.metadata) if leaf is info.annotation else []
        if typing.get_origin(leaf) is typing.Annotated:
            metadata += leaf.__metadata__
        return any(getattr(m, "func", None) is check for m in metadata)

    return is_it


def of_type(*types: type) -> Kind:
    """The kind of leaf that is one of ``types`` (``bool`` is not an ``int`` here)."""

    def is_it(leaf: Any, info: FieldInfo) -> bool:
        base = typing.get_args(leaf)[0] if typing.get_origin(leaf) is typing.Annotated else leaf
        return base in types

    return is_it


def with_value(path: str, value: Any) -> dict[str, Any]:
    """A copy of the prod stack's values with the setting at ``path`` set to ``value``."""
    values = copy.deepcopy(PROD)
    parts = re.findall(r"[^.\[\]]+|\[\d+\]", path)
    holder: Any = values
    walked = ""
    for part, after in itertools.pairwise(parts):
        walked += part if part.startswith("[") or not walked else f".{part}"
        empty: Any = [] if after.startswith("[") else {}
        if part.startswith("["):
            if not holder:
                holder.append(copy.deepcopy(LIST_ENTRIES.get(walked, empty)))
            holder = holder[int(part[1:-1])]
        else:
            holder = holder.setdefault(part, empty)
    last = parts[-1]
    if last.startswith("["):
        holder[:1] = [value]
    else:
        holder[last] = value
    return values


def load(values: dict[str, Any]) -> StackSpec:
    """``load_stack`` of ``values`` as stack ``prod``, with prod's secret paths."""
    return load_stack(ConfigSource(values=values, secret_paths=SECRET_PATHS), "prod")


def refusal(values: dict[str, Any]) -> ConfigError | None:
    """The refusal of ``values``, or ``None`` when the stack is accepted."""
    try:
        load(values)
    except ConfigError as exc:
        return exc
    return None
