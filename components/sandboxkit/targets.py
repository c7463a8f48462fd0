"""What every target declares: settings, where each profile field is enforced, and caps.

A target is one folder, registered by name in ``TARGET_MODULES`` (the module exposing ``SPEC``,
a ``TargetSpec``). The spec module imports no cloud SDK, so config validation stays fast; the
component module is imported only by ``TargetSpec.component`` for targets a stack lists. What
else a target declares lives in modules of its folder that ``target_parts`` finds: ``catalog.py``
(mock outputs and checkov export types per resource type) and ``guard.py`` (policy handlers).
"""

from __future__ import annotations

import importlib
import importlib.util
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, field_validator

from sandboxkit.boundary import (
    ENVIRONMENT_LABEL,
    MANAGED_BY_LABEL,
    MANAGED_BY_VALUE,
    STACK_LABEL,
    TARGET_LABEL,
)
from sandboxkit.cloud_names import derived_name
from sandboxkit.deployer import DeployerPolicy
from sandboxkit.effective_egress import EffectiveEgress, ResourceView
from sandboxkit.egress_contract import EgressRule
from sandboxkit.errors import MissingTool
from sandboxkit.profile import PROFILE_FIELDS, SandboxProfile

# Target name -> module exposing SPEC. Names are the public values of sandboxkit:targets.
TARGET_MODULES: dict[str, str] = {
    "kubernetes": "sandboxkit.kubernetes.spec",
    "azure-sessions": "sandboxkit.azure.spec",
    "aws-microvm": "sandboxkit.aws.spec",
    "gcp-cloudrun": "sandboxkit.gcp.cloudrun.spec",
    "gcp-gke": "sandboxkit.gcp.gke.spec",
    "cloudflare": "sandboxkit.cloudflare.spec",
    "local": "sandboxkit.local.spec",
}

EnforcementKind = Literal["platform", "runtime", "none"]


@dataclass(frozen=True)
class Enforcement:
    """Where one profile field is enforced on one target.

    Attributes:
        kind: ``platform`` (a named cloud or Kubernetes field), ``runtime`` (the kit's own
            tested code: launcher, worker or Worker) or ``none``.
        where: the field or code path; for ``none``, why and what the caller must do instead.
    """

    kind: EnforcementKind
    where: str


@dataclass(frozen=True)
class Cap:
    """A bound a target's platform puts on a profile field.

    Attributes:
        field: dotted profile field, e.g. ``limits.maxLifetimeSeconds``.
        minimum: the smallest accepted value, or ``None``.
        maximum: the largest accepted value, or ``None``.
        source: the provider doc or API field the bound comes from.
        step: the platform's precision: a value is a whole multiple of it (``0.001`` vCPU on
            Kubernetes, whose CPU quantities count millicores), or ``None``. A value between
            two steps is refused rather than rounded: the target would run another size than
            the profile says (``0.0015`` vCPU rendered as ``2m`` is a third more).
    """

    field: str
    minimum: float | None
    maximum: float | None
    source: str
    step: float | None = None

    def admits(self, value: float) -> bool:
        """Whether ``value`` lies within the bound and, with a ``step``, on one."""
        return (
            (self.minimum is None or value >= self.minimum)
            and (self.maximum is None or value <= self.maximum)
            and (self.step is None or on_step(value, self.step))
        )

    def describe(self) -> str:
        """The bound as words, e.g. ``from 300 to 3600``, ``at least 0.001, in steps of
        0.001``."""
        low, high = plain_number(self.minimum), plain_number(self.maximum)
        if self.minimum is not None and self.maximum is not None:
            words = f"from {low} to {high}"
        elif self.maximum is not None:
            words = f"at most {high}"
        else:
            words = f"at least {low}"
        return words if self.step is None else f"{words}, in steps of {Decimal(str(self.step)):f}"


def on_step(value: float, step: float) -> bool:
    """Whether ``value`` is a whole multiple of ``step``, both read as the decimals they are
    written as (``0.3`` is three steps of ``0.1``, though not in binary floating point)."""
    return (Fraction(str(value)) / Fraction(str(step))).denominator == 1


