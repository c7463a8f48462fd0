"""Plausible cloud outputs for the offline render: ids, ARNs, URLs a real provider would return.

``CloudMocks.new_resource`` returns the resource's inputs plus the attributes the resource's
kind declares (``ResourceKind.mock_outputs`` in the target's ``catalog.py``), so ``.apply``
callbacks and stack outputs see realistic values.
"""

from __future__ import annotations

from typing import Any

from pulumi.runtime import MockCallArgs, MockResourceArgs, Mocks

from sandboxkit.catalog import all_calls, all_kinds, kind_of, mock_hash


class CloudMocks(Mocks):
    """Pulumi mocks returning inputs plus plausible provider-computed attributes."""

    def __init__(self) -> None:
        self._kinds = [kind for kind in all_kinds() if kind.mock_outputs is not None]
        self._calls = {call.token: call for call in all_calls()}

    def new_resource(self, args: MockResourceArgs) -> tuple[str, dict[str, Any]]:
        """Return ``(id, state)``; the id is stable for a given type and name (a rule's ``id``
        when it gives one)."""
        resource_id = f"{args.name}-{mock_hash(args.typ + args.name)}"
        state = dict(args.inputs)
        kind = kind_of(args.typ, self._kinds)
        if kind is not None and kind.mock_outputs is not None:
            state.update(kind.mock_outputs(args, resource_id))
        # A rule that knows the provider's id form (Azure resource ids) supplies it.
        return str(state.get("id", resource_id)), state

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """Invokes return their arguments, plus the declared ``MockCall``'s result."""
        call = self._calls.get(args.token)
        # An empty failure list, not None: Pulumi's mock monitor iterates it.
        return {**dict(args.args), **(call.result(args) if call else {})}, []
