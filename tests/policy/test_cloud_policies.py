"""Policy unit cases from validation args, as CrossGuard packs test: one field per case.

One happy-path factory per resource type (the provider SDK's real input names, in the wire form
the engine sends), including types the kit does not create but a stack might (security group
egress rules, policy attachments, role bindings). The rendered-output counterpart of every
hardened default the components set is the mutation table (test_mutations.py).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from pack_calls import POLICIES, resource_reports, stack_reports
from pulumi_policy import (
    ResourceValidationPolicy,
    StackValidationPolicy,
)

from sandboxkit.aws import type_tokens as aws_types
from sandboxkit.cloudflare.spec import WORKER_MODULE

FIREWALL_POLICY_DOCUMENT = aws_types.FIREWALL_POLICY_DOCUMENT.token
KIT_IMAGE = aws_types.KIT_MICROVM_IMAGE.token

CONNECTOR = "arn:aws:lambda:us-east-1:123456789012:network-connector/sandboxkit-prod"
INTERNET_EGRESS_ARN = (
    "arn:aws:lambda:us-east-1:aws:network-connector:aws-network-connector:INTERNET_EGRESS"
)


def tags(target: str) -> dict[str, str]:
    return {"managed-by": "sandboxkit", "sandboxkit-target": target}


def fired(resource_type: str, props: dict[str, Any], name: str = "r") -> set[str]:
    """Names of the resource policies that report ``props``."""
    return {
        policy.name
        for policy in POLICIES.values()
        if isinstance(policy, ResourceValidationPolicy)
        and resource_reports(policy.name, resource_type, props, name)
    }


def fired_on_stack(resources: list[tuple[str, dict[str, Any]]]) -> set[str]:
    """Names of the stack policies that report a stack of ``(type, props)``."""
    return {
        policy.name
        for policy in POLICIES.values()
        if isinstance(policy, StackValidationPolicy) and stack_reports(policy.name, resources)
    }


def launcher_env(**overrides: str) -> dict[str, str]:
    return {
        "IMAGE_ARN": "arn:aws:lambda:us-east-1:123456789012:microvm-image/worker",
        "CONNECTOR_ARN": CONNECTOR,
        "WEBHOOK_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:webhook",
        "CREDENTIAL_KEY_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:cred",
        "MAX_DURATION_SECONDS": "3600",
        "IDLE_TIMEOUT_SECONDS": "600",
        "EXEC_TIMEOUT_SECONDS": "300",
        "CONTROL_PLANE_URL": "https://api.example.com",
        **overrides,
    }


def policy_document(*actions: str) -> str:
    return json.dumps(
        {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": list(actions), "Resource": CONNECTOR}],
        }
    )


HAPPY: dict[str, dict[str, Any]] = {
    "aws:lambdamicrovms/image:Image": {
        "egressNetworkConnectors": [CONNECTOR],
        "environmentVariables": {"CONTROL_PLANE_URL": "https://api.example.com"},
        "tags": tags("aws-microvm"),
    },
    KIT_IMAGE: {
        "namePrefix": "aws-microvm-image",
        "image": {
            "egressNetworkConnectors": [INTERNET_EGRESS_ARN],
            "environmentVariables": {"CONTROL_PLANE_URL": "https://api.example.com"},
        },
        "tags": tags("aws-microvm"),
    },
    "aws:ec2/securityGroup:SecurityGroup": {
        "egress": [
            {"protocol": "tcp", "fromPort": 443, "toPort": 443, "cidrBlocks": ["0.0.0.0/0"]},
            {"protocol": "udp", "fromPort": 53, "toPort": 53, "cidrBlocks": ["10.0.0.2/32"]},
        ],
        "tags": tags("aws-microvm"),
    },
    "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule": {
        "ipProtocol": "tcp",
        "fromPort": 443,
        "toPort": 443,
        "cidrIpv4": "0.0.0.0/0",
        "tags": tags("aws-microvm"),
    },
    FIREWALL_POLICY_DOCUMENT: {
        "namePrefix": "aws-microvm-fw-policy",
        "access": {"region": "eu-west-1"},
        "firewallPolicy": {
            "StatefulEngineOptions": {"RuleOrder": "STRICT_ORDER", "StreamExceptionPolicy": "DROP"},
            "StatefulDefaultActions": ["aws:drop_established", "aws:alert_established"],
            "StatelessDefaultActions": ["aws:forward_to_sfe"],
            "StatelessFragmentDefaultActions": ["aws:forward_to_sfe"],
            "Route53ResolvedIPValidation": {
                "Action": "REJECT",
                "DNSFirewallRuleGroupId": "rslvr-frg-0123456789abcdef",
                "DNSExpiryExceptionPolicy": "REJECT",
            },
        },
        "tags": tags("aws-microvm"),
    },
    "aws:networkfirewall/ruleGroup:RuleGroup": {
        "type": "STATEFUL",
        "capacity": 100,
        "ruleGroup": {
            "rulesSource": {
                "rulesSourceList": {
                    "generatedRulesType": "ALLOWLIST",
                    "targetTypes": ["TLS_SNI", "HTTP_HOST"],
                    "targets": ["api.example.com", ".pythonhosted.org"],
                }
            }
        },
    },
    "aws:route53/resolverFirewallConfig:ResolverFirewallConfig": {
        "firewallFailOpen": "DISABLED",
        "resourceId": "vpc-0123456789abcdef0",
    },
    "aws:iam/rolePolicy:RolePolicy": {"policy": policy_document("lambda:RunMicrovm")},
    "aws:iam/role:Role": {
        "assumeRolePolicy": json.dumps(
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Principal": {"Service": "vpc-flow-logs.amazonaws.com"},
                        "Action": "sts:AssumeRole",
                        "Condition": {
                            "StringEquals": {"aws:SourceAccount": "123456789012"},
                            "ArnLike": {
                                "aws:SourceArn": "arn:aws:ec2:us-east-1:123456789012:vpc-flow-log/*"
                            },
                        },
                    },
                    # A role another account's principal assumes is no service role.
                    {
                        "Effect": "Allow",
                        "Principal": {"AWS": "arn:aws:iam::210987654321:role/deployer"},
                        "Action": "sts:AssumeRole",
                    },
                ],
            }
        ),
    },
    "aws:iam/rolePolicyAttachment:RolePolicyAttachment": {
        "policyArn": "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"
    },
    "aws:lambda/function:Function": {
        "environment": {"variables": launcher_env()},
        "reservedConcurrentExecutions": 50,
        "tags": tags("aws-microvm"),
    },
    "aws:cloudwatch/logGroup:LogGroup": {"retentionInDays": 30},
    "gcp:cloudrunv2/service:Service": {
        "ingress": "INGRESS_TRAFFIC_INTERNAL_ONLY",
        "invokerIamDisabled": False,
        "template": {
            "executionEnvironment": "EXECUTION_ENVIRONMENT_GEN2",
            "timeout": "3600s",
            "scaling": {"maxInstanceCount": 10},
            "vpcAccess": {"egress": "ALL_TRAFFIC", "networkInterfaces": [{"network": "n"}]},
            "containers": [
                {
                    "name": "launcher",
                    "image": "us-docker.pkg.dev/p/agents/launcher@sha256:" + "0d" * 32,
                    "sandboxLauncher": True,
                    "resources": {"limits": {"cpu": "4", "memory": "8Gi"}},
                    "envs": [
                        {"name": "LOG_LEVEL", "value": "info"},
                        {"name": "SANDBOXKIT_SANDBOX_TEMPLATE", "value": "sandbox"},
                    ],
                }
            ],
            "sandboxes": {
                "templates": [
                    {
                        "name": "sandbox",
                        "image": "us-docker.pkg.dev/p/agents/sandbox@sha256:" + "5d" * 32,
                    }
                ]
            },
        },
        "labels": tags("gcp-cloudrun"),
    },
    "gcp:cloudrunv2/serviceIamMember:ServiceIamMember": {
        "role": "roles/run.invoker",
        "member": "serviceAccount:caller@example-project.iam.gserviceaccount.com",
    },
    "gcp:projects/iAMMember:IAMMember": {
        "role": "roles/logging.logWriter",
        "member": "serviceAccount:sandbox@example-project.iam.gserviceaccount.com",
    },
    "gcp:compute/networkFirewallPolicyRule:NetworkFirewallPolicyRule": {
        "direction": "EGRESS",
        "action": "allow",
        "priority": 1000,
        "match": {
            "destFqdns": ["pypi.org"],
            "layer4Configs": [{"ipProtocol": "tcp", "ports": ["443"]}],
        },
    },
    "gcp:container/cluster:Cluster": {
        "datapathProvider": "ADVANCED_DATAPATH",
        "enableFqdnNetworkPolicy": True,
        "privateClusterConfig": {"enablePrivateNodes": True, "enablePrivateEndpoint": True},
    },
    "gcp:container/nodePool:NodePool": {
        "nodeConfig": {
            "sandboxConfig": {"type": "GVISOR"},
            "workloadMetadataConfig": {"mode": "GKE_METADATA"},
        }
    },
    "cloudflare:index/workersScript:WorkersScript": {
        "bindings": [
            {"type": "durable_object_namespace", "name": "SANDBOX", "className": "Sandbox"},
            {"type": "secret_text", "name": "JWT_SIGNING_KEY", "text": "sandboxkit-offline"},
            {"type": "secret_text", "name": "SESSION_KEY", "text": "sandboxkit-offline"},
            {"type": "plain_text", "name": "EGRESS_POLICY", "text": '{"mode":"deny","allow":[]}'},
            {"type": "plain_text", "name": "IDLE_TIMEOUT_SECONDS", "text": "600"},
            {"type": "plain_text", "name": "MAX_LIFETIME_SECONDS", "text": "3600"},
            {"type": "plain_text", "name": "EXEC_TIMEOUT_SECONDS", "text": "300"},
            {
                "type": "plain_text",
                "name": "CONTAINER_IMAGE",
                "text": "registry.cloudflare.com/a/sandbox@sha256:" + "5d" * 32,
            },
        ],
        "observability": {"enabled": True},
        "content": WORKER_MODULE.read_text(encoding="utf-8"),
        "compatibilityFlags": ["global_fetch_strictly_public"],
    },
    "cloudflare:index/workersScriptSubdomain:WorkersScriptSubdomain": {"enabled": False},
    "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding": {"roleRef": {"name": "sandbox-reader"}},
}


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(props: dict[str, Any]) -> None:
        node: Any = props
        steps = [int(p) if p.isdigit() else p for p in path.split(".")]
        for step in steps[:-1]:
            node = node[step]
        node[steps[-1]] = value

    return mutate


def _append(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(props: dict[str, Any]) -> None:
        props[path].append(value)

    return mutate


def _drop(path: str) -> Callable[[dict[str, Any]], None]:
    def mutate(props: dict[str, Any]) -> None:
        node: Any = props
        steps = path.split(".")
        for step in steps[:-1]:
            node = node[step]
        del node[steps[-1]]

    return mutate


IMAGE = "aws:lambdamicrovms/image:Image"
SG = "aws:ec2/securityGroup:SecurityGroup"
FUNCTION = "aws:lambda/function:Function"
RUN = "gcp:cloudrunv2/service:Service"
RULE = "gcp:compute/networkFirewallPolicyRule:NetworkFirewallPolicyRule"
WORKER = "cloudflare:index/workersScript:WorkersScript"
# The kit's script: the WorkersScript's shape plus the workers.dev switch wrangler writes.
WRANGLER = "pulumi-python:dynamic/cloudflare:WranglerScript"
HAPPY[WRANGLER] = {**HAPPY[WORKER], "workersDev": False, "previewUrls": False}
ENV = "environment.variables"

CASES: list[tuple[str, str, Callable[[dict[str, Any]], None], str]] = [
    # RunMicrovm's connectors are the runtime egress; an image's are its build's (botocore).
    (
        "launcher-internet-egress",
        FUNCTION,
        _set(f"{ENV}.CONNECTOR_ARN", INTERNET_EGRESS_ARN),
        "net-001",
    ),
    ("sg-all-protocols", SG, _set("egress.0.protocol", "-1"), "net-001"),
    ("sg-wide-port-range", SG, _set("egress.0.toPort", 65535), "net-001"),
    (
        "sg-rule-all-ports",
        "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
        _set("ipProtocol", "-1"),
        "net-001",
    ),
    # A narrow destination does not make another port acceptable (allowedPorts: 443, 80, 53).
    ("sg-narrow-other-port", SG, _set("egress.1.toPort", 54), "net-001"),
    (
        "sg-rule-other-port",
        "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
        lambda props: props.update(cidrIpv4="203.0.113.7/32", fromPort=22, toPort=22),
        "net-001",
    ),
    ("fw-rule-other-port", RULE, _set("match.layer4Configs.0.ports", ["22"]), "net-001"),
    ("fw-rule-port-range", RULE, _set("match.layer4Configs.0.ports", ["443-444"]), "net-001"),
    ("fw-rule-every-port", RULE, _set("match.layer4Configs.0.ports", []), "net-001"),
    ("fw-rule-all-protocols", RULE, _set("match.layer4Configs.0.ipProtocol", "all"), "net-001"),
    ("run-no-vpc", RUN, _drop("template.vpcAccess"), "net-001"),
    (
        "run-private-ranges-only",
        RUN,
        _set("template.vpcAccess.egress", "PRIVATE_RANGES_ONLY"),
        "net-001",
    ),
    ("fw-rule-allows-everything", RULE, _set("match.destIpRanges", ["0.0.0.0/0"]), "net-001"),
    ("fw-rule-wildcard-fqdn", RULE, _set("match.destFqdns", ["*.com"]), "net-002"),
    ("fw-rule-private-range", RULE, _set("match.destIpRanges", ["10.0.0.0/8"]), "net-002"),
    (
        "domain-list-everything",
        "aws:networkfirewall/ruleGroup:RuleGroup",
        _set("ruleGroup.rulesSource.rulesSourceList.targets", ["*"]),
        "net-002",
    ),
    (
        "domain-list-denylist",
        "aws:networkfirewall/ruleGroup:RuleGroup",
        _set("ruleGroup.rulesSource.rulesSourceList.generatedRulesType", "DENYLIST"),
        "net-003",
    ),
    (
        "firewall-default-order",
        FIREWALL_POLICY_DOCUMENT,
        _set("firewallPolicy.StatefulEngineOptions.RuleOrder", "DEFAULT_ACTION_ORDER"),
        "net-003",
    ),
    (
        "firewall-no-default-drop",
        FIREWALL_POLICY_DOCUMENT,
        _set("firewallPolicy.StatefulDefaultActions", ["aws:alert_established"]),
        "net-003",
    ),
    (
        "firewall-stateless-pass",
        FIREWALL_POLICY_DOCUMENT,
        _set("firewallPolicy.StatelessDefaultActions", ["aws:pass"]),
        "net-003",
    ),
    (
        "firewall-fragments-pass",
        FIREWALL_POLICY_DOCUMENT,
        _set("firewallPolicy.StatelessFragmentDefaultActions", ["aws:pass"]),
        "net-003",
    ),
    (
        "firewall-no-resolved-ip-validation",
        FIREWALL_POLICY_DOCUMENT,
        _drop("firewallPolicy.Route53ResolvedIPValidation"),
        "net-003",
    ),
    (
        "firewall-resolved-ip-validation-alert",
        FIREWALL_POLICY_DOCUMENT,
        _set("firewallPolicy.Route53ResolvedIPValidation.Action", "ALERT"),
        "net-003",
    ),
    (
        "firewall-resolved-ip-validation-no-source",
        FIREWALL_POLICY_DOCUMENT,
        _set("firewallPolicy.Route53ResolvedIPValidation.SourceIPRanges", []),
        "net-003",
    ),
    (
        "name-rule-every-port",
        "aws:networkfirewall/ruleGroup:RuleGroup",
        _set(
            "ruleGroup.rulesSource",
            {
                "rulesString": "pass tls $HOME_NET any -> $EXTERNAL_NET any (tls.sni; "
                'content:"api.example.com"; startswith; endswith; sid:1;)'
            },
        ),
        "net-001",
    ),
    (
        "name-rule-wildcard-apex",
        "aws:networkfirewall/ruleGroup:RuleGroup",
        _set(
            "ruleGroup.rulesSource",
            {
                "rulesString": "pass tls $HOME_NET any -> $EXTERNAL_NET 443 (tls.sni; "
                'dotprefix; content:".pythonhosted.org"; endswith; sid:1;)'
            },
        ),
        "net-002",
    ),
    ("gke-legacy-datapath", "gcp:container/cluster:Cluster", _drop("datapathProvider"), "net-003"),
    (
        "dns-firewall-fails-open",
        "aws:route53/resolverFirewallConfig:ResolverFirewallConfig",
        _set("firewallFailOpen", "ENABLED"),
        "net-004",
    ),
    (
        "role-policy-wildcard",
        "aws:iam/rolePolicy:RolePolicy",
        _set("policy", policy_document("lambda:*")),
        "iam-001",
    ),
    (
        "role-policy-prefix-wildcard",
        "aws:iam/rolePolicy:RolePolicy",
        _set("policy", policy_document("lambda:RunMicrovm", "s3:Get*")),
        "iam-001",
    ),
    (
        "role-policy-question-mark",
        "aws:iam/rolePolicy:RolePolicy",
        _set("policy", policy_document("iam:?ut*")),
        "iam-001",
    ),
    (
        "admin-policy-attached",
        "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
        _set("policyArn", "arn:aws:iam::aws:policy/AdministratorAccess"),
        "iam-001",
    ),
    (
        "gcp-editor-role",
        "gcp:projects/iAMMember:IAMMember",
        _set("role", "roles/editor"),
        "iam-001",
    ),
    (
        "k8s-cluster-admin",
        "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
        _set("roleRef.name", "cluster-admin"),
        "iam-001",
    ),
    (
        "launcher-execution-role",
        FUNCTION,
        _set(f"{ENV}.EXECUTION_ROLE_ARN", "arn:aws:iam::123456789012:role/guest"),
        "iam-002",
    ),
    (
        "launcher-may-pass-role",
        "aws:iam/rolePolicy:RolePolicy",
        _set("policy", policy_document("lambda:RunMicrovm", "iam:PassRole")),
        "iam-002",
    ),
    (
        "gke-node-metadata-exposed",
        "gcp:container/nodePool:NodePool",
        _set("nodeConfig.workloadMetadataConfig.mode", "GCE_METADATA"),
        "iam-002",
    ),
    ("run-invoker-check-off", RUN, _set("invokerIamDisabled", True), "iam-003"),
    (
        "run-public-invoker",
        "gcp:cloudrunv2/serviceIamMember:ServiceIamMember",
        _set("member", "allUsers"),
        "iam-003",
    ),
    # Not the kit's Worker: its interceptions and gateway are unknown (a catch-all is one line).
    ("worker-foreign-code", WORKER, _set("content", "export default {}"), "net-003"),
    ("worker-no-content", WORKER, _drop("content"), "net-003"),
    ("worker-private-origin-fetch", WORKER, _drop("compatibilityFlags"), "net-003"),
    (
        "worker-private-origin-flag",
        WORKER,
        _set("compatibilityFlags", ["global_fetch_strictly_public", "global_fetch_private_origin"]),
        "net-003",
    ),
    ("worker-client-chosen-ids", WORKER, _set("bindings.2.name", "BUILD_LABEL"), "ses-001"),
    # The shape before client tokens: a shared bearer token, the tenant from the path.
    ("worker-shared-bearer-token", WORKER, _set("bindings.1.name", "AUTH_TOKEN"), "ses-001"),
    (
        "worker-on-workers-dev",
        "cloudflare:index/workersScriptSubdomain:WorkersScriptSubdomain",
        _set("enabled", True),
        "ses-002",
    ),
    ("wrangler-script-on-workers-dev", WRANGLER, _set("workersDev", True), "ses-002"),
    ("launcher-unsigned-webhooks", FUNCTION, _drop(f"{ENV}.WEBHOOK_SECRET_ARN"), "ses-003"),
    ("run-no-limits", RUN, _set("template.containers.0.resources", {}), "res-001"),
    ("run-too-big", RUN, _set("template.containers.0.resources.limits.cpu", "16"), "res-001"),
    ("run-no-timeout", RUN, _drop("template.timeout"), "res-002"),
    (
        "launcher-lifetime-above-cap",
        FUNCTION,
        _set(f"{ENV}.MAX_DURATION_SECONDS", "86400"),
        "res-002",
    ),
    ("launcher-no-exec-timeout", FUNCTION, _drop(f"{ENV}.EXEC_TIMEOUT_SECONDS"), "res-002"),
    ("run-unbounded", RUN, _drop("template.scaling"), "res-003"),
    ("launcher-unbounded", FUNCTION, _drop("reservedConcurrentExecutions"), "res-003"),
    (
        "log-group-short",
        "aws:cloudwatch/logGroup:LogGroup",
        _set("retentionInDays", 7),
        "log-001",
    ),
    ("run-secret-env", RUN, _set("template.containers.0.envs.0.name", "API_TOKEN"), "sec-001"),
    ("launcher-secret-env", FUNCTION, _set(f"{ENV}.GITHUB_TOKEN", "abc"), "sec-001"),
    (
        "image-secret-env",
        IMAGE,
        _set("environmentVariables.WORKER_KEY", "k"),
        "sec-001",
    ),
    (
        "kit-image-secret-env",
        KIT_IMAGE,
        _set("image.environmentVariables.WORKER_KEY", "k"),
        "sec-001",
    ),
    (
        "worker-plain-secret",
        WORKER,
        _append("bindings", {"type": "plain_text", "name": "API_KEY", "text": "k"}),
        "sec-001",
    ),
    (
        "worker-credential-in-plain-binding",
        WORKER,
        _append("bindings", {"type": "plain_text", "name": "MIRROR", "text": "ghp_" + "a" * 36}),
        "sec-002",
    ),
    (
        "gke-no-gvisor",
        "gcp:container/nodePool:NodePool",
        _set("nodeConfig.sandboxConfig", {}),
        "k8s-004",
    ),
]


ROLE = "aws:iam/role:Role"


def _trust(statement: dict[str, Any]) -> dict[str, Any]:
    return {"assumeRolePolicy": json.dumps({"Version": "2012-10-17", "Statement": [statement]})}


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        (
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}},
            [
                "Role r lets lambda.amazonaws.com assume it without an aws:SourceAccount or "
                "aws:SourceArn condition, so the service could be made to use it on another "
                "account's behalf; pin aws:SourceAccount to this account (and aws:SourceArn "
                "where the service documents it) in the trust policy."
            ],
        ),
        # Another key does not pin the account; a list of services is named in full.
        (
            {
                "Effect": "Allow",
                "Principal": {"Service": ["ec2.amazonaws.com", "ecs-tasks.amazonaws.com"]},
                "Condition": {"StringEquals": {"aws:RequestedRegion": "us-east-1"}},
            },
            [
                "Role r lets ec2.amazonaws.com, ecs-tasks.amazonaws.com assume it without an "
                "aws:SourceAccount or aws:SourceArn condition, so the service could be made to "
                "use it on another account's behalf; pin aws:SourceAccount to this account "
                "(and aws:SourceArn where the service documents it) in the trust policy."
            ],
        ),
        # Either key under any operator (keys are case-insensitive) pins it.
        (
            {
                "Effect": "Allow",
                "Principal": {"Service": "lambda.amazonaws.com"},
                "Condition": {"ArnLike": {"AWS:SourceArn": "arn:aws:lambda:*:1:function:*"}},
            },
            [],
        ),
        (
            {
                "Effect": "Allow",
                "Principal": {"Service": "lambda.amazonaws.com"},
                "Condition": {"StringEqualsIfExists": {"aws:SourceAccount": "1"}},
            },
            [],
        ),
        # A Deny grants nothing.
        ({"Effect": "Deny", "Principal": {"Service": "lambda.amazonaws.com"}}, []),
    ],
)
def test_a_service_role_without_source_conditions_is_reported(
    statement: dict[str, Any], expected: list[str]
) -> None:
    assert resource_reports("sbx-iam-005", ROLE, _trust(statement)) == expected


@pytest.mark.parametrize("resource_type", sorted(HAPPY))
def test_happy_path_is_silent(resource_type: str) -> None:
    assert fired(resource_type, copy.deepcopy(HAPPY[resource_type])) == set()


@pytest.mark.parametrize(
    ("resource_type", "mutate", "policy"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_one_weakened_field_raises_exactly_its_policy(
    resource_type: str, mutate: Callable[[dict[str, Any]], None], policy: str
) -> None:
    props = copy.deepcopy(HAPPY[resource_type])
    mutate(props)
    assert fired(resource_type, props) == {f"sbx-{policy}"}


def test_a_worker_without_any_credential_is_unauthenticated_and_tenant_blind() -> None:
    props = copy.deepcopy(HAPPY[WORKER])
    props["bindings"][1]["name"] = "GREETING"
    assert fired(WORKER, props) == {"sbx-ses-001", "sbx-ses-002"}


def test_the_shared_bearer_token_shape_is_reported_with_its_fix() -> None:
    props = copy.deepcopy(HAPPY[WORKER])
    props["bindings"][1]["name"] = "AUTH_TOKEN"
    assert resource_reports("sbx-ses-001", WORKER, props, "sandbox") == [
        "Worker sandbox routes to Durable Objects without a key to verify client tokens with, "
        "so the tenant and session a request touches come from its path and any holder of a "
        "shared bearer token reaches every tenant's sandboxes; bind the token signing key as "
        "secret_text (JWT_SIGNING_KEY) and take the tenant and session scope from the verified "
        "token's claims."
    ]
    assert resource_reports("sbx-ses-001", WORKER, HAPPY[WORKER], "sandbox") == []


def test_a_secret_binding_may_hold_a_credential() -> None:
    props = copy.deepcopy(HAPPY[WORKER])
    props["bindings"][1]["text"] = "ghp_" + "a" * 36
    assert fired(WORKER, props) == set()


def _aws_stack() -> list[tuple[str, dict[str, Any]]]:
    return [
        (IMAGE, HAPPY[IMAGE]),
        (KIT_IMAGE, HAPPY[KIT_IMAGE]),
        ("aws:lambda/coreNetworkConnector:CoreNetworkConnector", {"name": "c"}),
        ("aws:networkfirewall/firewallPolicy:FirewallPolicy", {}),
        ("aws:networkfirewall/firewall:Firewall", {}),
        (
            "aws:networkfirewall/loggingConfiguration:LoggingConfiguration",
            {
                "loggingConfiguration": {
                    "logDestinationConfigs": [{"logType": "FLOW"}, {"logType": "ALERT"}]
                }
            },
        ),
        ("aws:route53/resolverFirewallConfig:ResolverFirewallConfig", {}),
    ]


def _gcp_stack(deny_priority: int) -> list[tuple[str, dict[str, Any]]]:
    deny = {
        "direction": "EGRESS",
        "action": "deny",
        "priority": deny_priority,
        "match": {"destIpRanges": ["0.0.0.0/0"]},
    }
    # The network's DNS answers every unlisted name itself (no DNS tunnel).
    dns_policy = {"responsePolicyName": "sandbox-dns", "networks": [{"networkUrl": "n"}]}
    catch_all = {
        "responsePolicy": "sandbox-dns",
        "dnsName": "*.",
        "localData": {"localDatas": [{"name": "*.", "type": "TXT", "rrdatas": ['"no"']}]},
    }
    return [
        (RUN, HAPPY[RUN]),
        (RULE, HAPPY[RULE]),
        (RULE, deny),
        ("gcp:dns/responsePolicy:ResponsePolicy", dns_policy),
        ("gcp:dns/responsePolicyRule:ResponsePolicyRule", catch_all),
    ]


def test_stack_policies_are_silent_on_complete_cloud_stacks() -> None:
    complete = [*_aws_stack(), *_gcp_stack(65000), (WORKER, HAPPY[WORKER])]
    assert fired_on_stack(complete) == set()


@pytest.mark.parametrize(
    ("stack", "policy"),
    [
        pytest.param(
            [r for r in _aws_stack() if "Connector" not in r[0]],
            "net-005",
            id="image-without-connector",
        ),
        pytest.param(
            [r for r in _aws_stack() if "resolver" not in r[0]],
            "net-005",
            id="image-without-dns-firewall",
        ),
        pytest.param(_gcp_stack(100), "net-005", id="run-deny-before-allow"),
        pytest.param(_gcp_stack(65000)[:2], "net-005", id="run-without-deny-all"),
        pytest.param(_gcp_stack(65000)[:3], "net-005", id="run-without-dns-policy"),
        pytest.param(
            [r for r in _aws_stack() if "logging" not in r[0]],
            "log-002",
            id="firewall-without-logs",
        ),
        pytest.param(
            [(WORKER, {**HAPPY[WORKER], "observability": {"enabled": False}})],
            "log-002",
            id="worker-without-observability",
        ),
    ],
)
def test_stack_policy_fires_on_a_missing_control(
    stack: list[tuple[str, dict[str, Any]]], policy: str
) -> None:
    assert fired_on_stack(stack) == {f"sbx-{policy}"}


def test_a_pulumi_aws_firewall_policy_is_reported_as_a_door() -> None:
    # aws.networkfirewall.FirewallPolicy cannot hold resolved-IP validation: swapping the kit's
    # FirewallPolicyDocument back for it reopens door 1, whatever else it sets.
    props = {
        "firewallPolicy": {
            "statefulEngineOptions": {"ruleOrder": "STRICT_ORDER"},
            "statefulDefaultActions": ["aws:drop_established"],
            "statelessDefaultActions": ["aws:forward_to_sfe"],
        }
    }
    assert fired("aws:networkfirewall/firewallPolicy:FirewallPolicy", props) == {"sbx-net-003"}
