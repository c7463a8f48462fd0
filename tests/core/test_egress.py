"""The allowlist entry parser: what it accepts, how it normalises, and what it refuses."""

from __future__ import annotations

import ipaddress
import re
import socket

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sandboxkit.addresses import judge_address
from sandboxkit.dns_names import channel_refusal
from sandboxkit.egress_contract import NAMELESS_PORTS, EgressRule, destination_of, parse_rule


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("pypi.org", EgressRule("pypi.org", 443, "name")),
        ("PyPI.org.:8443", EgressRule("pypi.org", 8443, "name")),
        ("*.pythonhosted.org:443", EgressRule("pythonhosted.org", 443, "wildcard")),
        ("*.PythonHosted.ORG.:443", EgressRule("pythonhosted.org", 443, "wildcard")),
        ("140.82.112.3:8080", EgressRule("140.82.112.3", 8080, "ip")),
        ("[2a04:4e42::223]:853", EgressRule("2a04:4e42::223", 853, "ip")),
        ("2a04:4e42::223", EgressRule("2a04:4e42::223", 443, "ip")),
        # IDNs compare in their A-label form: the Unicode and the A-label spelling are one rule.
        ("Bücher.de", EgressRule("xn--bcher-kva.de", 443, "name")),
        ("xn--bcher-kva.de", EgressRule("xn--bcher-kva.de", 443, "name")),
        ("*.bücher.de:8443", EgressRule("xn--bcher-kva.de", 8443, "wildcard")),
        # Exact names below shared hosting name one tenant: accepted.
        (
            "my-bucket.s3.eu-west-1.amazonaws.com",
            EgressRule("my-bucket.s3.eu-west-1.amazonaws.com", 443, "name"),
        ),
        (
            "my-bucket.storage.googleapis.com",
            EgressRule("my-bucket.storage.googleapis.com", 443, "name"),
        ),
        ("example.github.io", EgressRule("example.github.io", 443, "name")),
        # IANA marks the PCP anycast address globally reachable inside a non-public block.
        ("192.0.0.9", EgressRule("192.0.0.9", 443, "ip")),
    ],
)
def test_accepts_and_normalises(entry: str, expected: EgressRule) -> None:
    assert parse_rule(entry) == expected


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("*", "every destination"),
        ("0.0.0.0/0", "every destination"),
        ("::/0", "every destination"),
        ("*:443", "every destination"),
        ("10.0.0.0/8", "CIDR blocks"),
        ("169.254.169.254", "169.254.169.254 is not a public address (Link Local, 169.254.0.0/16"),
        ("10.1.2.3:443", "10.1.2.3 is not a public address (Private-Use, 10.0.0.0/8, [RFC1918])"),
        ("192.168.0.10", "not a public address (Private-Use, 192.168.0.0/16"),
        ("100.64.0.1", "not a public address (Shared Address Space, 100.64.0.0/10, [RFC6598])"),
        ("127.0.0.1", "not a public address (Loopback, 127.0.0.0/8"),
        ("0.1.2.3", 'not a public address ("This network", 0.0.0.0/8'),
        ("224.0.0.251", "not a public address (Multicast, 224.0.0.0/4"),
        ("192.88.99.1", "not a public address (Deprecated (6to4 Relay Anycast), 192.88.99.0/24"),
        ("[::1]:443", "::1 is not a public address (Loopback Address, ::1/128, [RFC4291])"),
        ("[fe80::1]", "not a public address (Link-Local Unicast, fe80::/10"),
        ("fd00::1", "not a public address (Unique-Local, fc00::/7"),
        ("[fec0::1]", "not a public address (Reserved by IETF (formerly site-local, RFC 3879)"),
        ("[ff02::1]", "not a public address (Multicast, ff00::/8"),
        ("[3fff::1]", "not a public address (Documentation, 3fff::/20, [RFC9637])"),
        ("[fe80::1%eth0]", "without its zone index (%eth0)"),
        ("*.com", "covers a whole top-level domain"),
        ("localhost", "internal or metadata name"),
        ("pypi", "fully qualified"),
        ("pypi.*.org", "wildcard only as a leading"),
        ("https://pypi.org", "without a scheme"),
        ("user@pypi.org", "without a scheme"),
        ("pypi.org:0", "port '0'"),
        ("pypi.org:65536", "port '65536'"),
        ("pypi.org:https", "port 'https'"),
        ("-bad-.org", "letters, digits and hyphens"),
        ("xn--zz.com", "xn--zz is not a valid A-label"),
        ("metadata.google.internal", "internal or metadata name"),
        ("instance-data.ec2.internal", "internal or metadata name"),
        ("metadata.goog", "internal or metadata name"),
        ("kubernetes.default.svc", "internal or metadata name"),
        ("*.cluster.local", "internal or metadata name"),
        ("kubernetes.default", "internal or metadata name"),
        ("127.1", "numeric name"),
        ("10.0.0.1.2", "numeric name"),
    ],
)
def test_refuses(entry: str, reason: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_rule(entry)
    assert reason in str(caught.value)


# Issue 12's refusal cases, each with the exact message: the reason and what to write instead.
@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "[64:ff9b::a9fe:a9fe]:80",
            "64:ff9b::a9fe:a9fe is an IPv6 form of 169.254.169.254 (NAT64 well-known prefix, "
            "RFC 6052); 169.254.169.254 is not a public address (Link Local, 169.254.0.0/16, "
            "[RFC3927]); sandboxes may reach public hosts only",
        ),
        (
            "[64:ff9b::8c52:7003]:443",
            "64:ff9b::8c52:7003 is an IPv6 form of 140.82.112.3 (NAT64 well-known prefix, "
            "RFC 6052); the kit reaches an IPv4 destination by its IPv4 form only; write the IPv4 "
            "address 140.82.112.3 instead",
        ),
        (
            "*.s3.amazonaws.com",
            "*.s3.amazonaws.com covers names anyone can publish: s3.amazonaws.com is shared "
            "hosting (Amazon S3 buckets, legacy global endpoint; "
            "https://docs.aws.amazon.com/AmazonS3/latest/userguide/VirtualHosting.html); list "
            "each exact name sandboxes need, e.g. my-name.s3.amazonaws.com",
        ),
        (
            "169.254.169.254.nip.io",
            "169.254.169.254.nip.io is a name of nip.io, a wildcard-DNS service answering the "
            "address written in the name, e.g. 10.0.0.1.nip.io or 10-0-0-1.nip.io "
            "(https://nip.io/); write the public IP address itself, or a name its owner runs",
        ),
        (
            "storage.googleapis.com",
            "storage.googleapis.com serves anyone's content by path (Google Cloud Storage "
            "buckets, path-style and virtual-hosted; "
            "https://cloud.google.com/storage/docs/request-endpoints); list the bucket's own "
            "name instead, e.g. my-bucket.storage.googleapis.com",
        ),
    ],
)
def test_issue_12_refusals_say_why_and_what_instead(entry: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_rule(entry)
    assert str(caught.value) == message


def test_str_round_trips_through_the_parser() -> None:
    for entry in ("pypi.org:443", "*.pythonhosted.org:443", "[2a04:4e42:200::223]:8443"):
        rule = parse_rule(entry)
        assert parse_rule(str(rule)) == rule


def test_a_rule_covers_its_own_host_only() -> None:
    exact, wild, ip = (parse_rule(e) for e in ("pypi.org", "*.pythonhosted.org", "140.82.112.3"))
    assert [exact.covers(d) for d in ("pypi.org", "a.pypi.org")] == [True, False]
    names = ("pythonhosted.org", "a.pythonhosted.org", "a.b.pythonhosted.org", "xpythonhosted.org")
    assert [wild.covers(d) for d in names] == [False, True, True, False]
    assert ip.covers(ipaddress.ip_address("140.82.112.3"))
    assert not ip.covers(ipaddress.ip_address("::ffff:140.82.112.3"))
    assert not ip.covers("github.com")


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("PyPI.org.", "pypi.org"),
        ("[2001:db8::1]", ipaddress.ip_address("2001:db8::1")),
        ("169.254.169.254", ipaddress.ip_address("169.254.169.254")),
        ("bücher.de", "xn--bcher-kva.de"),
        ("127.1", None),
        ("kubernetes", None),
        ("a b.com", None),
    ],
)
def test_destination_of_reads_addresses_names_and_nothing_else(host: str, expected: object) -> None:
    assert destination_of(host) == expected


