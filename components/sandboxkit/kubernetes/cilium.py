"""Cilium's name-matching semantics, by Cilium version: DNS and ``toFQDNs`` patterns, TLS
``serverNames`` patterns, and the patterns the kit writes for its egress entries.

Sources (read for this module; see also /work/notes/k8s-egress.md):

- DNS ``matchPattern`` (``toFQDNs`` and ``rules.dns``): Cilium docs, policy language, "DNS
  based" (https://docs.cilium.io/en/stable/security/policy/language/#dns-based): ``*`` matches 0
  or more DNS characters except ``.``, so ``*.cilium.io`` matches ``sub.cilium.io`` but not
  ``cilium.io`` or ``sub.sub.cilium.io``; ``*`` alone matches every name. Source:
  ``pkg/fqdn/matchpattern/matchpattern.go``.
- ``**.`` as a leading prefix matches one or more whole labels, never the apex, from Cilium 1.19
  (cilium/cilium PR #43420, https://github.com/cilium/cilium/pull/43420; issue #22081). Earlier
  releases turn every ``*`` into "0 or more characters except ``.``", so ``**.x`` is ``*.x``.
- ``serverNames`` (TLS SNI, enforced by Cilium's Envoy without terminating TLS): exact names
  from Cilium 1.13 (PR #22398); leading ``*.`` (exactly one label) and ``**.`` (one or more
  labels), never the apex, from 1.18 (cilium/proxy PR #1242, cilium/cilium PR #38615); ``*``
  anywhere in a label as in DNS patterns from 1.19 (cilium/proxy PR #1698, cilium/cilium PR
  #43674). Requires Cilium's L7 proxy (Envoy): "TLS SNI policy enforcement requires L7 proxy
  enabled" (policy language, "Limit TLS Server Name Indication (SNI)").

Names are compared in lower case, without a trailing dot.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any, Final

from sandboxkit.egress_contract import EgressRule

CiliumVersion = tuple[int, int]

# First releases with each behaviour (sources in the module docstring).
SNI_EXACT: Final[CiliumVersion] = (1, 13)
SNI_PREFIX_WILDCARDS: Final[CiliumVersion] = (1, 18)
MULTI_LABEL_PATTERNS: Final[CiliumVersion] = (1, 19)
# The oldest release the kit renders for: it matches names at L7 (serverNames) from here on.
MINIMUM_VERSION: Final = SNI_EXACT

# ASCII digits only: int() reads other scripts' digits (1.\u0661\u0669 as 1.19).
_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.\d+)?(?:-[0-9A-Za-z.-]+)?$", re.ASCII)
# A character of a DNS label as Cilium's patterns see it (matchpattern.go allowedDNSCharsREGroup).
_CHAR = "[-a-z0-9_]"
_LABELS = rf"{_CHAR}+(?:\.{_CHAR}+)*"
_PATTERN_CHARS = re.compile(r"^[-a-z0-9_.*]+$")
# Plain HTTP: matched by the Host header (an L7 HTTP rule), since it carries no TLS SNI.
HTTP_PORT: Final = 80
# The annotation recording, on the kit's CiliumNetworkPolicy, the Cilium release its patterns
# were written for: the egress reader reads them with that release's semantics.
VERSION_ANNOTATION: Final = "sandboxkit/cilium-version"


def parse_version(text: str) -> CiliumVersion:
    """``(major, minor)`` of a Cilium version such as ``1.19``, ``1.18.4`` or ``v1.19.0-rc.1``.

    Raises:
        ValueError: for any other form.
    """
    match = _VERSION.match(text.strip())
    if match is None:
        raise ValueError(f"a Cilium version such as 1.19 or 1.18.4, not {text!r}")
    return int(match.group(1)), int(match.group(2))


def _name(text: str) -> str:
    return text.strip().lower().removesuffix(".")


def _stars_to_regex(pattern: str) -> str:
    return "".join(
        f"{_CHAR}*" if piece.startswith("*") else re.escape(piece)
        for piece in re.split(r"(\*+)", pattern)
        if piece
    )


def dns_pattern_regex(pattern: str, version: CiliumVersion) -> re.Pattern[str]:
    """The names a DNS ``matchPattern`` (``toFQDNs`` or ``rules.dns``) selects on ``version``.

    Raises:
        ValueError: for characters Cilium does not accept in a pattern.
    """
    text = _name(pattern)
    if not _PATTERN_CHARS.match(text or "*"):
        raise ValueError(f"matchPattern {pattern!r}: only a-z, 0-9, '-', '_', '.' and '*'")
    if set(text) <= {"*"}:
        # "*" alone (any run of stars) selects every name.
        return re.compile(rf"^{_LABELS}$")
    prefix, rest = "", text
    leading = len(text) - len(text.lstrip("*"))
    if version >= MULTI_LABEL_PATTERNS and leading >= 2 and text[leading:].startswith("."):
        prefix, rest = rf"{_LABELS}\.", text[leading + 1 :]
    return re.compile(f"^{prefix}{_stars_to_regex(rest)}$")


def dns_name_matches(selector: dict[str, str], name: str, version: CiliumVersion) -> bool:
    """Whether a ``{"matchName": ...}`` or ``{"matchPattern": ...}`` selector selects ``name``.

    Raises:
        ValueError: for a selector with neither key, or a bad pattern.
    """
    if "matchName" in selector:
        return _name(selector["matchName"]) == _name(name)
    if "matchPattern" in selector:
        return bool(dns_pattern_regex(selector["matchPattern"], version).match(_name(name)))
    raise ValueError(f"selector {selector!r}: matchName or matchPattern")


def server_name_matches(pattern: str, name: str, version: CiliumVersion) -> bool:
    """Whether a TLS ``serverNames`` entry admits the SNI ``name`` on ``version``.

    Raises:
        ValueError: on a version before ``SNI_EXACT`` (no SNI enforcement), or for characters
            Cilium does not accept.
    """
    if version < SNI_EXACT:
        raise ValueError(f"Cilium {version[0]}.{version[1]} does not enforce serverNames")
    text, sni = _name(pattern), _name(name)
    if "*" not in text:
        return text == sni
    if version >= MULTI_LABEL_PATTERNS:
        return bool(dns_pattern_regex(text, version).match(sni))
    if version < SNI_PREFIX_WILDCARDS:
        # The CRD admits no '*' before 1.18; an exact comparison is what Envoy would do.
        return text == sni
    if text.startswith("**."):
        return sni.endswith(text[2:])
    if text.startswith("*.") and "*" not in text[1:]:
        first, _, rest = sni.partition(".")
        return bool(first) and rest == text[2:]
    return False


def fqdn_selector(rule: EgressRule, version: CiliumVersion) -> dict[str, str]:
    """The ``toFQDNs`` / ``rules.dns`` selector meaning exactly the kit's entry on ``version``.

    Raises:
        ValueError: for an IP entry, or a wildcard on a release that cannot say "below at any
            depth" (before ``MULTI_LABEL_PATTERNS``).
    """
    if rule.kind == "name":
        return {"matchName": rule.host}
    if rule.kind == "wildcard":
        _require_multi_label(rule, version)
        return {"matchPattern": f"**.{rule.host}"}
    raise ValueError(f"{rule} is an IP entry: it needs no name selector")


def server_name(rule: EgressRule, version: CiliumVersion) -> str:
    """The ``serverNames`` entry meaning exactly the kit's entry on ``version``.

    Raises:
        ValueError: as ``fqdn_selector``.
    """
    selector = fqdn_selector(rule, version)
    return selector.get("matchName") or selector["matchPattern"]


def _require_multi_label(rule: EgressRule, version: CiliumVersion) -> None:
    if version < MULTI_LABEL_PATTERNS:
        raise ValueError(
            f"{rule.pattern} means every name below {rule.host} at any depth, which Cilium "
            f"{version[0]}.{version[1]} cannot say (its '*' is one label; '**.' is read as '*' "
            "before 1.19, cilium/cilium PR #43420)"
        )


def http_host(rule: EgressRule) -> str:
    """The L7 HTTP ``host`` regex admitting exactly the kit's entry (an optional ``:port`` as
    clients may send it): the name itself, or one or more labels below a wildcard's parent.

    Raises:
        ValueError: for an IP entry.
    """
    if rule.kind == "ip":
        raise ValueError(f"{rule} is an IP entry: it needs no host rule")
    below = rf"({_CHAR}+\.)+" if rule.kind == "wildcard" else ""
    return rf"^{below}{re.escape(rule.host)}(:{rule.port})?$"


def _unique(items: Iterable[dict[str, str]]) -> list[dict[str, str]]:
    return [json.loads(text) for text in sorted({json.dumps(item) for item in items})]


def name_egress(
    rules: Iterable[EgressRule], version: CiliumVersion, resolver: dict[str, Any]
) -> list[dict[str, Any]]:
    """CiliumNetworkPolicy egress rules for the allowlist's names on ``version``.

    The first rule sends DNS to the kit's resolver (``resolver``: an endpoint selector) through
    Cilium's DNS proxy, which answers a query for any other name REFUSED and learns the
    addresses ``toFQDNs`` selects. Then one rule per port: ``toFQDNs`` for the names on that
    port, matched again at L7 by Cilium's Envoy: TLS ``serverNames`` (exactly those names), or
    the HTTP ``host`` on port 80.

    Raises:
        ValueError: as ``fqdn_selector``.
    """
    by_port: dict[int, list[EgressRule]] = defaultdict(list)
    for rule in rules:
        if rule.kind != "ip":
            by_port[rule.port].append(rule)
    names = [rule for port_rules in by_port.values() for rule in port_rules]
    egress: list[dict[str, Any]] = [
        {
            "toEndpoints": [resolver],
            "toPorts": [
                {
                    "ports": [{"port": "53", "protocol": "UDP"}, {"port": "53", "protocol": "TCP"}],
                    "rules": {"dns": _unique(fqdn_selector(r, version) for r in names)},
                }
            ],
        }
    ]
    for port, port_rules in sorted(by_port.items()):
        to_port: dict[str, Any] = {"ports": [{"port": str(port), "protocol": "TCP"}]}
        if port == HTTP_PORT:
            to_port["rules"] = {
                "http": [{"host": h} for h in sorted({http_host(r) for r in port_rules})]
            }
        else:
            to_port["serverNames"] = sorted({server_name(r, version) for r in port_rules})
        egress.append(
            {
                "toFQDNs": _unique(fqdn_selector(r, version) for r in port_rules),
                "toPorts": [to_port],
            }
        )
    return egress
