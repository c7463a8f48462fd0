"""A project's own program around the components, judged as ``pulumi preview`` passes it.

Each row is a program in a scratch project of another name (Pulumi.yaml ``main: program/``)
that builds the kit's components through ``sandboxkit.program.run`` and changes the path a
packet or a query takes, by a stack transformation of a component's child or by a resource of
its own outside every component. ``sandboxkit check`` (in process, without checkov: these rows
are about the render and the readers) must exit 1 on each, or 2 naming what it cannot read;
the program that changes nothing passes.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from sandboxkit.render import render_stack
from support import Ran, invoke_cli, make_project

PROJECT = Path(__file__).resolve().parents[2]
EXAMPLES = PROJECT / "docs" / "examples"
EXAMPLE = EXAMPLES / "aws-microvm.yaml"

PROGRAM = '''\
import pulumi
from sandboxkit.program import run


def transform(type_token, name, change):
    """Change the props of resource ``name`` of ``type_token`` as the engine registers it."""

    def apply(args):
        if args.type_ != type_token or args.name != name:
            return None
        props = dict(args.props)
        change(props)
        return pulumi.ResourceTransformationResult(props, args.opts)

    pulumi.runtime.register_stack_transformation(apply)


{body}

run()
'''


def program_project(root: Path, body: str, stack: str, environment: str = "prod") -> Path:
    """A project named ``acme-sandboxes`` whose program is ``PROGRAM`` around ``body``, with
    the aws-microvm example as stack ``t`` in ``environment``, and the kit's policy packs."""
    (root / "Pulumi.yaml").write_text(
        "name: acme-sandboxes\nruntime: python\nmain: program/\nstackConfigDir: stacks\n"
    )
    (root / "program").mkdir()
    (root / "program" / "__main__.py").write_text(PROGRAM.format(body=textwrap.dedent(body)))
    (root / "stacks").mkdir()
    document = yaml.safe_load(stack)
    document["config"]["sandboxkit:environment"] = environment
    (root / "stacks" / "Pulumi.t.yaml").write_text(yaml.safe_dump(document))
    (root / "policy-packs").symlink_to(PROJECT / "policy-packs")
    return root


def check(root: Path) -> Ran:
    return invoke_cli("check", "--stack", "t", "--no-checkov", "--format", "json", cwd=root)


def findings(ran: Ran) -> list[tuple[str, str]]:
    """``(rule id, message)`` of each finding ``check --format json`` printed."""
    document = json.loads(ran.stdout)
    return [(v["policy"], v["message"]) for v in document["violations"]]


@dataclass(frozen=True)
class Row:
    """One door: the program ``body``, the exit code, a text a finding of ``policy`` holds, and
    a policy that must find nothing (``absent``: the reader reads the change as harmless)."""

    door: str
    body: str
    policy: str
    says: str
    code: int = 1
    example: str = "aws-microvm"
    absent: str = ""


NOTHING = Row("nothing", "", "", "", code=0)

POLICY = "pulumi-python:dynamic/networkfirewall:FirewallPolicy", "aws-microvm-fw-policy"
CONNECTOR = "aws:lambda/coreNetworkConnector:CoreNetworkConnector", "aws-microvm-connector"
VALIDATION = "Route53ResolvedIPValidation"
CANNOT_VERIFY = "cannot be verified"


def _document_edit(change: str) -> str:
    """A program body that edits the kit's firewall policy document (``document``)."""
    return f"""
    def edit(props):
        document = dict(props["firewallPolicy"])
        {change}
        props["firewallPolicy"] = document

    transform(*{POLICY!r}, edit)
    """


def _connector_edit(key: str, value: str) -> str:
    """A program body that sets the connector's ``vpc_egress_configuration[key]``."""
    return f"""
    def edit(props):
        configuration = dict(props["configuration"]["vpc_egress_configuration"])
        configuration[{key!r}] = {value}
        props["configuration"] = {{"vpc_egress_configuration": configuration}}

    transform(*{CONNECTOR!r}, edit)
    """


