"""Settings, enforcement map and factory of the ``cloudflare`` target (no SDK import here).

The target is a Worker (``components/sandboxkit/cloudflare/worker/src/index.js``) that routes
each sandbox to a Durable Object of class ``Sandbox``, which owns one container. wrangler
uploads the script with its bindings, migrations, container application (image, instance
type, instance count) and routes, run by the ``WranglerScript`` dynamic resource
(``wrangler_script.py``: pulumi-cloudflare 6 has no Containers resource and its script upload
drops the container link); Pulumi keeps the ``workers.dev`` switch. ``sandboxkit
cloudflare-config`` writes the same wrangler config for review (``wrangler.py``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from sandboxkit.boundary import (
    CONTAINER_IMAGE_BINDING,
    EGRESS_POLICY_BINDING,
    EXEC_TIMEOUT_BINDING,
    IDLE_TIMEOUT_BINDING,
    JWT_AUDIENCE_BINDING,
    JWT_ISSUER_BINDING,
    JWT_MAX_LIFETIME_BINDING,
    MAX_LIFETIME_BINDING,
)
from sandboxkit.cloud_names import derived_name
from sandboxkit.cloudflare.deployer import cloudflare_policy
from sandboxkit.cloudflare.plan import (
    DEFAULT_COMPATIBILITY_DATE,
    MAIN_MODULE,
    MAX_COMPATIBILITY_DATE,
    MIN_COMPATIBILITY_DATE,
    WorkerSandboxArgs,
)
from sandboxkit.deployer import DeployerPolicy
from sandboxkit.dns_names import is_at_or_below, normalize_name
from sandboxkit.effective_egress import ResourceView
from sandboxkit.errors import ConfigError, MissingTool, Problem
from sandboxkit.profile import SandboxProfile
from sandboxkit.targets import (
    Cap,
    EgressAcceptance,
    Enforcement,
    ExternalConfig,
    KitComponent,
    KitContext,
    TargetSettings,
    TargetSpec,
)
from sandboxkit.value_formats import CalendarDate, ImageReference, SharedSecret

# The Worker module ships inside the package (package-data "*.js") and is uploaded as is.
WORKER_MODULE = Path(__file__).resolve().parent / "worker" / "src" / MAIN_MODULE
# The Worker rejects any *_SECONDS binding above one week (MAX_CONFIG_SECONDS in index.js).
WORKER_MAX_SECONDS = 7 * 24 * 3600
# Client tokens are minted per job or per call: a quarter of an hour covers a call's retries
# without a leaked token staying useful for long. The Worker refuses a bound above one hour
# (MAX_TOKEN_LIFETIME_SECONDS in index.js), the kit's cap too.
DEFAULT_TOKEN_MAX_LIFETIME_SECONDS = 900
MAX_TOKEN_LIFETIME_SECONDS = 3600
# The `iss` client tokens carry unless the stack names its platform.
DEFAULT_TOKEN_ISSUER = "sandboxkit"

_LIMITS_SOURCE = "developers.cloudflare.com/containers/platform/limits/ (Instance Types)"
# An account runs at most 1,500 vCPU of containers at once (same page, "Account limits"): 24,000
# instances of the smallest type (lite, 1/16 vCPU), so no max_instances above it can run.
MAX_INSTANCES = 24_000
_ACCOUNT_LIMITS_SOURCE = (
    "developers.cloudflare.com/containers/platform/limits/ (Account limits: concurrent vCPU "
    "1,500, so 24,000 lite instances of 1/16 vCPU)"
)
_LOGS_SOURCE = "developers.cloudflare.com/containers/faq/ (How do Container logs work?)"


@dataclass(frozen=True)
class InstanceType:
    """A named Cloudflare Containers instance type.

    Attributes:
        name: the ``instance_type`` value in wrangler config.
        vcpu: vCPU.
        memory_mib: memory, MiB.
        disk_mb: disk, MB (GB x 1000, as Cloudflare states it).
    """

    name: str
    vcpu: float
    memory_mib: int
    disk_mb: int


# Smallest first. Source: developers.cloudflare.com/containers/platform/limits/ (Instance Types).
INSTANCE_TYPES: tuple[InstanceType, ...] = (
    InstanceType("lite", 1 / 16, 256, 2000),
    InstanceType("basic", 1 / 4, 1024, 4000),
    InstanceType("standard-1", 1 / 2, 4096, 8000),
    InstanceType("standard-2", 1, 6144, 12000),
    InstanceType("standard-3", 2, 8192, 16000),
    InstanceType("standard-4", 4, 12288, 20000),
)


def smallest_instance_type(vcpu: float, memory_mib: int) -> InstanceType | None:
    """The smallest named instance type with at least ``vcpu`` vCPU and ``memory_mib`` MiB.

    Named types only: a custom type needs at least 1 vCPU and 3 GiB per vCPU (same source),
    which the kit's default profile (1 vCPU, 2048 MiB) does not meet. ``None`` beyond
    ``standard-4`` (4 vCPU, 12288 MiB), which the target's caps refuse.
    """
    return next((i for i in INSTANCE_TYPES if i.vcpu >= vcpu and i.memory_mib >= memory_mib), None)


def instance_type_for(vcpu: float, memory_mib: int) -> InstanceType:
    """Like ``smallest_instance_type``, for code that must have one.

    Raises:
        ConfigError: when the profile exceeds ``standard-4`` (the loader reports the same
            through the target's caps first).
    """
    instance = smallest_instance_type(vcpu, memory_mib)
    if instance is None:
        largest = INSTANCE_TYPES[-1]
        raise ConfigError(
            Problem(
                "sandboxkit:profile.limits",
                {"vcpu": vcpu, "memoryMiB": memory_mib},
                f"at most {largest.vcpu:g} vCPU and {largest.memory_mib} MiB for target "
                f"cloudflare (largest instance type {largest.name}; source: {_LIMITS_SOURCE})",
            )
        )
    return instance


_ROUTES_SOURCE = (
    "developers.cloudflare.com/workers/configuration/routing/routes/ (Matching behavior)"
)
_DOMAINS_SOURCE = "developers.cloudflare.com/workers/configuration/routing/custom-domains/"
# A route's host: a DNS name, optionally behind a leading '*' or '*.' (the only wildcard a host
# may hold); its path: '/' then anything without '?' (route patterns hold no query), with '*'
# only at the end.
_ROUTE = re.compile(r"^(?P<wild>\*\.?)?(?P<host>[^/*?:]+)(?P<path>/[^*?]*\*?)$")


def _dns_name(value: str, what: str) -> str:
    try:
        name = normalize_name(value)
    except ValueError as error:
        raise ValueError(f"{what}: {error}") from None
    if "." not in name:
        raise ValueError(f"{what} of at least two labels (a name in a zone)")
    return name


class WorkerRoute(BaseModel):
    """One entry of ``sandboxkit:cloudflare.routes``: a custom domain or a route of a zone.

    Attributes:
        pattern: with ``customDomain``, a host name the Worker is the origin of
            (``sandbox.example.com``: no wildcard, no path; Cloudflare creates its DNS record
            and certificate). Else a route pattern ``HOST/PATH`` in front of a proxied host of
            the zone: ``*`` only at the start of the host (``*.example.com`` or
            ``*example.com``) and at the end of the path, no query, no scheme
            (``api.example.com/sandbox/*``).
        customDomain: the pattern is a custom domain; default false (a route).
        zoneName: the zone (a DNS name) the host is in or at; required for a route unless
            ``zoneId`` is given, optional for a custom domain (wrangler finds its zone).
        zoneId: the zone's id (32 hex characters) instead of ``zoneName``.

    Sources: developers.cloudflare.com/workers/configuration/routing/routes/ and
    .../routing/custom-domains/; wrangler's config schema (``CustomDomainRoute``,
    ``ZoneNameRoute``, ``ZoneIdRoute``).
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=True)

    # Declared before pattern, so its validator sees them.
    custom_domain: bool = Field(False, alias="customDomain")
    zone_name: str | None = Field(None, alias="zoneName")
    zone_id: str | None = Field(None, alias="zoneId")
    pattern: str

    @field_validator("zone_name")
    @classmethod
    def _zone(cls, value: str | None) -> str | None:
        return None if value is None else _dns_name(value, "a zone name")

    @field_validator("zone_id")
    @classmethod
    def _zone_id(cls, value: str | None) -> str | None:
        if value is not None and not re.fullmatch(r"[0-9a-f]{32}", value):
            raise ValueError("a zone id: 32 lower-case hexadecimal digits")
        return value

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, value: str, info: ValidationInfo) -> str:
        zone = info.data.get("zone_name")
        if info.data.get("custom_domain"):
            if any(c in value for c in "*/?:"):
                raise ValueError(
                    "a host name only for a custom domain, without wildcard, scheme or path "
                    f"(source: {_DOMAINS_SOURCE}); use a route (customDomain false, with "
                    "zoneName) for a path or a wildcard"
                )
            host = _dns_name(value, "a host name")
        else:
            match = _ROUTE.fullmatch(value)
            if match is None:
                raise ValueError(
                    "a route pattern HOST/PATH with '*' only at the start of the host and the "
                    f"end of the path, no scheme and no query (source: {_ROUTES_SOURCE})"
                )
            host = _dns_name(match["host"], "a route host")
        if zone is not None and not is_at_or_below(host, zone):
            raise ValueError(f"a host in zone {zone} (zoneName); {host} is not")
        return value

    @model_validator(mode="after")
    def _one_zone(self) -> WorkerRoute:
        if self.zone_name is not None and self.zone_id is not None:
            raise ValueError("zoneName or zoneId, not both")
        if not self.custom_domain and self.zone_name is None and self.zone_id is None:
            raise ValueError(
                f"a zone for route {self.pattern!r}: set zoneName (or zoneId) to the zone its "
                "host is in"
            )
        return self

    def inputs(self) -> dict[str, object]:
        """The route as the ``WranglerScript`` records it (camelCase; wrangler's route shape
        once snake-cased): ``pattern``, ``customDomain`` when true, the zone when given."""
        route: dict[str, object] = {"pattern": self.pattern}
        if self.custom_domain:
            route["customDomain"] = True
        if self.zone_name is not None:
            route["zoneName"] = self.zone_name
        if self.zone_id is not None:
            route["zoneId"] = self.zone_id
        return route


class CloudflareSettings(TargetSettings):
    """``sandboxkit:cloudflare`` settings.

    Attributes:
        accountId: Cloudflare account id (32 hex characters, quoted in YAML; required, never
            ambient).
        image: the sandbox container image, an OCI image reference (Cloudflare registry,
            Docker Hub or ECR).
        tokenSigningKey: HS256 key of the short-lived tokens clients present (Pulumi secret of
            at least 32 characters, ``sandboxkit.value_formats.MIN_SHARED_SECRET_LENGTH``; the
            Worker refuses fewer too). Whoever holds it mints tokens for any
            tenant: keep it in the platform that mints them and in the Worker, nowhere else.
        tokenIssuer: the ``iss`` every client token must carry; default ``sandboxkit``.
        tokenMaxLifetimeSeconds: longest ``exp - iat`` a client token may span, seconds, 1 to
            3600; default 900.
        sandboxIdKey: HMAC key naming sandboxes (Pulumi secret of at least 32 characters).
        scriptName: the Worker script name; default ``sandboxkit-<stack>``.
        workersDev: expose the Worker on ``<script>.<subdomain>.workers.dev``; default false
            (reach it through a route or custom domain you own).
        routes: custom domains and routes of the account's zones that reach the Worker
            (``WorkerRoute``, unique patterns); default none.
        compatibilityDate: Workers runtime compatibility date, ``YYYY-MM-DD`` naming a real
            day, at least 2025-11-17 (the Worker's egress gateway needs ``ctx.exports``) and at
            most ``MAX_COMPATIBILITY_DATE`` (2026-07-30, the date of the workerd the kit ships:
            Cloudflare refuses a date in the future, and the Worker's tests run that workerd).
    """

    account_id: Annotated[str, Field(pattern=r"^[0-9a-f]{32}$")] = Field(alias="accountId")
    image: ImageReference
    token_signing_key: SharedSecret = Field(
        alias="tokenSigningKey", json_schema_extra={"secret": True}
    )
    token_issuer: Annotated[str, Field(pattern=r"^[\x21-\x7e]{1,256}$")] = Field(
        DEFAULT_TOKEN_ISSUER, alias="tokenIssuer"
    )
    token_max_lifetime_seconds: Annotated[int, Field(ge=1, le=MAX_TOKEN_LIFETIME_SECONDS)] = Field(
        DEFAULT_TOKEN_MAX_LIFETIME_SECONDS, alias="tokenMaxLifetimeSeconds"
    )
    sandbox_id_key: SharedSecret = Field(alias="sandboxIdKey", json_schema_extra={"secret": True})
    script_name: Annotated[str, Field(pattern=r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")] | None = (
        Field(None, alias="scriptName")
    )
    workers_dev: bool = Field(False, alias="workersDev")
    routes: tuple[WorkerRoute, ...] = ()
    compatibility_date: CalendarDate = Field(DEFAULT_COMPATIBILITY_DATE, alias="compatibilityDate")

    @field_validator("routes", mode="before")
    @classmethod
    def _route_list(cls, value: object) -> object:
        if isinstance(value, list):
            value = tuple(value)
        return value

    @field_validator("routes")
    @classmethod
    def _unique_patterns(cls, value: tuple[WorkerRoute, ...]) -> tuple[WorkerRoute, ...]:
        patterns = [route.pattern for route in value]
        repeated = sorted({p for p in patterns if patterns.count(p) > 1})
        if repeated:
            raise ValueError(f"each pattern once; repeated: {', '.join(repeated)}")
        return value

    @field_validator("compatibility_date")
    @classmethod
    def _exports_available(cls, value: str) -> str:
        if value < MIN_COMPATIBILITY_DATE:
            raise ValueError(
                f"{MIN_COMPATIBILITY_DATE} or later: the Worker's egress gateway needs "
                "ctx.exports, and without it the Worker refuses to start containers"
            )
        if value > MAX_COMPATIBILITY_DATE:
            raise ValueError(
                f"{MAX_COMPATIBILITY_DATE} or earlier, the newest date the workerd the kit "
                "ships supports (a later one runs nowhere the Worker is tested, and "
                f"Cloudflare refuses a date in the future); e.g. {DEFAULT_COMPATIBILITY_DATE}"
            )
        return value


def script_name(settings: CloudflareSettings, stack: str) -> str:
    """The Worker script name: ``scriptName`` or ``sandboxkit-<stack>`` (at most 63 lower-case
    letters, digits and hyphens, as ``scriptName`` is; ``cloud_names.derived_name``)."""
    return settings.script_name or derived_name("sandboxkit-", stack, 63)


def egress_policy(profile: SandboxProfile) -> str:
    """The ``EGRESS_POLICY`` binding text the Worker parses.

    Shape: ``{"mode": "deny"|"allowlist"|"open", "allow": [{"host", "port", "wildcard"}]}``;
    a wildcard entry carries the parent name (``pythonhosted.org`` for ``*.pythonhosted.org``)
    and ``wildcard: true``. Compact JSON, entries in the profile's sorted order. IP entries
    never reach it: ``check_egress`` refuses them first.
    """
    allow = [
        {"host": rule.host, "port": rule.port, "wildcard": rule.kind == "wildcard"}
        for rule in profile.egress.allow
    ]
    return json.dumps({"mode": profile.egress.mode, "allow": allow}, separators=(",", ":"))


def worker_vars(profile: SandboxProfile) -> dict[str, str]:
    """The Worker's plain-text bindings, name -> text (seconds as decimal text)."""
    limits = profile.limits
    return {
        EGRESS_POLICY_BINDING: egress_policy(profile),
        IDLE_TIMEOUT_BINDING: str(limits.idle_timeout_seconds),
        MAX_LIFETIME_BINDING: str(limits.max_lifetime_seconds),
        EXEC_TIMEOUT_BINDING: str(limits.exec_timeout_seconds),
    }


# Cloudflare Containers route only HTTP on port 80 and HTTPS on port 443 to outbound
# interceptions; with enableInternet false every other port is dropped ("Handle outbound
# traffic" > "Non-HTTP traffic"). The Worker refuses a policy with any other port.
INTERCEPTED_PORTS = (80, 443)
_OUTBOUND_SOURCE = (
    "developers.cloudflare.com/containers/configuration/outbound-traffic/ (Non-HTTP traffic)"
)


def check_egress(profile: SandboxProfile) -> None:
    """Refuse what the Worker's egress path could never reach: ``open`` egress (the contract's
    open admits every port; the containers' HTTP interception covers 80 and 443 only, so it
    would be narrower), IP entries (the gateway denies IP literal hosts in allowlist mode) and
    ports other than 80 and 443 (``INTERCEPTED_PORTS``).

    Raises:
        ConfigError: for open egress, naming ``sandboxkit:profile.egress.mode``; else one
            problem per such entry, naming ``sandboxkit:profile.egress.allow``.
    """
    if profile.egress.mode == "open":
        raise ConfigError(
            Problem(
                "sandboxkit:profile.egress.mode",
                "open",
                "deny or allowlist for target cloudflare: open egress admits every public "
                "address on every port, and Cloudflare Containers intercept HTTP on ports 80 "
                f"and 443 only (source: {_OUTBOUND_SOURCE}), so it would be narrower than "
                "open. List the hosts sandboxes need on 80 or 443 (allowlist), or use a target "
                "whose open mode reaches every port: aws-microvm, gcp-cloudrun, kubernetes or "
                "gcp-gke",
            )
        )
    problems = []
    for rule in profile.egress.allow:
        if rule.kind == "ip":
            problems.append(
                Problem(
                    "sandboxkit:profile.egress.allow",
                    str(rule),
                    "DNS names only for target cloudflare: its Worker's egress gateway denies IP "
                    f"literal hosts in allowlist mode, so {rule} could never be reached. List "
                    "the host name the sandbox connects to instead",
                )
            )
        elif rule.port not in INTERCEPTED_PORTS:
            problems.append(
                Problem(
                    "sandboxkit:profile.egress.allow",
                    str(rule),
                    "ports 80 and 443 only for target cloudflare: Cloudflare Containers intercept "
                    f"no other port (source: {_OUTBOUND_SOURCE}), so {rule} could never be "
                    f"reached. Write {rule.pattern}:443 (or :80) if the host serves there, or use "
                    "a target that filters other ports (kubernetes, aws-microvm)",
                )
            )
    if problems:
        raise ConfigError(*problems)


def cloudflare_enforcement(profile: SandboxProfile) -> dict[str, Enforcement]:
    """The enforcement map of the Worker, its Durable Object and the generated wrangler config."""
    instance = smallest_instance_type(profile.limits.vcpu, profile.limits.memory_mib)
    container = "generated wrangler config containers[0]"
    chosen = (
        f"{instance.name} ({instance.vcpu:g} vCPU, {instance.memory_mib} MiB: the smallest "
        "named type covering the profile)"
        if instance
        else "(none fits: beyond the largest type)"
    )
    rounded = f"{container}.instance_type {chosen}, applied by wrangler deploy"
    gateway = (
        "Worker EgressGateway: the Durable Object starts the container with enableInternet "
        "false and intercepts only the listed hosts' HTTP (port 80) and HTTPS (port 443), "
        "routing them to the gateway, which applies EGRESS_POLICY (DNS is the platform's; see "
        "the Worker README)"
    )
    return {
        "egress.mode": Enforcement("runtime", f"{gateway} (mode {profile.egress.mode})"),
        "limits.vcpu": Enforcement("platform", rounded),
        "limits.memoryMiB": Enforcement("platform", rounded),
        "limits.execTimeoutSeconds": Enforcement(
            "runtime",
            f"Durable Object Sandbox: {EXEC_TIMEOUT_BINDING} per command; past it the "
            "container is destroyed",
        ),
        "limits.maxLifetimeSeconds": Enforcement(
            "runtime",
            f"Durable Object Sandbox: alarm at first request + {MAX_LIFETIME_BINDING}, then "
            "the container is destroyed and the sandbox refuses further commands",
        ),
        "limits.idleTimeoutSeconds": Enforcement(
            "runtime",
            f"Durable Object Sandbox: container setInactivityTimeout (sleepAfter) with "
            f"{IDLE_TIMEOUT_BINDING}, and an alarm as backstop",
        ),
        "pool.ready": Enforcement(
            "none",
            "Cloudflare Containers have no warm pool: each Durable Object starts its container "
            "on its first command (cold start)",
        ),
        "pool.maxConcurrent": Enforcement("platform", f"{container}.max_instances"),
        "audit.logRetentionDays": Enforcement(
            "none",
            "Workers Logs retention is fixed by Cloudflare: 7 days on Workers Paid, 3 on Free "
            f"(source: {_LOGS_SOURCE}); keep longer with a Logpush job (Enterprise)",
        ),
    }


def token_vars(settings: CloudflareSettings, script: str) -> dict[str, str]:
    """The Worker's plain-text token checks, name -> text: ``JWT_ISSUER`` (``tokenIssuer``),
    ``JWT_AUDIENCE`` (the script name, so a token for one deployment opens no other that shares
    the key) and ``JWT_MAX_LIFETIME_SECONDS`` (``tokenMaxLifetimeSeconds``, decimal text)."""
    return {
        JWT_ISSUER_BINDING: settings.token_issuer,
        JWT_AUDIENCE_BINDING: script,
        JWT_MAX_LIFETIME_BINDING: str(settings.token_max_lifetime_seconds),
    }


def worker_sandbox_args(
    profile: SandboxProfile, settings: CloudflareSettings, context: KitContext
) -> WorkerSandboxArgs:
    """Map the profile and ``sandboxkit:cloudflare`` settings to component inputs."""
    script = script_name(settings, context.stack)
    return WorkerSandboxArgs(
        account_id=settings.account_id,
        script_name=script,
        worker_module_path=str(WORKER_MODULE),
        compatibility_date=settings.compatibility_date,
        token_signing_key=settings.token_signing_key,
        sandbox_id_key=settings.sandbox_id_key,
        plain_vars={
            **worker_vars(profile),
            **token_vars(settings, script),
            CONTAINER_IMAGE_BINDING: settings.image,
        },
        workers_dev=settings.workers_dev,
        instance_type=instance_type_for(profile.limits.vcpu, profile.limits.memory_mib).name,
        image=settings.image,
        max_instances=profile.pool.max_concurrent,
        routes=[route.inputs() for route in settings.routes],
    )


class CloudflareTarget(TargetSpec[CloudflareSettings, WorkerSandboxArgs]):
    """The ``cloudflare`` target."""

    name: ClassVar[str] = "cloudflare"
    # None: the component registers the kit's own WranglerScript (wrangler uploads the Worker
    # and owns workers.dev), so a render imports nothing of pulumi_cloudflare.
    sdks: ClassVar[Mapping[str, float]] = {}
    program_sdks: ClassVar[tuple[str, ...]] = ("pulumi_cloudflare",)
    accepts: ClassVar[EgressAcceptance | None] = EgressAcceptance(
        open=False, ipv4=False, ipv6=False, ports=(80, 443)
    )
    settings_model = CloudflareSettings
    caps: ClassVar[tuple[Cap, ...]] = (
        Cap("limits.vcpu", None, INSTANCE_TYPES[-1].vcpu, _LIMITS_SOURCE),
        # At least the smallest type's memory: a smaller profile would silently get lite's.
        Cap(
            "limits.memoryMiB",
            INSTANCE_TYPES[0].memory_mib,
            INSTANCE_TYPES[-1].memory_mib,
            _LIMITS_SOURCE,
        ),
        Cap("pool.maxConcurrent", None, MAX_INSTANCES, _ACCOUNT_LIMITS_SOURCE),
        Cap(
            "limits.maxLifetimeSeconds",
            None,
            WORKER_MAX_SECONDS,
            "the sandboxkit Worker refuses *_SECONDS bindings above one week "
            "(MAX_CONFIG_SECONDS in components/sandboxkit/cloudflare/worker/src/index.js)",
        ),
    )

    def missing_tools(self) -> tuple[MissingTool, ...]:
        """workerd and the Worker's package (``decide.worker_setup``): the gate and
        ``--explain-egress`` run the Worker's own egress code to read what it admits."""
        from sandboxkit.cloudflare.decide import worker_dir, worker_setup

        found = worker_setup(worker_dir())
        return () if found is None else (found,)

    def plan(
        self, profile: SandboxProfile, settings: CloudflareSettings, context: KitContext
    ) -> WorkerSandboxArgs:
        """The ``WorkerSandbox`` inputs (see ``check_egress``, ``worker_sandbox_args``)."""
        check_egress(profile)
        return worker_sandbox_args(profile, settings, context)

    def enforcement(
        self,
        profile: SandboxProfile,
        settings: CloudflareSettings,
        plan: WorkerSandboxArgs | None,
    ) -> dict[str, Enforcement]:
        """See ``cloudflare_enforcement``."""
        return cloudflare_enforcement(profile)

    def external_config(
        self,
        profile: SandboxProfile,
        settings: CloudflareSettings,
        plan: WorkerSandboxArgs,
        out: Path,
    ) -> ExternalConfig:
        """The wrangler config ``pulumi up`` deploys (``wrangler.wrangler_config`` of the
        ``WranglerScript`` inputs, secrets left out), for review and ``wrangler deploy
        --dry-run``; its ``main`` is the Worker module's path relative to ``out``'s folder."""
        from sandboxkit.cloudflare.wrangler import script_inputs, wrangler_config

        main = os.path.relpath(WORKER_MODULE, out.resolve().parent)
        return ExternalConfig(
            wrangler_config(script_inputs(plan, "", {}), main),
            suffixes=(".jsonc", ".json"),
            apply=(
                "pulumi up (its WranglerScript runs wrangler deploy with this config); check it "
                "alone with npx wrangler deploy --dry-run --config {out} (Node >= 22)"
            ),
        )

    def deployer_policy(
        self,
        context: KitContext,
        settings: CloudflareSettings,
        resources: Sequence[ResourceView],
    ) -> DeployerPolicy:
        """The API token's permission groups (``cloudflare.deployer``)."""
        return cloudflare_policy(self.name, settings.account_id, resources)

    def component(self, plan: WorkerSandboxArgs) -> KitComponent:
        """The ``WorkerSandbox`` component in account ``accountId``."""
        from sandboxkit.cloudflare.workers import WorkerSandbox

        return WorkerSandbox(self.name, plan)


SPEC = CloudflareTarget()