@settings(max_examples=500)
@given(st.ip_addresses())
@example(ipaddress.ip_address("8.8.8.8"))
@example(ipaddress.ip_address("2001:4860:4860::8888"))
def test_an_address_is_accepted_exactly_when_public_and_not_a_listed_endpoint(
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address,
) -> None:
    entry = f"[{ip}]:443" if ip.version == 6 else f"{ip}:443"
    judgement = judge_address(ip)
    channel = channel_refusal(ip.compressed)
    if judgement.public and channel:
        with pytest.raises(ValueError, match=re.escape(channel)):
            parse_rule(entry)
    elif judgement.public:
        assert parse_rule(entry) == EgressRule(ip.compressed, 443, "ip")
    else:
        with pytest.raises(ValueError) as caught:
            parse_rule(entry)
        assert str(caught.value).startswith(judgement.reason)


# --- one meaning of a name entry: TLS by SNI, HTTP by Host (issue 30) --------------------------


@pytest.mark.parametrize(
    ("entry", "protocol"),
    [
        ("github.com:22", "SSH"),
        ("*.example.com:5432", "PostgreSQL"),
        ("db.example.com:3306", "MySQL"),
        ("smtp.example.com:25", "SMTP"),
        ("mail.example.com:587", "SMTP submission"),
        ("ldap.example.com:389", "LDAP"),
        # Newcomer finding F4: one per family added from IANA's registry.
        ("files.example.com:873", "rsync"),
        ("ns.example.com:53", "DNS (the name asked travels in the query, never as an SNI or Host)"),
        ("time.example.com:123", "NTP (over UDP)"),
        ("rpc.example.com:111", "ONC RPC (portmapper)"),
        ("proxy.example.com:1080", "SOCKS (its request carries the name, not an SNI or Host)"),
        ("svn.example.com:3690", "Subversion (svn://)"),
        ("cache.example.com:6379", "Redis (RESP)"),
        ("cache.example.com:11211", "memcached"),
        ("*.example.com:27017", "MongoDB's wire protocol"),
        ("db.example.com:9042", "Cassandra's native protocol (CQL)"),
        ("db.example.com:1521", "Oracle Net (TNS)"),
        ("mq.example.com:5672", "AMQP"),
        ("chat.example.com:6667", "IRC"),
    ],
)
def test_a_name_on_a_port_without_sni_or_host_is_refused_naming_the_alternatives(
    entry: str, protocol: str
) -> None:
    with pytest.raises(ValueError) as caught:
        parse_rule(entry)
    message = str(caught.value)
    pattern, port = entry.rsplit(":", 1)
    assert message.startswith(f"{entry} is {protocol}, which carries no name a target can check")
    assert f"write the host's HTTPS endpoint instead (e.g. {pattern}:443" in message
    assert f"or an IP entry for its public address (e.g. 203.0.113.7:{port})" in message


