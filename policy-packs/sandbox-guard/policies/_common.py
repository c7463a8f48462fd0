"""The pack's building blocks: a CrossGuard policy per catalogue rule (``sandboxkit.policy_rules``),
the context a check reads, and the runs of the handlers the kit and every registered target
declare for the rule (``sandboxkit.kit_guard.declared_handlers``).

Checks read inputs through ``sandboxkit.guard.inputs``, never pulumi-policy's proxy: an unknown
input (``pulumi preview``) that a check reads becomes a "cannot verify" violation at the
policy's level, naming the resource and the input path, and the check's findings on the known
parts stand; pulumi-policy would drop the policy for the resource with one advisory note.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pulumi_policy import (
    PolicyConfigSchema,
    PolicyResource,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    Severity,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError

from sandboxkit import targets
from sandboxkit.guard import (
    Handler,
    Owner,
    StackHandler,
    UnknownInputError,
    inputs,
    labelled_target,
)
from sandboxkit.kit_guard import declared_handlers, pack_description
from sandboxkit.policy_rules import PolicyRule
from sandboxkit.policy_rules import Severity as CatalogueSeverity

# pulumi-policy's enums for the catalogue's.
SEVERITIES = {
    CatalogueSeverity.LOW: Severity.LOW,
    CatalogueSeverity.MEDIUM: Severity.MEDIUM,
    CatalogueSeverity.HIGH: Severity.HIGH,
    CatalogueSeverity.CRITICAL: Severity.CRITICAL,
}


def policy_arguments(rule: PolicyRule) -> dict[str, Any]:
    """Keyword arguments of ``rule``'s CrossGuard policy, resource or stack, all from the
    catalogue: the description is the rule's, followed by what its handlers cover."""
    schema = (
        PolicyConfigSchema(properties={k: dict(v) for k, v in rule.config_schema.items()})
        if rule.config_schema
        else None
    )
    return {
        "name": rule.policy_name,
        "description": pack_description(rule),
        "display_name": f"{rule.id}: {rule.name}",
        "severity": SEVERITIES[rule.severity],
        "config_schema": schema,
        "tags": ["sandboxkit", rule.area],
        "remediation_steps": rule.remediation,
    }


class Context:
    """What a check sees besides the inputs: the rule's config and the resource's identity
    (``sandboxkit.guard.CheckContext``). ``target`` is read from the resource's labels when a
    check asks for it, so an unknown label is that check's unknown."""

    def __init__(
        self,
        rule: PolicyRule,
        config: Mapping[str, Any],
        *,
        name: str = "",
        urn: str = "",
        resource_type: str = "",
        props: Mapping[str, Any] | None = None,
    ) -> None:
        self.rule = rule
        self.config = config
        self.name = name
        self.urn = urn
        self.resource_type = resource_type
        self._props = props or {}

    @property
    def target(self) -> str | None:
        """The kit target that created the resource (its ``sandboxkit-target`` label)."""
        return labelled_target(self._props)

    def setting(self, key: str) -> Any:
        """A threshold from the pack config, else its schema default (what the CLI fills in)."""
        if key in self.config:
            return self.config[key]
        return self.rule.default(key)


def raw_inputs(value: Any) -> Any:
    """pulumi-policy's input proxy as plain dicts and lists, each unknown value kept as the
    wire sentinel the proxy refuses to hand out (``UnknownValueError.unknown_type_sentinel``)."""
    if isinstance(value, Mapping):
        result = {}
        for key in value:
            try:
                result[key] = raw_inputs(value[key])
            except UnknownValueError as unknown:
                result[key] = unknown.unknown_type_sentinel
        return result
    if isinstance(value, Sequence) and not isinstance(value, str):
        elements = []
        for index in range(len(value)):
            try:
                elements.append(raw_inputs(value[index]))
            except UnknownValueError as unknown:
                elements.append(unknown.unknown_type_sentinel)
        return elements
    return value


def cannot_verify(rule: PolicyRule, unknown: UnknownInputError) -> str:
    """The "cannot verify" sentence for ``unknown``, which decided ``rule``'s verdict."""
    owner = unknown.owner
    plural = len(unknown.paths) > 1
    where = f"input{'s' if plural else ''} {', '.join(unknown.paths)}"
    if unknown.secret:
        why = (
            f"{'are Pulumi secrets' if plural else 'is a Pulumi secret'} the offline render "
            "cannot read"
        )
        fix = "give the value as plain config (it is not a credential) so the gate can read it"
    else:
        why = (
            f"{'are' if plural else 'is'} unknown during preview (computed from another "
            "resource's output)"
        )
        fix = (
            "run the gate where the value is known (sandboxkit check renders it, or a preview "
            "after the resource it comes from exists), or set it from a known value"
        )
    return (
        f"Cannot verify {rule.id} on {owner.resource_type} {owner.name}: {where} {why}, and "
        f"the verdict depends on {'them' if plural else 'it'}; {fix}."
    )


