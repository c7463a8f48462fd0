"""The ``aws-microvm`` target: its exact children and hardened inputs under recording mocks."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pulumi
import pytest
from pulumi.runtime import rpc

from sandboxkit.aws.launcher_package import launcher_package
from sandboxkit.aws.suricata import FIRST_SID, syn_data_rule
from sandboxkit.aws.worker import build as worker_build
from sandboxkit.aws.worker import main as worker
from sandboxkit.config import ConfigSource, load_stack
from sandboxkit.render import Recorder, RenderedResource, is_secret_value
from sandboxkit.targets import KitContext, get_target
from support import build_target, named, of_type, one, shipped_render

T = "aws-microvm"
SECRETS = frozenset({f"{T}.webhookSecret", f"{T}.workerCredentialKey"})
SETTINGS: dict[str, Any] = {
    "region": "eu-west-1",
    "controlPlaneUrl": "https://agents.example.com/api",
    "workerArtifact": {"bucket": "example-artifacts", "key": "worker/worker.zip"},
    "webhookSecret": "webhook-hmac-key-of-32-characters",
    "workerCredentialKey": "credential-key-of-at-least-32-characters",
    "vpcCidr": "10.40.0.0/20",
    "availabilityZones": ["eu-west-1a", "eu-west-1b"],
}
DEV_EGRESS = {"mode": "allowlist", "allow": ["pypi.org:443", "*.pythonhosted.org:443"]}
ACCOUNT_REGION = "eu-west-1:123456789012"  # the offline mocks: the provider's region
RULE_GROUP_ARN = f"arn:aws:networkfirewall:{ACCOUNT_REGION}:rulegroup"
LOGS = f"arn:aws:logs:{ACCOUNT_REGION}:log-group:"


def source(profile: dict[str, Any] | None = None, **settings: Any) -> ConfigSource:
    """A one-target stack config; secrets marked secure unless a test says otherwise."""
    return ConfigSource(
        values={
            "environment": "dev",
            "targets": [T],
            "profile": profile or {},
            T: {**SETTINGS, **settings},
        },
        secret_paths=SECRETS,
    )


def build(
    engine: Recorder, profile: dict[str, Any] | None = None, **settings: Any
) -> list[RenderedResource]:
    return build_target(
        engine,
        T,
        {**SETTINGS, **settings},
        profile or {},
        environment="dev",
        secrets=[path.removeprefix(f"{T}.") for path in SECRETS],
    )


def policy_of(resources: list[RenderedResource], name: str) -> dict[str, Any]:
    document = named(resources, name).inputs["policy"]
    return json.loads(document)


def firewall_names(resources: list[RenderedResource]) -> list[str]:
    """The entries of the name rule group, from its rules' messages: each twice (SNI, Host)."""
    group = named(resources, f"{T}-fw-domains").inputs["ruleGroup"]
    assert group["statefulRuleOptions"] == {"ruleOrder": "STRICT_ORDER"}
    assert "rulesSourceList" not in group["rulesSource"]
    lines = group["rulesSource"]["rulesString"].split("\n") if group["rulesSource"] else []
    # The group opens with the SYN-with-data drop, ahead of every pass rule.
    assert lines[0] == syn_data_rule(FIRST_SID - 1)
    messages = [line.split('msg:"sandboxkit allow ')[1].split('"')[0] for line in lines[1:]]
    entries = [m.removesuffix(" tls.sni") for m in messages[0::2]]
    assert [m.removesuffix(" http.host") for m in messages[1::2]] == entries
    return entries


def expected_children(zones: int, *, ip_rules: bool = False, block: bool = True) -> set[str]:
    names = {
        "provider",
        "vpc",
        "igw",
        "connector-sg",
        "connector-role",
        "connector-policy",
        "connector",
        "fw-domains",
        "fw-policy",
        "fw",
        "fw-alert-logs",
        "fw-flow-logs",
        "fw-logging",
        "dns-allowed",
        "dns-all",
        "dns-rules",
        "dns-allow",
        "dns-association",
        "dns-config",
        "flow-logs",
        "flow-log-role",
        "flow-log-policy",
        "flow-log",
        "image-logs",
        "build-role",
        "build-policy",
        "image",
        "webhook-secret",
        "webhook-secret-value",
        "credential-key",
        "credential-key-value",
        "launcher-logs",
        "launcher-role",
        "launcher-policy",
        "launcher",
        "api",
        "api-integration",
        "api-route",
        "api-logs",
        "api-stage",
        "api-permission",
    }
    if ip_rules:
        names.add("fw-ip-rules")
    if block:
        names.add("dns-block")
    for index in range(zones):
        for tier in ("private", "firewall", "public"):
            names |= {f"{tier}-{index}", f"{tier}-{index}-rt", f"{tier}-{index}-rta"}
        names |= {
            f"nat-eip-{index}",
            f"nat-{index}",
            f"private-{index}-default",
            f"firewall-{index}-default",
            f"public-{index}-default",
            f"public-{index}-return",
        }
    return {f"{T}-{n}" for n in names}


