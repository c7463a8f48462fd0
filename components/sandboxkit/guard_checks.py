"""Violation sentences that several targets' policy handlers share, one section per policy.

What a policy says about more than one target's resources (a port beyond the allowed ones, an
allowlist entry that is not a specific public host, ...) is written once here, so every target
says it the same way. Each function yields full sentences and reads its policy's thresholds
through ``ctx.setting`` (the keys of that policy's config schema in the sandbox-guard pack).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Iterator, Sequence

from sandboxkit.addresses import non_public_reach
from sandboxkit.contract import EVERYWHERE
from sandboxkit.egress import parse_rule
from sandboxkit.guard import CheckContext, numbers

# --- SBX-NET-001: egress ports ------------------------------------------------------------------

# The ports one egress rule admits: (first, last), None for every port, or a port name (a
# named port, whose number the policy cannot know).
PortSpan = tuple[int, int] | str | None


def _beyond(spans: Sequence[PortSpan], ctx: CheckContext) -> list[str]:
    """The spans that reach a port outside the policy's ``allowedPorts``, as words."""
    allowed = {int(p) for p in ctx.setting("allowedPorts")}
    found = []
    for span in spans:
        if span is None:
            found.append("every port")
        elif isinstance(span, str):
            found.append(f"named port {span}")
        elif any(port not in allowed for port in range(span[0], span[1] + 1)):
            first, last = span
            found.append(f"port {first}" if first == last else f"ports {first}-{last}")
    return found


def ports_problem(what: str, spans: Sequence[PortSpan], ctx: CheckContext) -> Iterator[str]:
    """One sentence when egress rule ``what`` (e.g. ``Security group sg egress rule 0``)
    admits ``spans`` beyond SBX-NET-001's ``allowedPorts``; nothing when every span is allowed."""
    beyond = _beyond(spans, ctx)
    if beyond:
        yield (
            f"{what} admits egress on {', '.join(beyond)}, beyond ports "
            f"{numbers(ctx.setting('allowedPorts'))}; allow only hosts on those ports in "
            "sandboxkit:profile.egress.allow, or add the port to sbx-net-001's allowedPorts "
            "in the pack config."
        )


# --- SBX-NET-002: allowlist entries -------------------------------------------------------------


def network_of(cidr: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """The network of a CIDR or address text, or ``None`` if it is neither."""
    try:
        return ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return None


def non_public_overlap(cidr: str, excepted: Iterable[str] = ()) -> list[str]:
    """Non-public ranges that ``cidr`` reaches and ``excepted`` does not take out, each as
    ``block (registry name)``: the egress contract's judgement (``sandboxkit.addresses``)."""
    network = network_of(cidr)
    if network is None:
        return []
    holes = [n for n in map(network_of, excepted) if n is not None]
    parts = non_public_reach(network, holes)
    return list(dict.fromkeys(f"{part.row.network} ({part.row.name})" for part in parts))


def _entry_problem(entry: str) -> str | None:
    try:
        parse_rule(entry)
    except ValueError as exc:
        return str(exc)
    return None


def entries_problems(kind: str, name: str, entries: Sequence[str]) -> Iterator[str]:
    """A sentence for each allowlist entry (``host[:port]``, ``*.domain``) of ``kind`` ``name``
    that the kit's own allowlist model (``sandboxkit.egress.parse_rule``) refuses."""
    for entry in entries:
        problem = _entry_problem(entry)
        if problem:
            yield (
                f"{kind} {name} allows '{entry}': {problem}. Replace it with the exact "
                "public hosts sandboxes need."
            )


def cidr_problems(kind: str, name: str, cidr: str, excepted: Sequence[str]) -> Iterator[str]:
    """One sentence when ``cidr`` (less the ``excepted`` ranges) reaches a non-public range;
    destinations that mean everywhere are left to SBX-NET-001."""
    if cidr in EVERYWHERE:
        return  # SBX-NET-001 judges destinations that mean everything.
    reached = non_public_overlap(cidr, excepted)
    if reached:
        yield (
            f"{kind} {name} allows {cidr}, which reaches non-public range(s) "
            f"{', '.join(reached)}; allow only public host addresses."
        )


# --- SBX-IAM-002: guest-visible identities ------------------------------------------------------


def identity_allowed(ctx: CheckContext) -> bool:
    """Whether the resource is named in SBX-IAM-002's ``allowedGuestIdentities`` (an explicit,
    reviewed override)."""
    return ctx.name in ctx.setting("allowedGuestIdentities")


# --- SBX-SES-001..003: secrets named by fragments -------------------------------------------------


def matching(names: Sequence[str], fragments: Sequence[str]) -> list[str]:
    """The ``names`` that contain one of ``fragments`` (a policy's configured name fragments,
    e.g. ``WEBHOOK_SECRET``), case-insensitively."""
    return [n for n in names if any(p.upper() in n.upper() for p in fragments)]
