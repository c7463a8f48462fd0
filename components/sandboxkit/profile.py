"""The cloud-neutral sandbox profile read from ``sandboxkit:profile``.

Shape (stack config; key names are the public contract)::

    egress:   {mode: deny | allowlist | open, allow: ["host[:port]", ...]}
    limits:   {vcpu, memoryMiB, execTimeoutSeconds, maxLifetimeSeconds, idleTimeoutSeconds}
    pool:     {ready, maxConcurrent}
    audit:    {logRetentionDays}

Every field has a default; the defaults are the hardened choice (egress ``deny``).
"""

from __future__ import annotations

from typing import Annotated, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from sandboxkit.egress_contract import EgressRule, parse_rule
from sandboxkit.errors import FieldError

# Egress is shut unless the stack asks otherwise: a sandbox that needs nothing reaches nothing.
DEFAULT_EGRESS_MODE: Final = "deny"
# One vCPU and 2 GiB run a typical interpreter session without starving neighbours.
DEFAULT_VCPU = 1.0
DEFAULT_MEMORY_MIB = 2048
# Five minutes for one command, one hour for a sandbox, ten idle minutes: agent tool calls
# are short; a longer hard cap is an explicit choice.
DEFAULT_EXEC_TIMEOUT_SECONDS = 300
DEFAULT_MAX_LIFETIME_SECONDS = 3600
DEFAULT_IDLE_TIMEOUT_SECONDS = 600
# Two warm sandboxes hide cold starts at small cost; fifty concurrent bounds the blast radius.
DEFAULT_POOL_READY = 2
DEFAULT_POOL_MAX_CONCURRENT = 50
# Thirty days of audit logs: long enough to investigate an incident reported a few weeks late.
DEFAULT_LOG_RETENTION_DAYS = 30

PROFILE_KEY = "sandboxkit:profile"

# Kit-wide sanity bounds: beyond what any platform the kit targets takes, so a typo (2**64,
# 10**30) is refused on every target, before a target's own caps (``TargetSpec.caps``) and
# before it reaches an int64 API field or a rendered quota.
# The largest machine of the three clouds: Compute Engine X4 (x4-megamem-1920-metal), 1,920
# vCPU and 32 TiB (cloud.google.com/compute/docs/memory-optimized-machines#x4_series); one
# sandbox cannot be larger than one machine.
MAX_VCPU = 1920
MAX_MEMORY_MIB = 32 * 1024 * 1024
# A year and a day: no target bounds a sandbox's life by more (Lambda MicroVMs 8 h, the
# Cloudflare Worker a week); longer is a typo, not a sandbox.
MAX_SECONDS = 366 * 24 * 3600
# A million sandboxes at once: above every target's documented cap (upstream Kubernetes
# designs for 150,000 pods per cluster, kubernetes.io/docs/setup/best-practices/cluster-large;
# Azure session pools 600; Cloudflare 1,500 concurrent vCPU per account) and every default
# account quota; each target's own cap is in its spec.py.
MAX_POOL_SIZE = 1_000_000
# The longest any target's log store keeps logs: CloudWatch Logs' 3653 days (botocore `logs`
# shape Days); Cloud Logging 3650, Log Analytics 730.
MAX_LOG_RETENTION_DAYS = 3653


def _at_most(limit: int, why: str) -> AfterValidator:
    # A kit-wide bound with its reason in the message (pydantic's le= says only the number).
    def check(value: float) -> float:
        if value > limit:
            raise ValueError(f"at most {limit} ({why})")
        return value

    return AfterValidator(check)


_POOL_BOUND = _at_most(
    MAX_POOL_SIZE,
    "the kit-wide bound: above every target's cap and default quota; each target's own cap "
    "may be lower",
)
Seconds = Annotated[
    int,
    Field(gt=0),
    _at_most(MAX_SECONDS, "a year and a day, the kit-wide bound on any sandbox duration"),
]


class _Section(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=True)

    @classmethod
    def field_for(cls, key: str) -> str:
        """The attribute name for a config key (``memoryMiB`` gives ``memory_mib``)."""
        return next(name for name, info in cls.model_fields.items() if (info.alias or name) == key)


UNSET_NOTE: Final = "not set in the stack"
"""Part of a refusal of a default value: ``config`` adds what else setting it needs per target."""


def _default_note(section: _Section, key: str) -> str:
    """Say that a value in a refusal is a default the stack never set, and how to set it."""
    if section.field_for(key) in section.model_fields_set:
        return ""
    value = getattr(section, section.field_for(key))
    return f" (default {value}, {UNSET_NOTE}: set {key} explicitly)"


