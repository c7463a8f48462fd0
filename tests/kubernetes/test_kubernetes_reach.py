"""The kubernetes and gcp-gke egress reader: golden fixtures from the cited docs' own examples,
the shipped and allowlist stacks with their exact answers, and each DNS door reopened."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

import support as testing
from sandboxkit.effective_egress import (
    EffectiveEgress,
    JSONValue,
    ResourceView,
    compare,
    contract_probes,
    inexpressible,
)
from sandboxkit.egress_contract import EgressContract, parse_rule
from sandboxkit.explain import explain_target
from sandboxkit.gcp.gke.egress_reader import read_egress as read_gke
from sandboxkit.kubernetes.egress_reader import dnsmasq_names, pattern_scope, read_egress, selects
from sandboxkit.render import RenderedStack
from support import udp_of

PROJECT = Path(__file__).resolve().parents[2]
ALLOWLIST = [
    "pypi.org",
    "*.pythonhosted.org",
    "deb.debian.org:80",
    "mirror.example.org:8443",
    "93.184.216.34:8443",
]
SANDBOX: dict[str, JSONValue] = {"sandboxkit-sandbox": "s"}


def render(
    stack: str, target: str, egress: dict[str, Any] | None = None, fqdn_policy: str = "cilium"
) -> RenderedStack:
    values = testing.stack_values(PROJECT, stack)
    if target not in values:
        values[target] = testing.stack_values(PROJECT, "prod")[target]
    values["targets"] = [target]
    if egress is not None:
        values["profile"]["egress"] = egress
    if target == "kubernetes":
        values[target]["fqdnPolicy"] = fqdn_policy
    return testing.render_values(PROJECT, stack, values)


def effective(rendered: RenderedStack, target: str = "kubernetes") -> EffectiveEgress:
    reader = read_egress if target == "kubernetes" else read_gke
    return reader(rendered.target_views(target))


@pytest.fixture(scope="module")
def allowlist() -> RenderedStack:
    return render("dev", "kubernetes", {"mode": "allowlist", "allow": ALLOWLIST})


# --- golden fixtures: the docs' own examples ---------------------------------------------------


def template(dns_policy: str | None = None, nameservers: list[str] | None = None) -> ResourceView:
    spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if dns_policy:
        spec["dnsPolicy"] = dns_policy
    if nameservers is not None:
        spec["dnsConfig"] = {"nameservers": nameservers}
    return ResourceView(
        "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate",
        "t",
        {
            "kind": "SandboxTemplate",
            "spec": {"podTemplate": {"metadata": {"labels": SANDBOX}, "spec": spec}},
        },
    )


def view(type_token: str, spec: dict[str, Any], **metadata: Any) -> ResourceView:
    return ResourceView(type_token, "p", {"metadata": metadata, "spec": spec})


NP = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
CNP = "kubernetes:cilium.io/v2:CiliumNetworkPolicy"


def test_network_policy_docs_example() -> None:
    """kubernetes.io network-policies: egress to 10.0.0.0/24 on TCP 5978 (a private block, so
    the example's own address stands in for a public one: 93.184.216.0/24)."""
    policy = view(
        NP,
        {
            "podSelector": {"matchLabels": SANDBOX},
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [{"ipBlock": {"cidr": "93.184.216.0/24"}}],
                    "ports": [{"protocol": "TCP", "port": 5978}],
                }
            ],
        },
    )
    egress = read_egress([template(), policy])
    assert egress.admits("93.184.216.34", 5978, "tcp")
    assert not egress.admits("93.184.216.34", 443, "tcp")
    assert not egress.admits("93.184.217.1", 5978, "tcp")
    # No DNS egress at all: even the cluster's resolver is out of reach.
    assert not egress.resolves("example.com")


