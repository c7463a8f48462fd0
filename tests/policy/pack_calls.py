"""Calling the sandbox-guard pack's policies directly with validation args, as CrossGuard packs'
own unit tests do (no analyzer, no engine): one resource, or a stack of ``(type, props)``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from sandboxkit import gate

PROJECT = Path(__file__).resolve().parents[2]
PACK = gate.load_policies(gate.pack_dir(PROJECT))
POLICIES: dict[str, Any] = {p.name: p for p in PACK.ALL_POLICIES}
OPTIONS = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])


def resource_reports(
    policy: str, resource_type: str, props: Mapping[str, Any], name: str = "r"
) -> list[str]:
    """The messages resource policy ``policy`` reports on one resource named ``name``."""
    found: list[str] = []
    validator = POLICIES[policy]
    assert isinstance(validator, ResourceValidationPolicy)
    args = ResourceValidationArgs(resource_type, props, f"urn::{name}", name, OPTIONS, None)

    def report(message: str, _urn: str | None = None) -> None:
        found.append(message)

    validator.validate(args, report)
    return found


def stack_reports(
    policy: str, resources: Iterable[tuple[str, Mapping[str, Any]]]
) -> list[tuple[str, str | None]]:
    """``(message, urn)`` stack policy ``policy`` reports on a stack of ``(type, props)``, the
    resources named ``r0``, ``r1``, ... with URNs ``urn::<type>::r<i>``."""
    stack = [
        PolicyResource(t, p, f"urn::{t}::r{i}", f"r{i}", OPTIONS, None, None, [], {})
        for i, (t, p) in enumerate(resources)
    ]
    found: list[tuple[str, str | None]] = []
    validator = POLICIES[policy]
    assert isinstance(validator, StackValidationPolicy)

    def report(message: str, urn: str | None = None) -> None:
        found.append((message, urn))

    validator.validate(StackValidationArgs(stack), report)
    return found
