"""Plausible cloud outputs for the offline render: ids, ARNs, URLs a real provider would return.

``CloudMocks.new_resource`` returns the resource's inputs plus the attributes the resource's
kind declares (``ResourceKind.mock_outputs`` in the target's ``catalog.py``), so ``.apply``
callbacks and stack outputs see realistic values. Those values follow the stack's settings
(region, location, project) but are placeholders: ``CloudMocks.invented`` holds every text a
rule made up (ids, hashes, account numbers), so the render can say which outputs hold one.
"""

from __future__ import annotations

from typing import Any

from pulumi.runtime import MockCallArgs, MockResourceArgs, Mocks

from sandboxkit.catalog import ResourceArgs, all_calls, all_kinds, kind_of, mock_hash

_PROVIDER_PREFIX = "pulumi:providers:"


def _texts(value: Any) -> set[str]:
    if isinstance(value, dict):
        return set().union(*map(_texts, value.values())) if value else set()
    if isinstance(value, list | tuple):
        return set().union(*map(_texts, value)) if value else set()
    return {value} if isinstance(value, str) else set()


class CloudMocks(Mocks):
    """Pulumi mocks returning inputs plus plausible provider-computed attributes.

    Args:
        stack: the stack rendered; mock endpoints differ per stack as real ones do.

    Attributes:
        invented: texts the mock made up that no input holds (ids, ARNs, endpoints).
    """

    def __init__(self, stack: str = "") -> None:
        self._kinds = [kind for kind in all_kinds() if kind.mock_outputs is not None]
        self._calls = {call.token: call for call in all_calls()}
        self._stack = stack
        self._providers: dict[str, dict[str, Any]] = {}
        self.invented: set[str] = set()

    def new_resource(self, args: MockResourceArgs) -> tuple[str, dict[str, Any]]:
        """Return ``(id, state)``; the id is stable for a given type and name (a rule's ``id``
        when it gives one)."""
        resource_id = f"{args.name}-{mock_hash(args.typ + args.name)}"
        state = dict(args.inputs)
        kind = kind_of(args.typ, self._kinds)
        if kind is not None and kind.mock_outputs is not None:
            # A provider reference is "<urn>::<id>"; the id is the one returned below.
            provider = self._providers.get((args.provider or "").rpartition("::")[2], {})
            computed = kind.mock_outputs(ResourceArgs(args, provider, self._stack), resource_id)
            self.invented |= _texts(computed) - _texts(args.inputs)
            state.update(computed)
        # A rule that knows the provider's id form (Azure resource ids) supplies it.
        final_id = str(state.get("id", resource_id))
        if args.typ.startswith(_PROVIDER_PREFIX):
            self._providers[final_id] = dict(args.inputs)
        if args.custom:
            self.invented.add(final_id)
        return final_id, state

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """Invokes return their arguments, plus the declared ``MockCall``'s result."""
        call = self._calls.get(args.token)
        # An empty failure list, not None: Pulumi's mock monitor iterates it.
        return {**dict(args.args), **(call.result(args) if call else {})}, []