def test_pods_no_policy_isolates_reach_everything() -> None:
    """kubernetes.io network-policies: a pod is isolated for egress only by a policy that
    selects it with Egress in policyTypes (by default when it has egress rules); else all of
    its egress is allowed. The reader read such pods as reaching nothing."""
    ingress_only = view(NP, {"podSelector": {"matchLabels": SANDBOX}, "policyTypes": ["Ingress"]})
    no_rules = view(NP, {"podSelector": {"matchLabels": SANDBOX}, "egress": []})
    for policies in ([], [ingress_only], [no_rules]):
        egress = read_egress([template(), *policies])
        assert [(g.host, g.ports, g.resource) for g in egress.connect] == [
            ("0.0.0.0/0", "any", "SandboxTemplate t"),
            ("::/0", "any", "SandboxTemplate t"),
            # UDP too (every protocol).
            ("0.0.0.0/0", "any", "SandboxTemplate t"),
            ("::/0", "any", "SandboxTemplate t"),
        ]
        assert [g.host for g in udp_of(egress)] == ["0.0.0.0/0", "::/0"]
        assert egress.resolves("exfil.example.net")
    # Cilium: an egress rule isolates, unless enableDefaultDeny.egress is false.
    world = {"toCIDR": ["93.184.216.34/32"]}
    cilium = {"endpointSelector": {"matchLabels": SANDBOX}, "egress": [world]}
    assert not read_egress([template(), view(CNP, cilium)]).admits("1.0.0.0", 443, "tcp")
    permissive = {**cilium, "enableDefaultDeny": {"egress": False}}
    assert read_egress([template(), view(CNP, permissive)]).admits("1.0.0.0", 443, "tcp")


def test_label_selectors_read_match_expressions() -> None:
    labels = {"sandboxkit-sandbox": "s", "tier": "a"}
    assert selects(None, labels) and selects({}, labels)
    assert selects({"matchLabels": {"k8s:sandboxkit-sandbox": "s"}}, labels)
    assert not selects({"matchLabels": {"sandboxkit-sandbox": "t"}}, labels)

    def one(key: str, operator: str, *values: str) -> dict[str, Any]:
        return {"matchExpressions": [{"key": key, "operator": operator, "values": list(values)}]}

    assert selects(one("tier", "In", "a", "b"), labels)
    assert not selects(one("tier", "In", "b"), labels)
    assert selects(one("tier", "NotIn", "b"), labels)
    assert selects(one("zone", "NotIn", "b"), labels)
    assert not selects(one("tier", "NotIn", "a"), labels)
    assert selects(one("tier", "Exists"), labels)
    assert not selects(one("sandboxkit-sandbox", "DoesNotExist"), labels)
    both = {**one("tier", "Exists"), "matchLabels": {"sandboxkit-sandbox": "t"}}
    assert not selects(both, labels)
    with pytest.raises(ValueError) as refused:
        selects(one("tier", "Gt", "1"), labels)
    assert str(refused.value) == ("label selector operator 'Gt': In, NotIn, Exists or DoesNotExist")


def test_a_cilium_policy_naming_the_pods_namespace_selects_them() -> None:
    """Cilium labels each endpoint with its namespace (k8s:io.kubernetes.pod.namespace); the
    reader compared the selector with the pod template's labels alone and dropped the policy."""
    pod = template()
    placed = ResourceView(pod.type, pod.name, {**pod.props, "metadata": {"namespace": "sbx"}})
    selector = {"matchLabels": {**SANDBOX, "k8s:io.kubernetes.pod.namespace": "sbx"}}
    wide = {"endpointSelector": selector, "egress": [{"toEntities": ["world"]}]}
    assert read_egress([placed, view(CNP, wide)]).admits("1.0.0.0", 443, "tcp")


def test_cilium_rule_lists_clusterwide_policies_and_entities_are_read() -> None:
    """Review inputs the reader missed: a rule in ``specs`` rather than ``spec``, a
    CiliumClusterwideNetworkPolicy, and the world-ipv4 / world-ipv6 entities (Cilium docs,
    Policy Language)."""
    selector: dict[str, JSONValue] = {"matchLabels": SANDBOX}
    fenced: dict[str, JSONValue] = {
        "endpointSelector": selector,
        "egress": [{"toCIDR": ["93.184.216.34/32"]}],
    }
    to_world_v4: dict[str, JSONValue] = {
        "endpointSelector": selector,
        "egress": [{"toEntities": ["world-ipv4"]}],
    }
    in_specs = ResourceView(CNP, "p", {"specs": [fenced, to_world_v4]})
    egress = read_egress([template(), in_specs])
    assert egress.admits("1.0.0.0", 443, "tcp") and not egress.admits("2000::", 443, "tcp")
    clusterwide = ResourceView(
        "kubernetes:cilium.io/v2:CiliumClusterwideNetworkPolicy",
        "c",
        {"spec": {**fenced, "egress": [{"toEntities": ["world-ipv6"]}]}},
    )
    egress = read_egress([template(), view(CNP, fenced), clusterwide])
    assert egress.admits("2000::", 443, "tcp") and not egress.admits("1.0.0.0", 443, "tcp")


