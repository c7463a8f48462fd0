"""Read and validate the ``sandboxkit:*`` stack config before any resource is made.

The same code runs under ``pulumi up`` (values from the engine) and in the offline render
(values from the stack file): ``ConfigSource`` is the one seam between the two.
"""

from __future__ import annotations

import functools
import re
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from sandboxkit.egress_contract import EgressContract
from sandboxkit.errors import (
    MISSING,
    NOT_SHOWN,
    REDACTED,
    ConfigError,
    FieldError,
    Problem,
    did_you_mean,
)
from sandboxkit.profile import PROFILE_FIELDS, PROFILE_KEY, UNSET_NOTE, SandboxProfile
from sandboxkit.project import (
    ENVIRONMENTS,
    existing_stack_file,
    project_name,
    project_name_of,
    stack_environment,
)
from sandboxkit.secrets import UNKNOWN_SECRET, SecretValue
from sandboxkit.stackfile import NAMESPACE, StackFileError, config_values, parse_config_text
from sandboxkit.targets import (
    TARGET_MODULES,
    Enforcement,
    KitContext,
    TargetSettings,
    TargetSpec,
    get_target,
    plain_number,
)

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

    def shown(self, path: str, value: object) -> object:
        """``value`` as a problem may show it: ``REDACTED`` when ``path`` is a secret."""
        return REDACTED if self.is_secret(path) else value

    def secrets_at(self, path: str) -> list[str]:
        """The secret paths that hold ``path``'s value or part of it, sorted: ``path`` itself
        when it or a parent is a secret, else the secret paths below it (``path.key``,
        ``path[0]``)."""
        if self.is_secret(path):
            return [path]
        return sorted(p for p in self.secret_paths if _below(p, path))

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
            key.removeprefix(prefix): parse_config_text(value, key)
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


def _below(path: str, parent: str) -> bool:
    """Whether dotted ``path`` (``a.b[0].c``) lies inside ``parent``."""
    return path.startswith((f"{parent}.", f"{parent}["))


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


def read_stack_file(path: Path, project: str | None = None) -> ConfigSource:
    """Read ``sandboxkit:*`` keys from a stack file without decrypting anything.

    The file is read as ``stackfile.config_values`` reads it (bounded YAML 1.2, bare keys in the
    project's namespace, JSON text as JSON), the one reader of every command. ``secure:``
    values become ``UNKNOWN_SECRET`` and their paths are recorded as secret.

    Args:
        path: the stack file.
        project: the project's name; by default read from the Pulumi.yaml above ``path``.

    Raises:
        ConfigError: naming the file, the line and the key for anything the reader refuses,
            and the key of a ``secure:`` holding anything but ciphertext text (a number, a
            list, null).
    """
    return _source(config_values(path, project if project is not None else project_name_of(path)))


def _source(values: Mapping[str, Any]) -> ConfigSource:
    secret_paths: set[str] = set()
    stripped = {key: _strip_secure(value, key, secret_paths) for key, value in values.items()}
    return ConfigSource(values=stripped, secret_paths=frozenset(secret_paths))


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

    def contract(self, target: str) -> EgressContract:
        """The egress contract of listed ``target``: the profile's egress plus the target's
        control-plane hosts (``TargetSpec.control_plane``). Raises ``KeyError`` for a target
        the stack does not list."""
        control_plane = get_target(target).control_plane(self.settings[target])
        return EgressContract.of(self.profile.egress, control_plane)


def _key(*parts: str | int) -> str:
    text = NAMESPACE
    for index, part in enumerate(parts):
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += (":" if index == 0 else ".") + part
    return text


def _dotted_hint(parents: tuple[str | int, ...], key: str, known: Iterable[str]) -> str:
    """For a dotted key whose first part is a known key, the nested form a stack file needs.

    The docs write paths dotted (``sandboxkit:gcp-cloudrun.project``); YAML reads
    ``gcp-cloudrun.project`` as one unknown key, which leaves ``project`` missing.
    """
    head, *rest = key.split(".")
    if not rest or head not in known or any(isinstance(p, int) for p in parents):
        return ""
    path = [str(p) for p in parents] + [head, *rest]
    nested = "<value>"
    for part in reversed(path[1:]):
        nested = f"{{{part}: {nested}}}"
    return (
        f"; a dotted name is not a path in a stack file: nest it, {NAMESPACE}:{path[0]}: {nested}"
    )


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


