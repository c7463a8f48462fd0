"""DNS names in the egress contract: their normal form, how they nest, and the kinds refused.

Normal form (``normalize_name``): lower case, no trailing dot, each internationalised label in
its A-label form (IDNA 2008 with UTS #46 mapping, from the ``idna`` library), so ``Bücher.de.``
and ``xn--bcher-kva.de`` are one name.

Kinds of name an entry may not be (``name_refusal``), each read by the allowlist parser, the
control-plane settings (they go through the same parser) and the policy pack:

- internal or metadata names (``boundary.INTERNAL_SUFFIXES``);
- names at or below a wildcard-DNS service (``data/wildcard-dns.txt``: ``nip.io`` and the like
  answer with the address written in the name, ``169.254.169.254.nip.io`` is the metadata
  server), and wildcards above one;
- wildcards at, above or below a shared-hosting domain where anyone can publish, and the exact
  path-style object-storage names (``data/shared-hosting.txt``: ``*.s3.amazonaws.com`` is every
  bucket anyone creates; ``storage.googleapis.com`` serves anyone's bucket by path);
- wildcards at, above or below a parent where anyone can create a child name
  (``data/open-child-names.txt``, one kind in four categories: cloud-assigned DNS labels such
  as ``*.cloudapp.azure.com``, request and webhook catchers such as ``webhook.site``,
  out-of-band testing services such as ``interact.sh``, shared app hosts such as
  ``modal.run``); exact names below a parent stay allowed;
- public DNS resolvers and DNS-over-HTTPS/TLS services, and cloud platform endpoints on
  public-looking addresses (``data/dns-and-platform-endpoints.txt``, ``channel_refusal``:
  ``8.8.8.8``, ``dns.google``, Azure's ``168.63.129.16`` ...), addresses and names alike, on
  any port: a resolver is a general DNS channel to anywhere, a platform endpoint serves the
  host, not the internet. The list is partial by nature; each target's resolution controls
  (sandbox DNS only through its own resolver) stop what it misses;
- wildcards over a public suffix, or over a name with a public suffix below it: the Public
  Suffix List, ICANN and private sections, as bundled with the ``publicsuffixlist`` package
  (``PSL_VERSION`` is the list's own VERSION line, read from the bundled file; the package is
  pinned by major version, so the list moves with its releases; nothing is downloaded at run
  time).

A name list is a first line only: any name can resolve to a private address (DNS rebinding).
Where the kit runs the resolver it also drops answers in ``boundary.RESOLVER_DROP_RANGES``.
"""

from __future__ import annotations

import fnmatch
import re
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Final, Literal

import idna
from publicsuffixlist import PSLFILE, PublicSuffixList

from sandboxkit.addresses import IPAddress, address_of, embedded_ipv4
from sandboxkit.boundary import INTERNAL_SUFFIXES

# RFC 1123 label: letters, digits and inner hyphens, 1 to 63 characters.
_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
# RFC 1035: a name is at most 253 characters in text form.
_MAX_NAME = 253
_SHAPE = (
    "a DNS name of letters, digits and hyphens (a wildcard only as a leading '*.'), "
    "or a public IP address"
)


_URL_HOST_SOURCE = "url.spec.whatwg.org, host parsing: the ends-in-a-number checker"


def _ipv4_number(part: str) -> int | None:
    """``part`` read as the WHATWG URL Standard's IPv4 number parser reads it (``0x``/``0X``
    hex, a bare ``0x`` being 0; octal after a leading ``0``; else decimal), ``None`` when it is
    not one."""
    digits, radix = part, 10
    if part[:2] in ("0x", "0X"):
        digits, radix = part[2:], 16
    elif len(part) > 1 and part.startswith("0"):
        digits, radix = part[1:], 8
    if not digits:
        return 0 if part else None
    if not all(digit in "0123456789abcdef"[:radix] for digit in digits.lower()):
        return None
    return int(digits, radix)