def handlers_of(policy_id: str) -> tuple[Handler | StackHandler, ...]:
    """The ``Handler`` and ``StackHandler`` records of ``policy_id``: the kit's, then those the
    registered targets declare (each in its folder's ``guard.py``), in registry order."""
    return _declared_now().by_policy.get(policy_id, ())


@dataclass
class _Declared:
    """The handlers of the kit and the registered targets: by policy id, and by policy id and
    resource type (filled as types are asked for: every resource asks per policy)."""

    by_policy: dict[str, tuple[Handler | StackHandler, ...]]
    by_type: dict[tuple[str, str], tuple[Handler, ...]] = field(default_factory=dict)

    def handlers_reading(self, policy_id: str, resource_type: str) -> tuple[Handler, ...]:
        """The ``Handler`` records of ``policy_id`` that read ``resource_type``."""
        key = (policy_id, resource_type)
        if key not in self.by_type:
            self.by_type[key] = tuple(
                h
                for h in self.by_policy.get(policy_id, ())
                if isinstance(h, Handler) and h.applies_to(resource_type)
            )
        return self.by_type[key]


def _declared_now() -> _Declared:
    """The handlers of the kit and the targets registered now (``targets.TARGET_MODULES``)."""
    return _declared(tuple(targets.TARGET_MODULES.items()))


@functools.lru_cache(maxsize=8)
def _declared(registry: tuple[tuple[str, str], ...]) -> _Declared:
    """Every handler, collected once per registry (``registry``, the registry's contents, is
    only the cache key)."""
    by_policy: dict[str, list[Handler | StackHandler]] = {}
    for handler in declared_handlers():
        by_policy.setdefault(handler.policy, []).append(handler)
    return _Declared({policy: tuple(found) for policy, found in by_policy.items()})


class ResourceRule:
    """A resource policy: the handlers declared for its rule (``handlers_of``)."""

    def __init__(self, rule: PolicyRule) -> None:
        self.rule = rule

    def handlers_for(self, resource_type: str) -> tuple[Handler, ...]:
        """The target handlers this policy runs on a resource of ``resource_type``."""
        return _declared_now().handlers_reading(self.rule.id, resource_type)

    def validate(self, args: ResourceValidationArgs, report: ReportViolation) -> None:
        """Run the policy's checks for the resource's type; report each sentence.

        A resource no check reads is left unread (most policies apply to a few types, and
        reading the inputs walks pulumi-policy's proxy of all of them).
        """
        checks = [h.check for h in self.handlers_for(args.resource_type)]
        if not checks:
            return
        owner = Owner(args.resource_type, args.name, args.urn)
        props = inputs(raw_inputs(args.props), owner)
        context = Context(
            self.rule,
            args.get_config(),
            name=args.name,
            urn=args.urn,
            resource_type=args.resource_type,
            props=props,
        )
        for check in checks:
            try:
                for message in check(props, context):
                    report(message, None)
            except UnknownInputError as unknown:
                report(cannot_verify(self.rule, unknown), None)

    def policy(self) -> ResourceValidationPolicy:
        """The CrossGuard policy."""
        return ResourceValidationPolicy(validate=self.validate, **policy_arguments(self.rule))


class StackRule:
    """A stack policy: the stack handlers declared for its rule (``handlers_of``), each
    yielding ``(message, urn or None)`` over all the stack's resources."""

    def __init__(self, rule: PolicyRule) -> None:
        self.rule = rule

    def handlers(self) -> list[StackHandler]:
        """The target stack handlers this policy runs, in registry order."""
        return [h for h in handlers_of(self.rule.id) if isinstance(h, StackHandler)]

    def validate(self, args: StackValidationArgs, report: ReportViolation) -> None:
        """Run the handlers over the stack's resources; report each finding."""
        context = Context(self.rule, args.get_config())
        resources = stack_inputs(args.resources)
        checks = [h.check for h in self.handlers()]
        for check in checks:
            try:
                for message, urn in check(resources, context):
                    report(message, urn)
            except UnknownInputError as unknown:
                report(cannot_verify(self.rule, unknown), unknown.owner.urn)

    def policy(self) -> StackValidationPolicy:
        """The CrossGuard policy."""
        return StackValidationPolicy(validate=self.validate, **policy_arguments(self.rule))


@dataclass
class StackInput:
    """One resource of the stack as stack checks read it (``sandboxkit.guard.StackResource``):
    its inputs through ``sandboxkit.guard.inputs``."""

    resource_type: str
    props: Mapping[str, Any]
    urn: str
    name: str
    parent: StackInput | None = None


def stack_inputs(resources: Sequence[PolicyResource]) -> list[StackInput]:
    """The stack's resources with their inputs read through ``sandboxkit.guard.inputs``, parents
    kept."""
    converted = {
        id(r): StackInput(
            r.resource_type,
            inputs(raw_inputs(r.props), Owner(r.resource_type, r.name, r.urn)),
            r.urn,
            r.name,
        )
        for r in resources
    }
    for resource in resources:
        if resource.parent is not None:
            converted[id(resource)].parent = converted.get(id(resource.parent))
    return [converted[id(r)] for r in resources]
