"""The Cloud DNS response policy that keeps a sandbox network's DNS inside the kit's boundary.

No SDK here: this module says which rules the policy holds; the component creates them.

Why a response policy: a sandbox that may connect nowhere can still send
``<data>.attacker.example`` to a recursive resolver, which carries the data to the attacker's
name server (a DNS tunnel). Firewall rules cannot stop it on Google Cloud: DNS goes to the
metadata server, which firewall rules never block
(https://cloud.google.com/firewall/docs/firewalls "Always allowed traffic"). A response policy
bound to the network answers before private zones, internal DNS and the internet
(https://cloud.google.com/dns/docs/vpc-name-res-order), so a catch-all rule that answers every
name with local data keeps unlisted queries from being recursed at all.

What Cloud DNS documents (https://cloud.google.com/dns/docs/reference/rest/v1/responsePolicyRules):
each query matches at most one rule, the one whose ``dnsName`` is the longest matching suffix;
``localData`` answers the query and overrides private zones, the internet and internal DNS;
``behavior: bypassResponsePolicy`` passes the query on to normal resolution. There is no
NXDOMAIN or REFUSED behaviour, so the catch-all answers with a TXT record that says why: an A
or AAAA query for an unlisted name gets no address (NOERROR, no data), and nothing leaves.

CNAME chains: from 2027-01-05 Cloud DNS evaluates the response policy again at every hop of a
CNAME chain (https://cloud.google.com/dns/docs/cnamechasing), so an allowed name whose answer
is a CNAME to an unlisted name stops resolving unless the chain's names are bypassed too; the
caller passes them in ``chain_names``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from sandboxkit.egress_contract import EgressRule

# Every name below the root: the catch-all. Public Terraform uses "*." as a catch-all response
# policy rule; no Google page read says so in words (see docs/targets/gcp-cloudrun.md).
CATCH_ALL: Final = "*."
CATCH_ALL_RULE: Final = "refuse-everything-else"
BYPASS: Final = "bypassResponsePolicy"
# The metadata server's name: client libraries fetch the launcher's credentials from
# http://metadata.google.internal, which the catch-all would otherwise answer. Resolving it
# gives no reach: the metadata server is always reachable by address.
METADATA_NAME: Final = "metadata.google.internal"
# What the catch-all answers: one TXT record (no address for A/AAAA queries), kept 5 minutes.
REFUSAL_TEXT: Final = "sandboxkit: this name is not in the stack's egress allowlist"
REFUSAL_TTL_SECONDS: Final = 300
# ruleName: the slug of the name, cut so the whole id stays a 63-character DNS label, plus a
# hash of the exact name so two names with the same slug never share a rule.
_MAX_RULE_NAME = 63
_HASH_LENGTH = 8


@dataclass(frozen=True, order=True)
class ResponseRule:
    """One rule of the sandbox network's response policy.

    Attributes:
        dns_name: the selector, fully qualified with a trailing dot (``pypi.org.``,
            ``*.pythonhosted.org.``, or ``*.`` for the catch-all).
        rule_name: the rule's id within the policy (a DNS label of at most 63 characters).
        bypass: ``True`` passes matching queries on to normal resolution
            (``behavior: bypassResponsePolicy``); ``False`` answers them with one TXT record,
            ``REFUSAL_TEXT``, and no address.
    """

    dns_name: str
    rule_name: str
    bypass: bool


def rule_name(dns_name: str) -> str:
    """The rule id for a bypass of ``dns_name``: ``allow-<slug>-<hash>``.

    The slug is the name's labels joined with hyphens (``*`` as ``any``), cut so the id fits 63
    characters; the hash is the first 8 hex digits of SHA-256 of the name, so ids are stable
    across runs and distinct for distinct names.
    """
    name = dns_name.removesuffix(".")
    digest = hashlib.sha256(name.encode()).hexdigest()[:_HASH_LENGTH]
    slug = name.replace("*", "any").replace(".", "-")
    room = _MAX_RULE_NAME - len("allow--") - _HASH_LENGTH
    return f"allow-{slug[:room].rstrip('-')}-{digest}"


def _selector(rule: EgressRule) -> str:
    return f"*.{rule.host}." if rule.kind == "wildcard" else f"{rule.host}."


def response_rules(
    mode: str, rules: Iterable[EgressRule], chain_names: Iterable[str] = ()
) -> tuple[ResponseRule, ...]:
    """The response policy's rules for an egress mode, sorted by selector; empty for ``open``.

    ``deny``: the catch-all and a bypass of ``METADATA_NAME``. ``allowlist``: those, plus a
    bypass per name or wildcard entry (``*.x`` bypasses ``*.x.``: every name below ``x``, not
    ``x``), and per name of ``chain_names`` (exact names the allowed names' CNAME chains pass
    through). IP entries need no DNS. A name listed on several ports is one rule.

    Args:
        mode: ``deny``, ``allowlist`` or ``open``.
        rules: the profile's allowlist entries (read only in ``allowlist``).
        chain_names: exact names without a trailing dot (read only in ``allowlist``).

    Raises:
        ValueError: for a mode other than the three.
    """
    if mode == "open":
        return ()
    if mode not in ("deny", "allowlist"):
        raise ValueError(f"egress mode {mode!r}: deny, allowlist or open")
    selectors = {f"{METADATA_NAME}."}
    if mode == "allowlist":
        selectors |= {_selector(rule) for rule in rules if rule.kind != "ip"}
        selectors |= {f"{name}." for name in chain_names}
    bypasses = [ResponseRule(name, rule_name(name), bypass=True) for name in selectors]
    return tuple(sorted([*bypasses, ResponseRule(CATCH_ALL, CATCH_ALL_RULE, bypass=False)]))