def numeric_name_refusal(name: str) -> str | None:
    """Why ``name`` (normal form) is no DNS name but an IPv4 address in another spelling, or
    ``None`` when its last label is not a number.

    The rule is the WHATWG URL Standard's "ends in a number" check (url.spec.whatwg.org, host
    parsing): a host whose last label is ASCII digits, or an IPv4 number (``0x``/``0X`` hex
    including a bare ``0x``, octal with a leading ``0``), is parsed as an IPv4 address, by
    URL parsers (``new URL`` in node and workerd) and by glibc's ``inet_aton`` alike:
    ``0xa9.0xfe.0xa9.0xfe`` is 169.254.169.254, ``127.1`` is 127.0.0.1. The message names the
    address when every label is a number in range, as those parsers read it.
    """
    labels = name.split(".")
    if _ipv4_number(labels[-1]) is None and not labels[-1].isdigit():
        return None
    numbers = [_ipv4_number(label) for label in labels]
    address = ""
    if len(numbers) <= 4 and all(n is not None for n in numbers):
        *high, low = [n for n in numbers if n is not None]
        if all(n < 256 for n in high) and low < 256 ** (5 - len(numbers)):
            value = sum(n << (8 * (3 - i)) for i, n in enumerate(high)) + low
            address = ".".join(str(value >> shift & 255) for shift in (24, 16, 8, 0))
    read_as = (
        f"read it as the IPv4 address {address}"
        if address
        else "read it as an IPv4 address (refusing it as one out of range)"
    )
    return (
        f"{name} is a numeric name: its last label is a number, so URL parsers and inet_aton "
        f"{read_as}, not as a DNS name ({_URL_HOST_SOURCE}); write the address as an IP entry "
        f"in dotted decimal{f' ({address})' if address else ''}, or a DNS name"
    )


def _invisible(character: str) -> str:
    code = f"U+{ord(character):04X} {unicodedata.name(character, 'format character')}"
    return (
        f"the name holds {code}, an invisible format character (Unicode category Cf); IDNA's "
        "UTS #46 mapping (unicode.org/reports/tr46, the one the idna library applies) deletes "
        "some such characters (U+200B, U+00AD, U+FEFF are 'ignored') and keeps others "
        "(U+200C, U+200D), so the name read would not be the name written; write the name "
        "without it, or its A-label (xn--...) where the character belongs to the name"
    )


def normalize_name(text: str) -> str:
    """``text`` in normal form (module docstring).

    Raises:
        ValueError: for a name that is not letters, digits and hyphens in labels of 1 to 63
            characters, 253 characters at most, once internationalised labels are A-labels;
            an A-label (``xn--``) that does not decode; a name holding an invisible format
            character (Unicode category Cf: U+200B, U+200D ...), refused before IDNA's
            UTS #46 mapping could drop or keep it; or a numeric name
            (``numeric_name_refusal``: what URL parsers read as an IPv4 address).
    """
    name = text.strip().lower().removesuffix(".")
    invisible = next((c for c in name if unicodedata.category(c) == "Cf"), None)
    if invisible is not None:
        raise ValueError(_invisible(invisible))
    if not name.isascii():
        try:
            name = idna.encode(name, uts46=True).decode("ascii")
        except idna.IDNAError as exc:
            raise ValueError(f"{_SHAPE} ({exc})") from None
    labels = name.split(".")
    if len(name) > _MAX_NAME or not all(_LABEL.match(label) for label in labels):
        raise ValueError(_SHAPE)
    for label in labels:
        if label.startswith("xn--"):
            try:
                idna.decode(label)
            except idna.IDNAError as exc:
                raise ValueError(f"{label} is not a valid A-label ({exc})") from None
    numeric = numeric_name_refusal(name)
    if numeric:
        raise ValueError(numeric)
    return name


def is_below(name: str, parent: str) -> bool:
    """Whether ``name`` is strictly below ``parent``, at any depth (both in normal form)."""
    return name.endswith(f".{parent}")


def is_at_or_below(name: str, parent: str) -> bool:
    """Whether ``name`` is ``parent`` or below it (both in normal form)."""
    return name == parent or is_below(name, parent)


