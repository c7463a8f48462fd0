"""SBX-NET-001's allowedPorts (443, 80, 53) on every port-bearing egress rule the kit renders.

The allowlist ``["example.com:8022", "140.82.112.3:25"]`` renders a Cilium ``toPorts`` 8022 and a
NetworkPolicy ipBlock rule on 25 (kubernetes), firewall policy allow rules on 8022 and 25
(gcp-cloudrun), a connector security group rule on 25 (aws-microvm); gcp-gke takes IP entries
only, so ``140.82.112.3:25`` renders a NetworkPolicy on 25 there: each must be reported, and the
same stacks on 443 must not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import support as testing
from sandboxkit import gate
from sandboxkit.render import RenderedStack
from support import named, with_input

PROJECT = Path(__file__).resolve().parents[2]
OTHER_PORTS = ["example.com:8022", "140.82.112.3:25"]
# gcp-gke refuses name entries (its FQDN policy cannot learn from the kit's resolver).
GKE_OTHER_PORTS = ["140.82.112.3:25"]
# aws-microvm ties names to 443/80 (Network Firewall matches SNI/Host), so only the IP moves.
AWS_OTHER_PORTS = ["example.com:443", "140.82.112.3:25"]
ALLOWED = ["example.com:443", "140.82.112.3:443"]
GKE_ALLOWED = ["140.82.112.3:443"]
REMEDY = (
    "beyond ports 443, 80, 53; allow only hosts on those ports in "
    "sandboxkit:profile.egress.allow, or add the port to sbx-net-001's allowedPorts in the "
    "pack config."
)
# aws-microvm opens its controlPlaneHosts' ports too: the remedy names them.
AWS_REMEDY = REMEDY.replace(
    "egress.allow,", "egress.allow and sandboxkit:aws-microvm.controlPlaneHosts,"
)
# A rule over every port: only egress mode open renders one (issue 31 item 14).
EVERY_PORT = (
    "every port, which the kit renders for sandboxkit:profile.egress.mode open only; set "
    "sandboxkit:profile.egress.mode to deny or allowlist, or restore the kit's rule with its "
    "ports (sbx-net-001's allowedPorts lists single ports, never every port)."
)


@pytest.fixture(scope="module")
def analyzer() -> gate.InProcessAnalyzer:
    return gate.InProcessAnalyzer(gate.pack_dir(PROJECT))


def render(target: str, allow: list[str], **settings: Any) -> RenderedStack:
    """The prod stack narrowed to ``target`` with an allowlist profile."""
    values = testing.stack_values(PROJECT, "prod")
    for dropped in set(values["targets"]) - {target}:
        del values[dropped]
    values["targets"] = [target]
    values["profile"]["egress"] = {"mode": "allowlist", "allow": allow}
    if target == "gcp-cloudrun":
        values[target]["cnameTargets"] = []  # the test names answer with addresses
        values[target]["nameMatching"] = "resolved-address"
    values[target].update(settings)
    return testing.render_values(PROJECT, "prod", values)


def port_findings(
    analyzer: gate.InProcessAnalyzer, rendered: RenderedStack, pack_config: Path | None = None
) -> set[tuple[str, str]]:
    """(resource name, message) of every SBX-NET-001 finding."""
    result = gate.check_rendered(analyzer, rendered, PROJECT, pack_config)
    return {
        (v.urn.rsplit("::", 1)[-1], v.message)
        for v in result.violations
        if v.policy == "SBX-NET-001"
    }


CASES = {
    "kubernetes-cilium": (
        ("kubernetes", OTHER_PORTS, {"fqdnPolicy": "cilium"}),
        {
            (
                "kubernetes-fqdn-policy",
                f"CiliumNetworkPolicy kubernetes-fqdn-policy egress rule 1 admits egress on "
                f"port 8022, {REMEDY}",
            ),
            (
                "kubernetes-network-policy",
                f"NetworkPolicy kubernetes-network-policy egress rule 0 admits egress on "
                f"port 25, {REMEDY}",
            ),
        },
    ),
    "gcp-gke": (
        ("gcp-gke", GKE_OTHER_PORTS, {}),
        {
            (
                "gcp-gke-agent-sandbox-network-policy",
                "NetworkPolicy gcp-gke-agent-sandbox-network-policy egress rule 0 admits egress "
                f"on port 25, {REMEDY}",
            ),
        },
    ),
    "gcp-cloudrun": (
        ("gcp-cloudrun", OTHER_PORTS, {}),
        {
            (
                "gcp-cloudrun-allow-fqdn-8022",
                "Firewall policy rule gcp-cloudrun-allow-fqdn-8022 admits egress on port 8022, "
                f"{REMEDY}",
            ),
            (
                "gcp-cloudrun-allow-ipv4-25",
                "Firewall policy rule gcp-cloudrun-allow-ipv4-25 admits egress on port 25, "
                f"{REMEDY}",
            ),
        },
    ),
    "aws-microvm": (
        ("aws-microvm", AWS_OTHER_PORTS, {}),
        {
            (
                "aws-microvm-connector-sg",
                "Security group aws-microvm-connector-sg egress rule 3 admits egress on port 25, "
                f"{AWS_REMEDY}",
            ),
            (
                "aws-microvm-fw-ip-rules",
                "Network Firewall rule group aws-microvm-fw-ip-rules pass rule sid 1000001 "
                f"admits egress on port 25, {AWS_REMEDY}",
            ),
        },
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_egress_rules_on_other_ports_are_reported(
    case: str, analyzer: gate.InProcessAnalyzer
) -> None:
    (target, allow, settings), expected = CASES[case]
    assert port_findings(analyzer, render(target, allow, **settings)) == expected


@pytest.mark.parametrize(
    ("target", "allow", "settings"),
    [
        ("kubernetes", ALLOWED, {"fqdnPolicy": "cilium"}),
        ("gcp-gke", GKE_ALLOWED, {}),
        ("gcp-cloudrun", ALLOWED, {}),
        ("aws-microvm", ALLOWED, {}),
    ],
)
def test_the_same_allowlist_on_allowed_ports_is_silent(
    target: str, allow: list[str], settings: dict[str, Any], analyzer: gate.InProcessAnalyzer
) -> None:
    assert port_findings(analyzer, render(target, allow, **settings)) == set()


def test_allowed_ports_from_the_pack_config_admit_them(
    analyzer: gate.InProcessAnalyzer, tmp_path: Path
) -> None:
    config = tmp_path / "prod.json"
    config.write_text(json.dumps({"sbx-net-001": {"allowedPorts": [443, 80, 53, 8022, 25]}}))
    rendered = render("kubernetes", OTHER_PORTS, fqdnPolicy="cilium")
    assert port_findings(analyzer, rendered, config) == set()


CILIUM = "kubernetes-fqdn-policy"
NETWORK_POLICY = "kubernetes-network-policy"


@pytest.mark.parametrize(
    ("name", "path", "value", "words"),
    [
        # A Cilium rule without toPorts, or a toPorts entry without ports, admits every port.
        (CILIUM, ("spec", "egress", 1, "toPorts"), [], "every port"),
        (CILIUM, ("spec", "egress", 1, "toPorts"), [{"rules": {}}], "every port"),
        (
            CILIUM,
            ("spec", "egress", 1, "toPorts", 0, "ports", 0),
            {"port": "443", "endPort": 8443, "protocol": "TCP"},
            "ports 443-8443",
        ),
        (NETWORK_POLICY, ("spec", "egress", 0, "ports"), [], "every port"),
        (
            NETWORK_POLICY,
            ("spec", "egress", 0, "ports", 0),
            {"protocol": "TCP", "port": "https"},
            "named port https",
        ),
    ],
)
def test_rules_that_admit_more_than_their_port_are_reported(
    name: str,
    path: tuple[str | int, ...],
    value: Any,
    words: str,
    analyzer: gate.InProcessAnalyzer,
) -> None:
    rendered = with_input(render("kubernetes", ALLOWED, fqdnPolicy="cilium"), name, path, value)
    kind = named(rendered.resources, name).type.rsplit(":", 1)[-1]
    remedy = EVERY_PORT if words == "every port" else f"{words}, {REMEDY}"
    assert port_findings(analyzer, rendered) == {
        (name, f"{kind} {name} egress rule {path[2]} admits egress on {remedy}")
    }


def test_a_cilium_port_range_is_one_contract_finding_per_run_of_ports(
    analyzer: gate.InProcessAnalyzer,
) -> None:
    # example.com:443 is the contract's; 444-8443 widen it. SBX-NET-008 names the range once
    # (and 8443 on its own, the probe the contract's entry asks first), not once per port.
    rendered = with_input(
        render("kubernetes", ALLOWED, fqdnPolicy="cilium"),
        CILIUM,
        ("spec", "egress", 1, "toPorts", 0, "ports", 0),
        {"port": "443", "endPort": 8443, "protocol": "TCP"},
    )
    result = gate.check_rendered(analyzer, rendered, PROJECT, None)
    grant = (
        "example.com (exact) on 443-8443 (tls only), name at L7 (SNI/Host checked against the "
        "destination) "
        "[platform-doc: Cilium toFQDNs with TLS serverNames checked by Envoy (docs.cilium.io, "
        "policy language, Limit TLS Server Name Indication)]"
    )
    fix = (
        "the contract refuses it; deploy the target's component unchanged for this profile "
        "(sandboxkit preview --explain-egress shows every probe)."
    )
    assert [
        (v.urn.rsplit("::", 1)[-1], v.message)
        for v in result.violations
        if v.policy == "SBX-NET-008"
    ] == [
        (
            CILIUM,
            "kubernetes differs from the stack's egress contract: wider: example.com:8443 "
            f"over tls (other-port of example.com:443) is admitted by {grant}; {fix}",
        ),
        (
            CILIUM,
            "kubernetes differs from the stack's egress contract: wider: example.com:444-8442 "
            f"over tls (grant of CiliumNetworkPolicy {CILIUM}) is admitted by {grant}; {fix}",
        ),
    ]