@functools.cache
def _key_homes() -> dict[str, tuple[tuple[str, bool], ...]]:
    """Each key name the profile and the targets' settings take -> the full config paths it
    lives at (``sandboxkit:profile.egress.allow``), each with whether it holds a secret: where
    a key written one level too high or low belongs."""
    homes: dict[str, list[tuple[str, bool]]] = {}

    def walk(model: type[BaseModel], path: str) -> None:
        for name, info in model.model_fields.items():
            key = info.alias or name
            secret = isinstance(info.json_schema_extra, dict) and bool(
                info.json_schema_extra.get("secret")
            )
            homes.setdefault(key, []).append((f"{path}.{key}", secret))
            nested = _nested_model(info.annotation)
            if nested is not None:
                walk(nested, f"{path}.{key}")

    walk(SandboxProfile, PROFILE_KEY)
    for target in TARGET_MODULES:
        walk(get_target(target).settings_model, _key(target))
    return {key: tuple(paths) for key, paths in homes.items()}


def _misplaced(key: str, written_at: str) -> tuple[str, bool]:
    """For an unknown key, where it belongs (``"; it belongs at sandboxkit:profile.egress.allow:
    move it there"``) when the profile or a target takes a key of that name elsewhere, and
    whether its value may be shown (no home of it holds a secret); ``("", False)`` when none
    does."""
    homes = [(path, secret) for path, secret in _key_homes().get(key, ()) if path != written_at]
    if not homes:
        return "", False
    paths = ", ".join(path for path, _ in homes)
    return f"; it belongs at {paths}: move it there", not any(secret for _, secret in homes)


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


# Each ``pattern=`` a settings model uses, said in words: a refusal never prints a regular
# expression (tests/core/test_config_hints.py fails on a pattern missing here).
PATTERN_WORDS: Mapping[str, str] = {
    r"\S": "non-blank text",
    r"^[0-9]{12}$": "a 12-digit AWS account id",
    r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$": (
        "a DNS label: 1 to 63 lower-case letters, digits or hyphens, starting and ending with a "
        "letter or digit"
    ),
    r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$": (
        "a DNS label: 1 to 63 lower-case letters, digits or hyphens, starting and ending with a "
        "letter or digit"
    ),
    r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$": (
        "1 to 63 lower-case letters, digits or hyphens, starting with a letter and ending with "
        "a letter or digit"
    ),
    r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$": (
        "a GKE cluster name: 1 to 40 lower-case letters, digits or hyphens, starting with a "
        "letter and ending with a letter or digit"
    ),
    r"^[a-z0-9]+$": "lower-case letters and digits only (an Azure region name, e.g. westeurope)",
    r"^[\x21-\x7e]{1,256}$": (
        "1 to 256 printable ASCII characters without spaces (a token issuer, e.g. sandboxkit)"
    ),
    r"^[a-z0-9]+(-[a-z0-9]+)+$": (
        "a machine type: lower-case words joined by hyphens (e.g. n2-standard-4)"
    ),
    r"^[a-z]+-[a-z]+[0-9]+$": "a Google Cloud region name (e.g. europe-west1)",
    r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$": (
        "a Google Cloud project id: 6 to 30 lower-case letters, digits or hyphens, starting "
        "with a letter and not ending with a hyphen"
    ),
    r"^[a-z]{2}(-[a-z]+)+-[0-9]+$": "an AWS region name (e.g. eu-west-1)",
    r"^[A-Za-z0-9_.@+-]+$": (
        "an AWS profile name: letters, digits and the characters _ . @ + - only"
    ),
    r"^[A-Za-z0-9_+=,.@:/-]{2,1224}$": (
        "an external id: 2 to 1224 letters, digits or the characters _ + = , . @ : / -"
    ),
    r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/[A-Za-z0-9_+=,.@/-]{1,512}$": (
        "an IAM role ARN: arn:aws:iam::<12-digit account>:role/<name>"
    ),
    r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$": (
        "an S3 bucket name: 3 to 63 lower-case letters, digits, dots or hyphens, starting and "
        "ending with a letter or digit"
    ),
    r"^[^*?]+\.zip$": "an object key ending in .zip, without * or ?",
    r"^[0-9a-f]{32}$": "a Cloudflare account id: 32 lower-case hexadecimal digits",
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$": (
        "a GUID (8-4-4-4-12 hexadecimal digits)"
    ),
    r"^[-\w.()]{0,89}[-\w()]$": (
        "an Azure resource group name: 1 to 90 letters, digits, underscores, hyphens, periods "
        "or parentheses, not ending with a period"
    ),
    (
        r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-\w.()]+/providers/"
        r"Microsoft\.ManagedIdentity/userAssignedIdentities/[-\w]+$"
    ): (
        "a user-assigned identity's resource id: /subscriptions/<id>/resourceGroups/<group>/"
        "providers/Microsoft.ManagedIdentity/userAssignedIdentities/<name>"
    ),
}