# --- The kit's lists ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ListedDomain:
    """One line of a kit list (``data/shared-hosting.txt`` or ``data/wildcard-dns.txt``).

    Attributes:
        pattern: the domain; a label may hold ``*`` for any characters within that label.
        at: whether the name itself serves anyone's content (refused as an exact name too).
        source: the documentation of the naming scheme.
        what: what the domain is, for messages.
        category: the line's category in a list that has them (``data/open-child-names.txt``),
            else ``""``.
    """

    pattern: str
    at: bool
    source: str
    what: str
    category: str = ""

    def _label_match(self, labels: list[str], patterns: list[str]) -> bool:
        return all(fnmatch.fnmatchcase(lab, pat) for lab, pat in zip(labels, patterns, strict=True))

    def matches(self, name: str) -> bool:
        """Whether ``name`` is a name the pattern spells (``s3.eu-west-1.amazonaws.com``)."""
        labels, patterns = name.split("."), self.pattern.split(".")
        return len(labels) == len(patterns) and self._label_match(labels, patterns)

    def at_or_below(self, name: str) -> bool:
        """Whether ``name`` is a name the pattern spells, or below one."""
        labels, patterns = name.split("."), self.pattern.split(".")
        return len(labels) >= len(patterns) and self._label_match(
            labels[len(labels) - len(patterns) :], patterns
        )

    def above(self, name: str) -> bool:
        """Whether ``name`` is strictly above a name the pattern spells."""
        labels, patterns = name.split("."), self.pattern.split(".")
        return len(labels) < len(patterns) and self._label_match(
            labels, patterns[len(patterns) - len(labels) :]
        )


def _data_lines(filename: str, maxsplit: int) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) of each line of the packaged ``data/<filename>`` that is neither
    blank nor a ``#`` comment, split on whitespace at most ``maxsplit`` times."""
    text = resources.files("sandboxkit").joinpath("data", filename).read_text(encoding="utf-8")
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip() and not line.startswith("#"):
            yield number, line.split(maxsplit=maxsplit)


def _read_list(
    filename: str, scoped: bool, categories: tuple[str, ...] = ()
) -> tuple[ListedDomain, ...]:
    found = []
    for number, fields in _data_lines(filename, 2 + scoped + bool(categories)):
        category = fields.pop(2 if scoped else 1) if categories and len(fields) == 5 else ""
        if categories and category not in categories:
            raise ValueError(
                f"{filename}:{number}: category {category!r} is not one of {categories}"
            )
        if scoped:
            pattern, scope, source, what = fields
            if scope not in ("below", "at,below"):
                raise ValueError(f"{filename}:{number}: scope {scope!r} is not below or at,below")
        else:
            pattern, source, what = fields
            scope = "at,below"
        if not re.fullmatch(r"[a-z0-9*-]+(\.[a-z0-9*-]+)+", pattern) or "://" not in source:
            raise ValueError(f"{filename}:{number}: expected '<pattern> ... <source URL> <what>'")
        found.append(ListedDomain(pattern, scope == "at,below", source, what, category))
    return tuple(found)


@cache
def shared_hosting() -> tuple[ListedDomain, ...]:
    """``data/shared-hosting.txt``: domains where anyone can publish (object storage, static
    hosting, tunnels), each with its source.

    Raises:
        ValueError: for a malformed line (naming file and line).
    """
    return _read_list("shared-hosting.txt", scoped=True)


@cache
def wildcard_dns() -> tuple[ListedDomain, ...]:
    """``data/wildcard-dns.txt``: services whose names resolve to the address the name spells
    (or loopback), each with its source. Every line has ``at`` set.

    Raises:
        ValueError: for a malformed line (naming file and line).
    """
    return _read_list("wildcard-dns.txt", scoped=False)


OPEN_CHILD_CATEGORIES: Final[dict[str, str]] = {
    "cloud-label": "a cloud's shared domain where it assigns a DNS label to any customer's "
    "resource, pointing wherever that customer wants",
    "request-catcher": "a request and webhook catcher: anyone creates a name there and reads "
    "every request sent to it",
    "out-of-band": "an out-of-band testing service: its name servers answer any name below it "
    "and log every query, so a lookup alone carries data out",
    "app-host": "a shared application host or tunnel: anyone runs an app under it",
}
"""Category of ``data/open-child-names.txt`` -> what a parent of that category is."""


@cache
def open_child_names() -> tuple[ListedDomain, ...]:
    """``data/open-child-names.txt``: parents where anyone can create a child name, each with
    its category (``OPEN_CHILD_CATEGORIES``) and source.

    Raises:
        ValueError: for a malformed line (naming file and line).
    """
    return _read_list("open-child-names.txt", scoped=True, categories=tuple(OPEN_CHILD_CATEGORIES))


# --- DNS resolvers and platform endpoints -------------------------------------------------------

ChannelKind = Literal["platform", "dns"]
_CHANNEL_FILE = "dns-and-platform-endpoints.txt"
_CHANNEL_WHY: Final[dict[ChannelKind, str]] = {
    "platform": "a cloud platform's own endpoint on a public-looking address, serving the host "
    "(its agent, metadata or DNS), not the internet; sandboxes may reach public hosts only: "
    "list the hosts sandboxes need instead",
    "dns": "a public DNS resolver answers for any name, so it gives sandbox code a general DNS "
    "channel to anywhere, on any port (DNS, DNS over TLS or HTTPS); sandboxes resolve names only "
    "through their target's own resolver, which the kit sets and enforces: list the hosts "
    "sandboxes need instead",
}


