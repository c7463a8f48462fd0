"""Read and validate the ``sandboxkit:*`` stack config before any resource is made.

The same code runs under ``pulumi up`` (values from the engine) and in the offline render
(values from the stack file): ``ConfigSource`` is the one seam between the two.
"""

from __future__ import annotations

import difflib
import json
import re
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from sandboxkit.errors import NOT_SHOWN, REDACTED, ConfigError, FieldError, Problem
from sandboxkit.profile import PROFILE_FIELDS, PROFILE_KEY, SandboxProfile
from sandboxkit.project import existing_stack_file
from sandboxkit.secrets import UNKNOWN_SECRET, SecretValue
from sandboxkit.targets import (
    TARGET_MODULES,
    Enforcement,
    KitContext,
    TargetSettings,
    TargetSpec,
    get_target,
)

NAMESPACE = "sandboxkit"
ENVIRONMENTS = ("dev", "staging", "prod")
_TOP_LEVEL = ("environment", "targets", "profile")


@dataclass(frozen=True)
class ConfigSource:
    """The ``sandboxkit:*`` config of one stack.

    Attributes:
        values: key without namespace (``profile``, ``aws-microvm``) -> parsed value.
        secret_paths: dotted paths (``aws-microvm.webhookSecret``) declared ``secure:`` in the
            stack file, or whole keys the engine marks secret.
    """

    values: Mapping[str, Any]
    secret_paths: frozenset[str] = field(default_factory=frozenset)

    def is_secret(self, path: str) -> bool:
        """Whether ``path`` or any parent of it is a secret."""
        parts = path.split(".")
        return any(".".join(parts[:n]) in self.secret_paths for n in range(1, len(parts) + 1))

    @classmethod
    def from_runtime(cls, stack_file: Path | None) -> ConfigSource:
        """Read the config the Pulumi engine hands the program.

        Args:
            stack_file: ``stacks/Pulumi.<stack>.yaml`` if it exists; its ``secure:`` paths say
                exactly which nested values are secrets (the engine only marks whole keys).
        """
        from pulumi.runtime import config as runtime_config

        raw: dict[str, Any] = dict(runtime_config.get_config_env())
        raw.update(runtime_config.CONFIG.get())
        prefix = f"{NAMESPACE}:"
        values = {
            key.removeprefix(prefix): _parse_config_text(value)
            for key, value in raw.items()
            if key.startswith(prefix)
        }
        secret_keys = set(runtime_config.get_config_secret_keys_env())
        secret_keys.update(runtime_config._SECRET_KEYS.get())  # noqa: SLF001 - set by mocks too
        paths = {k.removeprefix(prefix) for k in secret_keys if k.startswith(prefix)}
        if stack_file is not None and stack_file.exists():
            exact = read_stack_file(stack_file).secret_paths
            # The engine marks a whole key secret when any value inside it is; where the stack
            # file says exactly which nested values are, those paths replace the whole key.
            paths = {p for p in paths if not any(e.startswith((f"{p}.", f"{p}[")) for e in exact)}
            paths |= exact
        return cls(values=values, secret_paths=frozenset(paths))


def _parse_config_text(value: Any) -> Any:
    # The engine passes structured values as JSON text and scalars as plain text.
    if isinstance(value, str) and value[:1] in ("{", "["):
        return json.loads(value)
    return value


class _StackFileLoader(yaml.SafeLoader):
    """YAML as stack files mean it: an unquoted date stays text, as the engine passes it."""


_StackFileLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _strip_secure(value: Any, path: str, secret_paths: set[str]) -> Any:
    if isinstance(value, dict):
        if set(value) == {"secure"}:
            if not isinstance(value["secure"], str) or not value["secure"].strip():
                # A number, list or null is no ciphertext: the engine could not decrypt it.
                raise ConfigError(
                    Problem(
                        f"{NAMESPACE}:{path}.secure",
                        REDACTED,
                        "the ciphertext text pulumi config set --secret writes; run pulumi "
                        f"config set --secret --path '{NAMESPACE}:{path}' <value>",
                    )
                )
            secret_paths.add(path)
            return UNKNOWN_SECRET
        return {k: _strip_secure(v, f"{path}.{k}", secret_paths) for k, v in value.items()}
    if isinstance(value, list):
        return [_strip_secure(v, f"{path}[{i}]", secret_paths) for i, v in enumerate(value)]
    return value


