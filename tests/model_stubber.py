"""botocore's Stubber, plus what it does not check: the service model's ``pattern`` and ``max``.

``botocore.stub.Stubber`` validates a stubbed call's parameter names, types and required
members against the installed service model, and its canned response's shape, but not string
patterns or maximum lengths (``ParamValidator`` checks ``min`` only), so a mock id such as
``rslvr-frg-x`` or an ARN of the wrong service passes it. :class:`ModelStubber` checks every
string of the expected parameters and of the canned response against its shape's ``pattern``
(a whole-string match, as the services apply them; ``\\p{L}`` classes need the ``regex``
module) and length bounds, for every operation of every service.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import regex
from botocore.model import Shape
from botocore.stub import Stubber


class PatternError(AssertionError):
    """A value does not match its shape's pattern or length bounds."""


def pattern_problems(shape: Shape | None, value: Any, where: str) -> list[str]:
    """Each string in ``value`` that breaks the ``pattern``, ``min`` or ``max`` of its shape
    (``shape`` and its members, list members and map keys and values), as ``where.path: why``."""
    if shape is None or value is None:
        return []
    kind = shape.type_name
    if kind == "structure" and isinstance(value, Mapping):
        members = shape.members
        return [
            problem
            for name, member in value.items()
            if name in members
            for problem in pattern_problems(members[name], member, f"{where}.{name}")
        ]
    if kind == "list" and isinstance(value, list | tuple):
        member = shape.member
        return _bounds(shape, len(value), where, "items") + [
            problem
            for index, item in enumerate(value)
            for problem in pattern_problems(member, item, f"{where}[{index}]")
        ]
    if kind == "map" and isinstance(value, Mapping):
        key, item = shape.key, shape.value
        return [
            problem
            for name, member in value.items()
            for problem in (
                pattern_problems(key, name, f"{where} key {name!r}")
                + pattern_problems(item, member, f"{where}[{name!r}]")
            )
        ]
    if kind != "string" or not isinstance(value, str):
        return []
    found = _bounds(shape, len(value), where, "characters")
    pattern = shape.metadata.get("pattern")
    if pattern is not None and regex.fullmatch(pattern, value) is None:
        found.append(f"{where}: {value!r} does not match {shape.name}'s pattern {pattern!r}")
    return found


def _bounds(shape: Shape, size: int, where: str, unit: str) -> list[str]:
    low, high = shape.metadata.get("min", 0), shape.metadata.get("max", size)
    if low <= size <= high:
        return []
    return [f"{where}: {size} {unit}, outside {shape.name}'s {low} to {high}"]


class ModelStubber(Stubber):
    """A ``Stubber`` that also refuses, at ``add_response``/``add_client_error``, expected
    parameters or a canned response whose strings break the model's patterns or bounds.

    Raises:
        PatternError: naming each offending member, its value and the shape's pattern.
    """

    def _check(self, method: str, params: Any, response: Any) -> None:
        operation = self.client.meta.method_to_api_mapping[method]
        model = self.client.meta.service_model.operation_model(operation)
        problems = []
        if isinstance(params, Mapping):
            problems += pattern_problems(model.input_shape, params, f"{method}(...)")
        if isinstance(response, Mapping):
            problems += pattern_problems(model.output_shape, response, f"{method} ->")
        if problems:
            raise PatternError("; ".join(problems))

    def add_response(self, method: str, service_response: Any, expected_params: Any = None) -> None:
        self._check(method, expected_params, service_response)
        super().add_response(method, service_response, expected_params)

    def add_client_error(self, method: str, *args: Any, **kwargs: Any) -> None:
        self._check(method, kwargs.get("expected_params"), None)
        super().add_client_error(method, *args, **kwargs)