def test_cilium_peers_the_reader_cannot_place_are_refused() -> None:
    services = {"toServices": [{"k8sService": {"serviceName": "egress", "namespace": "x"}}]}
    rule = {"endpointSelector": {"matchLabels": SANDBOX}, "egress": [services]}
    with pytest.raises(ValueError) as refused:
        read_egress([template(), view(CNP, rule)])
    assert str(refused.value) == (
        "CiliumNetworkPolicy p: egress to toServices, which the reader does not model (their "
        "endpoints may be outside the cluster)"
    )


def test_every_sandbox_template_is_read() -> None:
    """A stack with kubernetes and gcp-gke holds two SandboxTemplates (the pack reads every
    resource at once): each template's pods get their own policies, the reach is the union."""
    other = ResourceView(
        "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate",
        "u",
        {
            "kind": "SandboxTemplate",
            "spec": {"podTemplate": {"metadata": {"labels": {"sandboxkit-sandbox": "u"}}}},
        },
    )

    def egress_to(labels: dict[str, JSONValue], cidr: str) -> ResourceView:
        rule = {"to": [{"ipBlock": {"cidr": cidr}}], "ports": [{"protocol": "TCP", "port": 443}]}
        return view(NP, {"podSelector": {"matchLabels": labels}, "egress": [rule]})

    egress = read_egress(
        [
            template(),
            other,
            egress_to(SANDBOX, "93.184.216.34/32"),
            egress_to({"sandboxkit-sandbox": "u"}, "93.184.216.35/32"),
        ]
    )
    assert [g.host for g in egress.connect] == ["93.184.216.34/32", "93.184.216.35/32"]


def test_cilium_fqdn_docs_example_is_by_resolved_address_and_resolves_any_name() -> None:
    """Policy language, DNS based: DNS to kube-dns with matchPattern '*', toFQDNs matchName
    my-remote-service.com, no toPorts."""
    policy = view(
        CNP,
        {
            "endpointSelector": {"matchLabels": SANDBOX},
            "egress": [
                {
                    "toEndpoints": [
                        {
                            "matchLabels": {
                                "k8s:io.kubernetes.pod.namespace": "kube-system",
                                "k8s:k8s-app": "kube-dns",
                            }
                        }
                    ],
                    "toPorts": [
                        {
                            "ports": [{"port": "53", "protocol": "ANY"}],
                            "rules": {"dns": [{"matchPattern": "*"}]},
                        }
                    ],
                },
                {"toFQDNs": [{"matchName": "my-remote-service.com"}]},
            ],
        },
    )
    egress = read_egress([template(), policy])
    grant, udp = egress.connect
    assert (grant.host, grant.scope, grant.ports, grant.enforced) == (
        "my-remote-service.com",
        "exact",
        "any",
        "resolved-address",
    )
    # The door of issue 13: every name resolves through kube-dns.
    assert egress.resolves("x.attacker.example")
    # No toPorts: every protocol, so UDP (QUIC) to the name's addresses too.
    assert (udp.host, udp.ports, udp.enforced, udp.protocols) == (
        "my-remote-service.com",
        "any",
        "resolved-address",
        frozenset({"udp"}),
    )
    assert [f.kind for f in inexpressible(egress)] == [
        "name-on-every-port",
        "resolved-address-only",
        "name-on-every-port",
        "resolved-address-only",
        "udp",
    ]