@dataclass(frozen=True)
class ChannelEndpoint:
    """One line of ``data/dns-and-platform-endpoints.txt``.

    Attributes:
        host: the compressed address, or the name in normal form (it covers names below it).
        address: the address for an address line, ``None`` for a name.
        kind: ``platform`` or ``dns`` (the file's header says what each means).
        source: the provider's documentation of the endpoint.
        what: what the endpoint is, for messages.
    """

    host: str
    address: IPAddress | None
    kind: ChannelKind
    source: str
    what: str

    def covers(self, host: str, address: IPAddress | None, *, wildcard: bool) -> bool:
        """Whether an entry for ``host`` (normal form; ``x`` for ``*.x``; ``address`` its
        ``address_of``) reaches the endpoint: the address itself, a name at or below the
        endpoint's, or a wildcard above it."""
        if self.address is not None:
            return not wildcard and address == self.address
        return is_at_or_below(host, self.host) or (wildcard and is_below(self.host, host))


@cache
def channel_endpoints() -> tuple[ChannelEndpoint, ...]:
    """``data/dns-and-platform-endpoints.txt``: public DNS resolvers and platform endpoints.

    Raises:
        ValueError: for a malformed line (naming file and line).
    """
    found = []
    for number, fields in _data_lines(_CHANNEL_FILE, 3):
        kind = next((known for known in _CHANNEL_WHY if fields[1:2] == [known]), None)
        if len(fields) != 4 or kind is None or "://" not in fields[2]:
            raise ValueError(f"{_CHANNEL_FILE}:{number}: expected '<host> <kind> <URL> <what>'")
        host, _, source, what = fields
        address = address_of(host)
        found.append(
            ChannelEndpoint(
                address.compressed if address else normalize_name(host),
                address,
                kind,
                source,
                what,
            )
        )
    return tuple(found)


def channel_refusal(host: str, *, wildcard: bool = False) -> str | None:
    """Why an entry for ``host`` reaches a listed resolver or platform endpoint, or ``None``.

    Args:
        host: a compressed address, or a name in normal form (``x`` for ``*.x``).
        wildcard: whether the entry is ``*.host``.
    """
    address = address_of(host)
    # An IPv6 address is refused for every IPv4 address it may carry too (an ISATAP identifier
    # under a public prefix is public, yet reaches the resolver it spells).
    carried = embedded_ipv4(address) if address is not None else ()
    for endpoint in channel_endpoints():
        spelled = next(
            (a for a in carried if endpoint.covers(a.compressed, a, wildcard=wildcard)), None
        )
        if spelled is not None or endpoint.covers(host, address, wildcard=wildcard):
            pattern = f"*.{host}" if wildcard else host
            what = f"{endpoint.what} ({endpoint.source})"
            if spelled is not None:
                subject = f"is an IPv6 form of {endpoint.host}, {what}"
            elif pattern == endpoint.host:
                subject = f"is {what}"
            else:
                subject = f"reaches {endpoint.host}, {what}"
            return (
                f"{pattern} {subject}: {_CHANNEL_WHY[endpoint.kind]} (the kit's list of such "
                "endpoints is partial: each target's resolution and egress controls stop the rest)"
            )
    return None


# --- The Public Suffix List ----------------------------------------------------------------------