AWS_ROWS = (
    Row(
        "policy default action emptied by a transform",
        _document_edit('document["StatefulDefaultActions"] = []'),
        "SBX-NET-008",
        "admitted by 0.0.0.0/0 on 443, address",
    ),
    Row(
        "private default route sent to the NAT gateway",
        """
        def to_nat(props):
            props["vpc_endpoint_id"] = None
            props["nat_gateway_id"] = "aws-microvm-nat-0-1a2b3c"

        transform("aws:ec2/route:Route", "aws-microvm-private-0-default", to_nat)
        """,
        "SBX-NET-008",
        "admitted by 0.0.0.0/0 on 443, address [platform-doc: VPC route tables",
    ),
    Row(
        "a more specific route to the internet gateway, outside the components",
        """
        from pulumi_aws.ec2.route import Route

        Route(
            "acme-direct",
            route_table_id="aws-microvm-private-0-rt-1a2b3c",
            destination_cidr_block="93.184.216.0/24",
            gateway_id="aws-microvm-igw-1a2b3c",
        )
        """,
        "SBX-NET-008",
        "is admitted by 93.184.216.0/24 on 443, address [platform-doc: VPC route tables",
    ),
    Row(
        "the connector in the public subnet",
        _connector_edit("subnet_ids", '["aws-microvm-public-0-1a2b3c"]'),
        "SBX-NET-008",
        # The public table's return route sends the private block to the firewall.
        "admitted by 0.0.0.0/0 except 10.42.0.0/24 on 443, address [platform-doc: VPC route",
    ),
    Row(
        "the connector on a security group the render does not hold",
        _connector_edit("security_group_ids", '["sg-0123456789abcdef0"]'),
        "SBX-NET-008",
        "'sg-0123456789abcdef0', which no rendered aws:ec2/securityGroup:SecurityGroup is",
    ),
    Row(
        "the connector group given udp 443 0.0.0.0/0",
        """
        def udp(props):
            props["egress"] = [
                *props["egress"],
                {"protocol": "udp", "from_port": 443, "to_port": 443, "cidr_blocks": ["0.0.0.0/0"]},
            ]

        transform("aws:ec2/securityGroup:SecurityGroup", "aws-microvm-connector-sg", udp)
        """,
        "SBX-NET-008",
        "opens UDP 443 to 0.0.0.0/0",
    ),
    Row(
        "the firewall pointed at another policy, added outside the components",
        """
        from pulumi_aws.networkfirewall.firewall_policy import FirewallPolicy

        FirewallPolicy(
            "acme-policy",
            firewall_policy={
                "stateless_default_actions": ["aws:pass"],
                "stateless_fragment_default_actions": ["aws:pass"],
            },
        )

        def relink(props):
            props["firewall_policy_arn"] = (
                "arn:aws:network-firewall:eu-central-1:123456789012:firewall-policy/acme-policy-1a2b"
            )

        transform("aws:networkfirewall/firewall:Firewall", "aws-microvm-fw", relink)
        """,
        "SBX-NET-008",
        "admitted by 0.0.0.0/0 on 443, address",
    ),
    Row(
        "the policy's stateful rule group references swapped",
        """
        from pulumi_aws.networkfirewall.rule_group import RuleGroup

        RuleGroup(
            "acme-open",
            capacity=10,
            type="STATEFUL",
            rule_group={
                "rules_source": {
                    "rules_string": 'pass tcp $HOME_NET any -> $EXTERNAL_NET 443 (sid:1;)'
                },
            },
        )
        """
        + _document_edit(
            'document["StatefulRuleGroupReferences"] = [{"ResourceArn": '
            '"arn:aws:network-firewall:eu-central-1:123456789012:stateful-rulegroup/acme-open-1a", '
            '"Priority": 100}]'
        ),
        "SBX-NET-008",
        "admitted by 0.0.0.0/0 on 443, address",
    ),
    Row(
        "every destination bypasses resolved-IP validation",
        _document_edit(
            f'document["{VALIDATION}"] = {{**document["{VALIDATION}"], '
            '"BypassDestinationValidationIPRanges": [{"AddressDefinition": "0.0.0.0/0"}]}'
        ),
        "SBX-NET-008",
        "admitted by 0.0.0.0/0 on 443, address [platform-doc: Network Firewall API "
        "Route53ResolvedIPValidation BypassDestinationValidationIPRanges",
    ),
    Row(
        "expired resolutions continue",
        _document_edit(
            f'document["{VALIDATION}"] = {{**document["{VALIDATION}"], '
            '"DNSExpiryExceptionPolicy": "CONTINUE"}'
        ),
        "SBX-NET-008",
        "claimed name only",
    ),
    Row(
        "the DNS Firewall association moved to another VPC",
        """
        def elsewhere(props):
            props["vpc_id"] = "vpc-0123456789abcdef0"

        transform(
            "aws:route53/resolverFirewallRuleGroupAssociation:ResolverFirewallRuleGroupAssociation",
            "aws-microvm-dns-association",
            elsewhere,
        )
        """,
        "SBX-NET-008",
        "resolving pythonhosted.org",
    ),
    Row(
        "the BLOCK rule on a domain list the render does not hold",
        """
        def unlisted(props):
            props["firewall_domain_list_id"] = "rslvr-fdl-0123456789abcdef"

        rule = "aws:route53/resolverFirewallRule:ResolverFirewallRule"
        transform(rule, "aws-microvm-dns-block", unlisted)
        """,
        "SBX-NET-008",
        "'rslvr-fdl-0123456789abcdef', which no rendered",
    ),
    Row(
        "plain TCP on a listed name's port passed beside its tls.sni and http.host rules",
        """
        def plain(props):
            group = dict(props["rule_group"])
            source = dict(group["rules_source"])
            source["rules_string"] += (
                "\\npass tcp $HOME_NET any -> $EXTERNAL_NET 443 "
                "(flow:to_server, established; sid:1999999; rev:1;)"
            )
            group["rules_source"] = source
            props["rule_group"] = group

        transform("aws:networkfirewall/ruleGroup:RuleGroup", "aws-microvm-fw-domains", plain)
        """,
        "SBX-NET-008",
        "wider: pypi.org:443 over tcp (plain-tcp of pypi.org:443) is admitted by 0.0.0.0/0",
    ),
)


