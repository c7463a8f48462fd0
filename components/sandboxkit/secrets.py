"""Secret config values: kept as Pulumi secrets from the stack file to the resource input."""

from __future__ import annotations

import pulumi

# Stands in for a secret that the offline render cannot decrypt. It only ever travels inside
# a Pulumi secret, so it prints as "[secret]" like the real value would.
UNKNOWN_SECRET = "sandboxkit-offline-unknown-secret"


class SecretValue:
    """A setting that must stay a Pulumi secret (declared ``secure:`` in the stack file).

    Args:
        value: the decrypted text under ``pulumi up``; ``UNKNOWN_SECRET`` in the offline render.

    Its ``repr`` never shows the value; read it only through ``output()``.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def length(self) -> int:
        """How many characters the value has (for minimum-length rules; never the value)."""
        return len(self._value)

    def output(self) -> pulumi.Output[str]:
        """The value as a Pulumi secret output."""
        return pulumi.Output.secret(self._value)

    def __repr__(self) -> str:
        return "SecretValue([secret])"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretValue) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)
