"""The egress contract: what each mode admits, host by host and port by port."""

from __future__ import annotations

import json
import re
import string
from typing import Any

import jsonschema
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sandboxkit.egress_contract import (
    CONNECTION_PROTOCOLS,
    CONTRACT_SCHEMA,
    EgressContract,
    EgressRule,
    parse_rule,
)
from sandboxkit.profile import Egress


def rules(*entries: str) -> tuple[EgressRule, ...]:
    return tuple(parse_rule(e) for e in entries)


CONTROL_PLANE = rules("agents.example.com:443", "telemetry.example.com:8443")
ALLOWLIST = EgressContract(
    "allowlist",
    rules("pypi.org:443", "*.pythonhosted.org:443", "github.com:80", "140.82.112.3:53",
          "[2a04:4e42::223]:853"),
    CONTROL_PLANE,
)  # fmt: skip


@pytest.mark.parametrize(
    ("host", "port", "admitted"),
    [
        ("pypi.org", 443, True),
        ("PyPI.org.", 443, True),  # case and the trailing dot are ignored
        ("pypi.org", 8443, False),  # a port belongs to its entry only
        ("www.pypi.org", 443, False),  # an exact name matches only itself
        # *.x: every depth below x, never x (issue 12: the apex and a.b.c. cases).
        ("files.pythonhosted.org", 443, True),
        ("a.b.c.pythonhosted.org", 443, True),
        ("pythonhosted.org", 443, False),
        ("evilpythonhosted.org", 443, False),
        ("files.pythonhosted.org", 80, False),
        # github.com:80 opens port 80 of github.com: not its 443, and no other name on 80.
        ("github.com", 80, True),
        ("github.com", 443, False),
        ("pypi.org", 80, False),
        ("files.pythonhosted.org", 80, False),
        # An IP entry admits that address and port only, in no other spelling.
        ("140.82.112.3", 53, True),
        ("140.82.112.3", 443, False),
        ("::ffff:140.82.112.3", 53, False),
        ("64:ff9b::808:808", 53, False),
        ("dns.google", 53, False),
        ("[2a04:4e42::223]", 853, True),
        ("2a04:4e42::223", 853, True),
        # Control-plane hosts: exact names, their own ports.
        ("agents.example.com", 443, True),
        ("telemetry.example.com", 8443, True),
        ("telemetry.example.com", 443, False),
        ("x.agents.example.com", 443, False),
        ("169.254.169.254", 80, False),
        ("64:ff9b::a9fe:a9fe", 80, False),
        ("not a host", 443, False),
    ],
)
def test_allowlist_admits(host: str, port: int, admitted: bool) -> None:
    assert ALLOWLIST.admits(host, port, "tls") is admitted


def test_deny_admits_only_the_control_plane() -> None:
    deny = EgressContract("deny", (), CONTROL_PLANE)
    assert deny.admits("agents.example.com", 443, "tls")
    assert deny.admits("telemetry.example.com", 8443, "tls")
    assert not deny.admits("agents.example.com", 80, "http")
    assert not deny.admits("pypi.org", 443, "tls")
    assert not deny.admits("140.82.112.3", 53, "tcp")
    assert not EgressContract("deny").admits("agents.example.com", 443, "tls")


@pytest.mark.parametrize(
    ("host", "port", "admitted"),
    [
        ("pypi.org", 443, True),
        ("example.com", 22, True),
        ("140.82.112.3", 25, True),
        ("2a04:4e42::223", 1, True),
        ("169.254.169.254", 80, False),
        ("10.0.0.1", 443, False),
        ("64:ff9b::a9fe:a9fe", 80, False),  # issue 12: NAT64 is not a way round
        ("64:ff9b::808:808", 443, False),  # an IPv6 form of a public address: the whole prefix
        ("::ffff:140.82.112.3", 443, False),
        ("2002:808:808::1", 443, False),
        ("metadata.google.internal", 80, False),
        ("kubernetes.default.svc", 443, False),
        ("kubernetes", 443, False),  # one label: the search path decides where it goes
        ("127.1", 80, False),
    ],
)
def test_open_admits(host: str, port: int, admitted: bool) -> None:
    assert EgressContract("open").admits(host, port, "tls") is admitted