def test_children_are_exactly_the_walled_stack(engine: Recorder) -> None:
    resources = build(engine, {"egress": DEV_EGRESS})
    component = one(resources, "sandboxkit:index:MicrovmSandbox")
    children = [r for r in resources if r is not component]
    assert {r.name for r in children} == expected_children(2)
    assert len(children) == len(expected_children(2))
    assert all(r.parent == component.urn for r in children)
    provider = named(resources, f"{T}-provider")
    assert provider.type == "pulumi:providers:aws"
    assert provider.inputs["region"] == "eu-west-1"
    assert "profile" not in provider.inputs
    assert "assumeRoles" not in provider.inputs


def test_provider_and_firewall_policy_share_profile_and_role(engine: Recorder) -> None:
    role = {"roleArn": "arn:aws:iam::123456789012:role/deployer", "externalId": "kit-ext"}
    resources = build(engine, awsProfile="sandboxes", assumeRole=role)
    provider = named(resources, f"{T}-provider").inputs
    assert (provider["region"], provider["profile"]) == ("eu-west-1", "sandboxes")
    assert json.loads(provider["assumeRoles"]) == [
        {
            "roleArn": "arn:aws:iam::123456789012:role/deployer",
            "externalId": "kit-ext",
            "sessionName": "sandboxkit-deploy",
        }
    ]
    assert named(resources, f"{T}-fw-policy").inputs["access"] == {
        "region": "eu-west-1",
        "profile": "sandboxes",
        "roleArn": "arn:aws:iam::123456789012:role/deployer",
        "externalId": "kit-ext",
    }


def test_every_taggable_child_carries_the_kit_tags(engine: Recorder) -> None:
    resources = build(engine)
    labels = KitContext("test", "dev", T).labels()
    untaggable = {
        "pulumi:providers:aws",
        "sandboxkit:index:MicrovmSandbox",
        "aws:lambda/coreNetworkConnector:CoreNetworkConnector",  # the SDK takes no tags
        "aws:ec2/routeTableAssociation:RouteTableAssociation",
        "aws:ec2/route:Route",
        "aws:iam/rolePolicy:RolePolicy",
        "aws:networkfirewall/loggingConfiguration:LoggingConfiguration",
        "aws:route53/resolverFirewallRule:ResolverFirewallRule",
        "aws:route53/resolverFirewallConfig:ResolverFirewallConfig",
        "aws:secretsmanager/secretVersion:SecretVersion",
        "aws:apigatewayv2/integration:Integration",
        "aws:apigatewayv2/route:Route",
        "aws:lambda/permission:Permission",
    }
    for resource in resources:
        if resource.type not in untaggable:
            assert labels.items() <= resource.inputs["tags"].items(), resource.name