# pydantic's phrasing -> the kit's "expected ..." phrasing.
_MESSAGE_REWRITES: tuple[tuple[str, str], ...] = (
    (r"^Input should be (a valid|an?|greater|less|at|one of|'|finite)", r"\1"),
    (r"^Input should be ", ""),
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


# A number written with a unit (4GiB, 2h, 500m): each numeric setting counts one unit, named by
# its key's ending; a suffix this table knows is converted, so the message says what to write.
_WITH_UNIT = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]+)\s*$", re.ASCII)
# Binary suffixes only for sizes: G, GB (Kubernetes, SI) are 10^9 bytes, not a whole MiB count.
_UNITS: tuple[tuple[str, str, Mapping[str, float]], ...] = (
    (
        "MiB",
        "counts MiB",
        {"Ki": 1 / 1024, "KiB": 1 / 1024, "Mi": 1, "MiB": 1, "Gi": 1024, "GiB": 1024},
    ),
    (
        "Seconds",
        "counts seconds",
        {
            **{s: 1 for s in ("s", "sec", "secs", "second", "seconds")},
            **{s: 60 for s in ("m", "min", "mins", "minute", "minutes")},
            **{s: 3600 for s in ("h", "hr", "hrs", "hour", "hours")},
            **{s: 86400 for s in ("d", "day", "days")},
        },
    ),
    ("Days", "counts days", {"d": 1, "day": 1, "days": 1, "w": 7, "week": 7, "weeks": 7}),
    ("vcpu", "counts vCPU", {"m": 1 / 1000, "vcpu": 1, "vCPU": 1, "cpu": 1, "core": 1}),
    ("Port", "is a port number", {}),
)


def _unit_hint(key: str, value: object) -> str:
    """For text that is a number with a unit given to a numeric setting, what to write
    instead: the setting's unit (from its key's ending) and, when the suffix converts to a
    whole amount of it (a vCPU count may be a fraction), the number; ``""`` otherwise."""
    if not isinstance(value, str) or (match := _WITH_UNIT.match(value)) is None:
        return ""
    name = key.rsplit(".", 1)[-1]
    number, suffix = match.groups()
    for ending, says, factors in _UNITS:
        if name.endswith(ending):
            hint = f"; {name} {says}, written without a unit"
            if suffix in factors:
                amount = float(number) * factors[suffix]
                if ending == "vcpu" or amount.is_integer():
                    hint += f": {value.strip()} is {plain_number(amount)}"
            return hint
    return f"; {name} is a plain number, written without a unit"


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
        value = source.shown(".".join(str(p) for p in (*base, *loc)), error.get("input"))
        cause = (error.get("ctx") or {}).get("error")
        if isinstance(cause, FieldError):
            problems.extend(
                Problem(key + each.suffix, each.value, each.expected)
                for each in (cause, *cause.also)
            )
        elif error["type"] == "extra_forbidden":
            parent = _model_at(model, loc[:-1])
            known = _known_keys(parent) if parent else []
            home, showable = _misplaced(str(loc[-1]), key)
            hint = (
                _dotted_hint((*base, *loc[:-1]), str(loc[-1]), known)
                or home
                or did_you_mean(str(loc[-1]), known)
            )
            # A misspelt key may hold a secret (authTokne: ...): never echo its value; a key
            # that is only misplaced shows it when no home of it is a secret.
            problems.append(
                Problem(
                    key,
                    value if showable else NOT_SHOWN,
                    f"no such key here{hint}; known keys: {', '.join(known)}"
                    if home
                    else f"no such key{hint}; known keys: {', '.join(known)}",
                )
            )
        elif error["type"] == "string_pattern_mismatch":
            pattern = str((error.get("ctx") or {}).get("pattern", ""))
            problems.append(Problem(key, value, PATTERN_WORDS.get(pattern, "text of another form")))
        elif error["type"] == "missing":
            dotted = ".".join(str(p) for p in (*base, *loc))
            written = (
                f"; the stack has a key literally named {dotted!r} instead"
                + _dotted_hint((), dotted, (str(base[0]),))
                if dotted in source.values
                else ""
            )
            parent = _model_at(model, loc[:-1])
            if (
                parent is not None
                and issubclass(parent, TargetSettings)
                and str(loc[-1]) in parent.secret_keys()
            ):
                written += (
                    f"; it is a secret: pulumi config set --secret --path '{NAMESPACE}:{dotted}' "
                    "<value> (offline, a secure: placeholder as in docs/examples/ renders as an "
                    "unknown secret)"
                )
            problems.append(Problem(key, MISSING, f"a value (this key is required){written}"))
        else:
            hint = (
                _unit_hint(key, error.get("input"))
                if error["type"] in ("int_type", "float_type", "int_parsing", "float_parsing")
                else ""
            )
            problems.append(Problem(key, value, _expected_text(error["msg"]) + hint))
    return problems


