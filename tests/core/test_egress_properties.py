"""Property tests: every target that accepts an egress profile admits exactly what the egress
contract admits, read from the target's rendered resources by the target's own reader.

For generated profiles (``deny``, ``open`` and allowlists of exact names, wildcards, ports 80,
443 and 8443 and IP literals, as far as each target accepts them) the target is rendered under
the offline engine with the prod stack's settings, its reader computes the effective egress, and
every probe (those ``effective_egress.derive_probes`` gives, each with its protocol, plus
generated names, depths, ports and non-public addresses, each asked in the protocol its client
speaks and as plain TCP) gets the same answer from the target and from the contract, for
connections and for name resolution. What a target refuses is part of its documented
limits (``TargetSpec.accepts``); a refusal of anything else fails the test. The one answer
allowed to differ is a target's documented residual: plain TCP to a listed name admitted by a
grant matched by resolved address (``EgressAcceptance.plain_tcp_by_address``; SBX-NET-006
reports it).
"""

from __future__ import annotations

import functools
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandboxkit.config import ConfigSource, load_stack, read_stack_file
from sandboxkit.effective_egress import Verdict, client_protocol, contract_probes
from sandboxkit.egress_contract import ConnectionProtocol, parse_rule
from sandboxkit.errors import ConfigError
from sandboxkit.explain import TargetEgress, explain_target
from sandboxkit.project import stack_file
from sandboxkit.render import render_source
from sandboxkit.targets import TARGET_MODULES, EgressAcceptance, get_target
from support import freeze_new_imports

PROJECT = Path(__file__).resolve().parents[2]
PROD = read_stack_file(stack_file(PROJECT, "prod"))
EXAMPLES = 500


# What each target accepts, as its spec declares it (``TargetSpec.accepts``).
ACCEPTS: dict[str, EgressAcceptance] = {
    name: accepts for name in TARGET_MODULES if (accepts := get_target(name).accepts) is not None
}
# The ports the generated entries name, as far as each target accepts them.
PORTS = (80, 443, 8443)

NAMES = ("pypi.org", "api.github.com", "files.example.com", "registry.npmjs.org")
WILDCARD_PARENTS = ("pythonhosted.org", "example.com", "githubusercontent.example.net")
IPV4 = ("151.101.0.223", "140.82.113.4", "140.82.112.3")
IPV6 = ("2a04:4e42:400::223", "2a04:4e42::223")
LABELS = st.sampled_from(("a", "b", "sbx", "x-1", "deep"))


def entries(accepts: EgressAcceptance) -> st.SearchStrategy[list[str]]:
    """Allowlist entries the target accepts."""
    ports = st.sampled_from([port for port in PORTS if accepts.admits_port(port)])
    kinds: list[st.SearchStrategy[str]] = []
    if accepts.names:
        kinds.append(st.tuples(st.sampled_from(NAMES), ports).map(lambda e: f"{e[0]}:{e[1]}"))
    if accepts.wildcards:
        kinds.append(
            st.tuples(st.sampled_from(WILDCARD_PARENTS), ports).map(lambda e: f"*.{e[0]}:{e[1]}")
        )
    if accepts.ipv4:
        kinds.append(st.tuples(st.sampled_from(IPV4), ports).map(lambda e: f"{e[0]}:{e[1]}"))
    if accepts.ipv6:
        kinds.append(st.tuples(st.sampled_from(IPV6), ports).map(lambda e: f"[{e[0]}]:{e[1]}"))
    return st.lists(st.one_of(kinds), min_size=1, max_size=5, unique=True)


def egress(accepts: EgressAcceptance) -> st.SearchStrategy[dict[str, Any]]:
    """A profile's ``egress`` section the target accepts."""
    modes: list[st.SearchStrategy[dict[str, Any]]] = [st.just({"mode": "deny"})]
    if accepts.open:
        modes.append(st.just({"mode": "open"}))
    if accepts.allowlist:
        modes.append(entries(accepts).map(lambda allow: {"mode": "allowlist", "allow": allow}))
    return st.one_of(modes)


