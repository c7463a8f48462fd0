"""The cloudflare reader: effective egress from the rendered Worker script only (the kit's
WranglerScript, or pulumi-cloudflare's WorkersScript in the same shape), decided by the
Worker's own code (run in workerd), compared with the egress contract on derived probes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sandboxkit.boundary import NON_PUBLIC_IPV4, NON_PUBLIC_IPV6
from sandboxkit.cloudflare import egress_reader, type_tokens
from sandboxkit.cloudflare.decide import WorkerDecider, WorkerProbe
from sandboxkit.cloudflare.egress_reader import (
    CONNECT_SOURCE,
    RESOLVE_SOURCE,
    WorkerReadError,
    read_egress,
    worker_code_problems,
)
from sandboxkit.cloudflare.spec import WORKER_MODULE
from sandboxkit.config import load_stack, read_stack_file
from sandboxkit.effective_egress import (
    EffectiveEgress,
    Grant,
    Probe,
    ResourceView,
    compare,
    derive_probes,
)
from sandboxkit.egress_contract import ConnectionProtocol, EgressContract, parse_rule
from sandboxkit.explain import explain_target
from sandboxkit.project import stack_file
from sandboxkit.render import Recorder
from support import build_target, render_values, shipped_render, stack_values

SETTINGS = {
    "accountId": "0" * 32,
    "image": "registry.cloudflare.com/00000000000000000000000000000000/sandbox:v1",
    "tokenSigningKey": "signing-key-test-value-7f3a9c1e5b2d4f6a8c0e",
    "sandboxIdKey": "id-key-test-value-1b3d5f7a9c2e4a6c8e0b",
}
WORKERS_SCRIPT = type_tokens.WORKERS_SCRIPT.token
WRANGLER_SCRIPT = type_tokens.WRANGLER_SCRIPT.token
SCRIPT = f"{WRANGLER_SCRIPT} cloudflare-script"
HTTPS = frozenset({443})
HTTP = frozenset({80})
# Names, a wildcard, one name on both ports the target intercepts.
ALLOW = ["pypi.org", "*.pythonhosted.org", "github.com:80", "github.com:443"]


def rendered(engine: Recorder, egress: dict[str, Any]) -> list[ResourceView]:
    resources = build_target(
        engine,
        "cloudflare",
        SETTINGS,
        {"egress": egress},
        secrets=("tokenSigningKey", "sandboxIdKey"),
    )
    return [ResourceView.of(r.type, r.name, r.inputs) for r in resources]


def connect(host: str, scope: Any, ports: frozenset[int]) -> Grant:
    # An interception on 80 routes HTTP by its Host, one on 443 TLS by its SNI.
    protocols: frozenset[ConnectionProtocol] = frozenset({"http" if ports == HTTP else "tls"})
    return Grant(host, scope, ports, "name-l7", "kit-code", CONNECT_SOURCE, SCRIPT, (), protocols)


def resolve(host: str, scope: Any) -> Grant:
    return Grant(host, scope, "any", "query-name", "platform-doc", RESOLVE_SOURCE, SCRIPT)


def script_with(policy: object, kind: str = WRANGLER_SCRIPT) -> ResourceView:
    bindings = [{"name": "EGRESS_POLICY", "type": "plain_text", "text": policy}]
    return ResourceView.of(kind, "cloudflare-script", {"bindings": bindings})


def test_deny_grants_nothing_and_matches_the_contract(
    engine: Recorder, worker_decider: WorkerDecider
) -> None:
    effective = read_egress(rendered(engine, {"mode": "deny"}), worker_decider)
    assert effective == EffectiveEgress("cloudflare", (), ())
    contract = EgressContract("deny")
    assert compare(effective, contract, derive_probes(())) == ()


def test_the_shipped_prod_stack_reads_as_its_contract(
    project_dir: Path, worker_decider: WorkerDecider
) -> None:
    rendered = shipped_render(project_dir, "prod")
    views = [
        ResourceView.of(r.type, r.name, r.inputs)
        for r in rendered.resources
        if rendered.target_of(r) == "cloudflare"
    ]
    effective = read_egress(views, worker_decider)
    profile = load_stack(read_stack_file(stack_file(project_dir, "prod")), "prod").profile
    contract = EgressContract.of(profile.egress)
    assert contract.mode == "deny"
    assert effective == EffectiveEgress("cloudflare", (), ())
    assert compare(effective, contract, derive_probes(contract.rules)) == ()


def test_explain_egress_on_an_allowlist_stack_finds_no_difference(project_dir: Path) -> None:
    # The prod stack with only cloudflare and an allowlist of names, wildcards, ports 80/443.
    values = stack_values(project_dir, "prod")
    values["targets"] = ["cloudflare"]
    values["profile"]["egress"] = {"mode": "allowlist", "allow": ALLOW}
    explained = explain_target(render_values(project_dir, "prod", values), "cloudflare")
    assert explained.effective is not None
    assert len(explained.effective.connect) == len(ALLOW)
    assert (explained.differences, explained.findings) == ((), ())
    assert explained.matches_contract


def test_allowlist_grants_one_interception_per_entry(
    engine: Recorder, worker_decider: WorkerDecider
) -> None:
    effective = read_egress(rendered(engine, {"mode": "allowlist", "allow": ALLOW}), worker_decider)
    # Entries in the profile's sorted order (github.com before pypi.org before pythonhosted.org).
    assert effective.connect == (
        connect("github.com", "exact", HTTP),
        connect("github.com", "exact", HTTPS),
        connect("pypi.org", "exact", HTTPS),
        connect("pythonhosted.org", "below", HTTPS),
    )
    assert effective.resolve == (
        resolve("github.com", "exact"),
        resolve("pypi.org", "exact"),
        resolve("pythonhosted.org", "below"),
    )


def test_allowlist_has_no_difference_from_the_contract(
    engine: Recorder, worker_decider: WorkerDecider
) -> None:
    effective = read_egress(rendered(engine, {"mode": "allowlist", "allow": ALLOW}), worker_decider)
    rules = tuple(sorted(parse_rule(entry) for entry in ALLOW))
    probes = derive_probes(rules)
    assert compare(effective, EgressContract("allowlist", rules), probes) == ()
    # The probes the issue names, by hand: the exact expected answers.
    # Plain TCP (no SNI, no Host) matches no interception: never routed, never admitted.
    plain = [p for p in probes if p.kind == "plain-tcp"]
    assert [p.origin for p in plain] == [str(r) for r in rules]  # one per name entry
    assert not any(effective.admits(p.host, p.port, p.protocol) for p in plain)
    answers = {
        str(p): effective.admits(p.host, p.port, p.protocol).admitted
        for p in probes
        if p.kind != "plain-tcp"
    }
    assert answers == {
        "github.com:80": True,
        "sbx-probe.github.com:80": False,
        "sbx-probe-2.sbx-probe.github.com:80": False,
        "github.com:443": True,
        "sbx-probe.github.com:443": False,
        "sbx-probe-2.sbx-probe.github.com:443": False,
        "github.com:8443": False,
        "pypi.org:443": True,
        "sbx-probe.pypi.org:443": False,
        "sbx-probe-2.sbx-probe.pypi.org:443": False,
        "pypi.org:80": False,
        "sbx-probe.pythonhosted.org:443": True,
        "sbx-probe-2.sbx-probe.pythonhosted.org:443": True,
        "pythonhosted.org:443": False,
        "sbx-probe.pythonhosted.org:80": False,
        "169.254.169.254:80": False,
        "[64:ff9b::a9fe:a9fe]:80": False,
    }


def test_an_open_policy_grants_every_name_and_public_address_on_80_and_443_only(
    worker_decider: WorkerDecider,
) -> None:
    # The target refuses open egress (test_cloudflare_target); a hand-written open policy still
    # reads as the Worker decides it, narrower than the contract's open.
    effective = read_egress([script_with('{"mode":"open","allow":[]}')], worker_decider)

    def addresses(ports: frozenset[int]) -> tuple[Grant, ...]:
        return tuple(
            Grant(
                block,
                "exact",
                ports,
                "address",
                "kit-code",
                CONNECT_SOURCE,
                SCRIPT,
                shut,
                frozenset({"http" if ports == HTTP else "tls"}),
            )
            for block, shut in (("0.0.0.0/0", NON_PUBLIC_IPV4), ("::/0", NON_PUBLIC_IPV6))
        )

    assert effective.connect == (
        connect("*", "any", HTTP),
        *addresses(HTTP),
        connect("*", "any", HTTPS),
        *addresses(HTTPS),
    )
    assert effective.resolve == (resolve("*", "any"),)
    # open owes every port and every TCP; Cloudflare Containers route only HTTP on 80 and TLS
    # on 443: narrower, marked (hence the refusal).
    probes = (
        *derive_probes(()),
        Probe.usual("example.com", 443, "entry"),
        Probe.usual("example.com", 8443, "other-port"),
        Probe("151.101.0.223", 443, "tls", "entry"),
        Probe("151.101.0.223", 443, "tcp", "entry"),
    )
    differences = compare(effective, EgressContract("open"), probes)
    assert [(str(d.probe), d.probe.protocol, d.direction) for d in differences] == [
        ("example.com:8443", "tls", "narrower"),
        ("151.101.0.223:443", "tcp", "narrower"),
    ]


def test_a_pulumi_cloudflare_workers_script_reads_as_the_kits_wrangler_script(
    worker_decider: WorkerDecider,
) -> None:
    # A stack that uploads the script with pulumi-cloudflare is judged like the kit's own.
    policy = json.dumps({"mode": "allowlist", "allow": [{"host": "pypi.org", "port": 443}]})
    kit = read_egress([script_with(policy)], worker_decider)
    foreign = read_egress([script_with(policy, WORKERS_SCRIPT)], worker_decider)
    assert [g.host for g in kit.connect] == ["pypi.org"]
    relabel = {f"{WORKERS_SCRIPT} cloudflare-script": SCRIPT}
    assert [replace(g, resource=relabel[g.resource]) for g in foreign.connect] == list(kit.connect)


def test_a_script_without_a_readable_policy_grants_nothing(worker_decider: WorkerDecider) -> None:
    views = [
        script_with("{not json"),
        ResourceView.of(WORKERS_SCRIPT, "bare", {"bindings": []}),
        script_with(json.dumps({"mode": "allowlist", "allow": [{"host": "x.org", "port": 8443}]})),
    ]
    assert read_egress(views, worker_decider) == EffectiveEgress("cloudflare", (), ())


@pytest.mark.parametrize(
    ("name", "admitted"),
    [
        # The glob table of cloudflare/containers docs/egress.md (the Container class's patterns,
        # the same `*` as ctx.container.interceptOutboundHttp(s)): `*.example.com`.
        ("api.example.com", True),
        ("a.b.example.com", True),
        ("example.com", False),
    ],
)
def test_golden_wildcard_from_the_documented_glob_table(
    worker_decider: WorkerDecider, name: str, admitted: bool
) -> None:
    policy = {
        "mode": "allowlist",
        "allow": [{"host": "example.com", "port": 443, "wildcard": True}],
    }
    effective = read_egress([script_with(json.dumps(policy))], worker_decider)
    assert effective.admits(name, 443, "tls").admitted is admitted
    assert effective.resolves(name).admitted is admitted


class Lying(WorkerDecider):
    """A decider whose gateway admits the apex of a wildcard: the reader must notice."""

    def probe(self, policy: str, probes: Sequence[tuple[str, int]]) -> list[WorkerProbe]:
        answers = super().probe(policy, probes)
        return [
            WorkerProbe(a.host, a.port, True, "gateway", "lie", None) if a.host == "x.org" else a
            for a in answers
        ]


def test_grants_that_disagree_with_the_worker_are_refused() -> None:
    policy = json.dumps(
        {"mode": "allowlist", "allow": [{"host": "x.org", "port": 443, "wildcard": True}]}
    )
    with Lying() as lying, pytest.raises(WorkerReadError) as caught:
        read_egress([script_with(policy)], lying)
    assert str(caught.value) == (
        f"The grants read from EGRESS_POLICY {json.dumps(policy)} disagree with the "
        "Worker's own decisions: x.org:443: the Worker admits it (lie)"
    )


def test_worker_code_problems_name_the_kit_worker_and_the_flag() -> None:
    kit: dict[str, Any] = {
        "content": WORKER_MODULE.read_text(encoding="utf-8"),
        "compatibilityFlags": ["global_fetch_strictly_public"],
    }
    assert worker_code_problems("w", kit) == []
    assert worker_code_problems("w", {**kit, "content": kit["content"] + "\n"}) == [
        "Worker w does not run the kit's Worker code (its content differs from "
        "components/sandboxkit/cloudflare/worker/src/index.js), so nothing says its containers "
        "reach only the listed hosts: its interceptions may be catch-alls and its gateway open; "
        "deploy the kit's Worker module unchanged."
    ]
    flag = (
        "Worker w runs without the compatibility flag global_fetch_strictly_public, so its "
        "egress gateway's fetch to a host of the Worker's own zone goes straight to that origin, "
        "past WAF and Access; set compatibility_flags to [global_fetch_strictly_public]."
    )
    assert worker_code_problems("w", {**kit, "compatibilityFlags": ()}) == [flag]
    both = ("global_fetch_strictly_public", "global_fetch_private_origin")
    assert worker_code_problems("w", {**kit, "compatibilityFlags": both}) == [flag]


def test_resources_without_a_worker_policy_start_no_node(monkeypatch: pytest.MonkeyPatch) -> None:
    # The policy pack runs every target's reader on every stack: no Worker, no node process.
    def refuse() -> None:
        raise AssertionError("a WorkerDecider was started")

    monkeypatch.setattr(egress_reader, "WorkerDecider", refuse)
    views = [
        ResourceView.of("kubernetes:networking.k8s.io/v1:NetworkPolicy", "np", {"spec": {}}),
        ResourceView.of(WORKERS_SCRIPT, "bare", {"bindings": []}),
    ]
    assert read_egress(views) == EffectiveEgress("cloudflare", (), ())


def test_one_shared_decider_answers_each_policy_once(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[WorkerDecider] = []

    class Counted(WorkerDecider):
        def __enter__(self) -> Counted:
            started.append(self)
            return super().__enter__()

    monkeypatch.setattr(egress_reader, "WorkerDecider", Counted)
    monkeypatch.setattr(egress_reader, "_SHARED", [])
    egress_reader._checked_with_shared_decider.cache_clear()
    policy = json.dumps({"mode": "allowlist", "allow": [{"host": "pypi.org", "port": 443}]})
    try:
        first = read_egress([script_with(policy)])
        assert read_egress([script_with(policy)]) == first
        assert first.connect[0].host == "pypi.org"
        assert len(started) == 1
    finally:
        for decider in egress_reader._SHARED:
            decider.close()
        egress_reader._checked_with_shared_decider.cache_clear()
