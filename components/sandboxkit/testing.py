"""Helpers for testing components under the recording engine (used by the kit's own tests).

Example::

    with recording_engine("test") as engine:
        engine.run(lambda: AgentSandbox("kubernetes", args))
    template = one(engine.resources, SANDBOX_TEMPLATE_TYPE)
"""

from __future__ import annotations

from collections.abc import Iterable

from sandboxkit.render import RenderedResource


def of_type(resources: Iterable[RenderedResource], type_token: str) -> list[RenderedResource]:
    """The resources of one type token, in registration order."""
    return [r for r in resources if r.type == type_token]


def one(resources: Iterable[RenderedResource], type_token: str) -> RenderedResource:
    """The only resource of ``type_token``. Raises ``AssertionError`` unless exactly one."""
    found = of_type(resources, type_token)
    assert len(found) == 1, f"expected one {type_token}, found {[r.name for r in found]}"
    return found[0]


def named(resources: Iterable[RenderedResource], name: str) -> RenderedResource:
    """The resource with logical name ``name``. Raises ``AssertionError`` unless exactly one."""
    found = [r for r in resources if r.name == name]
    assert len(found) == 1, f"expected one resource named {name}, found {len(found)}"
    return found[0]