@st.composite
def extra_probes(draw: st.DrawFn) -> list[tuple[str, int, ConnectionProtocol]]:
    """Destinations beyond the derived probes: deeper names, other ports, other addresses, each
    in the protocol its client speaks (``client_protocol``) or as plain TCP."""
    hosts = [
        *NAMES,
        *WILDCARD_PARENTS,
        *IPV4,
        "evil.example.org",
        "10.0.0.1",
        "169.254.169.254",
        "64:ff9b::a9fe:a9fe",
        "::ffff:169.254.169.254",
        "8.8.4.4",
    ]
    found = []
    for _ in range(draw(st.integers(1, 6))):
        host = draw(st.sampled_from(hosts))
        if not host[0].isdigit() and ":" not in host and draw(st.booleans()):
            host = ".".join([*draw(st.lists(LABELS, min_size=1, max_size=3)), host])
        port = draw(st.sampled_from((22, 80, 443, 8443, 53)))
        found.append((host, port, draw(st.sampled_from((client_protocol(host, port), "tcp")))))
    return found


def source(target: str, accepts: EgressAcceptance, egress_section: dict[str, Any]) -> ConfigSource:
    """The prod stack's settings for ``target`` alone, with ``egress_section``."""
    settings_values = {**PROD.values[target], **dict(accepts.settings)}
    values = {
        "environment": "prod",
        "targets": [target],
        "profile": {**PROD.values.get("profile", {}), "egress": egress_section},
        target: settings_values,
    }
    secret_paths = frozenset(p for p in PROD.secret_paths if p.startswith(f"{target}."))
    return ConfigSource(values=values, secret_paths=secret_paths)


@functools.cache
def explained_for(target: str, egress_json: str) -> TargetEgress:
    """Render ``target`` with the egress section (JSON text) and explain it; cached, since
    most examples repeat ``deny`` or ``open``."""
    section = json.loads(egress_json)
    rendered = render_source(PROJECT, "prod", source(target, ACCEPTS[target], section))
    # The first render imports the target's SDK: frozen, the collections during the rest of
    # the examples skip it (support.freeze_new_imports).
    freeze_new_imports()
    return explain_target(rendered, target)


def by_resolved_address(verdict: Verdict, protocol: ConnectionProtocol) -> bool:
    """Whether ``verdict`` admits plain TCP by grants matched by resolved address only."""
    grants = verdict.grants
    return (
        protocol == "tcp" and bool(grants) and all(g.enforced == "resolved-address" for g in grants)
    )


def check(
    target: str,
    egress_section: dict[str, Any],
    extra: list[tuple[str, int, ConnectionProtocol]],
) -> None:
    explained = explained_for(target, json.dumps(egress_section, sort_keys=True))
    assert explained.effective is not None, f"{target} has no egress reader"
    contract = explained.contract
    derived = contract_probes(contract, explained.effective)
    assert all(p.protocol == "tcp" for p in derived if p.kind == "plain-tcp")
    probes = [(p.host, p.port, p.protocol) for p in derived]
    for host, port, protocol in [*probes, *extra]:
        target_says = explained.effective.admits(host, port, protocol)
        contract_says = contract.admits(host, port, protocol)
        residual = (
            ACCEPTS[target].plain_tcp_by_address
            and target_says.admitted
            and not contract_says
            and by_resolved_address(target_says, protocol)
        )
        assert target_says.admitted == contract_says or residual, (
            f"{target} {egress_section}: {host}:{port} over {protocol} target "
            f"{target_says.admitted} ({'; '.join(map(str, target_says.grants))}), "
            f"contract {contract_says}"
        )
        if not host[0].isdigit() and ":" not in host:
            resolved = explained.effective.resolves(host)
            assert resolved.admitted == contract.may_resolve(host), (
                f"{target} {egress_section}: resolving {host}: target {resolved.admitted}, "
                f"contract {contract.may_resolve(host)}"
            )
    # Matching by resolved address is expressible (SBX-NET-006 flags it); with open egress
    # every public address is reachable anyway, so a weakly matched name widens nothing.
    findings = [f for f in explained.findings if f.kind != "resolved-address-only"]
    if egress_section["mode"] != "open":
        assert findings == [], [str(f) for f in findings]


@pytest.mark.parametrize("target", list(ACCEPTS))
def test_every_target_admits_exactly_what_the_contract_admits(target: str) -> None:
    accepts = ACCEPTS[target]

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        database=None,
    )
    @given(egress_section=egress(accepts), extra=extra_probes())
    def run(
        egress_section: dict[str, Any], extra: list[tuple[str, int, ConnectionProtocol]]
    ) -> None:
        check(target, egress_section, extra)

    run()


MIXED = (
    "pypi.org:443",
    "*.pythonhosted.org:443",
    "api.example.com:8443",
    "downloads.example.org:80",
    "140.82.112.3:443",
    "[2a04:4e42:400::223]:443",
)