def test_cilium_layer7_dns_docs_example() -> None:
    """Layer 7, DNS Policy and IP Discovery: queries for cilium.io, '*.cilium.io' and
    '*.api.cilium.io'; toFQDNs cilium.io, sub.cilium.io, service1.api.cilium.io and
    'special*service.api.cilium.io' on port 80."""
    policy = view(
        CNP,
        {
            "endpointSelector": {"matchLabels": SANDBOX},
            "egress": [
                {
                    "toEndpoints": [{"matchLabels": {"k8s:k8s-app": "kube-dns"}}],
                    "toPorts": [
                        {
                            "ports": [{"port": "53", "protocol": "ANY"}],
                            "rules": {
                                "dns": [
                                    {"matchName": "cilium.io"},
                                    {"matchPattern": "*.cilium.io"},
                                    {"matchPattern": "*.api.cilium.io"},
                                ]
                            },
                        }
                    ],
                },
                {
                    "toFQDNs": [
                        {"matchName": "cilium.io"},
                        {"matchName": "sub.cilium.io"},
                        {"matchName": "service1.api.cilium.io"},
                        {"matchPattern": "special*service.api.cilium.io"},
                    ],
                    "toPorts": [{"ports": [{"port": "80", "protocol": "TCP"}]}],
                },
            ],
        },
    )
    egress = read_egress([template(), policy])
    assert egress.resolves("anothersub.cilium.io")
    assert egress.resolves("x.api.cilium.io")
    assert egress.resolves("a.api.cilium.io")
    assert not egress.resolves("a.b.cilium.io")
    assert not egress.resolves("x.attacker.example")
    assert egress.admits("sub.cilium.io", 80, "http")
    # "DNS queries to anothersub.cilium.io are allowed but connections to the returned IPs
    # are not"; any name in the pattern's label passes (read as one label below).
    assert not egress.admits("anothersub.cilium.io", 80, "http")
    assert egress.admits("special-region1-service.api.cilium.io", 80, "http")
    assert not egress.admits("sub.cilium.io", 443, "tls")


def test_sni_docs_example_matches_the_name_at_l7() -> None:
    """Policy language, Limit TLS SNI: TLS to one.one.one.one only (here with toFQDNs)."""
    policy = view(
        CNP,
        {
            "endpointSelector": {"matchLabels": SANDBOX},
            "egress": [
                {
                    "toFQDNs": [{"matchName": "one.one.one.one"}, {"matchName": "cilium.io"}],
                    "toPorts": [
                        {
                            "ports": [{"port": "443", "protocol": "TCP"}],
                            "serverNames": ["one.one.one.one"],
                        }
                    ],
                }
            ],
        },
        annotations={"sandboxkit/cilium-version": "1.18"},
    )
    egress = read_egress([template(), policy])
    assert egress.admits("one.one.one.one", 443, "tls").enforced == (
        "name at L7 (SNI/Host checked against the destination)",
    )
    # "Any other attempt to another SNI (for example, with cilium.io) will be rejected."
    assert not egress.admits("cilium.io", 443, "tls")


@pytest.mark.parametrize(
    ("pattern", "version", "scope"),
    [
        ("*.cilium.io", (1, 19), ("cilium.io", "one-label")),
        # PR #43420: any depth, never the apex, from 1.19; earlier '**' is '*'.
        ("**.cilium.io", (1, 19), ("cilium.io", "below")),
        ("**.cilium.io", (1, 18), ("cilium.io", "one-label")),
        ("*", (1, 19), ("*", "any")),
        ("cilium.io", (1, 19), ("cilium.io", "exact")),
        ("part*ial.com", (1, 19), ("com", "one-label")),
        ("*.ci*.io", (1, 19), ("*", "any")),
    ],
)
def test_pattern_scopes(pattern: str, version: tuple[int, int], scope: tuple[str, str]) -> None:
    assert pattern_scope(pattern, version) == scope


@pytest.mark.parametrize(
    ("config", "names"),
    [
        # dnsmasq(8): /google.com/ is the name and every name below; /*.google.com/ below only.
        ("no-resolv\nserver=/google.com/1.2.3.4", [("google.com", "exact-and-below")]),
        ("no-resolv\nserver=/*.google.com/1.2.3.4", [("google.com", "below")]),
        (
            "no-resolv\naddress=/#/\nserver=/pypi.org/10.96.0.10#53\naddress=/*.pypi.org/",
            [("pypi.org", "exact")],
        ),
        ("no-resolv\naddress=/#/", []),
        # A local-only domain (server=/x/ with no upstream) forwards nothing.
        ("no-resolv\nserver=/pypi.org/", []),
        ("no-resolv\nserver=10.96.0.10", None),
        # A default server forwards every name even beside a catch-all NXDOMAIN (measured
        # with dnsmasq 2.90).
        ("no-resolv\naddress=/#/\nserver=10.96.0.10", None),
        # dnsmasq(8): the domain '#' matches any domain.
        ("no-resolv\naddress=/#/\nserver=/#/10.96.0.10#53", None),
        # Without no-resolv, /etc/resolv.conf's upstreams answer every name not listed.
        ("address=/#/\nserver=/pypi.org/10.96.0.10", None),
    ],
)
def test_dnsmasq_matching(config: str, names: list[tuple[str, str]] | None) -> None:
    assert dnsmasq_names(config) == names