def read_stack_file(path: Path) -> ConfigSource:
    """Read ``sandboxkit:*`` keys from a stack file without decrypting anything.

    ``secure:`` values become ``UNKNOWN_SECRET`` and their paths are recorded as secret.

    Raises:
        ConfigError: when the file is not YAML or has no ``config`` mapping, or a ``secure:``
            holds anything but ciphertext text (a number, a list, null).
    """
    try:
        # A SafeLoader subclass: no arbitrary objects, only plain YAML.
        document = yaml.load(path.read_text(), Loader=_StackFileLoader) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(Problem(str(path), "unparseable YAML", f"valid YAML ({exc})")) from None
    config = document.get("config", {}) if isinstance(document, dict) else None
    if not isinstance(config, dict):
        raise ConfigError(Problem(f"{path}: config", config, "a mapping of config keys"))
    secret_paths: set[str] = set()
    prefix = f"{NAMESPACE}:"
    values = {
        key.removeprefix(prefix): _strip_secure(value, key.removeprefix(prefix), secret_paths)
        for key, value in config.items()
        if key.startswith(prefix)
    }
    return ConfigSource(values=values, secret_paths=frozenset(secret_paths))


@dataclass(frozen=True)
class StackSpec:
    """A validated stack: everything the program needs to create resources.

    Attributes:
        stack: stack name.
        environment: ``dev``, ``staging`` or ``prod``.
        targets: target names in the order listed.
        profile: the sandbox profile.
        settings: target name -> its validated settings.
        plans: target name -> what its component is built from (``TargetSpec.plan``).
        enforcement: target name -> profile field -> ``Enforcement``.
    """

    stack: str
    environment: str
    targets: tuple[str, ...]
    profile: SandboxProfile
    settings: Mapping[str, TargetSettings]
    plans: Mapping[str, Any]
    enforcement: Mapping[str, Mapping[str, Enforcement]]


def _key(*parts: str | int) -> str:
    text = NAMESPACE
    for index, part in enumerate(parts):
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += (":" if index == 0 else ".") + part
    return text


def _near(name: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _known_keys(model: type[BaseModel]) -> list[str]:
    """The config keys a model accepts, as written in stack files (aliases)."""
    return [info.alias or name for name, info in model.model_fields.items()]


def _nested_model(annotation: Any) -> type[BaseModel] | None:
    # Model, Model | None, tuple[Model, ...], list[Model]: the model the keys below belong to.
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in typing.get_args(annotation):
        found = _nested_model(argument)
        if found is not None:
            return found
    return None


def _model_at(model: type[BaseModel], loc: tuple[str | int, ...]) -> type[BaseModel] | None:
    current: type[BaseModel] | None = model
    for part in loc:
        if isinstance(part, int) or current is None:
            continue
        info = next(
            (i for n, i in current.model_fields.items() if (i.alias or n) == part),
            None,
        )
        current = _nested_model(info.annotation) if info is not None else None
    return current


# pydantic's phrasing -> the kit's "expected ..." phrasing.
_MESSAGE_REWRITES: tuple[tuple[str, str], ...] = (
    (r"^Input should be (a valid|an?|greater|less|at|one of|'|finite)", r"\1"),
    (r"^Input should be ", ""),
    (r"^String should match pattern '(.*)'$", r"text matching the pattern \1"),
    (r"^String should have at least (\d+) characters?$", r"text of at least \1 characters"),
    (
        r"^(?:Tuple|List) should have at least (\d+) items? after validation, not \d+$",
        r"a list of at least \1 item(s)",
    ),
    (
        r"^(?:Tuple|List) should have at most (\d+) items? after validation, not \d+$",
        r"a list of at most \1 item(s)",
    ),
    (r"a valid tuple", "a list"),
    (r"a valid dictionary or instance of \w+", "a mapping"),
    (r"a valid dictionary", "a mapping"),
    (r"^a valid string$", "text (quote it in YAML when it looks like a number or a date)"),
    (r"^text of at least 1 characters?$", "non-empty text"),
)


def _expected_text(message: str) -> str:
    text = message.removeprefix("Value error, ")
    for pattern, replacement in _MESSAGE_REWRITES:
        text = re.sub(pattern, replacement, text)
    return text


def _problems(
    exc: ValidationError, model: type[BaseModel], base: tuple[str, ...], source: ConfigSource
) -> list[Problem]:
    problems: list[Problem] = []
    for error in exc.errors():
        loc = tuple(error["loc"])
        key = _key(*base, *loc)
        value = error.get("input")
        if source.is_secret(".".join(str(p) for p in (*base, *loc))):
            value = REDACTED
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, FieldError):
            problems.extend(
                Problem(key + each.suffix, each.value, each.expected)
                for each in (cause, *cause.also)
            )
        elif error["type"] == "extra_forbidden":
            parent = _model_at(model, loc[:-1])
            known = _known_keys(parent) if parent else []
            hint = _near(str(loc[-1]), known)
            # A misspelt key may hold a secret (authTokne: ...): never echo its value.
            problems.append(
                Problem(key, NOT_SHOWN, f"no such key{hint}; known keys: {', '.join(known)}")
            )
        elif error["type"] == "missing":
            problems.append(Problem(key, None, "a value (this key is required)"))
        else:
            problems.append(Problem(key, value, _expected_text(error["msg"])))
    return problems


