"""The sandbox-guard checks of what the azure-sessions target creates: the session pool, its
role assignments and its Log Analytics workspace."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from sandboxkit.guard import CheckContext, Handler, dig

SESSION_POOL = "azure-native:app:ContainerAppsSessionPool"


# --- SBX-NET-001 -------------------------------------------------------------------------------


def _pool_egress(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    status = dig(props, "sessionNetworkConfiguration.status")
    if status != "EgressDisabled":
        yield (
            f"Session pool {ctx.name} has sessionNetworkConfiguration.status {status}; set it "
            "to EgressDisabled (sandboxkit:profile.egress.mode deny): the pool cannot filter "
            "by host."
        )


HANDLERS = (Handler("SBX-NET-001", (SESSION_POOL,), _pool_egress),)