@pytest.mark.parametrize(
    ("args", "names"),
    [
        ([], []),
        (["--server=10.96.0.10"], None),
        (["--server", "10.96.0.10"], None),
        (["-S", "10.96.0.10"], None),
        (["-S10.96.0.10"], None),
        (
            ["--server=/pypi.org/10.96.0.10", "--conf-file=/etc/sandboxkit/dnsmasq.conf"],
            [("pypi.org", "exact-and-below")],
        ),
    ],
)
def test_the_resolver_command_line_counts(args: list[str], names: object) -> None:
    assert dnsmasq_names("no-resolv\naddress=/#/", args, "/etc/sandboxkit/dnsmasq.conf") == names


@pytest.mark.parametrize(
    ("config", "args", "says"),
    [
        ("rev-server=0.0.0.0/1,10.96.0.10", [], "rev-server=0.0.0.0/1,10.96.0.10 forwards reverse"),
        ("server=/ip6.arpa/10.96.0.10", [], "server=/ip6.arpa/10.96.0.10 forwards reverse"),
        ("server=/10.in-addr.arpa/10.96.0.10", [], "forwards reverse names (10.in-addr.arpa)"),
        ("", ["--rev-server", "10.0.0.0/8,10.96.0.10"], "rev-server=10.0.0.0/8,10.96.0.10"),
        ("conf-dir=/etc/dnsmasq.d", [], "conf-dir=/etc/dnsmasq.d reads names or upstreams"),
        ("", ["--conf-file=/tmp/other.conf"], "conf-file=/tmp/other.conf reads names"),
        ("", ["-r", "/etc/resolv.conf"], "resolv-file=/etc/resolv.conf reads names"),
        ("servers-file=/etc/servers", [], "servers-file=/etc/servers reads names"),
    ],
)
def test_what_the_reader_cannot_model_is_refused(config: str, args: list[str], says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        dnsmasq_names(f"no-resolv\naddress=/#/\n{config}", args, "/etc/sandboxkit/dnsmasq.conf")


# --- the shipped and allowlist stacks ----------------------------------------------------------


@pytest.mark.parametrize(("stack", "target"), [("prod", "kubernetes"), ("prod", "gcp-gke")])
def test_deny_reaches_and_resolves_nothing(stack: str, target: str) -> None:
    rendered = render(stack, target)
    egress = effective(rendered, target)
    assert (egress.connect, egress.resolve) == ((), ())
    explained = explain_target(rendered, target)
    assert (explained.differences, explained.findings) == ((), ())


def test_the_allowlist_stack_matches_the_contract(allowlist: RenderedStack) -> None:
    explained = explain_target(allowlist, "kubernetes")
    assert explained.effective is not None
    assert [str(d) for d in explained.differences] == []
    assert [str(f) for f in explained.findings] == []


def test_names_are_matched_at_l7_on_their_own_port_only(allowlist: RenderedStack) -> None:
    egress = effective(allowlist)
    l7 = ("name at L7 (SNI/Host checked against the destination)",)
    assert egress.admits("pypi.org", 443, "tls").enforced == l7
    assert egress.admits("deb.debian.org", 80, "http").enforced == l7
    assert egress.admits("mirror.example.org", 8443, "tls").enforced == l7
    assert not egress.admits("pypi.org", 80, "http")
    assert not egress.admits("deb.debian.org", 443, "tls")
    assert not egress.admits("mirror.example.org", 443, "tls")


def test_a_wildcard_never_admits_or_resolves_its_apex(allowlist: RenderedStack) -> None:
    egress = effective(allowlist)
    assert egress.admits("a.b.files.pythonhosted.org", 443, "tls")
    assert egress.resolves("a.b.files.pythonhosted.org")
    assert not egress.admits("pythonhosted.org", 443, "tls")
    assert not egress.resolves("pythonhosted.org")


def test_dns_is_no_tunnel_and_the_metadata_server_is_out_of_reach(
    allowlist: RenderedStack,
) -> None:
    egress = effective(allowlist)
    assert not egress.resolves("x.attacker.example")
    assert not egress.resolves("metadata.google.internal")
    assert egress.admits("93.184.216.34", 8443, "tcp")
    assert not egress.admits("93.184.216.34", 443, "tcp")
    for port in (80, 53):
        assert not egress.admits("169.254.169.254", port, "tcp")
        assert not egress.admits("169.254.20.10", port, "tcp")
        assert not egress.admits("64:ff9b::a9fe:a9fe", port, "tcp")


def test_gke_takes_ip_entries_and_resolves_nothing() -> None:
    rendered = render("prod", "gcp-gke", {"mode": "allowlist", "allow": ["93.184.216.34:8443"]})
    egress = effective(rendered, "gcp-gke")
    assert egress.target == "gcp-gke"
    assert egress.admits("93.184.216.34", 8443, "tcp")
    assert not egress.resolves("pypi.org")
    assert explain_target(rendered, "gcp-gke").matches_contract


def test_plain_network_policy_takes_ip_entries_as_ip_blocks_and_resolves_nothing() -> None:
    allow = ["93.184.216.34:8443", "[2a04:4e42:400::223]:443"]
    rendered = render("prod", "kubernetes", {"mode": "allowlist", "allow": allow}, "none")
    policy = testing.named(rendered.resources, "kubernetes-network-policy")
    # The entries in the profile's sorted order, each on its own port only.
    assert policy.inputs["spec"]["egress"] == [
        {
            "to": [{"ipBlock": {"cidr": "2a04:4e42:400::223/128"}}],
            "ports": [{"protocol": "TCP", "port": 443}],
        },
        {
            "to": [{"ipBlock": {"cidr": "93.184.216.34/32"}}],
            "ports": [{"protocol": "TCP", "port": 8443}],
        },
    ]
    assert not [r for r in rendered.resources if r.type == CNP]
    egress = effective(rendered)
    assert egress.admits("93.184.216.34", 8443, "tcp")
    assert not egress.admits("93.184.216.34", 443, "tcp")
    assert not egress.resolves("pypi.org")
    assert explain_target(rendered, "kubernetes").matches_contract


@pytest.mark.parametrize("target", ["kubernetes", "gcp-gke"])
def test_open_resolves_through_the_kit_resolver_and_reaches_public_addresses_only(
    target: str,
) -> None:
    rendered = render("prod", target, {"mode": "open"})
    egress = effective(rendered, target)
    assert egress.resolves("x.example")
    assert egress.admits("x.example", 22, "tls")
    assert not egress.admits("169.254.169.254", 80, "http")
    assert not egress.admits("10.1.2.3", 443, "tcp")
    assert [str(d) for d in explain_target(rendered, target).differences] == []


# --- each DNS door reopened ---------------------------------------------------------------------

POD_SPEC = ("spec", "podTemplate", "spec")


def test_a_forward_everything_resolver_reopens_the_tunnel(allowlist: RenderedStack) -> None:
    config = "no-resolv\naddress=/#/\nserver=/pypi.org/10.96.0.10#53\nserver=10.96.0.10"
    weakened = testing.with_input(
        allowlist, "kubernetes-resolver-config", ("data", "dnsmasq.conf"), config
    )
    # Cilium's DNS rule still filters: defence in depth.
    assert not effective(weakened).resolves("x.attacker.example")
    dns_rules = ("spec", "egress", 0, "toPorts", 0, "rules")
    unfiltered = testing.with_input(
        weakened, "kubernetes-fqdn-policy", dns_rules, {"dns": [{"matchPattern": "*"}]}
    )
    assert effective(unfiltered).resolves("x.attacker.example")
    assert not explain_target(unfiltered, "kubernetes").matches_contract


def test_cluster_dns_with_port_53_to_kube_dns_resolves_every_name(
    allowlist: RenderedStack,
) -> None:
    weakened = testing.with_input(
        allowlist, "kubernetes-template", (*POD_SPEC, "dnsPolicy"), "ClusterFirst"
    )
    kube_dns = {
        "to": [
            {
                "namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": "kube-system"}
                },
                "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
            }
        ],
        "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
    }
    weakened = testing.with_input(
        weakened, "kubernetes-network-policy", ("spec", "egress"), [kube_dns]
    )
    # The L4 rule to kube-dns voids the Cilium DNS rule, and kube-dns recurses.
    assert effective(weakened).resolves("x.attacker.example")
    differences = [str(d) for d in explain_target(weakened, "kubernetes").differences]
    assert any(d.startswith("wider: resolving sbx-probe.pypi.org") for d in differences)