def _misplaced_secrets(source: ConfigSource, path: str, expected: str) -> list[Problem]:
    """One problem per secret path holding ``path``'s value or part of it (``secrets_at``), for
    a setting that is no credential: its value is never shown (under ``pulumi up`` it is the
    decrypted text) and must not reach a validator whose sentence would quote it.
    ``expected`` may name the secret's full key as ``{key}``."""
    return [
        Problem(key, REDACTED, expected.format(key=key))
        for key in (f"{NAMESPACE}:{secret}" for secret in source.secrets_at(path))
    ]


# Text whose spaces and line breaks are part of its meaning: a sandbox's command and arguments,
# and a policy document (a YAML block scalar ends in a line break).
_PADDING_KEPT = frozenset({"command", "args", "executionRolePolicy"})


def _padded_text(value: Any, parts: tuple[str | int, ...], source: ConfigSource) -> list[Problem]:
    """One problem per text value below ``parts`` that starts or ends with white space (a
    trailing line break, a leading space): every setting would otherwise keep it and render it
    (an image reference, a URL handed to a launcher), or a parser strip it unseen. Secrets are
    left to their own checks: their text is never shown."""
    path = ".".join(str(p) for p in parts).replace(".[", "[")
    if isinstance(value, dict):
        return [
            problem
            for key, item in value.items()
            if key not in _PADDING_KEPT
            for problem in _padded_text(item, (*parts, str(key)), source)
        ]
    if isinstance(value, list):
        return [p for i, item in enumerate(value) for p in _padded_text(item, (*parts, i), source)]
    if isinstance(value, str) and value != value.strip() and not source.is_secret(path):
        fix = f"write {value.strip()!r}" if value.strip() else "this is white space only"
        return [
            Problem(
                _key(*parts),
                value,
                f"text without leading or trailing spaces or line breaks: {fix}",
            )
        ]
    return []


def _without_padded(problems: list[Problem], padded: list[Problem]) -> list[Problem]:
    """``padded`` and the other ``problems``: a padded value is named once, for its padding."""
    keys = {p.key for p in padded}
    return padded + [p for p in problems if p.key not in keys]


def _validate_profile(source: ConfigSource) -> tuple[SandboxProfile | None, list[Problem]]:
    secrets = _misplaced_secrets(
        source,
        "profile",
        "plain text: the profile holds no credentials (egress entries, limits, pool sizes and "
        "audit settings are not secrets); run pulumi config set --path '{key}' <value> without "
        "--secret",
    )
    if secrets:
        return None, secrets
    raw = source.values.get("profile", {})
    if not isinstance(raw, dict):
        return None, [Problem(PROFILE_KEY, raw, "a mapping with egress, limits, pool, audit")]
    padded = _padded_text(raw, ("profile",), source)
    try:
        profile = SandboxProfile.model_validate(raw)
    except ValidationError as exc:
        return None, _without_padded(_problems(exc, SandboxProfile, ("profile",), source), padded)
    return (None, padded) if padded else (profile, [])


def _wrap_secrets(
    name: str, model: type[TargetSettings], raw: dict[str, Any], source: ConfigSource
) -> tuple[dict[str, Any], list[Problem]]:
    problems: list[Problem] = []
    secret_keys = model.secret_keys()
    allowed = (
        f"only {', '.join(sorted(secret_keys))} may be secrets"
        if secret_keys
        else f"no setting of {name} is a secret"
    )
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
        elif key in _known_keys(model):
            problems += _misplaced_secrets(source, path, f"plain text; {allowed}")
    return wrapped, problems