@pytest.mark.parametrize(
    ("mode", "name", "resolves"),
    [
        ("deny", "agents.example.com", True),
        ("deny", "pypi.org", False),
        ("allowlist", "pypi.org", True),
        ("allowlist", "files.pythonhosted.org", True),
        ("allowlist", "a.b.pythonhosted.org", True),
        ("allowlist", "pythonhosted.org", False),
        ("allowlist", "github.com", True),  # resolution has no port
        ("allowlist", "agents.example.com", True),
        ("allowlist", "x.attacker.example", False),
        ("allowlist", "140.82.112.3", False),  # an address is not a name
        ("open", "x.attacker.example", True),
        ("open", "metadata.google.internal", True),  # resolves; its address is refused
        ("open", "140.82.112.3", False),
    ],
)
def test_which_names_may_resolve(mode: str, name: str, resolves: bool) -> None:
    contract = {
        "deny": EgressContract("deny", (), CONTROL_PLANE),
        "allowlist": ALLOWLIST,
        "open": EgressContract("open"),
    }[mode]
    assert contract.may_resolve(name) is resolves


def test_built_from_the_profile() -> None:
    egress = Egress.model_validate({"mode": "allowlist", "allow": ["pypi.org", "*.example.com"]})
    contract = EgressContract.of(egress, CONTROL_PLANE)
    assert contract == EgressContract(
        "allowlist", rules("*.example.com", "pypi.org"), CONTROL_PLANE
    )


@pytest.mark.parametrize(
    ("mode", "entries", "control_plane", "message"),
    [
        ("allowlist", (), (), "entries with mode allowlist, and only with mode allowlist"),
        ("deny", ("pypi.org",), (), "entries with mode allowlist, and only with mode allowlist"),
        (
            "open",
            (),
            ("*.example.com",),
            "control-plane hosts are exact names, not *.example.com:443",
        ),
        ("closed", (), (), "mode 'closed' is not one of deny, allowlist, open"),
    ],
)
def test_inconsistent_contracts_are_refused(
    mode: str, entries: tuple[str, ...], control_plane: tuple[str, ...], message: str
) -> None:
    with pytest.raises(ValueError) as caught:
        EgressContract(mode, rules(*entries), rules(*control_plane))  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_ports_outside_the_range_are_an_error() -> None:
    with pytest.raises(ValueError, match="port 0 is not from 1 to 65535"):
        ALLOWLIST.admits("pypi.org", 0, "tls")


# --- Properties ------------------------------------------------------------------------------

# A DNS label: a letter, then up to six letters or digits. Built from text strategies, not
# ``st.from_regex``, whose draws cost this file most of its CPU.
LABEL = st.builds(
    str.__add__,
    st.sampled_from(string.ascii_lowercase),
    st.text(alphabet=string.ascii_lowercase + string.digits, max_size=6),
)
PARENT = st.lists(LABEL, min_size=1, max_size=2).map(lambda labels: ".".join(labels) + ".example")
PORT = st.integers(min_value=1, max_value=65535)


@settings(max_examples=500)
@given(PARENT, st.lists(LABEL, min_size=1, max_size=5), PORT)
def test_a_wildcard_admits_every_depth_below_and_never_its_apex(
    parent: str, below: list[str], port: int
) -> None:
    contract = EgressContract("allowlist", (EgressRule(parent, port, "wildcard"),))
    assert contract.admits(".".join([*below, parent]), port, "tls")
    assert contract.may_resolve(".".join([*below, parent]))
    assert not contract.admits(parent, port, "tls")
    assert not contract.may_resolve(parent)


@settings(max_examples=500)
@given(
    st.lists(st.tuples(PARENT, st.booleans(), PORT), min_size=1, max_size=6),
    st.integers(min_value=0),
    PORT,
    st.lists(LABEL, max_size=2),
)
def test_a_port_never_leaks_to_another_entry(
    entries: list[tuple[str, bool, int]], pick: int, port: int, below: list[str]
) -> None:
    listed = tuple(EgressRule(host, p, "wildcard" if w else "name") for host, w, p in entries)
    contract = EgressContract("allowlist", listed)
    host, wild, _ = entries[pick % len(entries)]
    name = ".".join([*below, host]) if wild else host
    assume(not wild or below)
    admitted = contract.admits(name, port, "tls")
    # Admitted on a port exactly when an entry matching the name names that port.
    assert admitted is any(
        p == port and (name.endswith(f".{h}") if w else name == h) for h, w, p in entries
    )