DNS_PORTS = [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
RESOLVER = {"sandboxkit-resolver": "r"}


def test_a_resolver_forwarding_no_name_resolves_nothing() -> None:
    """Bug: an empty forward list read as every name."""
    config = ResourceView(
        "kubernetes:core/v1:ConfigMap", "c", {"data": {"dnsmasq.conf": "no-resolv\naddress=/#/"}}
    )
    to_resolver = {"to": [{"podSelector": {"matchLabels": RESOLVER}}], "ports": DNS_PORTS}
    policy = view(NP, {"podSelector": {"matchLabels": SANDBOX}, "egress": [to_resolver]})
    egress = read_egress([template("None", ["10.96.0.53"]), policy, config])
    assert egress.resolve == ()
    assert not egress.resolves("x.attacker.example")


def test_a_cilium_l4_dns_rule_to_the_resolver_does_not_reach_kube_dns() -> None:
    """Bug: every Cilium endpoint selector was read as every pod, kube-dns included, so pods on
    the cluster's DNS were read as resolving every name."""
    rule = {
        "toEndpoints": [{"matchLabels": {f"k8s:{k}": v for k, v in RESOLVER.items()}}],
        "toPorts": [{"ports": [{"protocol": "UDP", "port": "53"}]}],
    }
    policy = view(CNP, {"endpointSelector": {"matchLabels": SANDBOX}, "egress": [rule]})
    assert read_egress([template(), policy]).resolve == ()
    to_kube_dns = {**rule, "toEndpoints": [{"matchLabels": {"k8s:k8s-app": "kube-dns"}}]}
    policy = view(CNP, {"endpointSelector": {"matchLabels": SANDBOX}, "egress": [to_kube_dns]})
    assert read_egress([template(), policy]).resolves("x.attacker.example")


def test_without_server_names_names_are_matched_by_resolved_address_only(
    allowlist: RenderedStack,
) -> None:
    weakened = allowlist
    # Rules 1 to 3: port 80 (HTTP host), 443 and 8443 (serverNames).
    for index, key in ((1, "rules"), (2, "serverNames"), (3, "serverNames")):
        path = ("spec", "egress", index, "toPorts", 0, key)
        weakened = testing.with_input(weakened, "kubernetes-fqdn-policy", path, testing.REMOVE)
    egress = effective(weakened)
    assert egress.admits("pypi.org", 443, "tls").enforced == ("resolved address only",)
    kinds = {f.kind for f in inexpressible(egress)}
    assert kinds == {"resolved-address-only"}


def test_an_unannotated_policy_reads_the_double_star_as_one_label(
    allowlist: RenderedStack,
) -> None:
    weakened = testing.with_input(
        allowlist, "kubernetes-fqdn-policy", ("metadata", "annotations"), testing.REMOVE
    )
    egress = effective(weakened)
    assert egress.admits("files.pythonhosted.org", 443, "tls")
    assert not egress.admits("a.b.files.pythonhosted.org", 443, "tls")
    assert "one-label-wildcard" in {f.kind for f in inexpressible(egress)}


def test_udp_is_read_from_every_policy_kind_and_the_dns_path_is_not_udp_out() -> None:
    """UDP (QUIC) to an address block or a name leaves; UDP 53 to the resolver's pods is the
    DNS path (resolution), not a UDP grant."""
    quic = [{"protocol": "UDP", "port": 443}]
    np = view(
        NP,
        {
            "podSelector": {"matchLabels": SANDBOX},
            "policyTypes": ["Egress"],
            "egress": [
                {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": quic},
                {
                    "to": [{"podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
                    "ports": [{"protocol": "UDP", "port": 53}],
                },
                {
                    "to": [{"ipBlock": {"cidr": "93.184.216.34/32"}}],
                    "ports": [{"protocol": "TCP", "port": 443}],
                },
            ],
        },
    )
    egress = read_egress([template(), np])
    assert [(g.host, g.ports, g.resource) for g in udp_of(egress)] == [
        ("0.0.0.0/0", frozenset({443}), "NetworkPolicy p")
    ]
    assert not egress.admits("203.0.113.7", 443, "tcp")  # the UDP rule opens no TCP
    cilium = view(
        CNP,
        {
            "endpointSelector": {"matchLabels": SANDBOX},
            "egress": [
                {
                    "toEntities": ["world"],
                    "toPorts": [{"ports": [{"port": "443", "protocol": "ANY"}]}],
                },
                {
                    "toFQDNs": [{"matchName": "pypi.org"}],
                    "toPorts": [
                        {"ports": [{"port": "443", "protocol": "UDP"}], "serverNames": ["pypi.org"]}
                    ],
                },
            ],
        },
    )
    egress = read_egress([template(), cilium])
    assert [(g.host, g.enforced) for g in udp_of(egress)] == [
        ("0.0.0.0/0", "address"),
        ("::/0", "address"),
        # serverNames bind TLS on TCP only: a datagram passes by the name's addresses.
        ("pypi.org", "resolved-address"),
    ]
    assert [(g.host, g.enforced) for g in egress.connect if g not in udp_of(egress)] == [
        ("0.0.0.0/0", "address"),
        ("::/0", "address"),
    ]


def test_the_shipped_allowlist_and_open_mode_open_no_udp(allowlist: RenderedStack) -> None:
    assert udp_of(effective(allowlist)) == ()
    open_mode = effective(render("dev", "kubernetes", {"mode": "open"}))
    # Open mode's rule names TCP without a port: every TCP port to the public blocks, no UDP.
    assert udp_of(open_mode) == ()
    assert open_mode.admits("93.184.216.34", 8443, "tcp")
    assert compare(open_mode, EgressContract("open"), ()) == ()


CONFIG_GROUP = "kubernetes:yaml/v2:ConfigGroup"
OPEN_POLICY: dict[str, JSONValue] = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "NetworkPolicy",
    "metadata": {"name": "acme-open"},
    "spec": {
        "podSelector": {"matchLabels": SANDBOX},
        "egress": [{"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": [{"port": 443}]}],
    },
}


def test_network_policies_in_a_config_group_are_read_as_the_objects_it_declares() -> None:
    shut = view(NP, {"podSelector": {"matchLabels": SANDBOX}, "policyTypes": ["Egress"]})
    assert not read_egress([template(), shut]).admits("203.0.113.7", 443, "tcp")
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {}}
    every: list[dict[str, JSONValue]] = [
        {"objs": [OPEN_POLICY]},
        {"yaml": yaml.safe_dump_all([other, OPEN_POLICY])},
        {"yaml": [yaml.safe_dump(OPEN_POLICY)]},
    ]
    for props in every:
        group = ResourceView(CONFIG_GROUP, "acme", props)
        verdict = read_egress([template(), shut, group]).admits("203.0.113.7", 443, "tcp")
        assert [g.resource for g in verdict.grants] == ["NetworkPolicy acme/acme-open"]


@pytest.mark.parametrize(
    ("type_token", "props"),
    [
        (CONFIG_GROUP, {"files": ["manifests/*.yaml"]}),
        ("kubernetes:yaml/v2:ConfigFile", {"file": "manifests/policies.yaml"}),
        (CONFIG_GROUP, {"yaml": "kind: [unclosed"}),
    ],
)
def test_objects_a_config_group_reads_elsewhere_cannot_be_verified(
    type_token: str, props: dict[str, Any]
) -> None:
    with pytest.raises(ValueError, match=f"{type_token} acme"):
        read_egress([template(), ResourceView(type_token, "acme", props)])


def test_a_v1_config_group_declares_nothing_its_objects_are_rendered() -> None:
    """pulumi-kubernetes' v1 ConfigGroup/ConfigFile register no inputs; the program registers
    their objects, which the reader reads as any other."""
    for token in ("kubernetes:yaml:ConfigGroup", "kubernetes:yaml:ConfigFile"):
        v1 = ResourceView(token, "acme", {})
        assert read_egress([template(), v1]) == read_egress([template()])


def test_udp_to_every_name_is_asked_with_a_contract() -> None:
    """A toFQDNs pattern '*' on UDP admits every name's addresses over UDP: no entry probe
    speaks UDP, so the grant's own probe asks it (and the allowlist refuses it)."""
    every = view(
        CNP,
        {
            "endpointSelector": {"matchLabels": SANDBOX},
            "egress": [
                {
                    "toFQDNs": [{"matchPattern": "*"}],
                    "toPorts": [{"ports": [{"port": "443", "protocol": "UDP"}]}],
                }
            ],
        },
    )
    egress = read_egress([template(), every])
    allowlist = EgressContract("allowlist", (parse_rule("pypi.org"),))
    differences = compare(egress, allowlist, contract_probes(allowlist, egress))
    udp = [d for d in differences if d.probe.protocol == "udp"]
    assert [(str(d.probe), d.probe.protocol, d.direction) for d in udp] == [
        ("sbx-probe.example.com:443", "udp", "wider")
    ]
