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

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sandboxkit.egress import EgressRule, parse_rule
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

PositiveInt = Annotated[int, Field(gt=0)]


class _Section(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=True)

    @classmethod
    def field_for(cls, key: str) -> str:
        """The attribute name for a config key (``memoryMiB`` gives ``memory_mib``)."""
        return next(name for name, info in cls.model_fields.items() if (info.alias or name) == key)


def _default_note(section: _Section, key: str) -> str:
    """Say that a value in a refusal is a default the stack never set, and how to set it."""
    if section.field_for(key) in section.model_fields_set:
        return ""
    value = getattr(section, section.field_for(key))
    return f" (default {value}, not set in the stack: set {key} explicitly)"


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
        rules: list[EgressRule] = []
        errors: list[FieldError] = []
        for index, entry in enumerate(value):
            if not isinstance(entry, str):
                errors.append(FieldError(f"[{index}]", entry, "a 'host[:port]' string"))
                continue
            try:
                rules.append(parse_rule(entry))
            except ValueError as exc:
                errors.append(
                    FieldError(f"[{index}]", entry, f"a specific public host[:port] entry: {exc}")
                )
        if errors:
            raise FieldError.first_of(errors)
        return tuple(sorted(set(rules)))

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
    """Per-sandbox limits: vCPU, MiB and seconds, all greater than zero."""

    vcpu: Annotated[float, Field(gt=0, allow_inf_nan=False)] = DEFAULT_VCPU
    memory_mib: PositiveInt = Field(DEFAULT_MEMORY_MIB, alias="memoryMiB")
    exec_timeout_seconds: PositiveInt = Field(
        DEFAULT_EXEC_TIMEOUT_SECONDS, alias="execTimeoutSeconds"
    )
    max_lifetime_seconds: PositiveInt = Field(
        DEFAULT_MAX_LIFETIME_SECONDS, alias="maxLifetimeSeconds"
    )
    idle_timeout_seconds: PositiveInt = Field(
        DEFAULT_IDLE_TIMEOUT_SECONDS, alias="idleTimeoutSeconds"
    )

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
    """Warm pool and concurrency: ``ready`` warm sandboxes (0 or more), ``maxConcurrent`` (1+)."""

    ready: Annotated[int, Field(ge=0)] = DEFAULT_POOL_READY
    max_concurrent: PositiveInt = Field(DEFAULT_POOL_MAX_CONCURRENT, alias="maxConcurrent")

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
    """Audit logging: ``logRetentionDays`` (1+) for sandbox, flow and launcher logs."""

    log_retention_days: PositiveInt = Field(DEFAULT_LOG_RETENTION_DAYS, alias="logRetentionDays")


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