@pytest.mark.parametrize(
    ("mode", "entries", "host", "port", "admitted"),
    [
        # A name entry: TLS (SNI) and HTTP (Host) on its port, never plain TCP, never UDP.
        ("allowlist", ("pypi.org",), "pypi.org", 443, {"tls", "http"}),
        ("allowlist", ("*.pythonhosted.org",), "files.pythonhosted.org", 443, {"tls", "http"}),
        ("allowlist", ("github.com:80",), "github.com", 80, {"tls", "http"}),
        # An IP entry: any TCP to the address.
        ("allowlist", ("140.82.112.3",), "140.82.112.3", 443, {"tls", "http", "tcp"}),
        ("allowlist", ("[2a04:4e42::223]:8443",), "2a04:4e42::223", 8443, {"tls", "http", "tcp"}),
        # open: any TCP to what it admits (plain TCP to a name reaches an address it resolved to).
        ("open", (), "pypi.org", 22, {"tls", "http", "tcp"}),
        ("open", (), "151.101.0.223", 5432, {"tls", "http", "tcp"}),
        ("deny", (), "pypi.org", 443, set()),
    ],
)
def test_the_contract_admits_by_protocol(
    mode: Any, entries: tuple[str, ...], host: str, port: int, admitted: set[str]
) -> None:
    contract = EgressContract(mode, tuple(parse_rule(e) for e in entries))
    assert {p for p in CONNECTION_PROTOCOLS if contract.admits(host, port, p)} == admitted


def test_control_plane_hosts_admit_tls_and_http_only() -> None:
    contract = EgressContract("deny", (), (parse_rule("agents.example.com"),))
    assert contract.admits("agents.example.com", 443, "tls")
    assert not contract.admits("agents.example.com", 443, "tcp")


def test_an_unknown_protocol_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="protocol 'quic' is not one of tls, http, tcp, udp"):
        EgressContract("open").admits("pypi.org", 443, "quic")  # type: ignore[arg-type]


# --- the JSON form (SBX-NET-008's contracts config, sandboxkit pack-config) --------------------


def test_the_json_form_round_trips_and_fits_its_schema() -> None:
    for contract in (ALLOWLIST, EgressContract("deny", (), CONTROL_PLANE), EgressContract("open")):
        document = contract.to_config()
        jsonschema.validate(document, CONTRACT_SCHEMA)
        assert EgressContract.from_config(json.loads(json.dumps(document))) == contract
    assert ALLOWLIST.to_config() == {
        "mode": "allowlist",
        "allow": [
            "pypi.org:443",
            "*.pythonhosted.org:443",
            "github.com:80",
            "140.82.112.3:53",
            "[2a04:4e42::223]:853",
        ],
        "controlPlane": ["agents.example.com:443", "telemetry.example.com:8443"],
    }


# (document, the refusal's words, whether the schema alone refuses it)
REFUSED_FORMS = [
    ({"mode": "deny", "allow": []}, "the keys mode, allow and controlPlane, not allow, mode", True),
    (
        {"mode": "deny", "allow": [], "controlPlane": [], "extra": 1},
        "not allow, controlPlane, extra, mode",
        True,
    ),
    ({"mode": "deny", "allow": "pypi.org", "controlPlane": []}, "allow is a list of host", True),
    ({"mode": "deny", "allow": [], "controlPlane": [443]}, "controlPlane is a list of host", True),
    ({"mode": "closed", "allow": [], "controlPlane": []}, "mode 'closed' is not one of", True),
    # Within the schema, refused by the contract's own rules.
    ({"mode": "deny", "allow": ["pypi.org"], "controlPlane": []}, "only with mode allow", False),
    ({"mode": "deny", "allow": [], "controlPlane": ["*.example.com"]}, "exact names", False),
    (
        {"mode": "allowlist", "allow": ["*"], "controlPlane": []},
        "allow entry '*': this entry allows every destination",
        False,
    ),
]


@pytest.mark.parametrize(("document", "message", "by_schema"), REFUSED_FORMS)
def test_a_json_form_outside_the_contract_is_refused(
    document: dict[str, Any], message: str, by_schema: bool
) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        EgressContract.from_config(document)
    errors = list(jsonschema.Draft202012Validator(CONTRACT_SCHEMA).iter_errors(document))
    assert bool(errors) == by_schema
