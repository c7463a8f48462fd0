"""Errors for bad input: each names the config key, the value and what is expected."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import yaml

from sandboxkit.credentials import redacted

# Shown instead of any value read from a secret path, so an error message never leaks one.
REDACTED = "[secret]"
# Shown for values of unknown keys, which may be secrets under a misspelt name.
NOT_SHOWN = "[value not shown]"


class _Missing:
    """The value of a key the stack does not set (``None`` is a YAML ``null`` it does set)."""

    def __repr__(self) -> str:
        return "(missing)"


MISSING: Any = _Missing()
"""``Problem.value`` of a key that is absent; shown as ``(missing)``."""


def _plain(value: object) -> object:
    """``value`` as YAML can write it, each string redacted (``credentials.redacted``)."""
    if isinstance(value, str):
        return redacted(value)
    if isinstance(value, Mapping):
        return {str(_plain(k)): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float):
        return value
    return redacted(str(value))


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the choice closest to a misspelt ``name`` (difflib ratio at
    least 0.6), else ``""``: appended to a problem's expected text."""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def shown_value(value: object) -> str:
    """A value as a problem message prints it: in YAML spelling (``true``, ``null``,
    ``{a: b}``, ``[x, y]``), text in quotes (``'fly'``), ``(missing)`` for ``MISSING``, and
    any credential-shaped text redacted (a URL's userinfo as ``***``)."""
    if value is MISSING:
        return "(missing)"
    plain = _plain(value)
    if isinstance(plain, str):
        return repr(plain)
    text = yaml.safe_dump(plain, default_flow_style=True, width=1 << 30, sort_keys=False)
    return text.removesuffix("\n").removesuffix("\n...").strip()


@dataclass(frozen=True)
class Problem:
    """One bad input.

    Attributes:
        key: the full config key path, e.g. ``sandboxkit:profile.limits.vcpu``.
        value: the offending value as given (``REDACTED`` for secrets, ``MISSING`` when the key
            is absent, ``None`` for a YAML ``null``); printed by ``shown_value``.
        expected: what would be accepted, as a sentence fragment.
    """

    key: str
    value: object
    expected: str

    def __str__(self) -> str:
        return f"{self.key}: got {shown_value(self.value)}; expected {self.expected}"


class ConfigError(Exception):
    """Stack configuration that the kit refuses. The CLI and the program exit 2 on it.

    Args:
        problems: one or more ``Problem``; the message lists each on its own line.
    """

    def __init__(self, *problems: Problem) -> None:
        if not problems:
            raise ValueError("ConfigError needs at least one Problem")
        self.problems = tuple(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    @property
    def keys(self) -> tuple[str, ...]:
        """The config key paths named by the problems, in order."""
        return tuple(p.key for p in self.problems)


class FieldError(ValueError):
    """Raised inside model validators to point at one field rather than the whole section.

    Args:
        suffix: appended to the validator's location, e.g. ``".ready"`` or ``"[1]"``.
        value: the offending value.
        expected: what would be accepted.
        also: further errors raised together with this one (see ``first_of``).
    """

    def __init__(
        self, suffix: str, value: object, expected: str, also: tuple[FieldError, ...] = ()
    ) -> None:
        super().__init__(expected)
        self.suffix = suffix
        self.value = value
        self.expected = expected
        self.also = also

    @classmethod
    def first_of(cls, errors: list[FieldError]) -> FieldError:
        """One error to raise that carries the others, so every bad entry gets reported."""
        return cls(errors[0].suffix, errors[0].value, errors[0].expected, tuple(errors[1:]))


@dataclass(frozen=True)
class MissingTool:
    """One thing the kit runs that this machine lacks, with the command that installs it.

    Attributes:
        what: what is missing and where it was looked for, e.g. ``checkov (not found at
            .venv-checkov/bin/checkov)``.
        install: one shell command, run from the project folder, that installs it.
    """

    what: str
    install: str

    def sentence(self) -> str:
        """``<what>: run `<install>` ``, the one-line message of this tool alone."""
        return f"{self.what}: run `{self.install}`"


class PrerequisiteError(RuntimeError):
    """Something the kit runs to judge a stack is not installed on this machine (a tool, a
    package folder); the message names it and the command that installs it. The CLI exits 2
    on it with that one line: the fix is on the machine, not in the kit or the stack."""