def accepted(accepts: EgressAcceptance, entry: str) -> bool:
    rule = parse_rule(entry)
    kind_ok = {
        "name": accepts.names,
        "wildcard": accepts.wildcards,
        "ip": accepts.ipv6 if ":" in rule.host else accepts.ipv4,
    }[rule.kind]
    return kind_ok and accepts.admits_port(rule.port)


@pytest.mark.parametrize(
    ("target", "allow"),
    [
        ("kubernetes", MIXED),
        ("aws-microvm", MIXED[:5]),
        ("gcp-cloudrun", (MIXED[0], *MIXED[2:5])),
        ("gcp-gke", MIXED[4:]),
        ("cloudflare", (*MIXED[:2], MIXED[3])),
    ],
)
def test_a_mixed_allowlist_explains_with_no_difference(target: str, allow: tuple[str, ...]) -> None:
    # Exact names, a wildcard, ports 80, 443 and 8443 and IP literals, as far as each accepts.
    assert allow == tuple(e for e in MIXED if accepted(ACCEPTS[target], e))
    section = {"mode": "allowlist", "allow": list(allow)}
    explained = explained_for(target, json.dumps(section, sort_keys=True))
    assert sorted(str(rule) for rule in explained.contract.rules) == sorted(allow)
    # Every difference is the plain-TCP probe of a name entry, admitted by resolved address
    # where the target matches names so (and nowhere else).
    plain = {
        (str(d.probe), d.probe.protocol, d.probe.kind, d.direction) for d in explained.differences
    }
    names = [r for r in explained.contract.rules if r.kind == "name"]
    expected = {(str(r), "tcp", "plain-tcp", "wider") for r in names}
    assert plain == (expected if ACCEPTS[target].plain_tcp_by_address else set())
    assert all(by_resolved_address(d.verdict, "tcp") for d in explained.differences)
    findings = [str(f) for f in explained.findings if f.kind != "resolved-address-only"]
    assert findings == []
    check(target, section, [])


def test_every_registered_target_is_checked_and_prod_lists_each() -> None:
    assert list(ACCEPTS) == list(TARGET_MODULES)
    assert set(ACCEPTS) == set(PROD.values["targets"])


# An entry of each kind, on a port every target takes.
ENTRY_OF_KIND = {
    "names": "pypi.org:443",
    "wildcards": "*.pythonhosted.org:443",
    "ipv4": "140.82.112.3:443",
    "ipv6": "[2a04:4e42::223]:443",
}


def declined(accepts: EgressAcceptance) -> list[dict[str, Any]]:
    """An egress section for each thing ``accepts`` leaves out."""
    sections: list[dict[str, Any]] = [] if accepts.open else [{"mode": "open"}]
    for kind, entry in ENTRY_OF_KIND.items():
        if not (accepts.allowlist and getattr(accepts, kind)):
            sections.append({"mode": "allowlist", "allow": [entry]})
    taken = [entry for kind, entry in ENTRY_OF_KIND.items() if getattr(accepts, kind)]
    if accepts.allowlist and taken and accepts.ports is not None:
        port = next(port for port in PORTS if not accepts.admits_port(port))
        sections.append({"mode": "allowlist", "allow": [taken[0].replace(":443", f":{port}")]})
    return sections


@pytest.mark.parametrize("target", list(ACCEPTS))
def test_what_a_target_does_not_accept_is_refused_naming_the_egress_key(target: str) -> None:
    # The other side of the declaration: each thing left out is a config error (exit 2).
    accepts = ACCEPTS[target]
    sections = [(accepts, section) for section in declined(accepts)]
    if accepts.settings:
        # The settings it needs are needed: the prod stack's alone refuse a name entry.
        without = replace(accepts, settings=())
        sections.append((without, {"mode": "allowlist", "allow": [ENTRY_OF_KIND["names"]]}))
    assert bool(sections) == (accepts != EgressAcceptance())
    for declared, section in sections:
        with pytest.raises(ConfigError) as caught:
            load_stack(source(target, declared, section), "prod", "prod")
        named = [key for key in caught.value.keys if "egress" in key or f":{target}." in key]
        assert named, (section, str(caught.value))


def test_generated_entries_are_valid_contract_entries() -> None:
    for entry in (*NAMES, *(f"*.{p}" for p in WILDCARD_PARENTS), *IPV4, *(f"[{a}]" for a in IPV6)):
        parse_rule(entry)