class Egress(_Section):
    """Where sandbox code may connect.

    Attributes:
        mode: ``deny`` (nothing), ``allowlist`` (exactly ``allow``) or ``open`` (anything;
            valid config, flagged by the policy gate where the organisation forbids it).
        allow: parsed ``host[:port]`` entries; required and non-empty with ``allowlist`` only.
    """

    mode: Literal["deny", "allowlist", "open"] = DEFAULT_EGRESS_MODE
    allow: tuple[EgressRule, ...] = ()

    @field_validator("allow", mode="before")
    @classmethod
    def _parse_allow(cls, value: object) -> tuple[EgressRule, ...]:
        if not isinstance(value, list | tuple):
            raise FieldError("", value, "a list of 'host[:port]' strings")
        first_at: dict[EgressRule, int] = {}
        errors: list[FieldError] = []
        for index, entry in enumerate(value):
            if not isinstance(entry, str):
                errors.append(FieldError(f"[{index}]", entry, "a 'host[:port]' string"))
                continue
            try:
                rule = parse_rule(entry)
            except ValueError as exc:
                errors.append(
                    FieldError(f"[{index}]", entry, f"a specific public host[:port] entry: {exc}")
                )
                continue
            if rule in first_at:
                # Like a target listed twice: a repeat is a mistake (often a spelling the parser
                # folds: case, a trailing dot, full-width letters, an A-label), never merged.
                errors.append(
                    FieldError(
                        f"[{index}]",
                        entry,
                        f"each entry listed once: allow[{first_at[rule]}] "
                        f"{value[first_at[rule]]!r} and allow[{index}] {entry!r} are both {rule} "
                        "once normalised (case, trailing dot, IDNA A-label, default port 443); "
                        "remove one",
                    )
                )
                continue
            first_at[rule] = index
        if errors:
            raise FieldError.first_of(errors)
        return tuple(sorted(first_at))

    @model_validator(mode="after")
    def _allow_matches_mode(self) -> Egress:
        if self.mode == "allowlist" and not self.allow:
            raise FieldError(".allow", [], "at least one 'host[:port]' entry with mode allowlist")
        if self.mode != "allowlist" and self.allow:
            raise FieldError(
                ".allow",
                [str(rule) for rule in self.allow],
                f"no entries with mode {self.mode} (allow is read with mode allowlist only)",
            )
        return self


class Limits(_Section):
    """Per-sandbox limits: vCPU, MiB and seconds, all greater than zero and at most the
    kit-wide bounds (``MAX_VCPU``, ``MAX_MEMORY_MIB``, ``MAX_SECONDS``)."""

    vcpu: Annotated[
        float,
        Field(gt=0, allow_inf_nan=False),
        _at_most(MAX_VCPU, "the vCPU of the largest machine any target offers, Compute Engine X4"),
    ] = DEFAULT_VCPU
    memory_mib: Annotated[
        int,
        Field(gt=0),
        _at_most(MAX_MEMORY_MIB, "32 TiB, the memory of the largest machine any target offers"),
    ] = Field(DEFAULT_MEMORY_MIB, alias="memoryMiB")
    exec_timeout_seconds: Seconds = Field(DEFAULT_EXEC_TIMEOUT_SECONDS, alias="execTimeoutSeconds")
    max_lifetime_seconds: Seconds = Field(DEFAULT_MAX_LIFETIME_SECONDS, alias="maxLifetimeSeconds")
    idle_timeout_seconds: Seconds = Field(DEFAULT_IDLE_TIMEOUT_SECONDS, alias="idleTimeoutSeconds")

    @model_validator(mode="after")
    def _fit_in_lifetime(self) -> Limits:
        errors = [
            FieldError(
                f".{name}",
                getattr(self, Limits.field_for(name)),
                f"at most limits.maxLifetimeSeconds ({self.max_lifetime_seconds} s)"
                + _default_note(self, name),
            )
            for name in ("execTimeoutSeconds", "idleTimeoutSeconds")
            if getattr(self, Limits.field_for(name)) > self.max_lifetime_seconds
        ]
        if errors:
            raise FieldError.first_of(errors)
        return self


class Pool(_Section):
    """Warm pool and concurrency: ``ready`` warm sandboxes (0 or more), ``maxConcurrent`` (1+),
    both at most ``MAX_POOL_SIZE`` (each target's platform cap: ``TargetSpec.caps``)."""

    ready: Annotated[int, Field(ge=0), _POOL_BOUND] = DEFAULT_POOL_READY
    max_concurrent: Annotated[int, Field(gt=0), _POOL_BOUND] = Field(
        DEFAULT_POOL_MAX_CONCURRENT, alias="maxConcurrent"
    )

    @model_validator(mode="after")
    def _ready_within_max(self) -> Pool:
        if self.ready > self.max_concurrent:
            raise FieldError(
                ".ready",
                self.ready,
                f"at most pool.maxConcurrent ({self.max_concurrent})"
                + _default_note(self, "ready"),
            )
        return self


class Audit(_Section):
    """Audit logging: ``logRetentionDays`` (1 to ``MAX_LOG_RETENTION_DAYS``) for sandbox, flow
    and launcher logs."""

    log_retention_days: Annotated[
        int,
        Field(gt=0),
        _at_most(MAX_LOG_RETENTION_DAYS, "the longest any target's log store keeps logs"),
    ] = Field(DEFAULT_LOG_RETENTION_DAYS, alias="logRetentionDays")


class SandboxProfile(_Section):
    """The whole profile. Validate with ``sandboxkit.config.load_stack``, not directly."""

    egress: Egress = Egress()
    limits: Limits = Limits()
    pool: Pool = Pool()
    audit: Audit = Audit()

    def value_of(self, field: str) -> object:
        """The value at a dotted profile field path such as ``limits.memoryMiB``."""
        section_name, _, alias = field.partition(".")
        section = getattr(self, section_name)
        return getattr(section, type(section).field_for(alias))

    def explicit_fields(self) -> frozenset[str]:
        """Dotted paths of the fields the stack set itself (not left at their default)."""
        paths = set()
        for section_name in self.model_fields_set:
            section = getattr(self, section_name)
            model = type(section)
            for name in section.model_fields_set:
                paths.add(f"{section_name}.{model.model_fields[name].alias or name}")
        return frozenset(paths)


# Every field of the profile, in the order the enforcement map prints them.
PROFILE_FIELDS: tuple[str, ...] = (
    "egress.mode",
    "limits.vcpu",
    "limits.memoryMiB",
    "limits.execTimeoutSeconds",
    "limits.maxLifetimeSeconds",
    "limits.idleTimeoutSeconds",
    "pool.ready",
    "pool.maxConcurrent",
    "audit.logRetentionDays",
)