def _psl_version() -> str:
    with open(PSLFILE, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("// VERSION:"):
                return line.removeprefix("// VERSION:").strip()
    return "unknown"


PSL_VERSION: Final = _psl_version()


@cache
def _psl() -> PublicSuffixList:
    # The list bundled with the package (PSLFILE); PublicSuffixList() never downloads.
    return PublicSuffixList()


@cache
def _names_above_suffixes() -> frozenset[str]:
    # Every name strictly above a PSL rule (amazonaws.com for s3.amazonaws.com, any depth).
    found: set[str] = set()
    with open(PSLFILE, encoding="utf-8") as handle:
        for line in handle:
            rule = line.strip().split(" ")[0]
            if not rule or rule.startswith(("//", "!")):
                continue
            labels = normalize_name(rule.removeprefix("*.")).split(".")
            found.update(".".join(labels[i:]) for i in range(1, len(labels)))
    return frozenset(found)


def registrable_domain(name: str) -> str | None:
    """The registrable domain of ``name`` by the Public Suffix List (``files.pythonhosted.org``
    gives ``pythonhosted.org``), or ``None`` when ``name`` is itself a public suffix."""
    return _psl().privatesuffix(name)


# --- The refusals ------------------------------------------------------------------------------


def internal_name_reason(host: str) -> str | None:
    """Why ``host`` (normal form) is an internal or metadata name, or ``None`` when it is not."""
    if any(f".{host}".endswith(suffix) for suffix in INTERNAL_SUFFIXES):
        return (
            f"{host} is an internal or metadata name (.internal, .local, .svc, .goog ...); "
            "sandboxes may reach public hosts only"
        )
    return None


def _wildcard_dns(pattern: str, host: str, wildcard: bool) -> str | None:
    for listed in wildcard_dns():
        if not (listed.at_or_below(host) or (wildcard and listed.above(host))):
            continue
        where = (
            f"covers names of {listed.pattern}" if wildcard else f"is a name of {listed.pattern}"
        )
        return (
            f"{pattern} {where}, a wildcard-DNS service answering {listed.what} ({listed.source}); "
            "write the public IP address itself, or a name its owner runs"
        )
    return None


def _shared_hosting(pattern: str, host: str, wildcard: bool) -> str | None:
    # A domain the wildcard sits at or below names the refusal better than one it sits above.
    at_or_below = [d for d in shared_hosting() if d.at_or_below(host)]
    above = [d for d in shared_hosting() if d.above(host)]
    if wildcard and (at_or_below or above):
        listed = (at_or_below or above)[0]
        below = host if at_or_below else listed.pattern
        example = "" if "*" in below else f", e.g. my-name.{below}"
        return (
            f"{pattern} covers names anyone can publish: {listed.pattern} is shared hosting "
            f"({listed.what}; {listed.source}); list each exact name sandboxes need{example}"
        )
    path_style = [d for d in at_or_below if d.at and d.matches(host)]
    if not wildcard and path_style:
        listed = path_style[0]
        return (
            f"{host} serves anyone's content by path ({listed.what}; {listed.source}); "
            f"list the bucket's own name instead, e.g. my-bucket.{host}"
        )
    return None


def _open_child_names(pattern: str, host: str, wildcard: bool) -> str | None:
    listed = next(
        (d for d in open_child_names() if d.at_or_below(host) or (wildcard and d.above(host))),
        None,
    )
    if listed is None or not (wildcard or (listed.at and listed.matches(host))):
        return None
    example = "" if "*" in listed.pattern else f", e.g. my-name.{listed.pattern}"
    where = "covers names" if wildcard else "serves catchers"
    return (
        f"{pattern} {where} anyone can create: {listed.pattern} is "
        f"{OPEN_CHILD_CATEGORIES[listed.category]} ({listed.what}; {listed.source}); list each "
        f"exact name sandboxes need{example}, or the IP address of a host the stack's owner runs"
    )


def _public_suffix(pattern: str, host: str) -> str | None:
    if _psl().is_public(host):
        where = "is a public suffix"
    elif host in _names_above_suffixes():
        where = "has public suffixes below it"
    else:
        return None
    return (
        f"{pattern} covers names anyone can register: {host} {where} in the Public Suffix "
        f"List (version {PSL_VERSION}); list each exact name sandboxes need, or a wildcard "
        "over a domain one owner controls"
    )


def name_refusal(host: str, *, wildcard: bool) -> str | None:
    """Why an entry for ``host`` is refused, with what to write instead; ``None`` when it is not.

    Args:
        host: a name in normal form (for a wildcard ``*.x``, ``x``).
        wildcard: whether the entry is ``*.host``.

    Returns:
        The first refusal that applies, in this order: internal name, DNS resolver or platform
        endpoint, wildcard-DNS service, shared hosting, open child names, public suffix (module
        docstring); ``None`` for an acceptable entry.
    """
    pattern = f"*.{host}" if wildcard else host
    found = internal_name_reason(host) or channel_refusal(host, wildcard=wildcard)
    found = found or _wildcard_dns(pattern, host, wildcard)
    found = found or _shared_hosting(pattern, host, wildcard)
    found = found or _open_child_names(pattern, host, wildcard)
    if found is None and wildcard:
        found = _public_suffix(pattern, host)
    return found
