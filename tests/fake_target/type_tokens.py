"""The ``flyio`` fake target's resource types, stated once (as every target's are)."""

from __future__ import annotations

from sandboxkit.type_tokens import TypeToken

MACHINE = TypeToken("flyio:index/machine:Machine")