def _validate_profile(source: ConfigSource) -> tuple[SandboxProfile | None, list[Problem]]:
    raw = source.values.get("profile", {})
    if not isinstance(raw, dict):
        return None, [Problem(PROFILE_KEY, raw, "a mapping with egress, limits, pool, audit")]
    try:
        return SandboxProfile.model_validate(raw), []
    except ValidationError as exc:
        return None, _problems(exc, SandboxProfile, ("profile",), source)


def _wrap_secrets(
    name: str, model: type[TargetSettings], raw: dict[str, Any], source: ConfigSource
) -> tuple[dict[str, Any], list[Problem]]:
    problems: list[Problem] = []
    secret_keys = model.secret_keys()
    wrapped = dict(raw)
    for key, value in raw.items():
        path = f"{name}.{key}"
        if key in secret_keys:
            if source.is_secret(path) and isinstance(value, str):
                wrapped[key] = SecretValue(value)
            else:
                problems.append(
                    Problem(
                        _key(name, key),
                        REDACTED,
                        "a Pulumi secret, not plain text: run "
                        f"pulumi config set --secret --path '{NAMESPACE}:{name}.{key}' <value>",
                    )
                )
        elif source.is_secret(path) and key in _known_keys(model):
            problems.append(
                Problem(
                    _key(name, key),
                    REDACTED,
                    f"plain text; only {', '.join(sorted(secret_keys)) or 'no key'} may be secrets",
                )
            )
    return wrapped, problems


def _validate_settings(
    name: str, spec: TargetSpec[Any, Any], source: ConfigSource
) -> tuple[TargetSettings | None, list[Problem]]:
    raw = source.values.get(name, {})
    if not isinstance(raw, dict):
        return None, [Problem(_key(name), raw, "a mapping of target settings")]
    model = spec.settings_model
    wrapped, problems = _wrap_secrets(name, model, raw, source)
    if problems:
        return None, problems
    try:
        return model.model_validate(wrapped), []
    except ValidationError as exc:
        return None, _problems(exc, model, (name,), source)


def _check_enforcement(
    name: str,
    profile: SandboxProfile,
    settings: TargetSettings,
    enforcement: Mapping[str, Enforcement],
) -> list[Problem]:
    problems: list[Problem] = []
    explicit = profile.explicit_fields()
    for field_path in PROFILE_FIELDS:
        entry = enforcement[field_path]
        acknowledged = field_path in settings.unenforced
        if entry.kind == "none" and field_path in explicit and not acknowledged:
            problems.append(
                Problem(
                    _key("profile", *field_path.split(".")),
                    profile.value_of(field_path),
                    f"a field target {name} enforces; it enforces this nowhere ({entry.where}). "
                    f"Remove it, or acknowledge it with {NAMESPACE}:{name}.unenforced: "
                    f"[{field_path}]",
                )
            )
        if entry.kind != "none" and acknowledged:
            problems.append(
                Problem(
                    _key(name, "unenforced"),
                    list(settings.unenforced),
                    f"only fields target {name} does not enforce; it enforces {field_path} "
                    f"({entry.where})",
                )
            )
    return problems


