"""How Cloud DNS answers a query from a network with a response policy, read from the rules.

The readers' model of the primitive, written from Cloud DNS's reference and not from what the
kit renders (``sandboxkit.gcp.response_policy`` decides that; the two meet only in tests):

- "Each DNS query subject to a Response Policy matches at most one ResponsePolicyRule, as
  identified by the dnsName field with the longest matching suffix"; selectors "may be
  wildcards or exact matches"
  (https://cloud.google.com/dns/docs/reference/rest/v1/responsePolicyRules). An exact selector
  matches its own name only; ``*.x.`` matches every name below ``x.``, never ``x.`` itself.
- ``localData`` answers the query "directly" and overrides private zones, the internet and
  internal DNS; ``behavior: bypassResponsePolicy`` lets "the query logic continue" (same page).
- A name the local data has no record of the asked type for is answered with no data (read
  from the same sentence: the local data overrides any other behaviour for the matched name).
- No matching rule, or a bypass: the query continues down the VPC resolution order to the
  internet (https://cloud.google.com/dns/docs/vpc-name-res-order).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

BYPASS_BEHAVIOR = "bypassResponsePolicy"


class Outcome(Enum):
    """What happens to one query.

    ``RESOLVED``: no rule answers it; it is resolved as usual, recursively through the internet
    (a name under an attacker's domain reaches the attacker's name server). ``LOCAL_DATA``: the
    policy answers with its own records of the asked type. ``NO_DATA``: the policy answers with
    no record of the asked type. Both of the last two stay inside Cloud DNS.
    """

    RESOLVED = "resolved"
    LOCAL_DATA = "local-data"
    NO_DATA = "no-data"


@dataclass(frozen=True)
class PolicyRule:
    """A response policy rule as rendered: its selector and what it does.

    Attributes:
        dns_name: the selector, lower case, with its trailing dot.
        bypass: ``behavior`` is ``bypassResponsePolicy``.
        records: record type -> rrdatas of its ``localData`` (empty for a bypass).
    """

    dns_name: str
    bypass: bool
    records: Mapping[str, tuple[str, ...]]

    @classmethod
    def from_inputs(cls, inputs: Mapping[str, Any]) -> PolicyRule:
        """Read a ``gcp:dns/responsePolicyRule:ResponsePolicyRule``'s wire-form inputs
        (``dnsName``, ``behavior``, ``localData.localDatas[].{type, rrdatas}``)."""
        records: dict[str, tuple[str, ...]] = {}
        for data in (inputs.get("localData") or {}).get("localDatas") or []:
            records[str(data.get("type", "")).upper()] = tuple(data.get("rrdatas") or ())
        return cls(
            dns_name=_fqdn(str(inputs.get("dnsName", ""))),
            bypass=inputs.get("behavior") == BYPASS_BEHAVIOR,
            records=records,
        )


def _fqdn(name: str) -> str:
    name = name.lower()
    return name if name.endswith(".") else f"{name}."


def _labels_matched(selector: str, qname: str) -> int | None:
    """How many labels of ``qname`` the selector matches, or ``None`` if it does not match.

    An exact selector matches all of ``qname``'s labels; ``*.x.`` matches the labels of ``x.``
    when ``qname`` lies strictly below ``x.``; ``*.`` matches every name but the root (0).
    """
    if selector.startswith("*."):
        base = selector[2:]
        if base == "":
            return 0 if qname != "." else None
        return base.count(".") if qname.endswith(f".{base}") else None
    return qname.count(".") if selector == qname else None


def matching_rule(rules: Iterable[PolicyRule], qname: str) -> PolicyRule | None:
    """The rule that answers ``qname``: the matching selector with the longest suffix.

    An exact selector always outranks a wildcard matching the same name, since a wildcard
    matches only names strictly below its base. Returns ``None`` when no selector matches.
    """
    name = _fqdn(qname)
    best: tuple[int, PolicyRule] | None = None
    for rule in rules:
        depth = _labels_matched(rule.dns_name, name)
        if depth is not None and (best is None or depth > best[0]):
            best = (depth, rule)
    return None if best is None else best[1]


def answer(rules: Iterable[PolicyRule], qname: str, qtype: str = "A") -> Outcome:
    """What a query for ``qname`` / ``qtype`` gets from a network with these rules."""
    rule = matching_rule(rules, qname)
    if rule is None or rule.bypass:
        return Outcome.RESOLVED
    return Outcome.LOCAL_DATA if rule.records.get(qtype.upper()) else Outcome.NO_DATA
