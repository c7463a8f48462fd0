"""What a ``local`` sandbox may reach, read from its rendered ``EgressGatewayPolicy``.

The gateway decides every connection by ``EgressContract`` built from the policy's ``mode`` and
``allow`` (``local/gateway.py``), so the grants are the contract's rules read back: a name entry
is admitted by name at L7 (the gateway resolves the name itself, dials what it resolved and
requires the TLS server name or HTTP Host to be the name), an IP entry by address; the gateway
resolves exactly the names the contract may resolve. ``deny`` grants nothing: the sandbox's
namespace has loopback only. Every grant is the kit's own code, tested in tests/local. No UDP
grant in any mode: the sandbox's namespace holds loopback and the gateway's TCP listener only
(``tests/local/test_escapes.py`` sends DNS over UDP to a public resolver and is refused).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Literal

from sandboxkit.addresses import exclusion_blocks
from sandboxkit.effective_egress import EffectiveEgress, Grant, ResourceView, Scope, as_list
from sandboxkit.egress_contract import EgressRule, parse_rule
from sandboxkit.local.plan import TARGET
from sandboxkit.local.spec import GATEWAY_SOURCE
from sandboxkit.local.type_tokens import EGRESS_GATEWAY_POLICY


def _rule_grants(rule: EgressRule, resource: str) -> Iterator[tuple[str, Grant]]:
    port = frozenset({rule.port})
    if rule.kind == "ip":
        yield (
            "connect",
            Grant(rule.cidr, "exact", port, "address", "kit-code", GATEWAY_SOURCE, resource),
        )
        return
    scope: Scope = "below" if rule.kind == "wildcard" else "exact"
    yield "connect", Grant(rule.host, scope, port, "name-l7", "kit-code", GATEWAY_SOURCE, resource)
    yield (
        "resolve",
        Grant(rule.host, scope, "any", "query-name", "kit-code", GATEWAY_SOURCE, resource),
    )


def _open_grants(resource: str) -> Iterator[tuple[str, Grant]]:
    yield "connect", Grant("*", "any", "any", "name-l7", "kit-code", GATEWAY_SOURCE, resource)
    versions: tuple[tuple[str, Literal[4, 6]], ...] = (("0.0.0.0/0", 4), ("::/0", 6))
    for block, version in versions:
        excluded = tuple(str(n) for n in exclusion_blocks(version))
        yield (
            "connect",
            Grant(block, "exact", "any", "address", "kit-code", GATEWAY_SOURCE, resource, excluded),
        )
    yield "resolve", Grant("*", "any", "any", "query-name", "kit-code", GATEWAY_SOURCE, resource)


def read_egress(resources: Iterable[ResourceView]) -> EffectiveEgress:
    """The grants of every rendered ``EgressGatewayPolicy`` (module docstring).

    Raises:
        ValueError: for a policy whose mode is not ``deny``, ``allowlist`` or ``open``, or an
            entry the contract's parser refuses (the gateway would refuse to start on it).
    """
    connect: list[Grant] = []
    resolve: list[Grant] = []
    for view in resources:
        if not EGRESS_GATEWAY_POLICY.matches(view.type):
            continue
        resource = f"{view.type} {view.name}"
        mode = view.at("mode")
        if mode == "deny":
            continue
        if mode == "open":
            grants: Iterable[tuple[str, Grant]] = _open_grants(resource)
        elif mode == "allowlist":
            grants = [
                found
                for entry in as_list(view.at("allow"))
                for found in _rule_grants(parse_rule(str(entry)), resource)
            ]
        else:
            raise ValueError(f"{resource}: mode {mode!r} is not deny, allowlist or open")
        for kind, grant in grants:
            (connect if kind == "connect" else resolve).append(grant)
    return EffectiveEgress(TARGET, tuple(connect), tuple(resolve))