def _validate_settings(
    name: str, spec: TargetSpec[Any, Any], source: ConfigSource
) -> tuple[TargetSettings | None, list[Problem]]:
    raw = source.values.get(name, {})
    if not isinstance(raw, dict):
        return None, [Problem(_key(name), source.shown(name, raw), "a mapping of target settings")]
    model = spec.settings_model
    wrapped, problems = _wrap_secrets(name, model, raw, source)
    padded = _padded_text(raw, (name,), source)
    try:
        settings = model.model_validate(wrapped)
    except ValidationError as exc:
        # Every problem in one run: the other keys' too, never one about a refused secret's
        # setting, a part of it or what holds it (its value would be quoted).
        reported = {p.key for p in problems}
        found = _problems(exc, model, (name,), source)
        return None, problems + _without_padded(
            [
                p
                for p in found
                if not any(p.key == r or _below(p.key, r) or _below(r, p.key) for r in reported)
            ],
            padded,
        )
    problems += padded
    return (None, problems) if problems else (settings, [])


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


def _unenforced_when_set(
    field_path: str, settings: Mapping[str, TargetSettings], stack: str
) -> list[str]:
    """For each target that enforces ``field_path`` nowhere, the acknowledgement setting the
    field explicitly also needs there (``_check_enforcement`` refuses it without one).

    Where a field is enforced does not depend on the profile's values, so the targets' own
    enforcement maps are read with the default profile (a target whose plan refuses it is
    skipped)."""
    notes = []
    profile = SandboxProfile()
    for name, target_settings in settings.items():
        spec = get_target(name)
        try:
            plan = spec.plan(profile, target_settings, KitContext(stack, "dev", name))
        except ConfigError:
            continue
        entry = spec.enforcement(profile, target_settings, plan)[field_path]
        if entry.kind == "none" and field_path not in target_settings.unenforced:
            notes.append(
                f"; on {name} also acknowledge it with {NAMESPACE}:{name}.unenforced: "
                f"[{field_path}] ({entry.where})"
            )
    return notes


def _with_acknowledgements(
    problems: list[Problem], settings: Mapping[str, TargetSettings], stack: str
) -> list[Problem]:
    """Profile problems whose fix is setting a default explicitly (``UNSET_NOTE``), with what
    that fix needs on each listed target, so one run names the whole fix."""
    prefix = f"{PROFILE_KEY}."
    result = []
    for problem in problems:
        field_path = problem.key.removeprefix(prefix)
        notes = (
            _unenforced_when_set(field_path, settings, stack)
            if UNSET_NOTE in problem.expected and field_path in PROFILE_FIELDS
            else []
        )
        result.append(Problem(problem.key, problem.value, problem.expected + "".join(notes)))
    return result


def _check_caps(name: str, spec: TargetSpec[Any, Any], profile: SandboxProfile) -> list[Problem]:
    problems: list[Problem] = []
    for cap in spec.caps:
        value = profile.value_of(cap.field)
        assert isinstance(value, int | float)
        if not cap.admits(value):
            # A size in GiB written where MiB are counted (memoryMiB: 4) names the MiB to write.
            unit = (
                f"; {cap.field.rsplit('.', 1)[-1]} counts MiB: {plain_number(value)} GiB is "
                f"{plain_number(value * 1024)}"
                if cap.field.endswith("MiB") and cap.admits(value * 1024)
                else ""
            )
            problems.append(
                Problem(
                    _key("profile", *cap.field.split(".")),
                    value,
                    f"{cap.describe()} for target {name} (source: {cap.source}){unit}",
                )
            )
    return problems


def _validate_targets(source: ConfigSource) -> tuple[tuple[str, ...], list[Problem]]:
    raw = source.values.get("targets", MISSING)
    known = tuple(TARGET_MODULES)
    if not isinstance(raw, list) or not raw:
        return (), [Problem(_key("targets"), raw, f"a non-empty list from {', '.join(known)}")]
    problems = [
        Problem(_key("targets", i), t, f"one of {', '.join(known)}{did_you_mean(str(t), known)}")
        for i, t in enumerate(raw)
        if not (isinstance(t, str) and t in TARGET_MODULES)
    ]
    if len(set(map(str, raw))) != len(raw):
        problems.append(Problem(_key("targets"), raw, "each target listed once"))
    return tuple(t for t in raw if isinstance(t, str)), problems


