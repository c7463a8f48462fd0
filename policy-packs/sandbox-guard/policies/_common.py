"""The pack's building blocks: rule metadata, per-type checks, config thresholds, walkers.

Policies receive inputs as pulumi-policy proxies (``Mapping``/``Sequence``, never ``dict``/
``list``), so every helper here tests against the abstract types. Reading an input that is
unknown during a preview raises inside the proxy; pulumi-policy reports that as advisory.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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

from sandboxkit.addresses import non_public_reach
from sandboxkit.contract import LAUNCHER_MARKERS, TARGET_LABEL
from sandboxkit.targets import plain_number


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
    """What a check sees besides the inputs: the rule's config and the resource's identity."""

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


Check = Callable[[Mapping[str, Any], Context], Iterable[str]]
StackCheck = Callable[[Sequence[Any], Context], Iterable[tuple[str, str | None]]]


class ResourceRule:
    """A resource policy assembled from per-type checks that yield violation sentences."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.checks: list[tuple[Callable[[str], bool], Check]] = []

    def on(self, *types: str) -> Callable[[Check], Check]:
        """Register a check for exact type tokens (or ``kubernetes:*:<Kind>`` patterns)."""

        def register(check: Check) -> Check:
            self.checks.append((lambda t: any(type_matches(t, p) for p in types), check))
            return check

        return register

    def on_any(self) -> Callable[[Check], Check]:
        """Register a check for every resource type."""

        def register(check: Check) -> Check:
            self.checks.append((lambda _t: True, check))
            return check

        return register

    def validate(self, args: ResourceValidationArgs, report: ReportViolation) -> None:
        """Run every check registered for the resource's type."""
        context = Context(
            self.rule,
            args.get_config(),
            name=args.name,
            urn=args.urn,
            resource_type=args.resource_type,
            target=target_of(args.props),
        )
        for matches, check in self.checks:
            if matches(args.resource_type):
                for message in check(args.props, context):
                    report(message, None)

    def policy(self) -> ResourceValidationPolicy:
        """The CrossGuard policy."""
        return ResourceValidationPolicy(validate=self.validate, **self.rule.common())


class StackRule:
    """A stack policy: one check over all resources, yielding ``(message, urn or None)``."""

    def __init__(self, rule: Rule, check: StackCheck) -> None:
        self.rule = rule
        self.check = check

    def validate(self, args: StackValidationArgs, report: ReportViolation) -> None:
        """Run the check over the stack's resources."""
        context = Context(self.rule, args.get_config())
        for message, urn in self.check(args.resources, context):
            report(message, urn)

    def policy(self) -> StackValidationPolicy:
        """The CrossGuard policy."""
        return StackValidationPolicy(validate=self.validate, **self.rule.common())


def type_matches(resource_type: str, pattern: str) -> bool:
    """Exact match, or ``kubernetes:*:<Kind>`` for any API group/version of a kind."""
    if pattern.startswith("kubernetes:*:"):
        return (
            resource_type.startswith("kubernetes:")
            and resource_type.rsplit(":", 1)[-1] == pattern.rsplit(":", 1)[-1]
        )
    return resource_type == pattern


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


def network_of(cidr: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """The network of a CIDR or address text, or ``None`` if it is neither."""
    try:
        return ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return None


def non_public_overlap(cidr: str, excepted: Iterable[str] = ()) -> list[str]:
    """Non-public ranges that ``cidr`` reaches and ``excepted`` does not take out, each as
    ``block (registry name)``: the egress contract's judgement (``sandboxkit.addresses``)."""
    network = network_of(cidr)
    if network is None:
        return []
    holes = [n for n in map(network_of, excepted) if n is not None]
    parts = non_public_reach(network, holes)
    return list(dict.fromkeys(f"{part.row.network} ({part.row.name})" for part in parts))


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


def kit_cap(target: str | None, profile_field: str) -> Any:
    """The kit's ``Cap`` for a target's profile field, or ``None`` (unknown target, no cap).

    The pack reuses the kit's own caps (``TargetSpec.caps``, each with its source) rather than
    restating them.
    """
    from sandboxkit.targets import TARGET_MODULES, get_target

    if target not in TARGET_MODULES:
        return None
    return next((c for c in get_target(target).caps if c.field == profile_field), None)


def launcher_env(props: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The environment of a MicroVM launcher function, or ``None`` for any other function."""
    variables = dig(props, "environment.variables", {}) or {}
    if isinstance(variables, Mapping) and all(k in variables for k in LAUNCHER_MARKERS):
        return variables
    return None


WORKERS_SCRIPT = "cloudflare:index/workersScript:WorkersScript"


def plain_bindings(props: Mapping[str, Any]) -> dict[str, Any]:
    """A Worker's ``plain_text`` bindings as name -> text (the kit's runtime settings)."""
    return {
        str(b.get("name")): b.get("text")
        for b in items(props.get("bindings"))
        if isinstance(b, Mapping) and b.get("type") == "plain_text"
    }
