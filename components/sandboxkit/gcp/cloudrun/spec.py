"""Settings, sizing, plan, enforcement map and factory of ``gcp-cloudrun`` (no SDK import here).

Cloud Run sandboxes (Preview): a container flagged ``sandboxLauncher`` gets the ``sandbox``
CLI, which starts gVisor sandboxes inside the same instance. Sandboxes start with no network
(``--allow-egress`` turns it on per run) and share the instance's CPU and memory with the
launcher. Sources: https://cloud.google.com/run/docs/configuring/services/sandboxes and
https://cloud.google.com/run/docs/reference/sandbox-cli.

A sandbox started without a template "mounts the host container's root file system as
read-only at ``/``" (sandbox CLI reference, ``sandbox`` section, read 2026-11-30): untrusted code
reads every file of the launcher image. So the kit always renders a template of its own, named
``SANDBOX_TEMPLATE``, running ``sandboxImage`` (a separate image, never the launcher's), and
tells the launcher its name in ``plan.TEMPLATE_VARIABLE``. A template is one entry of the service's
``template.sandboxes.templates`` ("Container templates that can be launched through the sandbox
CLI", Cloud Run Admin API v2 ``SandboxConfiguration.templates``). There is no setting to run
without one: a profile cannot ask for the launcher's filesystem in its sandboxes.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Annotated, Any, ClassVar, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from sandboxkit.deployer import DeployerPolicy
from sandboxkit.effective_egress import ResourceView
from sandboxkit.egress_contract import parse_rule
from sandboxkit.errors import MISSING, ConfigError, FieldError, Problem
from sandboxkit.gcp.cloudrun.plan import MAX_OBJECT_NAME, CloudRunSandboxArgs
from sandboxkit.gcp.deployer import gcp_policy
from sandboxkit.gcp.response_policy import response_rules
from sandboxkit.gcp.settings import GCP_SDKS, LOG_RETENTION_CAP, GcpSettings, PrivateCidr
from sandboxkit.profile import SandboxProfile
from sandboxkit.targets import (
    Cap,
    EgressAcceptance,
    Enforcement,
    KitComponent,
    KitContext,
    TargetSpec,
)
from sandboxkit.value_formats import ImageReference, same_image

TARGET = "gcp-cloudrun"

# The largest Cloud Run instance: 8 vCPU and 32 GiB
# (https://cloud.google.com/run/docs/configuring/services/cpu "Maximum amount of vCPU",
# https://cloud.google.com/run/docs/configuring/services/memory-limits "Maximum amount of memory").
MAX_INSTANCE_VCPU = 8
MAX_INSTANCE_MEMORY_MIB = 32768
# Memory each whole-vCPU size admits, MiB (same pages, "vCPU and memory table"). Sandboxes need
# the second generation environment, which takes no fractional vCPU and at least 512 MiB.
INSTANCE_MEMORY_RANGE_MIB: dict[int, tuple[int, int]] = {
    1: (512, 4096),
    2: (512, 8192),
    4: (2048, 16384),
    6: (4096, 24576),
    8: (4096, 32768),
}
# Cloud Run admits at most 1000 concurrent requests per instance
# (https://cloud.google.com/run/docs/about-concurrency).
MAX_REQUEST_CONCURRENCY = 1000
# Default instance: the largest, so the only sizing error left is a sandbox that cannot fit
# beside the launcher on any instance; a smaller instance is an explicit cost choice.
DEFAULT_INSTANCE_VCPU: Final = 8
DEFAULT_INSTANCE_MEMORY_MIB = 32768
# What the launcher process keeps for itself: one vCPU and 1 GiB serve its HTTP handler and
# the sandbox CLI's supervisor.
DEFAULT_LAUNCHER_VCPU = 1.0
DEFAULT_LAUNCHER_MEMORY_MIB = 1024
# Direct VPC egress needs a /26 or larger subnet (https://cloud.google.com/run/docs/configuring/
# vpc-direct-vpc "IP address allocation"); a /24 leaves room to scale out.
DEFAULT_SUBNET_CIDR = "10.8.0.0/24"
MIN_SUBNET_PREFIX = 26
DEFAULT_PORT = 8080
# Destroying or replacing the launcher service is a deliberate two-step act (turn it off, then
# destroy), as Cloud Run itself defaults it.
DEFAULT_DELETION_PROTECTION = True
# The Cloud Run request timeout is at most 60 minutes
# (https://cloud.google.com/run/docs/configuring/request-timeout).
MAX_REQUEST_TIMEOUT_SECONDS = 3600

# The kit's template, running sandboxImage: the launcher starts every sandbox from it.
SANDBOX_TEMPLATE = "sandbox"
# Why a sandbox image is required, for the refusal of a stack without one.
_WHY_SANDBOX_IMAGE = (
    "the image sandboxes run, apart from the launcher's (build images/sandbox and pin it by "
    "digest): without a template a Cloud Run sandbox mounts the launcher container's root "
    "filesystem read-only at / (https://cloud.google.com/run/docs/reference/sandbox-cli), so "
    "untrusted code would read everything the launcher image holds; the kit has no setting to "
    "run without one"
)

_PRINCIPAL = re.compile(r"^(user|group|serviceAccount):[^@\s:]+@[a-z0-9.-]+\.[a-z]+$")
_DNS_LABEL = Annotated[str, Field(pattern=r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")]


def _named_principal(value: str) -> str:
    if not _PRINCIPAL.match(value):
        raise ValueError(
            "a named principal such as serviceAccount:agent@example-project.iam.gserviceaccount"
            ".com (user:, group: or serviceAccount:); allUsers, allAuthenticatedUsers and "
            "domain: would open the launcher to the public or a whole domain"
        )
    return value


def _exact_name(value: str) -> str:
    try:
        rule = parse_rule(value)
    except ValueError as error:
        raise ValueError(str(error)) from None
    if rule.kind != "name" or ":" in value:
        raise ValueError(
            "an exact DNS name without a port, such as dualstack.python.map.fastly.net"
        )
    return rule.host


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=True)


class InstanceSize(_Strict):
    """``instance``: vCPU and MiB of one Cloud Run instance (the launcher container's limits).

    Attributes:
        vcpu: vCPU of one instance: 1, 2, 4, 6 or 8.
        memoryMiB: MiB of one instance, within what the Cloud Run table admits for that vCPU
            (512 to 4096 with 1, 512 to 8192 with 2, 2048 to 16384 with 4, 4096 to 24576 with 6,
            4096 to 32768 with 8).

    Raises (as a config error on the key): a vCPU other than 1, 2, 4, 6 or 8, or memory outside
    the range that vCPU admits (``INSTANCE_MEMORY_RANGE_MIB``).
    """

    vcpu: Literal[1, 2, 4, 6, 8] = DEFAULT_INSTANCE_VCPU
    memory_mib: Annotated[int, Field(gt=0)] = Field(DEFAULT_INSTANCE_MEMORY_MIB, alias="memoryMiB")

    @model_validator(mode="after")
    def _memory_fits_vcpu(self) -> InstanceSize:
        low, high = INSTANCE_MEMORY_RANGE_MIB[self.vcpu]
        if not low <= self.memory_mib <= high:
            raise FieldError(
                ".memoryMiB",
                self.memory_mib,
                f"from {low} to {high} MiB with {self.vcpu} vCPU (Cloud Run vCPU and memory "
                "table, https://cloud.google.com/run/docs/configuring/services/cpu)",
            )
        return self


class LauncherReserve(_Strict):
    """``launcher``: vCPU and MiB kept for the launcher process; sandboxes get the rest.

    Attributes:
        vcpu: vCPU kept for the launcher (> 0).
        memoryMiB: MiB kept for the launcher (> 0).
    """

    vcpu: Annotated[float, Field(gt=0, allow_inf_nan=False)] = DEFAULT_LAUNCHER_VCPU
    memory_mib: Annotated[int, Field(gt=0)] = Field(DEFAULT_LAUNCHER_MEMORY_MIB, alias="memoryMiB")


class SandboxTemplate(_Strict):
    """One entry of ``templates``: a further named sandbox the ``sandbox`` CLI can launch.

    No environment variables: the kit never lets configuration inject values into a sandbox.

    Attributes:
        name: the template's name, a DNS label (lower-case letters, digits, hyphens), not
            ``sandbox`` (the kit's own template) and not repeated.
        image: the sandbox image, an OCI image reference; never the launcher's ``image``.
        command: the entrypoint, overriding the image's.
        args: arguments to the entrypoint.
        workingDir: working directory of the sandbox process.
    """

    name: _DNS_LABEL
    image: ImageReference
    command: Annotated[tuple[str, ...], Field(strict=False)] = ()
    args: Annotated[tuple[str, ...], Field(strict=False)] = ()
    working_dir: str | None = Field(None, alias="workingDir")


class CloudRunSettings(GcpSettings):
    """``sandboxkit:gcp-cloudrun`` settings.

    Attributes:
        image: the launcher image, an OCI image reference (runs the agent-facing service and
            calls ``sandbox``).
        sandboxImage: the image every sandbox runs (an OCI image reference), from the kit's
            template ``sandbox`` (the launcher is told its name in
            ``SANDBOXKIT_SANDBOX_TEMPLATE`` and passes it for every sandbox it starts).
            Required, and never the launcher's ``image``: without a template a sandbox mounts
            the launcher container's root filesystem read-only at ``/`` (Cloud Run sandbox CLI
            reference). Build ``images/sandbox`` and pin it by digest (``SBX-SEC-003``).
        port: the launcher's HTTP port.
        instance: one instance's size (see ``InstanceSize``); defaults to the largest instance.
        launcher: the share of each instance kept for the launcher (see ``LauncherReserve``);
            sandboxes share the rest.
        ingress: ``internal`` or ``internal-and-cloud-load-balancing``; never all traffic.
        invokers: principals granted ``roles/run.invoker`` (``user:``, ``group:``,
            ``serviceAccount:``); ``allUsers``, ``allAuthenticatedUsers`` and ``domain:`` are
            refused.
        subnetCidr: range of the subnet Direct VPC egress takes addresses from, a /26 or
            larger inside one private-use (RFC 1918) block of IANA's special-purpose registry.
        templates: further sandbox templates beside ``sandbox`` (no environment variables),
            each with an image other than the launcher's. Templates need launch stage
            ``ALPHA``, which the service always has.
        cnameTargets: exact names the allowlisted names' DNS answers are CNAMEs to (egress
            ``allowlist`` only); each resolves for sandboxes too, with no firewall allow of its
            own. From 2027-01-05 Cloud DNS applies the response policy to every name of a CNAME
            chain (https://cloud.google.com/dns/docs/cnamechasing), so an allowed name whose
            chain passes an unlisted name stops resolving without them: required (``[]`` when
            no allowed name is a CNAME) with an allowlist that names hosts, since the kit
            cannot look the chains up offline (``dig +short CNAME files.pythonhosted.org``
            answers ``dualstack.python.map.fastly.net.``).
        deletionProtection: Cloud Run's deletion protection on the launcher service (pulumi-gcp
            ``cloudrunv2.Service`` ``deletion_protection``, default true there too): while
            true, ``pulumi destroy`` and any change that replaces the service fail. Set it
            false and ``pulumi up`` first to destroy or replace deliberately; default true.
        nameMatching: ``resolved-address``, the explicit acceptance an allowlist that names
            hosts needs on this target: Cloud NGFW FQDN objects match a name by the addresses
            it resolves to (https://cloud.google.com/firewall/docs/fqdn-objects-overview), so
            a listed name also admits plain TCP naming no host and every other site on its
            addresses, where the egress contract admits TLS by SNI and HTTP by Host only
            (SBX-NET-006 reports it, mandatory in prod). Unset, such an allowlist exits 2.
    """

    image: ImageReference
    sandbox_image: ImageReference = Field(alias="sandboxImage")
    port: Annotated[int, Field(ge=1, le=65535)] = DEFAULT_PORT
    instance: InstanceSize = InstanceSize()
    launcher: LauncherReserve = LauncherReserve()
    ingress: Literal["internal", "internal-and-cloud-load-balancing"] = "internal"
    # Lists from YAML become tuples (strict mode takes tuples only); items stay strict.
    invokers: Annotated[
        tuple[Annotated[str, Field(strict=True), AfterValidator(_named_principal)], ...],
        Field(strict=False),
    ] = ()
    subnet_cidr: PrivateCidr = Field(DEFAULT_SUBNET_CIDR, alias="subnetCidr")
    templates: Annotated[tuple[SandboxTemplate, ...], Field(strict=False)] = ()
    cname_targets: (
        Annotated[
            tuple[Annotated[str, Field(strict=True), AfterValidator(_exact_name)], ...],
            Field(strict=False),
        ]
        | None
    ) = Field(None, alias="cnameTargets")
    deletion_protection: bool = Field(DEFAULT_DELETION_PROTECTION, alias="deletionProtection")
    name_matching: Literal["resolved-address"] | None = Field(None, alias="nameMatching")

    @model_validator(mode="before")
    @classmethod
    def _sandbox_image_given(cls, data: Any) -> Any:
        # The generic "this key is required" would not say why: a stack written before the
        # setting existed gets the reason and the fix.
        if isinstance(data, dict) and not {"sandboxImage", "sandbox_image"} & data.keys():
            raise FieldError(".sandboxImage", MISSING, _WHY_SANDBOX_IMAGE)
        return data

    @model_validator(mode="after")
    def _sandboxes_apart_from_launcher(self) -> CloudRunSettings:
        errors: list[FieldError] = []
        launcher = (
            f"an image other than the launcher's ({self.image}): a sandbox running the "
            "launcher image reads everything the launcher holds"
        )
        # One image by any name (a digest names the content): ``same_image``.
        if same_image(self.sandbox_image, self.image):
            errors.append(FieldError(".sandboxImage", self.sandbox_image, launcher))
        seen = {SANDBOX_TEMPLATE}
        for index, template in enumerate(self.templates):
            if template.name in seen:
                errors.append(
                    FieldError(
                        f".templates[{index}].name",
                        template.name,
                        f"a name not used yet ({', '.join(sorted(seen))}; "
                        f"{SANDBOX_TEMPLATE!r} is the kit's template of sandboxImage)",
                    )
                )
            seen.add(template.name)
            if same_image(template.image, self.image):
                errors.append(FieldError(f".templates[{index}].image", template.image, launcher))
        if errors:
            raise FieldError.first_of(errors)
        return self

    @model_validator(mode="after")
    def _subnet_large_enough(self) -> CloudRunSettings:
        prefix = int(self.subnet_cidr.split("/")[1])
        if prefix > MIN_SUBNET_PREFIX:
            raise FieldError(
                ".subnetCidr",
                self.subnet_cidr,
                f"a /{MIN_SUBNET_PREFIX} or larger range (Direct VPC egress minimum)",
            )
        return self


@dataclass(frozen=True)
class Size:
    """vCPU and MiB of an instance, a launcher reserve or one sandbox."""

    vcpu: float
    memory_mib: int


@dataclass(frozen=True)
class InstanceSizing:
    """How the service scales so sandboxes never take the launcher's share.

    Attributes:
        slots: sandboxes one instance holds; also its request concurrency.
        min_instances: warm instances, ``ceil(ready / slots)``.
        max_instances: instances at most, ``ceil(maxConcurrent / slots)``.
    """

    slots: int
    min_instances: int
    max_instances: int


def sandbox_slots(instance: Size, launcher: Size, sandbox: Size) -> int:
    """Sandboxes that fit in one instance beside the launcher's reserve.

    ``floor(min((instance vCPU - launcher vCPU) / sandbox vCPU,
    (instance MiB - launcher MiB) / sandbox MiB))``, computed on exact decimals (so 0.6 / 0.2
    is 3, not 2.999...), capped at Cloud Run's 1000 requests per instance, and 0 when not even
    one sandbox fits.
    """
    spare_cpu = Fraction(str(instance.vcpu)) - Fraction(str(launcher.vcpu))
    spare_memory = Fraction(instance.memory_mib - launcher.memory_mib)
    fit = min(spare_cpu / Fraction(str(sandbox.vcpu)), spare_memory / sandbox.memory_mib)
    return max(0, min(MAX_REQUEST_CONCURRENCY, math.floor(fit)))


def size_instances(
    instance: Size, launcher: Size, sandbox: Size, *, ready: int, max_concurrent: int
) -> InstanceSizing:
    """Slots per instance, and the instance counts that hold ``ready`` and ``maxConcurrent``.

    Each request to the launcher runs one sandbox, so request concurrency = slots bounds the
    sandboxes per instance; ``max_instances * slots`` is the smallest multiple of ``slots`` at
    or above ``maxConcurrent`` (it exceeds it by less than one instance's worth).

    Raises:
        ValueError: when not one sandbox fits beside the launcher in ``instance``.
    """
    slots = sandbox_slots(instance, launcher, sandbox)
    if slots == 0:
        raise ValueError("one sandbox plus the launcher reserve exceeds the instance")
    return InstanceSizing(
        slots=slots,
        min_instances=math.ceil(ready / slots),
        max_instances=math.ceil(max_concurrent / slots),
    )


def _sizing_problem(profile: SandboxProfile, settings: CloudRunSettings) -> Problem:
    largest = Size(MAX_INSTANCE_VCPU, MAX_INSTANCE_MEMORY_MIB)
    launcher = Size(settings.launcher.vcpu, settings.launcher.memory_mib)
    limits = profile.limits
    for key, needed, reserve, ceiling in (
        ("vcpu", limits.vcpu, launcher.vcpu, largest.vcpu),
        ("memoryMiB", limits.memory_mib, launcher.memory_mib, largest.memory_mib),
    ):
        if needed + reserve > ceiling:
            return Problem(
                f"sandboxkit:profile.limits.{key}",
                needed,
                f"at most {ceiling - reserve:g} for target {TARGET}: one sandbox plus the "
                f"launcher reserve ({reserve:g}) must fit the largest Cloud Run instance "
                f"({ceiling:g}; https://cloud.google.com/run/docs/configuring/services/cpu)",
            )
    instance = settings.instance
    return Problem(
        f"sandboxkit:{TARGET}.instance",
        {"vcpu": instance.vcpu, "memoryMiB": instance.memory_mib},
        f"an instance that holds one sandbox ({limits.vcpu:g} vCPU, {limits.memory_mib} MiB) "
        f"plus the launcher reserve ({launcher.vcpu:g} vCPU, {launcher.memory_mib} MiB); "
        f"the default is the largest, {largest.vcpu} vCPU and {largest.memory_mib} MiB",
    )


def service_sizing(profile: SandboxProfile, settings: CloudRunSettings) -> InstanceSizing:
    """``size_instances`` for this profile and settings.

    Raises:
        ConfigError: naming ``sandboxkit:profile.limits.vcpu`` / ``.memoryMiB`` when one sandbox
            plus the launcher exceeds the largest Cloud Run instance, else naming
            ``sandboxkit:gcp-cloudrun.instance`` when it exceeds the configured one.
    """
    try:
        return size_instances(
            Size(settings.instance.vcpu, settings.instance.memory_mib),
            Size(settings.launcher.vcpu, settings.launcher.memory_mib),
            Size(profile.limits.vcpu, profile.limits.memory_mib),
            ready=profile.pool.ready,
            max_concurrent=profile.pool.max_concurrent,
        )
    except ValueError:
        raise ConfigError(_sizing_problem(profile, settings)) from None


def max_concurrent_where(asked: int, slots: int, max_instances: int) -> str:
    """How ``pool.maxConcurrent`` (``asked``) is bounded, with the bound it actually gives.

    Cloud Run caps instances and requests per instance, not sandboxes, so the bound is
    ``maxInstanceCount * slots``: the smallest multiple of ``slots`` at or above
    ``maxConcurrent``.
    """
    bound = max_instances * slots
    exactness = (
        f"exactly maxConcurrent {asked}"
        if bound == asked
        else f"{bound - asked} more than maxConcurrent {asked}, since instances hold "
        f"{slots} sandboxes each and the smallest multiple of {slots} at or above {asked} "
        f"is {bound}"
    )
    return (
        f"template.scaling.maxInstanceCount {max_instances} with "
        f"maxInstanceRequestConcurrency {slots}: at most {max_instances} x {slots} = "
        f"{bound} sandboxes at once, {exactness}"
    )


def check_egress(profile: SandboxProfile) -> None:
    """Refuse allowlist entries this target cannot admit exactly.

    Wildcards: Cloud NGFW FQDN objects match exact names. IPv6 addresses: the Direct VPC
    egress subnet is IPv4-only, so an IPv6 allow rule would admit nothing (narrower than the
    profile asks, refused rather than silently dead).

    Raises:
        ConfigError: one problem per such entry, naming ``sandboxkit:profile.egress.allow``.
    """
    problems = []
    for rule in profile.egress.allow:
        if rule.kind == "wildcard":
            problems.append(
                Problem(
                    "sandboxkit:profile.egress.allow",
                    str(rule),
                    f"exact names only for target {TARGET}: Cloud NGFW FQDN objects match "
                    "exact names, not wildcards "
                    "(https://cloud.google.com/firewall/docs/fqdn-objects-overview). List each "
                    f"name under {rule.host} sandboxes need, or put Secure Web Proxy (which "
                    "matches wildcard hosts) in front of the VPC yourself",
                )
            )
        elif rule.kind == "ip" and ":" in rule.host:
            problems.append(
                Problem(
                    "sandboxkit:profile.egress.allow",
                    str(rule),
                    f"a name or an IPv4 address for target {TARGET}: the Direct VPC egress "
                    "subnet is IPv4-only, so sandboxes could never reach an IPv6 address; "
                    "list the host's name or its IPv4 address",
                )
            )
    if problems:
        raise ConfigError(*problems)


def _check_name_matching(settings: CloudRunSettings, names: Sequence[str]) -> None:
    """Refuse an allowlist of ``names`` without ``nameMatching: resolved-address``
    (``CloudRunSettings.nameMatching``)."""
    key = f"sandboxkit:{TARGET}.nameMatching"
    if names and settings.name_matching is None:
        raise ConfigError(
            Problem(
                key,
                MISSING,
                "resolved-address, to accept that Cloud NGFW FQDN objects admit "
                f"{', '.join(names)} by the addresses they resolve to: plain TCP naming no "
                "host and every other site on those addresses pass too, where the egress "
                "contract admits TLS by SNI and HTTP by Host only "
                "(https://cloud.google.com/firewall/docs/fqdn-objects-overview; SBX-NET-006, "
                "mandatory in prod). Or list IPv4 addresses instead of names, or run these "
                "sandboxes on kubernetes or gcp-gke with fqdnPolicy: cilium, "
                "which match TLS server names and HTTP hosts",
            )
        )


def template_spec(template: SandboxTemplate) -> dict[str, Any]:
    """A template as Cloud Run's ``template.sandboxes.templates`` takes it (``name``,
    ``image``, ``commands``, ``args``, ``working_dir``; never ``envs``)."""
    spec: dict[str, Any] = {"name": template.name, "image": template.image}
    if template.command:
        spec["commands"] = list(template.command)
    if template.args:
        spec["args"] = list(template.args)
    if template.working_dir is not None:
        spec["working_dir"] = template.working_dir
    return spec


def cloudrun_args(
    profile: SandboxProfile, settings: CloudRunSettings, context: KitContext
) -> CloudRunSandboxArgs:
    """Map the profile and ``sandboxkit:gcp-cloudrun`` settings to component inputs.

    Raises:
        ConfigError: see ``check_egress`` and ``service_sizing``; ``cnameTargets`` with an
            egress mode other than ``allowlist``.
    """
    check_egress(profile)
    sizing = service_sizing(profile, settings)
    mode = profile.egress.mode
    if settings.cname_targets and mode != "allowlist":
        raise ConfigError(
            Problem(
                f"sandboxkit:{TARGET}.cnameTargets",
                list(settings.cname_targets),
                f"no names with egress mode {mode}: CNAME targets resolve only for allowlisted "
                "names (deny resolves no name; open resolves every name)",
            )
        )
    names = sorted({rule.pattern for rule in profile.egress.allow if rule.kind != "ip"})
    _check_name_matching(settings, names if mode == "allowlist" else [])
    if mode == "allowlist" and names and settings.cname_targets is None:
        raise ConfigError(
            Problem(
                f"sandboxkit:{TARGET}.cnameTargets",
                MISSING,
                "the exact names the DNS answers of the allowlisted names "
                f"({', '.join(names)}) are CNAMEs to, or [] when none is a CNAME: the response "
                "policy answers every other name itself at each hop of a CNAME chain "
                "(https://cloud.google.com/dns/docs/cnamechasing), so an allowed name that is a "
                "CNAME to an unlisted name (files.pythonhosted.org to "
                "dualstack.python.map.fastly.net) would not resolve; list each with "
                "`dig +short CNAME NAME`",
            )
        )
    return CloudRunSandboxArgs(
        project=settings.project,
        deletion_protection=settings.deletion_protection,
        region=settings.region,
        object_name=context.object_name("sbx-", MAX_OBJECT_NAME),
        image=settings.image,
        port=settings.port,
        instance_vcpu=settings.instance.vcpu,
        instance_memory_mib=settings.instance.memory_mib,
        slots=sizing.slots,
        min_instances=sizing.min_instances,
        max_instances=sizing.max_instances,
        request_timeout_seconds=profile.limits.exec_timeout_seconds,
        sandbox_template=SANDBOX_TEMPLATE,
        templates=tuple(
            template_spec(t)
            for t in (
                SandboxTemplate(name=SANDBOX_TEMPLATE, image=settings.sandbox_image),
                *settings.templates,
            )
        ),
        ingress=settings.ingress,
        invokers=settings.invokers,
        subnet_cidr=settings.subnet_cidr,
        egress_mode=profile.egress.mode,
        egress_rules=profile.egress.allow,
        dns_rules=response_rules(mode, profile.egress.allow, settings.cname_targets or ()),
        log_retention_days=profile.audit.log_retention_days,
        labels=context.labels(),
    )


# MiB: the least a container may have in EXECUTION_ENVIRONMENT_GEN2 (cloud.google.com/run/docs/
# configuring/services/memory-limits); a sandbox's limits.memoryMiB is its container's limit.
MIN_GEN2_MEMORY_MIB = 512


class CloudRunTarget(TargetSpec[CloudRunSettings, CloudRunSandboxArgs]):
    """The ``gcp-cloudrun`` target."""

    name: ClassVar[str] = TARGET
    sdks: ClassVar[Mapping[str, float]] = GCP_SDKS
    # Names need ``cnameTargets`` stated (``[]``: their answers are addresses, no CNAMEs); Cloud
    # NGFW FQDN objects match names by resolved address, so plain TCP to them passes.
    accepts: ClassVar[EgressAcceptance | None] = EgressAcceptance(
        wildcards=False,
        ipv6=False,
        settings=(("cnameTargets", []), ("nameMatching", "resolved-address")),
        plain_tcp_by_address=True,
    )
    settings_model = CloudRunSettings
    caps: ClassVar[tuple[Cap, ...]] = (
        Cap(
            "limits.execTimeoutSeconds",
            1,
            MAX_REQUEST_TIMEOUT_SECONDS,
            "Cloud Run request timeout, at most 60 minutes "
            "(https://cloud.google.com/run/docs/configuring/request-timeout)",
        ),
        Cap(
            "limits.memoryMiB",
            MIN_GEN2_MEMORY_MIB,
            None,
            "Cloud Run's minimum memory in the second generation execution environment, which "
            "the service runs in (https://cloud.google.com/run/docs/configuring/services/"
            "memory-limits, Minimum memory)",
        ),
        LOG_RETENTION_CAP,
    )

    def plan(
        self, profile: SandboxProfile, settings: CloudRunSettings, context: KitContext
    ) -> CloudRunSandboxArgs:
        """The ``CloudRunSandbox`` inputs (see ``cloudrun_args``)."""
        return cloudrun_args(profile, settings, context)

    def deployer_policy(
        self, context: KitContext, settings: CloudRunSettings, resources: Sequence[ResourceView]
    ) -> DeployerPolicy:
        """The roles and APIs of the rendered resources (``gcp.deployer``)."""
        return gcp_policy(self.name, settings.project, resources)

    def enforcement(
        self, profile: SandboxProfile, settings: CloudRunSettings, plan: CloudRunSandboxArgs | None
    ) -> dict[str, Enforcement]:
        """Where each field is enforced on Cloud Run."""
        # Without a plan (refused), the sandboxes per instance are not known.
        slots = plan["slots"] if plan is not None else "slots"
        assumed = (
            " (no DNS tunnel; Google documents the VPC's DNS for Direct VPC egress through "
            "private zones, and the response policy is assumed to apply the same way)"
        )
        egress_where = {
            "deny": "network firewall policy on the Direct VPC egress network (ALL_TRAFFIC): "
            "deny all egress; no Cloud NAT, no default route; a Cloud DNS response policy on "
            f"the network answers every name itself{assumed}. Sandboxes start without "
            "network either",
            "allowlist": "network firewall policy on the Direct VPC egress network "
            "(ALL_TRAFFIC): allow exact FQDN objects (destFqdns) and /32 IP ranges per port, "
            "deny everything else; applies even to sandboxes run with --allow-egress. "
            "Names are enforced by resolved address only: any site on an allowed name's "
            "addresses passes. A Cloud DNS response policy on the network resolves the "
            f"allowlisted names only and answers every other name itself{assumed}",
            "open": "network firewall policy: deny private, link-local and metadata ranges, "
            "allow public addresses through Cloud NAT",
        }[profile.egress.mode]
        shared = (
            f"instance limit {settings.instance.vcpu} vCPU / {settings.instance.memory_mib} MiB "
            f"with maxInstanceRequestConcurrency {slots}: the instance minus the "
            "launcher reserve holds that many sandboxes of this size. A bound on the sandboxes "
            "together, not each: the sandbox CLI has no per-sandbox CPU or memory limit"
        )
        return {
            "egress.mode": Enforcement("platform", egress_where),
            "limits.vcpu": Enforcement(
                "platform", f"template.containers[0].resources.limits.cpu, {shared}"
            ),
            "limits.memoryMiB": Enforcement(
                "platform", f"template.containers[0].resources.limits.memory, {shared}"
            ),
            "limits.execTimeoutSeconds": Enforcement(
                "none",
                "Cloud Run has no per-command timeout: template.timeout (set to this value) "
                "ends the HTTP request, not the sandbox command; the launcher must time it out",
            ),
            "limits.maxLifetimeSeconds": Enforcement(
                "none",
                "the sandbox CLI has no lifetime limit and Cloud Run stops instances on its own "
                "schedule; the launcher must delete sandboxes it started",
            ),
            "limits.idleTimeoutSeconds": Enforcement(
                "none", "the sandbox CLI has no idle shutdown; the launcher must apply it"
            ),
            "pool.ready": Enforcement(
                "platform",
                f"template.scaling.minInstanceCount = ceil(ready / {slots}) warm "
                "instances (sandboxes themselves start on demand)",
            ),
            "pool.maxConcurrent": Enforcement(
                "platform",
                max_concurrent_where(
                    profile.pool.max_concurrent, plan["slots"], plan["max_instances"]
                )
                if plan is not None
                else "template.scaling.maxInstanceCount with maxInstanceRequestConcurrency: at "
                "most maxInstanceCount x slots sandboxes at once",
            ),
            "audit.logRetentionDays": Enforcement(
                "platform",
                "log bucket retentionDays, with a sink for the service's and the network's logs",
            ),
        }

    def component(self, plan: CloudRunSandboxArgs) -> KitComponent:
        """The ``CloudRunSandbox`` component."""
        from sandboxkit.gcp.cloudrun.service import CloudRunSandbox

        return CloudRunSandbox(self.name, plan)


SPEC = CloudRunTarget()