def plain_number(value: object) -> str:
    """A number as a message prints it: ``28800.0`` as ``28800``, a million as ``1000000``
    (never ``1e+06``), ``0.5`` as ``0.5``; anything else as ``str``. Shared with the policy pack,
    whose thresholds arrive as protobuf doubles."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class TargetSettings(BaseModel):
    """Settings common to every target, under ``sandboxkit:<target>``.

    Attributes:
        unenforced: profile fields (e.g. ``limits.execTimeoutSeconds``) that the stack sets
            explicitly and accepts this target cannot enforce.

    Subclasses mark fields that must be Pulumi secrets with ``json_schema_extra={"secret": True}``
    and type them ``SecretValue``.
    """

    model_config = ConfigDict(
        strict=True,
        extra="forbid",
        frozen=True,
        populate_by_name=True,
        arbitrary_types_allowed=True,
    )

    unenforced: tuple[str, ...] = ()

    @field_validator("unenforced", mode="before")
    @classmethod
    def _known_fields(cls, value: object) -> object:
        if isinstance(value, list):
            value = tuple(value)
        if isinstance(value, tuple):
            for entry in value:
                if entry not in PROFILE_FIELDS:
                    raise ValueError(f"profile fields from {', '.join(PROFILE_FIELDS)}")
        return value

    @classmethod
    def secret_keys(cls) -> frozenset[str]:
        """Config keys of this model that must be given as Pulumi secrets."""
        return frozenset(
            info.alias or name
            for name, info in cls.model_fields.items()
            if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get("secret")
        )


LABEL_VALUE_LENGTH = 63
"""Longest label value: GCP labels and Kubernetes labels both stop at 63 characters
(https://cloud.google.com/compute/docs/labeling-resources#requirements,
https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#syntax-and-character-set)."""


@dataclass(frozen=True)
class KitContext:
    """What every component needs besides its profile and settings.

    Attributes:
        stack: the Pulumi stack name.
        environment: ``dev``, ``staging`` or ``prod``.
        target: the target name.
    """

    stack: str
    environment: str
    target: str

    def object_name(self, prefix: str, max_length: int) -> str:
        """The base of the target's cloud names for this stack: ``<prefix><stack>`` within the
        cloud's ``max_length`` and characters, kept unique (``cloud_names.derived_name``)."""
        return derived_name(prefix, self.stack, max_length)

    def labels(self) -> dict[str, str]:
        """The kit's tags/labels for every child that takes them.

        Keys and values are lower-case letters, digits and hyphens, valid as AWS tags, GCP
        labels, Azure tags and Kubernetes labels alike.
        """
        return {
            MANAGED_BY_LABEL: MANAGED_BY_VALUE,
            STACK_LABEL: derived_name("", self.stack, LABEL_VALUE_LENGTH),
            ENVIRONMENT_LABEL: self.environment,
            TARGET_LABEL: self.target,
        }


class KitComponent(Protocol):
    """What every target's component offers: a ``pulumi.ComponentResource`` with outputs."""

    def outputs(self) -> Mapping[str, Any]:
        """The target's stack outputs, camelCase keys."""
        ...


@dataclass(frozen=True)
class Deployment:
    """What ``TargetSpec.build`` returns: the component and its stack outputs (camelCase keys)."""

    component: KitComponent
    outputs: Mapping[str, Any]


@dataclass(frozen=True)
class ExternalConfig:
    """Configuration a target needs applied by another tool, outside Pulumi.

    Attributes:
        document: the JSON document to write.
        suffixes: file suffixes the tool reads (e.g. ``(".jsonc", ".json")``).
        apply: the command that applies a written file; ``{out}`` stands for its path.
    """

    document: Mapping[str, Any]
    suffixes: tuple[str, ...]
    apply: str


@dataclass(frozen=True)
class EgressAcceptance:
    """What of an egress profile a target accepts; its ``plan`` refuses the rest with a
    ``ConfigError`` naming the key (each refusal is documented in its ``docs/targets`` page).

    The property tests (tests/core/test_egress_properties.py) generate profiles within it and
    require each to render, and the target's reader to admit exactly what the contract admits;
    a refusal of anything declared here fails them.

    Attributes:
        allowlist: ``mode: allowlist`` is accepted (``deny`` always is).
        open: ``mode: open`` is accepted.
        names: exact-name entries (``pypi.org:443``).
        wildcards: wildcard entries (``*.pythonhosted.org:443``).
        ipv4: IPv4 literal entries (``140.82.112.3:443``).
        ipv6: IPv6 literal entries (``[2a04:4e42::223]:443``).
        ports: the only ports an entry may name; ``None`` for any port from 1 to 65535.
        settings: the target settings (camelCase key, value) all of the above needs, over a
            stack's own: kubernetes takes names with ``fqdnPolicy: cilium`` only.
        plain_tcp_by_address: the target matches names by the addresses they resolved to
            (Cloud NGFW FQDN objects), so plain TCP to a listed name's addresses, naming no
            host, passes: the one answer its reader may give unlike the contract (a
            ``plain-tcp`` probe admitted by ``resolved-address`` grants; SBX-NET-006 reports
            it, mandatory in prod).
    """

    allowlist: bool = True
    open: bool = True
    names: bool = True
    wildcards: bool = True
    ipv4: bool = True
    ipv6: bool = True
    ports: tuple[int, ...] | None = None
    settings: tuple[tuple[str, Any], ...] = ()
    plain_tcp_by_address: bool = False

    def admits_port(self, port: int) -> bool:
        """Whether an entry may name ``port``."""
        return self.ports is None or port in self.ports


SettingsT = TypeVar("SettingsT", bound=TargetSettings)
PlanT = TypeVar("PlanT")


class TargetSpec(ABC, Generic[SettingsT, PlanT]):
    """A target: its settings model, caps, plan, enforcement map and component.

    The spec module imports no cloud SDK. ``plan`` turns a validated profile and settings into
    everything the component needs, once, while the stack config is validated (so a refusal is
    a config error, exit 2, before any resource exists); ``component`` imports the SDK and
    creates the component from that plan alone. Component modules never import their spec:
    what they need arrives in the plan (the ``<Component>Args`` of the folder's ``plan.py``).
    """

    name: ClassVar[str]
    settings_model: type[SettingsT]
    caps: ClassVar[tuple[Cap, ...]] = ()
    # The Pulumi SDK packages ``component`` imports, directly or through the kit's modules
    # (tests/core/test_parallel_render.py holds this to the import graph), each with the CPU
    # seconds importing what the kit uses of it takes on the 2-CPU reference machine
    # (benchmarks/README.md, "Branch par-render"): an offline render
    # shares targets out between processes by them (``sandboxkit.parallel``). Targets that use
    # one SDK state the same seconds for it (the same test holds them to it).
    sdks: ClassVar[Mapping[str, float]]
    # SDK packages whose resources a project's own program may add around the component (the
    # target's handlers and reader judge them; tests/core/test_sdk_conformance checks them
    # against the SDK's args classes), beyond ``sdks``: mypy follows them as it does ``sdks``
    # (tests/core/test_architecture.py). cloudflare: its component registers only the kit's
    # WranglerScript, and pulumi-cloudflare's WorkersScript stays judged for programs.
    program_sdks: ClassVar[tuple[str, ...]] = ()
    # What of an egress profile the target accepts (the property tests' bounds); ``None`` only
    # for a target that enforces no egress mode (every registered target declares one).
    accepts: ClassVar[EgressAcceptance | None]

    @abstractmethod
    def plan(self, profile: SandboxProfile, settings: SettingsT, context: KitContext) -> PlanT:
        """Everything the component needs, from the profile, the settings and the context.

        Raises:
            ConfigError: for what this target cannot enforce as asked (egress entries, sizes),
                naming the key and the alternatives; this is never acknowledgeable.
        """

    @abstractmethod
    def enforcement(
        self, profile: SandboxProfile, settings: SettingsT, plan: PlanT | None
    ) -> dict[str, Enforcement]:
        """Map each field of ``PROFILE_FIELDS`` to where this target enforces it.

        ``plan`` is ``None`` when ``plan`` refused the stack: the config check still reports
        explicit fields the target enforces nowhere in the same run, so the kinds must not
        depend on the plan; descriptions then leave the plan's details out.
        """

    @abstractmethod
    def component(self, plan: PlanT) -> KitComponent:
        """Create the target's component, named after the target (imports the cloud SDK)."""

    def external_config(
        self, profile: SandboxProfile, settings: SettingsT, plan: PlanT, out: Path
    ) -> ExternalConfig | None:
        """What this target needs applied outside Pulumi, for a file written at ``out``;
        ``None`` (the default) when it needs nothing (``sandboxkit external-config``)."""
        return None

    def unseen(self, settings: SettingsT) -> tuple[str, ...]:
        """What the stack uses but another owner created, so neither the kit nor the gate can
        see its settings: one sentence each, warned by ``preview`` (the gate reports the same
        objects under SBX-K8S-009). None by default."""
        return ()

    def missing_tools(self) -> tuple[MissingTool, ...]:
        """What the gate runs to judge a stack listing this target that this machine lacks
        (``sandboxkit check`` names them all at once, before it renders). None by default."""
        return ()

    def control_plane(self, settings: SettingsT) -> tuple[EgressRule, ...]:
        """The hosts this target's own code must reach whatever the egress mode (exact names,
        ``deny`` included): part of its egress contract. None by default."""
        return ()

    def read_egress(self, resources: Sequence[ResourceView]) -> EffectiveEgress | None:
        """The effective egress of this target's rendered resources, as its folder's reader
        (``<folder>/egress_reader.py``: ``read_egress(resources) -> EffectiveEgress``) computes it
        from the resources alone, never from the profile; ``None`` when the folder has no reader.
        """
        module = f"{type(self).__module__.rpartition('.')[0]}.egress_reader"
        if importlib.util.find_spec(module) is None:
            return None
        reader = importlib.import_module(module).read_egress
        found = reader(resources)
        assert isinstance(found, EffectiveEgress)
        return found

    def deployer_policy(
        self, context: KitContext, settings: SettingsT, resources: Sequence[ResourceView]
    ) -> DeployerPolicy | None:
        """What the identity running ``pulumi up`` and ``pulumi destroy`` needs for this
        target's rendered ``resources`` (``sandboxkit deployer-policy``), in the cloud's own
        shape; ``None`` (the default) when the target declares none.

        Raises:
            MissingGrantError: for a rendered resource type the target's mapping lacks.
        """
        return None

    def build(self, plan: PlanT) -> Deployment:
        """Create the component from ``plan`` and collect its stack outputs."""
        component = self.component(plan)
        return Deployment(component, component.outputs())


def get_target(name: str) -> TargetSpec[Any, Any]:
    """The registered spec for ``name``. Raises ``KeyError`` for an unknown name."""
    spec = importlib.import_module(TARGET_MODULES[name]).SPEC
    assert isinstance(spec, TargetSpec)
    return spec


def target_parts(part: str, attribute: str) -> list[Any]:
    """What every registered target declares in a module of its folder, in registry order.

    A target declares its pieces beside its spec (``<folder>/<part>.py``, e.g. ``catalog.py``
    with ``KINDS`` or ``guard.py`` with ``HANDLERS``) instead of in central tables. A folder
    without that module, or a module without that attribute, declares nothing. Items several
    targets re-export (the gcp targets share ``gcp/catalog.py``; gcp-gke reuses the kubernetes
    objects) are returned once.

    Args:
        part: the module name inside each target's folder, e.g. ``"catalog"``.
        attribute: the sequence the module exposes, e.g. ``"KINDS"``.

    Returns:
        The items of every ``<folder>.<part>.<attribute>``, first occurrence kept.
    """
    found: list[Any] = []
    seen: set[int] = set()
    for items in parts_by_target(part, attribute).values():
        for item in items:
            if id(item) not in seen:
                seen.add(id(item))
                found.append(item)
    return found


def parts_by_target(part: str, attribute: str) -> dict[str, tuple[Any, ...]]:
    """What each registered target declares in ``<folder>/<part>.py`` as ``attribute``, by
    target name in registry order: ``()`` for a folder without that module or attribute. An
    item several targets re-export is listed under each (``target_parts`` lists it once)."""
    declared: dict[str, tuple[Any, ...]] = {}
    for name, module_name in TARGET_MODULES.items():
        folder = module_name.rpartition(".")[0]
        if importlib.util.find_spec(f"{folder}.{part}") is None:
            declared[name] = ()
            continue
        declared[name] = tuple(getattr(importlib.import_module(f"{folder}.{part}"), attribute, ()))
    return declared
