"""What the identity running ``pulumi up`` for the aws-microvm target needs: an IAM policy
document built from the stack's rendered resources.

Each resource type the target renders maps to the actions its provider calls to create, read,
update and delete it (:data:`GRANTS`): for pulumi-aws types, the AWS calls of the
terraform-provider-aws resource behind it; for the kit's dynamic resources, exactly the client
calls of their providers (``firewall_policy``, ``microvm_image``; ``tests/aws/test_deployer.py``
reads those calls from the providers' code). A type without an entry is refused, so a new
resource cannot ship without its permissions.

Scoping, where the service allows it: IAM roles, Lambda functions, network connectors, MicroVM
images, Network Firewall resources, Secrets Manager secrets and log groups by ARN with the
component's name prefix (Pulumi's auto-names start ``<component>-<part>``) in the stack's
region; Route 53 Resolver DNS Firewall resources by region and kind (their ARNs carry random
ids only); API Gateway by the ``/apis`` paths of the region. EC2 networking calls authorize
against several resource types each (a ``CreateRoute`` touches the route table and the
endpoint), and the vended-log delivery and STS identity calls take no resource, so those are
``*`` limited to the region by ``aws:RequestedRegion`` (delivery and identity: ``*`` alone).
The account is ``*``: the document is written before the account is known; attach it in the
one account the stack deploys to.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sandboxkit.aws import type_tokens as tokens
from sandboxkit.aws.connector import managed_connector_arn
from sandboxkit.aws.image import BUILD_EGRESS_CONNECTOR
from sandboxkit.aws.plan import MicrovmSandboxArgs
from sandboxkit.deployer import grant_of
from sandboxkit.type_tokens import TypeToken


@dataclass(frozen=True)
class Grant:
    """Actions on resources, one statement of the document (merged by ``sid``).

    Attributes:
        sid: the statement id; grants with the same one share a statement.
        actions: IAM actions (``service:Action``).
        resources: ARN patterns with ``{region}``, ``{name}`` (the component name) and
            ``{stack}`` to fill in; ``("*",)`` for calls that take no resource.
        regional: a ``*`` resource limited to the stack's region (``aws:RequestedRegion``).
    """

    sid: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    regional: bool = False


def _ec2(sid: str, *actions: str) -> Grant:
    # Tags go with every EC2 create (TagSpecifications) and every tag change.
    return Grant(sid, (*actions, "ec2:CreateTags", "ec2:DeleteTags"), ("*",), regional=True)


_ROLES = "arn:aws:iam::*:role/{name}-*"
_LOG_GROUPS = "arn:aws:logs:{region}:*:log-group:/sandboxkit/{stack}/{name}/*"
_FIREWALL = "arn:aws:network-firewall:{region}:*:firewall/{name}-fw-*"
_FIREWALL_POLICY = "arn:aws:network-firewall:{region}:*:firewall-policy/{name}-fw-policy-*"
_RULE_GROUPS = "arn:aws:network-firewall:{region}:*:stateful-rulegroup/{name}-fw-*"
_RESOLVER = "arn:aws:route53resolver:{region}:*:{kind}/*"
_APIS = ("arn:aws:apigateway:{region}::/apis", "arn:aws:apigateway:{region}::/apis/*")
# CloudWatch Logs' vended delivery (Network Firewall and API Gateway access logs): the
# delivery and resource-policy calls take no resource (CloudWatch Logs user guide, "Enabling
# logging from AWS services": permissions for logs sent to CloudWatch Logs).
_VENDED_LOGS = Grant(
    "VendedLogDelivery",
    (
        "logs:CreateLogDelivery",
        "logs:GetLogDelivery",
        "logs:UpdateLogDelivery",
        "logs:DeleteLogDelivery",
        "logs:ListLogDeliveries",
        "logs:PutResourcePolicy",
        "logs:DescribeResourcePolicies",
        "logs:DescribeLogGroups",
    ),
    ("*",),
)
_RESOLVER_TAGS = (
    "route53resolver:TagResource",
    "route53resolver:UntagResource",
    "route53resolver:ListTagsForResource",
)


def _dns_firewall(kinds: tuple[str, ...], *actions: str) -> Grant:
    # Route 53 Resolver's DNS Firewall calls on resources of these ARN resource types, any id
    # (the service names them by a generated id, rslvr-fdl-..., never by the kit's name).
    return Grant("KitDnsFirewall", actions, tuple(_RESOLVER.replace("{kind}", k) for k in kinds))


GRANTS: Mapping[TypeToken, tuple[Grant, ...]] = {
    # The explicit provider and the component itself call nothing; the provider's
    # get_caller_identity pins every trust policy to the account.
    tokens.PROVIDER: (Grant("ReadIdentity", ("sts:GetCallerIdentity",), ("*",)),),
    tokens.COMPONENT: (),
    tokens.VPC: (
        _ec2(
            "Ec2Networking",
            "ec2:CreateVpc",
            "ec2:DeleteVpc",
            "ec2:ModifyVpcAttribute",
            "ec2:DescribeVpcs",
            "ec2:DescribeVpcAttribute",
            "ec2:DescribeNetworkAcls",
            "ec2:DescribeRouteTables",
            "ec2:DescribeSecurityGroups",
        ),
    ),
    tokens.SUBNET: (
        _ec2(
            "Ec2Networking",
            "ec2:CreateSubnet",
            "ec2:DeleteSubnet",
            "ec2:ModifySubnetAttribute",
            "ec2:DescribeSubnets",
            "ec2:DescribeNetworkInterfaces",
        ),
    ),
    tokens.INTERNET_GATEWAY: (
        _ec2(
            "Ec2Networking",
            "ec2:CreateInternetGateway",
            "ec2:DeleteInternetGateway",
            "ec2:AttachInternetGateway",
            "ec2:DetachInternetGateway",
            "ec2:DescribeInternetGateways",
        ),
    ),
    tokens.ROUTE_TABLE: (
        _ec2(
            "Ec2Networking",
            "ec2:CreateRouteTable",
            "ec2:DeleteRouteTable",
            "ec2:DescribeRouteTables",
        ),
    ),
    tokens.ROUTE_ASSOCIATION: (
        _ec2(
            "Ec2Networking",
            "ec2:AssociateRouteTable",
            "ec2:DisassociateRouteTable",
            "ec2:ReplaceRouteTableAssociation",
            "ec2:DescribeRouteTables",
        ),
    ),
    tokens.ROUTE: (
        _ec2(
            "Ec2Networking",
            "ec2:CreateRoute",
            "ec2:DeleteRoute",
            "ec2:ReplaceRoute",
            "ec2:DescribeRouteTables",
        ),
    ),
    tokens.EIP: (
        _ec2(
            "Ec2Networking",
            "ec2:AllocateAddress",
            "ec2:ReleaseAddress",
            "ec2:DisassociateAddress",
            "ec2:DescribeAddresses",
            "ec2:DescribeAddressesAttribute",
        ),
    ),
    tokens.NAT_GATEWAY: (
        _ec2(
            "Ec2Networking",
            "ec2:CreateNatGateway",
            "ec2:DeleteNatGateway",
            "ec2:DescribeNatGateways",
        ),
    ),
    tokens.SECURITY_GROUP: (
        _ec2(
            "Ec2Networking",
            "ec2:CreateSecurityGroup",
            "ec2:DeleteSecurityGroup",
            "ec2:AuthorizeSecurityGroupEgress",
            "ec2:RevokeSecurityGroupEgress",
            "ec2:AuthorizeSecurityGroupIngress",
            "ec2:RevokeSecurityGroupIngress",
            "ec2:DescribeSecurityGroups",
            "ec2:DescribeSecurityGroupRules",
            "ec2:DescribeNetworkInterfaces",
        ),
    ),
    tokens.FLOW_LOG: (
        _ec2("Ec2Networking", "ec2:CreateFlowLogs", "ec2:DeleteFlowLogs", "ec2:DescribeFlowLogs"),
        Grant("PassKitRoles", ("iam:PassRole",), (_ROLES,)),
    ),
    tokens.LOG_GROUP: (
        Grant(
            "KitLogGroups",
            (
                "logs:CreateLogGroup",
                "logs:DeleteLogGroup",
                "logs:PutRetentionPolicy",
                "logs:DeleteRetentionPolicy",
                "logs:TagResource",
                "logs:UntagResource",
                "logs:ListTagsForResource",
            ),
            (_LOG_GROUPS, _LOG_GROUPS + ":*"),
        ),
        Grant("ListLogGroups", ("logs:DescribeLogGroups",), ("*",), regional=True),
    ),
    tokens.ROLE: (
        Grant(
            "KitRoles",
            (
                "iam:CreateRole",
                "iam:DeleteRole",
                "iam:GetRole",
                "iam:UpdateRole",
                "iam:UpdateAssumeRolePolicy",
                "iam:TagRole",
                "iam:UntagRole",
                "iam:ListRolePolicies",
                "iam:ListAttachedRolePolicies",
                "iam:ListInstanceProfilesForRole",
            ),
            (_ROLES,),
        ),
    ),
    tokens.ROLE_POLICY: (
        Grant(
            "KitRoles",
            ("iam:PutRolePolicy", "iam:GetRolePolicy", "iam:DeleteRolePolicy"),
            (_ROLES,),
        ),
    ),
    tokens.POLICY: (
        Grant(
            "KitPolicies",
            (
                "iam:CreatePolicy",
                "iam:DeletePolicy",
                "iam:GetPolicy",
                "iam:GetPolicyVersion",
                "iam:CreatePolicyVersion",
                "iam:DeletePolicyVersion",
                "iam:ListPolicyVersions",
                "iam:TagPolicy",
                "iam:UntagPolicy",
            ),
            ("arn:aws:iam::*:policy/{name}-*",),
        ),
    ),
    tokens.SECRET: (
        Grant(
            "KitSecrets",
            (
                "secretsmanager:CreateSecret",
                "secretsmanager:DeleteSecret",
                "secretsmanager:DescribeSecret",
                "secretsmanager:UpdateSecret",
                "secretsmanager:GetResourcePolicy",
                "secretsmanager:TagResource",
                "secretsmanager:UntagResource",
            ),
            ("arn:aws:secretsmanager:{region}:*:secret:{name}-*",),
        ),
    ),
    tokens.SECRET_VERSION: (
        Grant(
            "KitSecrets",
            (
                "secretsmanager:PutSecretValue",
                "secretsmanager:GetSecretValue",
                "secretsmanager:ListSecretVersionIds",
                "secretsmanager:UpdateSecretVersionStage",
            ),
            ("arn:aws:secretsmanager:{region}:*:secret:{name}-*",),
        ),
    ),
    tokens.CONNECTOR: (
        Grant(
            "KitConnector",
            (
                "lambda:CreateNetworkConnector",
                "lambda:GetNetworkConnector",
                "lambda:UpdateNetworkConnector",
                "lambda:DeleteNetworkConnector",
                "lambda:ListNetworkConnectorVersions",
            ),
            ("arn:aws:lambda:{region}:*:network-connector:{name}-connector-*",),
        ),
        Grant("PassKitRoles", ("iam:PassRole",), (_ROLES,)),
    ),
    tokens.FUNCTION: (
        Grant(
            "KitLauncher",
            (
                "lambda:CreateFunction",
                "lambda:DeleteFunction",
                "lambda:GetFunction",
                "lambda:GetFunctionConfiguration",
                "lambda:UpdateFunctionCode",
                "lambda:UpdateFunctionConfiguration",
                "lambda:PutFunctionConcurrency",
                "lambda:DeleteFunctionConcurrency",
                "lambda:GetFunctionConcurrency",
                "lambda:GetFunctionCodeSigningConfig",
                "lambda:ListVersionsByFunction",
                "lambda:TagResource",
                "lambda:UntagResource",
                "lambda:ListTags",
            ),
            ("arn:aws:lambda:{region}:*:function:{name}-launcher-*",),
        ),
        Grant("PassKitRoles", ("iam:PassRole",), (_ROLES,)),
    ),
    tokens.PERMISSION: (
        Grant(
            "KitLauncher",
            ("lambda:AddPermission", "lambda:RemovePermission", "lambda:GetPolicy"),
            ("arn:aws:lambda:{region}:*:function:{name}-launcher-*",),
        ),
    ),
    tokens.KIT_MICROVM_IMAGE: (
        Grant(
            "KitImage",
            (
                "lambda:CreateMicrovmImage",
                "lambda:GetMicrovmImage",
                "lambda:GetMicrovmImageVersion",
                "lambda:UpdateMicrovmImage",
                "lambda:DeleteMicrovmImage",
                "lambda:TagResource",
                "lambda:UntagResource",
            ),
            ("arn:aws:lambda:{region}:*:microvm-image:{name}-image-*",),
        ),
        Grant("PassKitRoles", ("iam:PassRole",), (_ROLES,)),
        # The build's connector (image.BUILD_EGRESS_CONNECTOR), passed by CreateMicrovmImage.
        Grant(
            "PassBuildConnector",
            ("lambda:PassNetworkConnector",),
            (managed_connector_arn("{region}", BUILD_EGRESS_CONNECTOR),),
        ),
    ),
    tokens.API: (
        Grant(
            "KitHttpApi",
            ("apigateway:POST", "apigateway:GET", "apigateway:PATCH", "apigateway:DELETE"),
            (*_APIS, "arn:aws:apigateway:{region}::/tags/*"),
        ),
    ),
    tokens.INTEGRATION: (
        Grant(
            "KitHttpApi",
            ("apigateway:POST", "apigateway:GET", "apigateway:PATCH", "apigateway:DELETE"),
            _APIS,
        ),
    ),
    tokens.API_ROUTE: (
        Grant(
            "KitHttpApi",
            ("apigateway:POST", "apigateway:GET", "apigateway:PATCH", "apigateway:DELETE"),
            _APIS,
        ),
    ),
    tokens.STAGE: (
        Grant(
            "KitHttpApi",
            ("apigateway:POST", "apigateway:GET", "apigateway:PATCH", "apigateway:DELETE"),
            _APIS,
        ),
        _VENDED_LOGS,
    ),
    tokens.FIREWALL_POLICY_DOCUMENT: (
        Grant(
            "KitFirewall",
            (
                "network-firewall:CreateFirewallPolicy",
                "network-firewall:DescribeFirewallPolicy",
                "network-firewall:UpdateFirewallPolicy",
                "network-firewall:DeleteFirewallPolicy",
                "network-firewall:TagResource",
                "network-firewall:UntagResource",
            ),
            (_FIREWALL_POLICY,),
        ),
    ),
    tokens.RULE_GROUP: (
        Grant(
            "KitFirewall",
            (
                "network-firewall:CreateRuleGroup",
                "network-firewall:DescribeRuleGroup",
                "network-firewall:UpdateRuleGroup",
                "network-firewall:DeleteRuleGroup",
                "network-firewall:TagResource",
                "network-firewall:UntagResource",
                "network-firewall:ListTagsForResource",
            ),
            (_RULE_GROUPS,),
        ),
    ),
    tokens.FIREWALL: (
        Grant(
            "KitFirewall",
            (
                "network-firewall:CreateFirewall",
                "network-firewall:DescribeFirewall",
                "network-firewall:DeleteFirewall",
                "network-firewall:AssociateFirewallPolicy",
                "network-firewall:AssociateSubnets",
                "network-firewall:DisassociateSubnets",
                "network-firewall:UpdateSubnetChangeProtection",
                "network-firewall:UpdateFirewallPolicyChangeProtection",
                "network-firewall:UpdateFirewallDeleteProtection",
                "network-firewall:UpdateFirewallDescription",
                "network-firewall:TagResource",
                "network-firewall:UntagResource",
                "network-firewall:ListTagsForResource",
            ),
            (_FIREWALL, _FIREWALL_POLICY),
        ),
        # The first firewall of an account creates Network Firewall's service-linked role
        # (Network Firewall developer guide, "Using service-linked roles").
        Grant(
            "FirstFirewallServiceRole",
            ("iam:CreateServiceLinkedRole",),
            (
                "arn:aws:iam::*:role/aws-service-role/network-firewall.amazonaws.com/"
                "AWSServiceRoleForNetworkFirewall",
            ),
        ),
    ),
    tokens.FIREWALL_LOGGING: (
        Grant(
            "KitFirewall",
            (
                "network-firewall:UpdateLoggingConfiguration",
                "network-firewall:DescribeLoggingConfiguration",
            ),
            (_FIREWALL,),
        ),
        _VENDED_LOGS,
    ),
    tokens.DNS_LIST: (
        _dns_firewall(
            ("firewall-domain-list",),
            "route53resolver:CreateFirewallDomainList",
            "route53resolver:GetFirewallDomainList",
            "route53resolver:UpdateFirewallDomains",
            "route53resolver:ListFirewallDomains",
            "route53resolver:DeleteFirewallDomainList",
            *_RESOLVER_TAGS,
        ),
    ),
    tokens.DNS_GROUP: (
        _dns_firewall(
            ("firewall-rule-group",),
            "route53resolver:CreateFirewallRuleGroup",
            "route53resolver:GetFirewallRuleGroup",
            "route53resolver:DeleteFirewallRuleGroup",
            *_RESOLVER_TAGS,
        ),
    ),
    tokens.DNS_RULE: (
        _dns_firewall(
            ("firewall-rule-group", "firewall-domain-list"),
            "route53resolver:CreateFirewallRule",
            "route53resolver:UpdateFirewallRule",
            "route53resolver:DeleteFirewallRule",
            "route53resolver:ListFirewallRules",
        ),
    ),
    tokens.DNS_ASSOCIATION: (
        _dns_firewall(
            ("firewall-rule-group-association", "firewall-rule-group"),
            "route53resolver:AssociateFirewallRuleGroup",
            "route53resolver:GetFirewallRuleGroupAssociation",
            "route53resolver:UpdateFirewallRuleGroupAssociation",
            "route53resolver:DisassociateFirewallRuleGroup",
            *_RESOLVER_TAGS,
        ),
        _ec2("Ec2Networking", "ec2:DescribeVpcs"),
    ),
    tokens.DNS_FIREWALL_CONFIG: (
        _dns_firewall(
            ("firewall-config",),
            "route53resolver:UpdateFirewallConfig",
            "route53resolver:GetFirewallConfig",
            "route53resolver:ListFirewallConfigs",
        ),
        _ec2("Ec2Networking", "ec2:DescribeVpcs"),
    ),
}


def grants_for(resource_type: str) -> tuple[Grant, ...]:
    """The grants of one rendered resource type (any API version of a listed type).

    Raises:
        LookupError: for a type without an entry in :data:`GRANTS` (its permissions are not
            known, so the document would be short of them).
    """
    found = grant_of(GRANTS, resource_type)
    if found is None:
        raise LookupError(
            f"{resource_type}: sandboxkit.aws.deployer.GRANTS lists no deployer permissions "
            "for it; add its provider's calls there"
        )
    return found[0]


def deployer_policy(
    resource_types: Iterable[str],
    *,
    region: str,
    component: str,
    stack: str,
    layers: Iterable[str] = (),
) -> dict[str, Any]:
    """The deployer's IAM policy document (version 2012-10-17) for these rendered types.

    Args:
        resource_types: the type tokens of every resource the target rendered.
        region: the stack's region (``aws-microvm.region``).
        component: the component's name (every child's name starts ``<component>-``).
        stack: the stack name (log groups live under ``/sandboxkit/<stack>/<component>/``).
        layers: the launcher's layer version ARNs, which ``CreateFunction`` reads.

    Returns:
        ``{"Version", "Statement"}``: one statement per ``Grant.sid``, actions and resources
        sorted and unique, in the order the types first need them.

    Raises:
        LookupError: for a type without known permissions (:func:`grants_for`).
    """
    merged: dict[str, tuple[set[str], set[str], bool]] = {}
    for resource_type in dict.fromkeys(resource_types):
        for grant in grants_for(resource_type):
            actions, resources, regional = merged.setdefault(grant.sid, (set(), set(), False))
            actions.update(grant.actions)
            resources.update(
                pattern.format(region=region, name=component, stack=stack)
                for pattern in grant.resources
            )
            merged[grant.sid] = (actions, resources, regional or grant.regional)
    layer_arns = sorted(set(layers))
    if layer_arns:
        merged["LauncherLayers"] = ({"lambda:GetLayerVersion"}, set(layer_arns), False)
    statements = []
    for sid, (actions, resources, regional) in merged.items():
        statement: dict[str, Any] = {
            "Sid": sid,
            "Effect": "Allow",
            "Action": sorted(actions),
            "Resource": sorted(resources),
        }
        if regional:
            statement["Condition"] = {"StringEquals": {"aws:RequestedRegion": region}}
        statements.append(statement)
    return {"Version": "2012-10-17", "Statement": statements}


def plan_deployer_policy(
    resource_types: Iterable[str], plan: MicrovmSandboxArgs, *, stack: str, component: str
) -> dict[str, Any]:
    """:func:`deployer_policy` for a validated plan (``spec.plans["aws-microvm"]``): its
    region and launcher layers; ``component`` is the component's name (``program`` names it
    after the target). What ``sandboxkit deployer-policy --target aws-microvm`` prints.

    Raises:
        LookupError: for a type without known permissions (:func:`grants_for`).
    """
    return deployer_policy(
        resource_types,
        region=plan["access"].region,
        component=component,
        stack=stack,
        layers=plan["launcher_layers"],
    )