RESOLVER_CONFIG = "kubernetes:core/v1:ConfigMap", "kubernetes-resolver-config"


def _resolver_line(line: str) -> str:
    """A program body that appends ``line`` to the kit resolver's dnsmasq configuration."""
    return f"""
    def edit(props):
        data = dict(props["data"])
        data["dnsmasq.conf"] = data["dnsmasq.conf"] + {line!r} + "\\n"
        props["data"] = data

    transform(*{RESOLVER_CONFIG!r}, edit)
    """


KUBERNETES_ROWS = tuple(
    Row(door, body, policy, says, example=example)
    # gcp-gke renders no resolver (its allowlist takes IP entries only).
    for example in ("kubernetes",)
    for door, body, policy, says in (
        (
            f"{example}: every name forwarded by server=/#/",
            _resolver_line("server=/#/10.96.0.10#53"),
            "SBX-NET-007",
            "forward every name upstream",
        ),
        (
            f"{example}: reverse names forwarded by rev-server",
            _resolver_line("rev-server=0.0.0.0/1,10.96.0.10"),
            "SBX-NET-008",
            "rev-server=0.0.0.0/1,10.96.0.10 forwards reverse names",
        ),
        (
            f"{example}: reverse names forwarded for ip6.arpa",
            _resolver_line("server=/ip6.arpa/10.96.0.10"),
            "SBX-NET-008",
            "server=/ip6.arpa/10.96.0.10 forwards reverse names",
        ),
        (
            f"{example}: a default upstream on the resolver's command line",
            """
            def edit(props):
                spec = dict(props["spec"])
                template = dict(spec["template"])
                pod = dict(template["spec"])
                container = dict(pod["containers"][0])
                container["args"] = [*container["args"], "--server=10.96.0.10"]
                pod["containers"] = [container, *pod["containers"][1:]]
                template["spec"] = pod
                spec["template"] = template
                props["spec"] = spec

            transform("kubernetes:apps/v1:Deployment", "kubernetes-resolver", edit)
            """,
            "SBX-NET-007",
            "forward every name upstream",
        ),
        (
            # Without serverNames, toFQDNs admits any TCP to the names' addresses: plain TCP
            # (no SNI) to pypi.org:443 passes, which the contract never admits.
            f"{example}: the names' TLS serverNames dropped from the Cilium policy",
            """
            def edit(props):
                spec = dict(props["spec"])
                spec["egress"] = [
                    {**rule, "toPorts": [
                        {k: v for k, v in port.items() if k != "serverNames"}
                        for port in rule.get("toPorts", [])
                    ]}
                    for rule in spec["egress"]
                ]
                props["spec"] = spec

            transform("kubernetes:cilium.io/v2:CiliumNetworkPolicy", "kubernetes-fqdn-policy", edit)
            """,
            "SBX-NET-006",
            "admits pypi.org by resolved address only (CiliumNetworkPolicy "
            "kubernetes-fqdn-policy, from sandboxkit:profile.egress.allow): any site on that "
            "name's addresses passes, such as another customer of the same CDN, and so does "
            "plain TCP to them naming no host",
        ),
    )
)


