"""Errors for bad input: each names the config key, the value and what is expected."""

from __future__ import annotations

from dataclasses import dataclass

# Shown instead of any value read from a secret path, so an error message never leaks one.
REDACTED = "[secret]"
# Shown for values of unknown keys, which may be secrets under a misspelt name.
NOT_SHOWN = "[value not shown]"


@dataclass(frozen=True)
class Problem:
    """One bad input.

    Attributes:
        key: the full config key path, e.g. ``sandboxkit:profile.limits.vcpu``.
        value: the offending value as given (``REDACTED`` for secrets, ``None`` when missing).
        expected: what would be accepted, as a sentence fragment.
    """

    key: str
    value: object
    expected: str

    def __str__(self) -> str:
        shown = "(missing)" if self.value is None else repr(self.value)
        return f"{self.key}: got {shown}; expected {self.expected}"


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


class PrerequisiteError(RuntimeError):
    """Something the kit runs to judge a stack is not installed on this machine (a tool, a
    package folder); the message names it and the command that installs it. The CLI exits 2
    on it with that one line: the fix is on the machine, not in the kit or the stack."""