def test_the_ssh_refusal_says_git_over_https() -> None:
    with pytest.raises(ValueError, match=r"e\.g\. github\.com:443, git over HTTPS instead of SSH"):
        parse_rule("github.com:22")
    with pytest.raises(ValueError, match=r"is the git protocol \(git://\).* github\.com:443, git"):
        parse_rule("github.com:9418")


# The service names netbase's /etc/services (IANA's registry) gives the ports the list names.
IANA_SERVICE = {
    53: "domain", 79: "finger", 111: "sunrpc", 119: "nntp", 135: "epmap", 161: "snmp",
    179: "bgp", 873: "rsync", 1080: "socks", 1194: "openvpn", 2049: "nfs", 3690: "svn",
    4369: "epmd", 5060: "sip", 5222: "xmpp-client", 5672: "amqp", 6000: "x11",
    6379: "redis", 6667: "ircd", 9418: "git",
}  # fmt: skip


@pytest.mark.parametrize(("port", "service"), sorted(IANA_SERVICE.items()))
def test_each_listed_port_is_the_registrys_port_for_its_service(port: int, service: str) -> None:
    assert port in NAMELESS_PORTS
    assert socket.getservbyport(port, "udp" if port == 123 else "tcp") == service


@pytest.mark.parametrize("port", [80, 443, 636, 853, 993, 995, 5671, 6443, 8080, 8443, 8883])
def test_a_name_stays_accepted_on_ports_whose_protocol_carries_tls_or_http(port: int) -> None:
    # HTTP, HTTPS, and implicit TLS from the first byte (LDAPS, DNS over TLS, IMAPS, POP3S,
    # AMQPS, the Kubernetes API, MQTT over TLS): the SNI or Host names the host.
    assert parse_rule(f"api.example.com:{port}") == EgressRule("api.example.com", port, "name")


@settings(max_examples=300)
@given(port=st.integers(min_value=1, max_value=65535), wildcard=st.booleans())
@example(port=22, wildcard=False)
@example(port=443, wildcard=True)
def test_a_name_entry_is_accepted_exactly_on_ports_whose_protocol_names_its_host(
    port: int, wildcard: bool
) -> None:
    # A name entry means TLS (SNI) and HTTP (Host) on its port; on a port whose protocol opens
    # without either (NAMELESS_PORTS), it is refused. An IP entry means TCP to its address and is
    # accepted on every port.
    name = "*.example.com" if wildcard else "api.example.com"
    if port in NAMELESS_PORTS:
        with pytest.raises(ValueError, match=f"is {re.escape(NAMELESS_PORTS[port])}, which"):
            parse_rule(f"{name}:{port}")
    else:
        rule = parse_rule(f"{name}:{port}")
        assert (rule.port, rule.kind) == (port, "wildcard" if wildcard else "name")
    assert parse_rule(f"140.82.112.3:{port}") == EgressRule("140.82.112.3", port, "ip")