def _network_policy_udp(name: str) -> str:
    """A program body giving NetworkPolicy ``name`` an egress rule for UDP 443 (QUIC) to every
    IPv4 address."""
    return f"""
    def quic(props):
        spec = dict(props["spec"])
        rule = {{
            "to": [{{"ipBlock": {{"cidr": "0.0.0.0/0"}}}}],
            "ports": [{{"protocol": "UDP", "port": 443}}],
        }}
        spec["egress"] = [*spec["egress"], rule]
        props["spec"] = spec

    transform("kubernetes:networking.k8s.io/v1:NetworkPolicy", {name!r}, quic)
    """


UDP_ROWS = (
    *(
        Row(
            f"{example}: udp 443 to every address in the sandbox NetworkPolicy",
            _network_policy_udp(policy),
            "SBX-NET-008",
            "wider: 1.0.0.0:443 over udp (grant of NetworkPolicy",
            example=example,
        )
        for example, policy in (
            ("kubernetes", "kubernetes-network-policy"),
            ("gcp-gke", "gcp-gke-agent-sandbox-network-policy"),
        )
    ),
    Row(
        "gcp-cloudrun: an allow of udp 443 added to the kit's firewall policy, outside the "
        "components",
        """
        from pulumi_gcp.compute import NetworkFirewallPolicyRule

        NetworkFirewallPolicyRule(
            "acme-quic",
            firewall_policy="sbx-t-run-egress",
            priority=100,
            action="allow",
            direction="EGRESS",
            match={
                "dest_ip_ranges": ["0.0.0.0/0"],
                "layer4_configs": [{"ip_protocol": "udp", "ports": ["443"]}],
            },
        )
        """,
        "SBX-NET-008",
        "wider: 0.0.0.0:443 over udp (grant of gcp:compute/networkFirewallPolicyRule",
        example="gcp-cloudrun",
    ),
    Row(
        "azure-sessions: the pool's egress switched on",
        """
        def enabled(props):
            props["session_network_configuration"] = {"status": "EgressEnabled"}

        transform("azure-native:app:ContainerAppsSessionPool", "azure-sessions-pool", enabled)
        """,
        "SBX-NET-008",
        "wider: 1.0.0.0:8443 over udp (grant of azure-native:app:ContainerAppsSessionPool",
        example="azure-sessions",
    ),
    Row(
        "cloudflare: the Worker starts its containers with the internet on",
        """
        def internet(props):
            props["content"] = props["content"].replace(
                "enableInternet: false", "enableInternet: true"
            )

        transform("pulumi-python:dynamic/cloudflare:WranglerScript", "cloudflare-script", internet)
        """,
        "SBX-NET-003",
        "does not run the kit's Worker code",
        example="cloudflare",
    ),
)


def _ngfw_rule(name: str, policy: str, ranges: str) -> str:
    """A program body declaring an allow rule of TCP 443 to ``ranges`` in ``policy``."""
    return f"""
    NetworkFirewallPolicyRule(
        {name!r},
        firewall_policy={policy!r},
        priority=100,
        action="allow",
        direction="EGRESS",
        match={{
            "dest_ip_ranges": [{ranges!r}],
            "layer4_configs": [{{"ip_protocol": "tcp", "ports": ["443"]}}],
        }},
    )
    """


NGFW_IMPORTS = """
    from pulumi_gcp.compute import (
        NetworkFirewallPolicy,
        NetworkFirewallPolicyAssociation,
        NetworkFirewallPolicyRule,
    )
"""

NGFW_ROWS = (
    Row(
        "gcp-cloudrun: an allow rule added to the kit's policy by its id",
        NGFW_IMPORTS
        + _ngfw_rule(
            "acme-open",
            "projects/example-sandboxkit-dev/global/firewallPolicies/sbx-t-run-egress",
            # A private address: the example has no Cloud NAT, so only the VPC's routes lead out.
            "10.10.0.10/32",
        ),
        "SBX-NET-008",
        "wider: 10.10.0.10:443 over tcp (grant of gcp:compute/networkFirewallPolicyRule",
        example="gcp-cloudrun",
    ),
    Row(
        # SBX-NET-002 judges every rule on its own; the reader reads only associated policies.
        "gcp-cloudrun: an allow rule in a policy no association attaches to the network",
        NGFW_IMPORTS
        + '\n    NetworkFirewallPolicy("acme-policy", name="acme-unattached")\n'
        + _ngfw_rule("acme-open", "acme-unattached", "10.10.0.10/32"),
        "SBX-NET-002",
        "Firewall policy rule acme-open allows 10.10.0.10/32",
        example="gcp-cloudrun",
        absent="SBX-NET-008",
    ),
    Row(
        "gcp-cloudrun: an existing policy attached to the sandboxes' network by id",
        NGFW_IMPORTS
        + """
    NetworkFirewallPolicyAssociation(
        "acme-attach",
        firewall_policy="projects/acme/global/firewallPolicies/1234567890",
        attachment_target="gcp-cloudrun-network-275530699b3a",
    )
""",
        "SBX-NET-008",
        "attaches firewall policy 'projects/acme/global/firewallPolicies/1234567890' to the "
        "sandboxes' network, and no rendered NetworkFirewallPolicy is that policy",
        example="gcp-cloudrun",
    ),
)


