"""The pack's building blocks: rule metadata, the context a check reads, and the rules that run
the checks every registered target declares for them (``sandboxkit.guard``)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pulumi_policy import (
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)

from sandboxkit import targets
from sandboxkit.guard import Check, Handler, StackCheck, StackHandler, target_of


@dataclass(frozen=True)
class Rule:
    """A policy's metadata.

    Attributes:
        id: ``SBX-<AREA>-NNN``; the CrossGuard name is the same in lower case.
        title: a short name for people (SARIF ``shortDescription``).
        severity: pulumi-policy ``Severity``.
        description: "Checks that..." / "Prohibits..." (the full description).
        remediation: one sentence that says the fix.
        properties: JSON-schema properties of the policy's config; each has a ``default``.
    """

    id: str
    title: str
    severity: Severity
    description: str
    remediation: str
    properties: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The CrossGuard policy name (``sbx-net-001``)."""
        return self.id.lower()

    @property
    def area(self) -> str:
        """``net``, ``iam``, ... taken from the id."""
        return self.id.split("-")[1].lower()

    def schema(self) -> PolicyConfigSchema | None:
        """The config schema the CLI validates ``--policy-pack-config`` against."""
        if not self.properties:
            return None
        return PolicyConfigSchema(properties={k: dict(v) for k, v in self.properties.items()})

    def common(self) -> dict[str, Any]:
        """Keyword arguments shared by resource and stack policies."""
        return {
            "name": self.name,
            "description": self.description,
            "display_name": f"{self.id}: {self.title}",
            "severity": self.severity,
            "config_schema": self.schema(),
            "tags": ["sandboxkit", self.area],
            "remediation_steps": self.remediation,
        }


class Context:
    """What a check sees besides the inputs: the rule's config and the resource's identity
    (``sandboxkit.guard.CheckContext``)."""

    def __init__(
        self,
        rule: Rule,
        config: Mapping[str, Any],
        *,
        name: str = "",
        urn: str = "",
        resource_type: str = "",
        target: str | None = None,
    ) -> None:
        self.rule = rule
        self.config = config
        self.name = name
        self.urn = urn
        self.resource_type = resource_type
        self.target = target

    def setting(self, key: str) -> Any:
        """A threshold from the pack config, else its schema default (what the CLI fills in)."""
        if key in self.config:
            return self.config[key]
        return self.rule.properties[key]["default"]


def handlers_of(policy_id: str) -> tuple[Handler | StackHandler, ...]:
    """The ``Handler`` and ``StackHandler`` records the registered targets declare for
    ``policy_id`` (each in its folder's ``guard.py``), in registry order."""
    return _declared(tuple(targets.TARGET_MODULES.items())).get(policy_id, ())


@functools.lru_cache(maxsize=8)
def _declared(
    registry: tuple[tuple[str, str], ...],
) -> dict[str, tuple[Handler | StackHandler, ...]]:
    """Every target's handlers by policy id, collected once per registry (``registry``, the
    registry's contents, is only the cache key): every resource asks for them per policy."""
    by_policy: dict[str, list[Handler | StackHandler]] = {}
    for handler in targets.target_parts("guard", "HANDLERS"):
        by_policy.setdefault(handler.policy, []).append(handler)
    return {policy: tuple(found) for policy, found in by_policy.items()}


class ResourceRule:
    """A resource policy: the handlers the registered targets declare for its id, after the
    pack's own check of every resource type if it has one (credential shapes)."""

    def __init__(self, rule: Rule, every_type: Check | None = None) -> None:
        self.rule = rule
        self.every_type = every_type

    def handlers_for(self, resource_type: str) -> list[Handler]:
        """The target handlers this policy runs on a resource of ``resource_type``."""
        return [
            h
            for h in handlers_of(self.rule.id)
            if isinstance(h, Handler) and h.applies_to(resource_type)
        ]

    def validate(self, args: ResourceValidationArgs, report: ReportViolation) -> None:
        """Run the policy's checks for the resource's type; report each sentence."""
        context = Context(
            self.rule,
            args.get_config(),
            name=args.name,
            urn=args.urn,
            resource_type=args.resource_type,
            target=target_of(args.props),
        )
        checks = [self.every_type] if self.every_type else []
        checks += [h.check for h in self.handlers_for(args.resource_type)]
        for check in checks:
            for message in check(args.props, context):
                report(message, None)

    def policy(self) -> ResourceValidationPolicy:
        """The CrossGuard policy."""
        return ResourceValidationPolicy(validate=self.validate, **self.rule.common())


class StackRule:
    """A stack policy: the stack handlers the registered targets declare for its id, after the
    pack's own check over every target if it has one (SBX-NET-006 reads every target's egress
    reader), each yielding ``(message, urn or None)`` over all the stack's resources."""

    def __init__(self, rule: Rule, every_stack: StackCheck | None = None) -> None:
        self.rule = rule
        self.every_stack = every_stack

    def handlers(self) -> list[StackHandler]:
        """The target stack handlers this policy runs, in registry order."""
        return [h for h in handlers_of(self.rule.id) if isinstance(h, StackHandler)]

    def validate(self, args: StackValidationArgs, report: ReportViolation) -> None:
        """Run the handlers over the stack's resources; report each finding."""
        context = Context(self.rule, args.get_config())
        checks = [self.every_stack] if self.every_stack else []
        checks += [h.check for h in self.handlers()]
        for check in checks:
            for message, urn in check(args.resources, context):
                report(message, urn)

    def policy(self) -> StackValidationPolicy:
        """The CrossGuard policy."""
        return StackValidationPolicy(validate=self.validate, **self.rule.common())
