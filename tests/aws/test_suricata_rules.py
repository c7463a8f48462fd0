"""The aws-microvm Suricata rules: their exact text, and what Suricata 7 admits with them.

The behaviour tests run Debian's Suricata offline over written flows (see ``suricata_lab``): a
ClientHello or HTTP request naming a host, to an address and port. They show what the kit's
rules admit on their own; the firewall policy's resolved-IP validation (an AWS check, not
Suricata's) is what stops a correct name sent to the wrong address, and is tested elsewhere.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from suricata_lab import Probe, verdicts, without_aws_keywords

from sandboxkit.aws.suricata import (
    FIRST_SID,
    ip_rules,
    name_rules,
    open_rule,
    read_rules,
    syn_data_rule,
)
from sandboxkit.egress_contract import EgressRule, parse_rule

PYPI = "151.101.0.223"  # any public address: the rules alone do not check where a name goes
DOH = "1.1.1.1"  # a DNS-over-HTTPS resolver address
LITERAL = "93.184.216.34"


def rules(*entries: str) -> list[EgressRule]:
    return sorted(parse_rule(e) for e in entries)


def test_exact_name_matches_whole_sni_and_host_on_its_port_resolved_for_it() -> None:
    assert name_rules(rules("pypi.org"), 7) == [
        'pass tls $HOME_NET any -> $EXTERNAL_NET 443 (msg:"sandboxkit allow pypi.org:443 '
        'tls.sni"; flow:to_server, established; ssl_state:client_hello; tls.sni; '
        'content:"pypi.org"; nocase; startswith; endswith; '
        'aws_route_53_resolved_domain:"pypi.org"; sid:7; rev:1;)',
        'pass http $HOME_NET any -> $EXTERNAL_NET 443 (msg:"sandboxkit allow pypi.org:443 '
        'http.host"; flow:to_server, established; http.host; content:"pypi.org"; startswith; '
        'endswith; aws_route_53_resolved_domain:"pypi.org"; sid:8; rev:1;)',
    ]
    # Without resolved-IP validation (open mode) the keyword's rules would be inactive.
    assert [
        line.replace(' aws_route_53_resolved_domain:"pypi.org";', "")
        for line in name_rules(rules("pypi.org"), 7)
    ] == name_rules(rules("pypi.org"), 7, resolved_domain=False)


def test_wildcard_matches_a_dotted_suffix_without_dotprefix() -> None:
    tls, http = name_rules(rules("*.pythonhosted.org:8443"), 1)
    assert (
        'tls.sni; content:".pythonhosted.org"; nocase; endswith; '
        'aws_route_53_resolved_domain:".pythonhosted.org"; sid:1;'
    ) in tls
    assert (
        'http.host; content:".pythonhosted.org"; endswith; '
        'aws_route_53_resolved_domain:".pythonhosted.org"; sid:2;'
    ) in http
    assert "-> $EXTERNAL_NET 8443 " in tls
    assert "dotprefix" not in tls + http
    assert "startswith" not in tls + http


def test_name_rules_keep_off_the_ip_entries_addresses() -> None:
    excluded = rules("93.184.216.34:8443", "140.82.112.4:22")
    (tls, http) = name_rules(rules("pypi.org"), 1, excluded)
    assert "-> [$EXTERNAL_NET,!140.82.112.4,!93.184.216.34] 443 " in tls
    assert "-> [$EXTERNAL_NET,!140.82.112.4,!93.184.216.34] 443 " in http


def test_ip_entry_is_exactly_its_address_and_port_from_the_first_packet() -> None:
    assert ip_rules(rules("93.184.216.34:8443"), 5) == [
        "pass tcp $HOME_NET any -> 93.184.216.34 8443 "
        '(msg:"sandboxkit allow 93.184.216.34:8443"; sid:5; rev:1;)'
    ]


def test_name_rules_are_numbered_tls_then_http_per_entry() -> None:
    lines = name_rules(rules("pypi.org", "github.com:80"), FIRST_SID)
    assert [line.split("sid:")[1].split(";")[0] for line in lines] == [
        str(FIRST_SID + i) for i in range(4)
    ]
    assert [line.split('msg:"')[1].split('"')[0] for line in lines] == [
        "sandboxkit allow github.com:80 tls.sni",
        "sandboxkit allow github.com:80 http.host",
        "sandboxkit allow pypi.org:443 tls.sni",
        "sandboxkit allow pypi.org:443 http.host",
    ]
    assert name_rules((), FIRST_SID) == []


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: name_rules(rules("93.184.216.34"), 1), "is an IP entry"),
        (lambda: ip_rules(rules("pypi.org"), 1), "an IPv4 address entry"),
        (lambda: ip_rules([EgressRule("2001:db8::1", 443, "ip")], 1), "an IPv4 address entry"),
        (lambda: name_rules([EgressRule('x";pass', 443, "name")], 1), "letters, digits"),
    ],
)
def test_refuses_what_it_cannot_write(call: object, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()  # type: ignore[operator]


IP_ENTRIES = rules("93.184.216.34:8443")
ALLOWLIST = "\n".join(
    ip_rules(IP_ENTRIES, FIRST_SID)
    + name_rules(
        rules(
            "agents.example.com",
            "pypi.org",
            "*.pythonhosted.org",
            "github.com:80",
            "mirror.example.org:8443",
        ),
        FIRST_SID + 1,
        excluded=IP_ENTRIES,
    )
)

# (probe, what the kit's rules alone do with it)
ALLOWLIST_CASES: list[tuple[Probe, str]] = [
    (Probe("tls", "pypi.org", PYPI, 443), "pass"),
    (Probe("tls", "PyPI.Org", PYPI, 443), "pass"),  # DNS names ignore case
    (Probe("tls", "pypi.org", PYPI, 8443), "drop"),  # another port
    (Probe("tls", "pypi.org.evil.example", PYPI, 443), "drop"),
    (Probe("tls", "evilpypi.org", PYPI, 443), "drop"),
    (Probe("tls", "files.pythonhosted.org", PYPI, 443), "pass"),
    (Probe("tls", "a.b.files.pythonhosted.org", PYPI, 443), "pass"),  # any depth
    (Probe("tls", "pythonhosted.org", PYPI, 443), "drop"),  # the wildcard's apex
    (Probe("tls", "xpythonhosted.org", PYPI, 443), "drop"),
    (Probe("http", "github.com", PYPI, 80), "pass"),
    (Probe("http", "github.com:80", PYPI, 80), "pass"),  # Host with its port
    (Probe("tls", "github.com", PYPI, 443), "drop"),  # github.com:80 does not open :443
    (Probe("http", "pypi.org", PYPI, 80), "drop"),  # nor port 80 for other names
    (Probe("tls", "mirror.example.org", PYPI, 8443), "pass"),
    (Probe("http", "mirror.example.org", PYPI, 8443), "pass"),
    (Probe("tcp", "", PYPI, 443), "drop"),  # no name claimed
    (Probe("tcp", "", LITERAL, 8443), "pass"),  # IP entry: exactly IP:port
    (Probe("tcp", "", LITERAL, 443), "drop"),
    (Probe("tls", "pypi.org", LITERAL, 443), "drop"),  # a name never reaches an IP entry
    (Probe("tls", "cloudflare-dns.com", DOH, 443), "drop"),  # DoH by its own name
    # A listed name sent to any address passes the rules: resolved-IP validation stops it.
    (Probe("tls", "agents.example.com", DOH, 443), "pass"),
]


def test_allowlist_rules_admit_exactly_the_contract_in_suricata(tmp_path: Path) -> None:
    probes = [probe for probe, _ in ALLOWLIST_CASES]
    assert verdicts(ALLOWLIST, probes, tmp_path) == [want for _, want in ALLOWLIST_CASES]


def test_deny_rules_admit_only_the_control_plane_in_suricata(tmp_path: Path) -> None:
    deny = "\n".join(name_rules(rules("agents.example.com"), FIRST_SID))
    probes = [
        Probe("tls", "agents.example.com", PYPI, 443),
        Probe("http", "agents.example.com", PYPI, 80),
        Probe("tls", "pypi.org", PYPI, 443),
        Probe("tcp", "", DOH, 53),
    ]
    assert verdicts(deny, probes, tmp_path) == ["pass", "drop", "drop", "drop"]


def test_open_rule_admits_any_tcp_to_public_addresses_in_suricata(tmp_path: Path) -> None:
    probes = [
        Probe("tcp", "", DOH, 22),
        Probe("tls", "anything.example", PYPI, 443),
        Probe("http", "metadata", "169.254.169.254", 80),
        Probe("tcp", "", "100.64.0.1", 443),
    ]
    assert verdicts(open_rule(FIRST_SID), probes, tmp_path) == ["pass", "pass", "drop", "drop"]


# The rules Network Firewall generates for a TLS_SNI + HTTP_HOST ALLOWLIST of
# [".amazon.com", "example.com"], as its developer guide lists them ("Examples of stateful rules
# for Network Firewall", domain list rules), without the `priority` keyword that strict order
# does not allow. The reader's golden fixture for domain lists.
AWS_GENERATED_ALLOWLIST = "\n".join(
    [
        'pass tls $HOME_NET any -> $EXTERNAL_NET any (ssl_state:client_hello; tls.sni; dotprefix; content:".amazon.com"; nocase; endswith; msg:"matching TLS allowlisted FQDNs"; flow:to_server, established; sid:1; rev:1;)',  # noqa: E501
        'pass tls $HOME_NET any -> $EXTERNAL_NET any (ssl_state:client_hello; tls.sni; content:"example.com"; startswith; nocase; endswith; msg:"matching TLS allowlisted FQDNs"; flow:to_server, established; sid:2; rev:1;)',  # noqa: E501
        'pass http $HOME_NET any -> $EXTERNAL_NET any (http.host; dotprefix; content:".amazon.com"; endswith; msg:"matching HTTP allowlisted FQDNs"; flow:to_server, established; sid:3; rev:1;)',  # noqa: E501
        'pass http $HOME_NET any -> $EXTERNAL_NET any (http.host; content:"example.com"; startswith; endswith; msg:"matching HTTP allowlisted FQDNs"; flow:to_server, established; sid:4; rev:1;)',  # noqa: E501
    ]
)


def test_a_domain_list_is_broader_than_the_contract_in_suricata(tmp_path: Path) -> None:
    # Why the kit does not use a domain list: ".x" admits x itself, and any port.
    probes = [
        Probe("tls", "amazon.com", PYPI, 443),
        Probe("tls", "www.amazon.com", PYPI, 8443),
        Probe("http", "example.com", PYPI, 443),
        Probe("tls", "example.org", PYPI, 443),
    ]
    assert verdicts(AWS_GENERATED_ALLOWLIST, probes, tmp_path) == ["pass", "pass", "pass", "drop"]


def test_a_to_server_pass_rule_would_drop_the_replies_in_suricata(tmp_path: Path) -> None:
    # The kit's IP and open rules carried flow:to_server before; Suricata 7 then passes only the
    # client's packets and the server's replies meet aws:drop_established. Without a flow
    # keyword (an IP-only rule) the SYN passes the whole flow.
    probe = Probe("tcp", "", LITERAL, 8443)
    old = f'pass tcp $HOME_NET any -> {LITERAL} 8443 (msg:"old"; flow:to_server; sid:1; rev:1;)'
    (tmp_path / "old").mkdir()
    (tmp_path / "new").mkdir()
    assert verdicts(old, [probe], tmp_path / "old") == ["drop"]
    assert verdicts(ip_rules(rules(f"{LITERAL}:8443"), 1)[0], [probe], tmp_path / "new") == ["pass"]


def test_a_syn_carrying_data_is_dropped_and_the_allowed_hosts_still_work(tmp_path: Path) -> None:
    # TCP Fast Open: the ClientHello or the request rides on the SYN, which
    # aws:drop_established (established flows only) never sees.
    probes = [
        Probe("tls", "pypi.org", DOH, 443, syn_data=True),
        Probe("http", "anything.example", DOH, 443, syn_data=True),
        Probe("tcp", "", DOH, 443, syn_data=True),
        # Even an allowed name: the kit's rules read SNI and Host after the handshake only.
        Probe("tls", "pypi.org", PYPI, 443, syn_data=True),
        Probe("tls", "pypi.org", PYPI, 443),
        Probe("tls", "files.pythonhosted.org", PYPI, 443),
        Probe("http", "github.com", PYPI, 80),
        Probe("tcp", "", LITERAL, 8443),
        # An IP entry's pass rule comes first and admits its address and port whatever the SYN.
        Probe("tcp", "", LITERAL, 8443, syn_data=True),
    ]
    names = ALLOWLIST.split("\n")[len(IP_ENTRIES) :]
    guarded = "\n".join([*ip_rules(IP_ENTRIES, FIRST_SID), syn_data_rule(FIRST_SID - 1), *names])
    (tmp_path / "guarded").mkdir()
    (tmp_path / "without").mkdir()
    assert verdicts(guarded, probes, tmp_path / "guarded") == [
        *["drop"] * 4,
        *["pass"] * 5,
    ]
    # Without the rule (measured, Suricata 7): no packet of a data-carrying SYN's flow is
    # blocked, by the kit's rules or the aws:drop_established stand-in ("unseen": no pass rule
    # took the flow and nothing dropped it), so the SYN's data reaches any address.
    assert verdicts(ALLOWLIST, probes[:4], tmp_path / "without") == ["unseen"] * 4


def test_the_syn_data_rule_text() -> None:
    assert syn_data_rule(1_000_000) == (
        'drop tcp $HOME_NET any -> any any (msg:"sandboxkit drop SYN with data (TCP Fast Open)"; '
        "flags:S,12; dsize:>0; sid:1000000; rev:1;)"
    )


def test_the_resolved_domain_keyword_parses_as_network_firewall_documents_it(
    tmp_path: Path,
) -> None:
    # aws_route_53_resolved_domain is Network Firewall's own keyword (developer guide,
    # "Matching specific domains with resolved-domain rules": a Suricata rule option with a
    # double-quoted domain value). Suricata does not know it, so: the kit's reader reads it
    # back on every name rule, and the rest of each rule is valid Suricata 7 (the lab runs it).
    text = "\n".join(name_rules(rules("pypi.org", "*.pythonhosted.org"), 1))
    assert [(r.buffer, r.name, r.resolved_domain) for r in read_rules(text)] == [
        ("tls.sni", "pypi.org", "pypi.org"),
        ("http.host", "pypi.org", "pypi.org"),
        ("tls.sni", "pythonhosted.org", ".pythonhosted.org"),
        ("http.host", "pythonhosted.org", ".pythonhosted.org"),
    ]
    assert text.count('aws_route_53_resolved_domain:"') == 4
    assert "aws_route_53_resolved_domain" not in without_aws_keywords(text)
    assert verdicts(text, [Probe("tls", "pypi.org", PYPI, 443)], tmp_path) == ["pass"]
    # Suricata itself refuses the keyword: the lab's removal is needed, not decoration.
    bare = tmp_path / "bare"
    bare.mkdir()
    with pytest.raises(RuntimeError, match=r"aws_route_53_resolved_domain|error parsing"):
        verdicts(text, [Probe("tls", "pypi.org", PYPI, 443)], bare, keep_aws_keywords=True)


def test_reading_the_kits_rules_gives_back_each_entry() -> None:
    entries = rules("pypi.org", "*.pythonhosted.org", "github.com:80")
    read = read_rules("\n".join(name_rules(entries, 1, excluded=rules("93.184.216.34"))))
    assert [(r.buffer, r.name, r.scope, r.port, r.excluded) for r in read] == [
        ("tls.sni", "github.com", "exact", 80, ("93.184.216.34",)),
        ("http.host", "github.com", "exact", 80, ("93.184.216.34",)),
        ("tls.sni", "pypi.org", "exact", 443, ("93.184.216.34",)),
        ("http.host", "pypi.org", "exact", 443, ("93.184.216.34",)),
        ("tls.sni", "pythonhosted.org", "below", 443, ("93.184.216.34",)),
        ("http.host", "pythonhosted.org", "below", 443, ("93.184.216.34",)),
    ]
    (ip,) = read_rules(ip_rules(rules("93.184.216.34:8443"), 9)[0])
    assert (ip.protocol, ip.destination, ip.port, ip.scope, ip.sid) == (
        "tcp",
        "93.184.216.34",
        8443,
        "any",
        9,
    )


def test_reading_network_firewalls_generated_domain_list_rules() -> None:
    # The developer guide's own generated rules: ".amazon.com" is the name and below, any port.
    read = read_rules(AWS_GENERATED_ALLOWLIST)
    assert [(r.buffer, r.name, r.scope, r.port) for r in read] == [
        ("tls.sni", "amazon.com", "exact-and-below", None),
        ("tls.sni", "example.com", "exact", None),
        ("http.host", "amazon.com", "exact-and-below", None),
        ("http.host", "example.com", "exact", None),
    ]


@pytest.mark.parametrize(
    "options",
    [
        'tls.sni; content:"example.com"; endswith;',  # a suffix without its dot
        'tls.sni; pcre:"/example/";',
        "tls.sni;",
        'tls.sni; content:"example.com"; startswith; endswith; content:"x";',
        "",
    ],
)
def test_what_the_reader_cannot_read_admits_any_name(options: str) -> None:
    (rule,) = read_rules(f"pass tls $HOME_NET any -> $EXTERNAL_NET 443 ({options} sid:5;)")
    assert (rule.name, rule.scope) == (None, "any")


def test_reader_skips_comments_and_non_pass_rules_and_reads_port_lists_as_any() -> None:
    text = "\n".join(
        [
            "# a comment",
            "",
            "drop tcp any any -> any any (sid:1;)",
            'pass tls $HOME_NET any -> $EXTERNAL_NET [443,8443] (tls.sni; content:"a.example"; '
            "startswith; endswith; sid:2;)",
        ]
    )
    (rule,) = read_rules(text)
    assert (rule.port, rule.name, rule.sid) == (None, "a.example", 2)
    with pytest.raises(ValueError, match="not a Suricata rule"):
        read_rules("pass everything please")