def _check_caps(name: str, spec: TargetSpec[Any, Any], profile: SandboxProfile) -> list[Problem]:
    problems: list[Problem] = []
    for cap in spec.caps:
        value = profile.value_of(cap.field)
        assert isinstance(value, int | float)
        if not cap.admits(value):
            problems.append(
                Problem(
                    _key("profile", *cap.field.split(".")),
                    value,
                    f"{cap.describe()} for target {name} (source: {cap.source})",
                )
            )
    return problems


def _validate_targets(source: ConfigSource) -> tuple[tuple[str, ...], list[Problem]]:
    raw = source.values.get("targets")
    known = tuple(TARGET_MODULES)
    if not isinstance(raw, list) or not raw:
        return (), [Problem(_key("targets"), raw, f"a non-empty list from {', '.join(known)}")]
    problems = [
        Problem(_key("targets", i), t, f"one of {', '.join(known)}{_near(str(t), known)}")
        for i, t in enumerate(raw)
        if t not in TARGET_MODULES
    ]
    if len(set(map(str, raw))) != len(raw):
        problems.append(Problem(_key("targets"), raw, "each target listed once"))
    return tuple(raw), problems


def load_stack(source: ConfigSource, stack: str) -> StackSpec:
    """Validate the whole ``sandboxkit:*`` config of a stack.

    Checks, and reports together: unknown keys (with the near name), wrong types and ranges,
    profile consistency, target names, secrets given in plain text, explicit profile fields a
    target enforces nowhere (unless acknowledged), values beyond a target's caps, and egress a
    target cannot enforce.

    Raises:
        ConfigError: naming each bad key, its value and what is expected.
    """
    problems: list[Problem] = []
    for key in source.values:
        if key not in _TOP_LEVEL and key not in TARGET_MODULES:
            known = (*_TOP_LEVEL, *TARGET_MODULES)
            problems.append(
                Problem(
                    _key(key),
                    NOT_SHOWN,
                    f"no such key{_near(key, known)}; known keys: {', '.join(known)}",
                )
            )
    environment = source.values.get("environment")
    if environment not in ENVIRONMENTS:
        problems.append(
            Problem(_key("environment"), environment, f"one of {', '.join(ENVIRONMENTS)}")
        )
    targets, target_problems = _validate_targets(source)
    problems += target_problems
    profile, profile_problems = _validate_profile(source)
    problems += profile_problems
    settings: dict[str, TargetSettings] = {}
    plans: dict[str, Any] = {}
    enforcement: dict[str, dict[str, Enforcement]] = {}
    for name in (t for t in targets if t in TARGET_MODULES):
        spec = get_target(name)
        target_settings, settings_problems = _validate_settings(name, spec, source)
        problems += settings_problems
        if target_settings is None or profile is None:
            continue
        settings[name] = target_settings
        cap_problems = _check_caps(name, spec, profile)
        if cap_problems:
            # A plan may assume the caps hold (an instance type that fits, say).
            problems += cap_problems
            continue
        # A bad environment is already a problem; the plan only needs it for labels.
        context = KitContext(stack=stack, environment=str(environment), target=name)
        try:
            plans[name] = spec.plan(profile, target_settings, context)
        except ConfigError as exc:
            problems += exc.problems
            continue
        enforcement[name] = spec.enforcement(profile, target_settings, plans[name])
        problems += _check_enforcement(name, profile, target_settings, enforcement[name])
    if problems:
        raise ConfigError(*problems)
    assert profile is not None and isinstance(environment, str)
    return StackSpec(stack, environment, targets, profile, settings, plans, enforcement)


def load_stack_file(project_dir: Path, stack: str) -> StackSpec:
    """``load_stack`` on the stack file of ``stack`` (no secret is decrypted).

    Raises:
        ConfigError: a missing stack file (naming ``--stack``), or bad config.
    """
    return load_stack(read_stack_file(existing_stack_file(project_dir, stack)), stack)