def test_image_enables_the_run_hook_the_worker_waits_on(engine: Recorder) -> None:
    # Was: aws.lambdamicrovms.Image, which has no hooks input: the run hook stayed DISABLED,
    # runHookPayload was never delivered and the worker waited forever.
    resources = build(engine)
    image = named(resources, f"{T}-image")
    assert image.type == "pulumi-python:dynamic/lambdamicrovms:MicrovmImage"
    spec = dict(image.inputs["image"])
    assert spec.pop("hooks") == {
        "port": worker.DEFAULT_HOOKS_PORT,
        "microvmHooks": {
            "run": "ENABLED",
            "runTimeoutInSeconds": 10,
            "resume": "DISABLED",
            "suspend": "DISABLED",
            "terminate": "DISABLED",
        },
        "microvmImageHooks": {
            "ready": "ENABLED",
            "readyTimeoutInSeconds": 300,
            "validate": "DISABLED",
        },
    }
    assert spec.pop("buildRoleArn").startswith(f"arn:aws:iam::123456789012:role/{T}-build-")
    assert spec == {
        "baseImageArn": "arn:aws:lambda:eu-west-1:aws:microvm-image:al2023-1",
        "codeArtifact": {"uri": "s3://example-artifacts/worker/worker.zip"},
        "description": "sandboxkit worker; run hook enabled; runs with the kit's connector",
        # Build time only (botocore: "available to the MicroVM at image build time"): the
        # Dockerfile pulls its base from public.ecr.aws, which the kit's connector refuses.
        "egressNetworkConnectors": [
            "arn:aws:lambda:eu-west-1:aws:network-connector:aws-network-connector:INTERNET_EGRESS"
        ],
        "logging": {"cloudWatch": {"logGroup": f"/sandboxkit/test/{T}/image-logs"}},
        "cpuConfigurations": [{"architecture": "ARM_64"}],
    }
    assert image.inputs["access"] == {"region": "eu-west-1"}
    assert image.inputs["namePrefix"] == f"{T}-image"
    # The worker key is never baked into the image.
    assert "environmentVariables" not in spec
    # Was: s3:GetObject only, so a failed build left nothing to read.
    assert policy_of(resources, f"{T}-build-policy")["Statement"] == [
        {
            "Sid": "ReadWorkerArtifact",
            "Effect": "Allow",
            "Action": "s3:GetObject",
            "Resource": "arn:aws:s3:::example-artifacts/worker/worker.zip",
        },
        {
            "Sid": "WriteImageLogs",
            "Effect": "Allow",
            "Action": ["logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": f"{LOGS}/sandboxkit/test/{T}/image-logs:*",
        },
    ]


def test_every_user_of_a_role_waits_for_its_policy(engine: Recorder) -> None:
    # Was: the connector, the image build, the flow log and the launcher depended on role.arn
    # only, so they could start before the role's inline policy existed.
    depends: dict[str, set[str]] = {}

    def record(args: pulumi.ResourceTransformationArgs) -> None:
        listed = args.opts.depends_on
        resources = listed if isinstance(listed, list) else []
        depends[args.name] = {str(d._name) for d in resources if isinstance(d, pulumi.Resource)}

    plan = load_stack(source(executionRolePolicy=EXECUTION_POLICY), "test").plans[T]

    def program() -> None:
        pulumi.runtime.register_stack_transformation(record)
        get_target(T).build(plan)

    engine.run(program)
    assert depends[f"{T}-connector"] == {f"{T}-connector-policy"}
    assert depends[f"{T}-image"] == {f"{T}-build-policy", f"{T}-image-logs"}
    assert depends[f"{T}-flow-log"] == {f"{T}-flow-log-policy"}
    assert depends[f"{T}-launcher"] == {
        f"{T}-launcher-logs",
        f"{T}-launcher-policy",
        f"{T}-execution-policy",
    }


def test_connector_uses_private_subnets_and_its_own_security_group(engine: Recorder) -> None:
    resources = build(engine)
    config = named(resources, f"{T}-connector").inputs["configuration"]["vpcEgressConfiguration"]
    private = [named(resources, f"{T}-private-{i}") for i in range(2)]
    assert [s.inputs["cidrBlock"] for s in private] == ["10.40.0.0/24", "10.40.1.0/24"]
    assert [s.split("-")[-2] for s in config["subnetIds"]] == ["0", "1"]
    assert all(s.startswith(f"{T}-private-") for s in config["subnetIds"])
    assert config["securityGroupIds"][0].startswith(f"{T}-connector-sg-")
    assert config["associatedComputeResourceTypes"] == ["MicroVm"]
    trust = json.loads(named(resources, f"{T}-connector-role").inputs["assumeRolePolicy"])
    assert trust["Statement"][0]["Principal"] == {
        "Service": "network-connectors.lambda.amazonaws.com"
    }


def test_firewall_policy_is_strict_drop_established_and_validates_resolved_addresses(
    engine: Recorder,
) -> None:
    resources = build(engine)
    policy = named(resources, f"{T}-fw-policy")
    assert policy.type == "pulumi-python:dynamic/networkfirewall:FirewallPolicy"
    document = copy.deepcopy(dict(policy.inputs["firewallPolicy"]))
    validation = document["Route53ResolvedIPValidation"]
    assert validation.pop("DNSFirewallRuleGroupId").startswith(f"{T}-dns-rules-")
    (reference,) = document["StatefulRuleGroupReferences"]
    assert reference.pop("ResourceArn").startswith(f"{RULE_GROUP_ARN}/{T}-fw-domains-")
    assert document == {
        "StatelessDefaultActions": ["aws:forward_to_sfe"],
        "StatelessFragmentDefaultActions": ["aws:forward_to_sfe"],
        "StatefulEngineOptions": {"RuleOrder": "STRICT_ORDER", "StreamExceptionPolicy": "DROP"},
        "StatefulDefaultActions": ["aws:drop_established", "aws:alert_established"],
        "StatefulRuleGroupReferences": [{"Priority": 200}],
        # No SourceIPRanges: omitted means the firewall's VPC; [] would validate no source.
        "Route53ResolvedIPValidation": {"Action": "REJECT", "DNSExpiryExceptionPolicy": "REJECT"},
    }
    assert policy.inputs["access"] == {"region": "eu-west-1"}
    assert policy.inputs["namePrefix"] == f"{T}-fw-policy"
    firewall = named(resources, f"{T}-fw").inputs
    assert firewall["firewallPolicyArn"].startswith(
        "arn:aws:network-firewall:eu-west-1:123456789012:firewall-policy/aws-microvm-fw-policy-"
    )


def test_allowlist_holds_exactly_control_plane_and_profile_names(engine: Recorder) -> None:
    resources = build(engine, {"egress": DEV_EGRESS})
    assert firewall_names(resources) == [
        "agents.example.com:443",
        "pypi.org:443",
        "*.pythonhosted.org:443",
    ]
    dns = named(resources, f"{T}-dns-allowed").inputs["domains"]
    assert dns == ["*.pythonhosted.org", "agents.example.com", "pypi.org"]


def test_deny_allows_only_the_control_plane(engine: Recorder) -> None:
    resources = build(engine, controlPlaneHosts=["telemetry.example.com"])
    assert firewall_names(resources) == ["agents.example.com:443", "telemetry.example.com:443"]
    assert of_type(resources, "aws:networkfirewall/ruleGroup:RuleGroup") == [
        named(resources, f"{T}-fw-domains")
    ]


def test_dns_firewall_allows_listed_names_then_blocks_all_fail_closed(engine: Recorder) -> None:
    resources = build(engine)
    allow = named(resources, f"{T}-dns-allow").inputs
    block = named(resources, f"{T}-dns-block").inputs
    assert (allow["action"], allow["priority"]) == ("ALLOW", 100)
    # Allowed names resolve through their CNAME chains; unlisted names still meet the block.
    assert allow["firewallDomainRedirectionAction"] == "TRUST_REDIRECTION_DOMAIN"
    assert "firewallDomainRedirectionAction" not in block
    assert allow["firewallDomainListId"].startswith(f"{T}-dns-allowed-")
    assert (block["action"], block["priority"], block["blockResponse"]) == (
        "BLOCK",
        200,
        "NXDOMAIN",
    )
    assert block["firewallDomainListId"].startswith(f"{T}-dns-all-")
    assert named(resources, f"{T}-dns-all").inputs["domains"] == ["*"]
    vpc_id = named(resources, f"{T}-dns-association").inputs["vpcId"]
    assert vpc_id.startswith(f"{T}-vpc-")
    config = named(resources, f"{T}-dns-config").inputs
    assert config == {"resourceId": vpc_id, "firewallFailOpen": "DISABLED"}


@pytest.mark.parametrize(
    ("setting", "state"), [(None, "ENABLED"), (True, "ENABLED"), (False, "DISABLED")]
)
def test_dns_firewall_mutation_protection_is_a_setting_on_by_default(
    engine: Recorder, setting: bool | None, state: str
) -> None:
    # Was: ENABLED with no way out, so pulumi destroy and any replacement of the association
    # failed (RSLVR-02307, terraform-provider-aws #21278). Now: on unless the stack turns it
    # off, which the two-step destroy in docs/running-for-real.md does.
    settings: dict[str, Any] = {}
    if setting is not None:
        settings["dnsFirewallMutationProtection"] = setting
    resources = build(engine, **settings)
    association = named(resources, f"{T}-dns-association").inputs
    assert association["mutationProtection"] == state


def test_security_group_opens_https_and_resolver_dns_only(engine: Recorder) -> None:
    resources = build(engine)
    group = named(resources, f"{T}-connector-sg").inputs
    assert group["ingress"] == []
    assert group["egress"] == [
        {"protocol": "udp", "fromPort": 53, "toPort": 53, "cidrBlocks": ["10.40.0.2/32"]},
        {"protocol": "tcp", "fromPort": 53, "toPort": 53, "cidrBlocks": ["10.40.0.2/32"]},
        {"protocol": "tcp", "fromPort": 443, "toPort": 443, "cidrBlocks": ["0.0.0.0/0"]},
    ]


def test_ip_entries_get_a_pass_rule_and_their_own_port(engine: Recorder) -> None:
    egress = {"mode": "allowlist", "allow": ["93.184.216.34:8443", "example.org:80"]}
    resources = build(engine, {"egress": egress})
    assert {r.name for r in resources} - {"aws-microvm"} == expected_children(2, ip_rules=True)
    assert named(resources, f"{T}-connector-sg").inputs["egress"][2:] == [
        {"protocol": "tcp", "fromPort": 80, "toPort": 80, "cidrBlocks": ["0.0.0.0/0"]},
        {"protocol": "tcp", "fromPort": 443, "toPort": 443, "cidrBlocks": ["0.0.0.0/0"]},
        {"protocol": "tcp", "fromPort": 8443, "toPort": 8443, "cidrBlocks": ["93.184.216.34/32"]},
    ]
    group = named(resources, f"{T}-fw-ip-rules").inputs["ruleGroup"]
    assert group["rulesSource"]["rulesString"] == (
        'pass tcp $HOME_NET any -> 93.184.216.34 8443 (msg:"sandboxkit allow 93.184.216.34:8443"; '
        "sid:1000001; rev:1;)"
    )
    policy = named(resources, f"{T}-fw-policy").inputs["firewallPolicy"]
    assert [r["Priority"] for r in policy["StatefulRuleGroupReferences"]] == [100, 200]
    # The literal is never resolved: it is exempt from resolved-IP validation, and only there.
    validation = policy["Route53ResolvedIPValidation"]
    assert validation["BypassDestinationValidationIPRanges"] == [
        {"AddressDefinition": "93.184.216.34/32"}
    ]
    assert firewall_names(resources) == ["agents.example.com:443", "example.org:80"]
    names = named(resources, f"{T}-fw-domains").inputs["ruleGroup"]["rulesSource"]["rulesString"]
    assert names.split("\n")[3] == (
        "pass tls $HOME_NET any -> [$EXTERNAL_NET,!93.184.216.34] 80 "
        '(msg:"sandboxkit allow example.org:80 tls.sni"; flow:to_server, established; '
        'ssl_state:client_hello; tls.sni; content:"example.org"; nocase; startswith; endswith; '
        'aws_route_53_resolved_domain:"example.org"; sid:1000004; rev:1;)'
    )


def test_a_name_on_another_port_opens_that_port_only(engine: Recorder) -> None:
    egress = {"mode": "allowlist", "allow": ["grpc.example.org:8443"]}
    resources = build(engine, {"egress": egress}, controlPlaneUrl="https://agents.example.com:8443")
    assert firewall_names(resources) == ["agents.example.com:8443", "grpc.example.org:8443"]
    assert named(resources, f"{T}-connector-sg").inputs["egress"][2:] == [
        {"protocol": "tcp", "fromPort": 8443, "toPort": 8443, "cidrBlocks": ["0.0.0.0/0"]},
    ]


def test_open_passes_all_tcp_and_blocks_no_names(engine: Recorder) -> None:
    resources = build(engine, {"egress": {"mode": "open"}})
    assert {r.name for r in resources} - {"aws-microvm"} == expected_children(
        2, ip_rules=True, block=False
    )
    rules = named(resources, f"{T}-fw-ip-rules").inputs["ruleGroup"]["rulesSource"]
    assert rules["rulesString"].startswith(
        "pass tcp $HOME_NET any -> [$EXTERNAL_NET,!0.0.0.0/8,!10.0.0.0/8,!100.64.0.0/10,"
    )
    assert named(resources, f"{T}-connector-sg").inputs["egress"][-1] == {
        "protocol": "tcp",
        "fromPort": 0,
        "toPort": 65535,
        "cidrBlocks": ["0.0.0.0/0"],
    }
    policy = named(resources, f"{T}-fw-policy").inputs["firewallPolicy"]
    assert policy["StatefulDefaultActions"] == ["aws:drop_established", "aws:alert_established"]
    # open admits every address: no resolved-IP validation.
    assert "Route53ResolvedIPValidation" not in policy


def test_routes_send_both_directions_through_the_firewall(engine: Recorder) -> None:
    resources = build(engine)
    for index, private_cidr in enumerate(["10.40.0.0/24", "10.40.1.0/24"]):
        out = named(resources, f"{T}-private-{index}-default").inputs
        back = named(resources, f"{T}-public-{index}-return").inputs
        assert out["destinationCidrBlock"] == "0.0.0.0/0"
        assert out["vpcEndpointId"].startswith("vpce-")
        assert back == {
            **back,
            "destinationCidrBlock": private_cidr,
            "vpcEndpointId": out["vpcEndpointId"],
        }
        assert out["routeTableId"].startswith(f"{T}-private-{index}-rt-")
        assert back["routeTableId"].startswith(f"{T}-public-{index}-rt-")
        onward = named(resources, f"{T}-firewall-{index}-default").inputs
        assert onward["natGatewayId"].startswith(f"{T}-nat-{index}-")
        internet = named(resources, f"{T}-public-{index}-default").inputs
        assert internet["gatewayId"].startswith(f"{T}-igw-")
    endpoints = {
        named(resources, f"{T}-private-{i}-default").inputs["vpcEndpointId"] for i in range(2)
    }
    assert len(endpoints) == 2  # each zone uses its own firewall endpoint


def test_launcher_role_policy_is_exactly_least_privilege(engine: Recorder) -> None:
    resources = build(engine)
    statements = policy_of(resources, f"{T}-launcher-policy")["Statement"]
    assert [(s["Sid"], s["Action"]) for s in statements] == [
        ("RunKitImage", "lambda:RunMicrovm"),
        ("PassLaunchConnectors", "lambda:PassNetworkConnector"),
        ("ReadLaunchSecrets", "secretsmanager:GetSecretValue"),
        ("WriteOwnLogs", ["logs:CreateLogStream", "logs:PutLogEvents"]),
    ]
    image, connector, secrets, logs = (s["Resource"] for s in statements)
    assert image.startswith(f"arn:aws:lambda:{ACCOUNT_REGION}:microvm-image:{T}-image-")
    # Was: the kit's connector only, while RunMicrovm passed the default HTTP_INGRESS too.
    kit_connector, ingress = connector
    assert kit_connector.startswith(f"arn:aws:lambda:{ACCOUNT_REGION}:network-connector:{T}-con")
    assert ingress == (
        "arn:aws:lambda:eu-west-1:aws:network-connector:aws-network-connector:HTTP_INGRESS"
    )
    variables = named(resources, f"{T}-launcher").inputs["environment"]["variables"]
    assert [variables["CONNECTOR_ARN"], variables["INGRESS_CONNECTOR_ARN"]] == connector
    assert [s.split("/")[-1].rsplit("-", 1)[0] for s in secrets] == [
        f"{T}-webhook-secret",
        f"{T}-credential-key",
    ]
    assert logs == f"arn:aws:logs:{ACCOUNT_REGION}:log-group:/sandboxkit/test/{T}/launcher-logs:*"
    assert all(s["Effect"] == "Allow" and "*" not in str(s["Action"]) for s in statements)


# A least-privilege execution-role policy, for the tests that configure one.
EXECUTION_POLICY = {
    "Version": "2012-10-17",
    "Statement": [
        {"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::example-data/*"}
    ],
}


def test_execution_role_is_passed_only_when_configured_and_warned(engine: Recorder) -> None:
    document = EXECUTION_POLICY
    resources = build(engine, executionRolePolicy=document)
    statements = policy_of(resources, f"{T}-launcher-policy")["Statement"]
    assert statements[-1]["Sid"] == "PassExecutionRole"
    assert statements[-1]["Action"] == "iam:PassRole"
    assert statements[-1]["Resource"].startswith(f"arn:aws:iam::123456789012:role/{T}-exec")
    assert policy_of(resources, f"{T}-execution-policy") == document
    variables = named(resources, f"{T}-launcher").inputs["environment"]["variables"]
    assert variables["EXECUTION_ROLE_ARN"] == statements[-1]["Resource"]
    assert any("can read its credentials" in w for w in engine.warnings)


def test_launcher_environment_is_the_launcher_contract(engine: Recorder) -> None:
    resources = build(
        engine,
        {
            "limits": {
                "maxLifetimeSeconds": 7200,
                "idleTimeoutSeconds": 120,
                "execTimeoutSeconds": 90,
            }
        },
        replayWindowSeconds=120,
    )
    variables = named(resources, f"{T}-launcher").inputs["environment"]["variables"]
    assert set(variables) == {
        "IMAGE_ARN",
        "CONNECTOR_ARN",
        "INGRESS_CONNECTOR_ARN",
        "WEBHOOK_SECRET_ARN",
        "CREDENTIAL_KEY_SECRET_ARN",
        "MAX_DURATION_SECONDS",
        "IDLE_TIMEOUT_SECONDS",
        "EXEC_TIMEOUT_SECONDS",
        "REPLAY_WINDOW_SECONDS",
        "CONTROL_PLANE_URL",
    }
    assert (
        variables["MAX_DURATION_SECONDS"],
        variables["IDLE_TIMEOUT_SECONDS"],
        variables["EXEC_TIMEOUT_SECONDS"],
        variables["REPLAY_WINDOW_SECONDS"],
    ) == ("7200", "120", "90", "120")
    assert variables["CONTROL_PLANE_URL"] == "https://agents.example.com/api"
    assert (
        variables["IMAGE_ARN"]
        == policy_of(resources, f"{T}-launcher-policy")["Statement"][0]["Resource"]
    )


def test_every_role_is_assumable_for_this_account_only(engine: Recorder) -> None:
    resources = build(engine, executionRolePolicy=EXECUTION_POLICY)
    account = "123456789012"  # sts:GetCallerIdentity under the offline mocks
    pinned = {"StringEquals": {"aws:SourceAccount": account}}
    pinned_if_sent = {"StringEqualsIfExists": {"aws:SourceAccount": account}}
    trusts = {
        role.name: json.loads(role.inputs["assumeRolePolicy"])["Statement"]
        for role in of_type(resources, "aws:iam/role:Role")
    }
    assert {
        name: [(s["Principal"], s["Condition"]) for s in st] for name, st in trusts.items()
    } == {
        f"{T}-launcher-role": [({"Service": "lambda.amazonaws.com"}, pinned)],
        f"{T}-flow-log-role": [
            (
                {"Service": "vpc-flow-logs.amazonaws.com"},
                {
                    **pinned,
                    "ArnLike": {"aws:SourceArn": f"arn:aws:ec2:eu-west-1:{account}:vpc-flow-log/*"},
                },
            )
        ],
        f"{T}-connector-role": [
            ({"Service": "network-connectors.lambda.amazonaws.com"}, pinned_if_sent)
        ],
        f"{T}-build-role": [({"Service": "lambda.amazonaws.com"}, pinned_if_sent)],
        f"{T}-execution-role": [({"Service": "lambda.amazonaws.com"}, pinned_if_sent)],
    }


def test_launcher_code_concurrency_and_logs(engine: Recorder) -> None:
    resources = build(
        engine,
        {"pool": {"ready": 0, "maxConcurrent": 7}, "audit": {"logRetentionDays": 45}},
        unenforced=["pool.ready", "pool.maxConcurrent"],
    )
    function = named(resources, f"{T}-launcher").inputs
    assert function["code"] == {
        rpc._special_sig_key: rpc._special_archive_sig,
        "path": str(launcher_package()),
    }
    assert function["handler"] == "handler.handler"
    assert function["reservedConcurrentExecutions"] == 7
    assert function["loggingConfig"]["logGroup"] == f"/sandboxkit/test/{T}/launcher-logs"
    groups = of_type(resources, "aws:cloudwatch/logGroup:LogGroup")
    assert {g.inputs["retentionInDays"] for g in groups} == {60}  # 45 rounds up to 60
    stage = named(resources, f"{T}-api-stage").inputs
    assert stage["defaultRouteSettings"]["throttlingBurstLimit"] == 7
    assert named(resources, f"{T}-api-route").inputs["routeKey"] == "POST /launch"
    permission = named(resources, f"{T}-api-permission").inputs
    assert permission["principal"] == "apigateway.amazonaws.com"
    assert permission["sourceArn"].endswith("/*/POST/launch")


def test_launcher_concurrency_setting_overrides_the_pool(engine: Recorder) -> None:
    resources = build(engine, launcherConcurrency=3)
    assert named(resources, f"{T}-launcher").inputs["reservedConcurrentExecutions"] == 3


def test_secrets_stay_secret_and_the_credential_key_is_tagged(engine: Recorder) -> None:
    resources = build(engine, workerCredentialKeyMaxAgeDays=14)
    for part in ("webhook-secret", "credential-key"):
        assert is_secret_value(named(resources, f"{T}-{part}-value").inputs["secretString"])
    key = named(resources, f"{T}-credential-key").inputs
    assert key["tags"]["sandboxkit-max-age-days"] == "14"


@pytest.mark.parametrize("setting", ["workerKey", "workerKeyMaxAgeDays"])
def test_the_static_worker_key_settings_are_refused_with_their_replacement(setting: str) -> None:
    from sandboxkit.errors import ConfigError

    with pytest.raises(ConfigError, match="workerCredentialKey") as caught:
        load_stack(source(None, **{setting: "wk_static"}), "test")
    assert "wk_static" not in str(caught.value)


def test_auth_token_ingress_adds_only_a_token_policy(engine: Recorder) -> None:
    resources = build(engine, ingress="authToken", ingressPort=8443)
    policy = named(resources, f"{T}-ingress-policy")
    image_arn = named(resources, f"{T}-launcher").inputs["environment"]["variables"]["IMAGE_ARN"]
    assert image_arn.startswith(f"arn:aws:lambda:{ACCOUNT_REGION}:microvm-image:")
    assert json.loads(policy.inputs["policy"])["Statement"] == [
        {
            "Sid": "MintIngressTokens",
            "Effect": "Allow",
            "Action": "lambda:CreateMicrovmAuthToken",
            "Resource": ["arn:aws:lambda:eu-west-1:123456789012:microvm:*", image_arn],
        },
        {
            "Sid": "NoShellTokens",
            "Effect": "Deny",
            "Action": "lambda:CreateMicrovmShellAuthToken",
            "Resource": "*",
        },
    ]
    assert policy.inputs["tags"]["sandboxkit-ingress-port"] == "8443"


def test_ingress_port_may_not_be_the_hooks_port() -> None:
    from sandboxkit.errors import ConfigError

    with pytest.raises(ConfigError, match="lifecycle-hook port"):
        load_stack(source(ingress="authToken", ingressPort=worker_build.HOOKS_PORT), "test")
    assert worker_build.HOOKS_PORT == 9000 == worker.DEFAULT_HOOKS_PORT


# The shipped stacks with this target (staging has none).
@pytest.mark.parametrize("stack", ["dev", "prod"])
def test_shipped_stacks_set_the_hooks_and_enable_the_run_hook(
    project_dir: Path, stack: str
) -> None:
    rendered = shipped_render(project_dir, stack)
    mine = [r for r in rendered.resources if rendered.target_of(r) == T]
    image = named(mine, f"{T}-image")
    assert image.type == "pulumi-python:dynamic/lambdamicrovms:MicrovmImage"
    hooks = image.inputs["image"]["hooks"]
    assert (hooks["port"], hooks["microvmHooks"]["run"]) == (worker.DEFAULT_HOOKS_PORT, "ENABLED")
    launcher = named(mine, f"{T}-launcher").inputs
    assert launcher["code"]["path"] == str(launcher_package())
    passed = policy_of(mine, f"{T}-launcher-policy")["Statement"][1]["Resource"]
    variables = launcher["environment"]["variables"]
    assert passed == [variables["CONNECTOR_ARN"], variables["INGRESS_CONNECTOR_ARN"]]


def test_prod_stack_renders_the_target(project_dir: Path) -> None:
    rendered = shipped_render(project_dir, "prod")
    mine = [r for r in rendered.resources if rendered.target_of(r) == T]
    assert firewall_names(mine) == ["agents.example.com:443"]
    assert set(rendered.outputs[T]) == {
        "webhookUrl",
        "launcherFunctionName",
        "imageArn",
        "connectorArn",
        "firewallArn",
        "logGroupNames",
    }
    assert rendered.warnings == ()


@pytest.mark.parametrize(
    ("profile", "settings", "key"),
    [
        (
            {"limits": {"maxLifetimeSeconds": 28_801}},
            {},
            "sandboxkit:profile.limits.maxLifetimeSeconds",
        ),
        (
            {"limits": {"idleTimeoutSeconds": 59}},
            {},
            "sandboxkit:profile.limits.idleTimeoutSeconds",
        ),
        (
            {"egress": {"mode": "allowlist", "allow": ["[2001:4860::8888]:443"]}},
            {},
            "sandboxkit:profile.egress.allow",
        ),
        ({}, {"controlPlaneUrl": "http://agents.example.com"}, f"sandboxkit:{T}.controlPlaneUrl"),
        ({}, {"sessionKey": "sk-live"}, f"sandboxkit:{T}.sessionKey"),
        ({}, {"apiKey": "sk-live"}, f"sandboxkit:{T}.apiKey"),
        (
            {},
            {"egressNetworkConnectors": ["INTERNET_EGRESS"]},
            f"sandboxkit:{T}.egressNetworkConnectors",
        ),
        (
            {},
            {
                "executionRolePolicy": {
                    "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]
                }
            },
            f"sandboxkit:{T}.executionRolePolicy.Statement[0].Action",
        ),
        ({}, {"vpcCidr": "8.8.0.0/16"}, f"sandboxkit:{T}.vpcCidr"),
        ({}, {"availabilityZones": ["us-east-1a"]}, f"sandboxkit:{T}.availabilityZones"),
        (
            {},
            {"assumeRole": {"roleArn": "arn:aws:iam::123:role/x"}},
            f"sandboxkit:{T}.assumeRole.roleArn",
        ),
        ({}, {"awsProfile": "two words"}, f"sandboxkit:{T}.awsProfile"),
    ],
)
def test_bad_config_exits_2_naming_the_key(
    profile: dict[str, Any], settings: dict[str, Any], key: str
) -> None:
    from sandboxkit.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        load_stack(source(profile, **settings), "test")
    assert caught.value.keys == (key,)


def _role_policy(*statements: dict[str, Any]) -> dict[str, Any]:
    return {"executionRolePolicy": {"Version": "2012-10-17", "Statement": list(statements)}}


def _allow(action: str | list[str]) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": action, "Resource": "arn:aws:s3:::example-data/*"}


EXACT_NAMES = "list each exact name the worker reaches"


@pytest.mark.parametrize(
    ("settings", "key", "value", "expected"),
    [
        # A wildcard anywhere in an action, not only "*" or "svc:*", grants a family.
        (
            _role_policy(_allow(["s3:GetObject", "s3:Get*"])),
            f"sandboxkit:{T}.executionRolePolicy.Statement[0].Action[1]",
            "s3:Get*",
            "an exact action name without * or ?",
        ),
        (
            _role_policy(_allow("s3:GetObject"), _allow("iam:?ut*")),
            f"sandboxkit:{T}.executionRolePolicy.Statement[1].Action",
            "iam:?ut*",
            "an exact action name without * or ?",
        ),
        (
            _role_policy(_allow(["s3:*"])),
            f"sandboxkit:{T}.executionRolePolicy.Statement[0].Action[0]",
            "s3:*",
            "an exact action name without * or ?",
        ),
        # Control-plane hosts are allowed even with egress deny: one exact name each.
        (
            {"controlPlaneHosts": ["*.example.com:443"]},
            f"sandboxkit:{T}.controlPlaneHosts[0]",
            "*.example.com:443",
            "an exact host name, not a wildcard",
        ),
        (
            {"controlPlaneHosts": ["telemetry.example.com", "93.184.216.34:443"]},
            f"sandboxkit:{T}.controlPlaneHosts[1]",
            "93.184.216.34:443",
            "an exact host name, not an IP address",
        ),
        (
            {"controlPlaneUrl": "https://*.example.com/api"},
            f"sandboxkit:{T}.controlPlaneUrl",
            "https://*.example.com/api",
            "a URL whose host and port are allowed: an exact host name, not a wildcard",
        ),
    ],
    ids=[
        "action-prefix-wildcard",
        "action-question-mark",
        "action-service-wildcard",
        "control-plane-wildcard",
        "control-plane-ip",
        "control-plane-url-wildcard",
    ],
)
def test_wide_grants_and_hosts_exit_2_naming_the_entry(
    settings: dict[str, Any], key: str, value: str, expected: str
) -> None:
    from sandboxkit.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        load_stack(source(**settings), "test")
    (problem,) = caught.value.problems
    assert (problem.key, problem.value) == (key, value)
    assert problem.expected.startswith(expected)
    if "Host" in key or "Url" in key:
        assert EXACT_NAMES in problem.expected


def test_exact_control_plane_hosts_are_accepted(engine: Recorder) -> None:
    resources = build(engine, controlPlaneHosts=["telemetry.example.com", "logs.example.com:443"])
    assert firewall_names(resources) == [
        "agents.example.com:443",
        "logs.example.com:443",
        "telemetry.example.com:443",
    ]


def test_plaintext_secret_is_refused_without_showing_it() -> None:
    from sandboxkit.errors import ConfigError

    plain = ConfigSource(
        values=source().values, secret_paths=frozenset({f"{T}.workerCredentialKey"})
    )
    with pytest.raises(ConfigError) as caught:
        load_stack(plain, "test")
    assert caught.value.keys == (f"sandboxkit:{T}.webhookSecret",)
    assert "webhook-hmac" not in str(caught.value)


def test_lifetime_cap_names_its_source() -> None:
    from sandboxkit.errors import ConfigError

    with pytest.raises(ConfigError, match=r"at most 28800 for target aws-microvm .*botocore"):
        load_stack(source({"limits": {"maxLifetimeSeconds": 30_000}}), "test")
