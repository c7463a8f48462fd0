"""What an ``azure-sessions`` render lets sessions reach, computed from its resources only.

``read_egress(resources)`` returns the target's ``EffectiveEgress``. A session pool's egress is
one switch, ``sessionNetworkConfiguration.status`` (``NETWORK_DOC``): ``EgressEnabled`` lets
session code reach the internet, so every address on every port, TCP and UDP (so QUIC) alike,
and every name; anything else
but an explicit ``EgressDisabled`` (an absent status, whose default Microsoft does not state, or
an unknown value) is read the same way, never as closed. ``EgressDisabled`` grants nothing.

Documented platform behaviour only (``platform-doc``): nothing of the kit runs in the path.
What Microsoft does not document, and this reader therefore assumes: that ``EgressDisabled``
also stops name resolution (no page says whether a session's DNS queries still leave); that
``EgressEnabled`` excludes no address (no page lists excluded ranges). See
docs/targets/azure-sessions.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from sandboxkit.azure.plan import SESSIONS_DOC
from sandboxkit.azure.type_tokens import SESSION_POOL
from sandboxkit.effective_egress import EffectiveEgress, Grant, ResourceView, udp_grants
from sandboxkit.type_tokens import of_type

TARGET = "azure-sessions"
DISABLED = "EgressDisabled"
NETWORK_DOC: Final = (
    f"{SESSIONS_DOC}: sessionNetworkConfiguration.status EgressEnabled lets code running in "
    "the session access the internet; EgressDisabled blocks outbound traffic (DNS assumed "
    "blocked too: not documented)"
)


def pool_status(pool: ResourceView) -> str | None:
    """The pool's ``sessionNetworkConfiguration.status`` as rendered, or ``None`` if absent."""
    status = pool.at("sessionNetworkConfiguration.status")
    return status if isinstance(status, str) else None


def read_egress(resources: Iterable[ResourceView]) -> EffectiveEgress:
    """The sessions' effective egress: every pool whose status is not ``EgressDisabled``
    opens every address, on TCP and UDP alike (the switch names no protocol), and resolves
    every name."""
    connect: list[Grant] = []
    resolve: list[Grant] = []
    # Any API version's token of the pool (TypeToken.matches) is the same resource.
    for pool in of_type(resources, SESSION_POOL):
        if pool_status(pool) == DISABLED:
            continue
        resource = f"{pool.type} {pool.name}"
        connect += [
            Grant(block, "exact", "any", "address", "platform-doc", NETWORK_DOC, resource)
            for block in ("0.0.0.0/0", "::/0")
        ]
        resolve.append(
            Grant("*", "any", "any", "query-name", "platform-doc", NETWORK_DOC, resource)
        )
    return EffectiveEgress(TARGET, tuple([*connect, *udp_grants(connect)]), tuple(resolve))