CONFIG_GROUP_ROWS = (
    Row(
        "kubernetes: a NetworkPolicy opening 443 to every address in a ConfigGroup's yaml",
        """
    from pulumi_kubernetes.yaml.v2 import ConfigGroup

    ConfigGroup(
        "acme-policies",
        yaml='''
    apiVersion: networking.k8s.io/v1
    kind: NetworkPolicy
    metadata:
      name: acme-open
      namespace: agent-sandboxes
    spec:
      podSelector: {}
      egress:
      - to: [{ipBlock: {cidr: 0.0.0.0/0}}]
        ports: [{port: 443}]
    ''',
    )
""",
        "SBX-NET-008",
        "wider: 1.0.0.0:443 over tcp (grant of NetworkPolicy acme-policies/acme-open) is admitted",
        example="kubernetes",
    ),
    Row(
        "kubernetes: a ConfigGroup of manifest files the render does not hold",
        """
    from pulumi_kubernetes.yaml.v2 import ConfigGroup

    ConfigGroup("acme-policies", files=["manifests/*.yaml"])
""",
        "SBX-NET-008",
        "kubernetes:yaml/v2:ConfigGroup acme-policies reads Kubernetes objects from "
        "['manifests/*.yaml'] at deployment",
        example="kubernetes",
    ),
)


def test_the_programs_own_project_renders_the_kits_resources(tmp_path: Path) -> None:
    own = render_stack(program_project(tmp_path, "", EXAMPLE.read_text(), "dev"), "t")
    (tmp_path / "kit").mkdir()
    kit = render_stack(make_project(tmp_path / "kit", {"t": EXAMPLE.read_text()}), "t")
    assert own.resources[0].urn.startswith("urn:pulumi:t::acme-sandboxes::")
    assert [(r.type, r.name, r.inputs) for r in own.resources] == [
        (r.type, r.name, r.inputs) for r in kit.resources
    ]


def test_a_resource_the_program_adds_is_rendered_beside_the_components(tmp_path: Path) -> None:
    body = """
    from pulumi_aws.ec2.security_group_rule import SecurityGroupRule
    SecurityGroupRule(
        "acme-extra", type="egress", protocol="tcp", from_port=22, to_port=22,
        cidr_blocks=["0.0.0.0/0"], security_group_id="sg-acme",
    )
    pulumi.export("acme", "yes")
    """
    rendered = render_stack(program_project(tmp_path, body, EXAMPLE.read_text()), "t")
    added = [r for r in rendered.resources if r.name == "acme-extra"]
    assert [(r.type, r.parent, r.inputs["fromPort"]) for r in added] == [
        (
            "aws:ec2/securityGroupRule:SecurityGroupRule",
            "urn:pulumi:t::acme-sandboxes::pulumi:pulumi:Stack::acme-sandboxes-t",
            22.0,
        )
    ]
    assert rendered.outputs["acme"] == "yes"
    assert list(rendered.outputs) == ["aws-microvm", "acme"]


@pytest.mark.parametrize(
    "row",
    [
        NOTHING,
        Row("nothing (kubernetes)", "", "", "", 0, "kubernetes"),
        *AWS_ROWS,
        *KUBERNETES_ROWS,
        *UDP_ROWS,
        *NGFW_ROWS,
        *CONFIG_GROUP_ROWS,
    ],
    ids=lambda row: row.door,
)
def test_each_door_a_program_opens_fails_the_gate(row: Row, tmp_path: Path) -> None:
    example = (EXAMPLES / f"{row.example}.yaml").read_text()
    ran = check(program_project(tmp_path, row.body, example))
    assert ran.returncode == row.code, ran.stdout + ran.stderr
    if row.code == 1:
        assert any(
            policy == row.policy and row.says in message for policy, message in findings(ran)
        ), findings(ran)
    if row.code == 0:
        assert findings(ran) == []
    if row.absent:
        assert [m for policy, m in findings(ran) if policy == row.absent] == []