def load_stack(
    source: ConfigSource, stack: str, expected_environment: str | None = None
) -> StackSpec:
    """Validate the whole ``sandboxkit:*`` config of a stack.

    Checks, and reports together: unknown keys (with the near name), wrong types and ranges,
    profile consistency, target names, secrets given in plain text, explicit profile fields a
    target enforces nowhere (unless acknowledged), values beyond a target's caps, and egress a
    target cannot enforce.

    Args:
        source: the stack's ``sandboxkit:*`` config.
        stack: the stack name.
        expected_environment: the environment the organisation gives the stack
            (``project.stack_environment``); a different ``sandboxkit:environment`` is refused.

    Raises:
        ConfigError: naming each bad key, its value and what is expected.
    """
    problems: list[Problem] = []
    for key in source.values:
        if key not in _TOP_LEVEL and key not in TARGET_MODULES:
            known = (*_TOP_LEVEL, *TARGET_MODULES)
            home, showable = _misplaced(key, _key(key))
            hint = _dotted_hint((), key, known) or home or did_you_mean(key, known)
            shown = source.shown(key, source.values[key]) if showable else NOT_SHOWN
            here = " here" if home else ""
            problems.append(
                Problem(
                    _key(key), shown, f"no such key{here}{hint}; known keys: {', '.join(known)}"
                )
            )
    environment = source.values.get("environment", MISSING)
    if environment not in ENVIRONMENTS:
        problems.append(
            Problem(_key("environment"), environment, f"one of {', '.join(ENVIRONMENTS)}")
        )
    elif expected_environment is not None and environment != expected_environment:
        problems.append(
            Problem(
                _key("environment"),
                environment,
                f"{expected_environment}: the environment sandboxkit.yaml gives stack {stack!r} "
                "(the gate's strictness is the organisation's choice, not the stack file's; a "
                f"stack no pattern matches is prod); to make it {environment}, add "
                f"'{stack}: {environment}' first under environments: in sandboxkit.yaml (its "
                "code owners review it; the first matching pattern wins), or write "
                f"sandboxkit:environment: {expected_environment}",
            )
        )
    targets, target_problems = _validate_targets(source)
    problems += target_problems
    after_targets = len(problems)
    profile, profile_problems = _validate_profile(source)
    settings: dict[str, TargetSettings] = {}
    plans: dict[str, Any] = {}
    enforcement: dict[str, dict[str, Enforcement]] = {}
    for name in (t for t in targets if t in TARGET_MODULES):
        spec = get_target(name)
        target_settings, settings_problems = _validate_settings(name, spec, source)
        problems += settings_problems
        if target_settings is None:
            continue
        settings[name] = target_settings
        if profile is None:
            continue
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
        # Every problem in one run: a field the target enforces nowhere is reported beside a
        # refusal of the plan, not after it is fixed.
        enforcement[name] = spec.enforcement(profile, target_settings, plans.get(name))
        problems += _check_enforcement(name, profile, target_settings, enforcement[name])
    # In the order they were found; the profile's now that every target's settings are known.
    problems[after_targets:after_targets] = _with_acknowledgements(
        profile_problems, settings, stack
    )
    if problems:
        raise ConfigError(*problems)
    assert profile is not None and isinstance(environment, str)
    return StackSpec(stack, environment, targets, profile, settings, plans, enforcement)


def _at_or_below(key: str, paths: Iterable[str]) -> bool:
    return any(key == p or key.startswith((f"{p}.", f"{p}[")) for p in paths)


def stack_source(project_dir: Path, stack: str) -> ConfigSource:
    """``read_stack_file`` on the stack file of ``stack``; when the reader refuses the file but
    what it read is usable (a key given twice, a YAML 1.1 scalar, ...), the refusal also holds
    ``load_stack``'s problems with what it read, except those at or below a key the reader
    already names: every problem of the file in one run.

    Raises:
        ConfigError: a missing stack file (naming ``--stack``), or the problems above.
    """
    path = existing_stack_file(project_dir, stack)
    try:
        return read_stack_file(path, project_name(project_dir))
    except StackFileError as exc:
        problems = list(exc.problems)
        if exc.values is not None:
            try:
                load_stack(_source(exc.values), stack, stack_environment(project_dir, stack))
            except ConfigError as more:
                problems += [p for p in more.problems if not _at_or_below(p.key, exc.paths)]
        raise ConfigError(*problems) from None


def load_stack_file(project_dir: Path, stack: str) -> StackSpec:
    """``load_stack`` on the stack file of ``stack`` (no secret is decrypted).

    Raises:
        ConfigError: a missing stack file (naming ``--stack``), or bad config (``stack_source``).
    """
    return load_stack(
        stack_source(project_dir, stack), stack, stack_environment(project_dir, stack)
    )
