"""SBX-NET-007 with its exact messages: the DNS doors the mutation table does not reopen, and
silence on the kit's own renders in every egress mode (kubernetes with Cilium, gcp-gke)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import support as testing
from sandboxkit import gate
from sandboxkit.render import RenderedStack
from support import with_input

PROJECT = Path(__file__).resolve().parents[2]
DNS_PORTS = [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
VOIDS = "(Cilium docs, Layer 7 policies)"


@pytest.fixture(scope="module")
def analyzer() -> gate.InProcessAnalyzer:
    return gate.InProcessAnalyzer(gate.pack_dir(PROJECT))


def render(target: str, egress: dict[str, Any]) -> RenderedStack:
    """The prod stack narrowed to ``target`` with ``egress``."""
    values = testing.stack_values(PROJECT, "prod")
    for dropped in set(values["targets"]) - {target}:
        del values[dropped]
    values["targets"] = [target]
    values["profile"]["egress"] = egress
    if target == "kubernetes":
        values[target]["fqdnPolicy"] = "cilium"
    return testing.render_values(PROJECT, "prod", values)


def dns_findings(analyzer: gate.InProcessAnalyzer, rendered: RenderedStack) -> set[tuple[str, str]]:
    """(resource name, message) of every SBX-NET-007 finding."""
    result = gate.check_rendered(analyzer, rendered, PROJECT)
    return {
        (v.urn.rsplit("::", 1)[-1], v.message)
        for v in result.violations
        if v.policy == "SBX-NET-007"
    }


ALLOWLIST = {"mode": "allowlist", "allow": ["pypi.org", "*.pythonhosted.org", "140.82.112.3:8443"]}


@pytest.mark.parametrize(
    ("target", "egress"),
    [
        ("kubernetes", {"mode": "deny"}),
        ("kubernetes", ALLOWLIST),
        ("kubernetes", {"mode": "open"}),
        ("gcp-gke", {"mode": "deny"}),
        ("gcp-gke", {"mode": "allowlist", "allow": ["140.82.112.3:8443"]}),
        ("gcp-gke", {"mode": "open"}),
    ],
)
def test_the_kit_renders_pass(
    analyzer: gate.InProcessAnalyzer, target: str, egress: dict[str, Any]
) -> None:
    assert dns_findings(analyzer, render(target, egress)) == set()


def test_a_cilium_l4_rule_on_port_53_to_the_resolver_voids_the_dns_rule(
    analyzer: gate.InProcessAnalyzer,
) -> None:
    rendered = render("kubernetes", ALLOWLIST)
    policy = testing.named(rendered.resources, "kubernetes-fqdn-policy")
    dns_rule = policy.inputs["spec"]["egress"][0]
    l4_only = {"toEndpoints": dns_rule["toEndpoints"], "toPorts": [{"ports": DNS_PORTS}]}
    egress = [*policy.inputs["spec"]["egress"], l4_only]
    weakened = with_input(rendered, "kubernetes-fqdn-policy", ("spec", "egress"), egress)
    assert dns_findings(analyzer, weakened) == {
        (
            "kubernetes-fqdn-policy",
            "CiliumNetworkPolicy kubernetes-fqdn-policy admits port 53 to pods without a DNS "
            f"rule, which voids the L7 DNS rule of kubernetes-fqdn-policy {VOIDS}; remove it.",
        )
    }


def test_sandbox_dns_to_every_pod_of_a_namespace_is_a_tunnel(
    analyzer: gate.InProcessAnalyzer,
) -> None:
    rendered = render("kubernetes", ALLOWLIST)
    every_pod = {
        "to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "x"}}}],
        "ports": DNS_PORTS,
    }
    weakened = with_input(rendered, "kubernetes-network-policy", ("spec", "egress"), [every_pod])
    assert dns_findings(analyzer, weakened) == {
        (
            "kubernetes-network-policy",
            "NetworkPolicy kubernetes-network-policy egress rule 0 admits DNS from sandbox pods "
            "to every pod, where the cluster's resolver answers any name (a DNS tunnel); send "
            "sandbox DNS to the kit's resolver only.",
        )
    }
