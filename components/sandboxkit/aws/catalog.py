"""Resource types of the ``aws-microvm`` target: terraform-provider-aws resource names.

See ``sandboxkit.catalog``: mock outputs for the offline render and checkov export types.
"""

from __future__ import annotations

from typing import Any

from pulumi.runtime import MockResourceArgs

from sandboxkit.aws import type_tokens as tokens
from sandboxkit.catalog import (
    TAGS,
    TF_AWS,
    MockCall,
    OutputRule,
    ResourceArgs,
    ResourceKind,
    TerraformType,
    mock_hash,
    setting_of,
)

# A documentation account id (AWS uses 123456789012 in its examples); never a real account.
MOCK_AWS_ACCOUNT = "123456789012"
# Only for a resource with neither its own region nor an explicit provider's (tests).
MOCK_AWS_REGION = "us-east-1"


def _region(args: MockResourceArgs) -> str:
    return setting_of(args, "region", MOCK_AWS_REGION)


def _aws_arn(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    # aws:lambda/function:Function -> service "lambda", kind "function"
    module = args.typ.split(":")[1].split("/")[0].rstrip("_")
    kind = args.typ.split(":")[2].lower()
    name = args.inputs.get("name", resource_id)
    # IAM is global: its ARNs have no region (RoleArn's pattern: arn:aws:iam::<account>:role/).
    region = "" if module == "iam" else _region(args)
    return {
        "arn": f"arn:aws:{module}:{region}:{MOCK_AWS_ACCOUNT}:{kind}/{name}",
        "name": name,
    }


def _aws_lambda_arn(kind: str) -> OutputRule:
    # Lambda MicroVM images and network connectors: arn:aws:lambda:<region>:<account>:<kind>:<name>
    def rule(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
        name = args.inputs.get("name", resource_id)
        return {
            "arn": f"arn:aws:lambda:{_region(args)}:{MOCK_AWS_ACCOUNT}:{kind}:{name}",
            "name": name,
        }

    return rule


def _aws_log_group(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    name = args.inputs.get("name", resource_id)
    return {
        "arn": f"arn:aws:logs:{_region(args)}:{MOCK_AWS_ACCOUNT}:log-group:{name}",
        "name": name,
    }


def _aws_network_firewall(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    # One endpoint per subnet mapping, as Network Firewall reports in firewallStatuses.
    attachments = [
        {"subnetId": m.get("subnetId"), "endpointId": f"vpce-{mock_hash(str(m))}"}
        for m in args.inputs.get("subnetMappings") or []
    ]
    return {
        **_aws_arn(args, resource_id),
        "firewallStatuses": [{"syncStates": [{"attachments": [a]} for a in attachments]}],
    }


def _firewall_policy_document(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    # What FirewallPolicyProvider.create returns: the name gets a random suffix in AWS.
    name = f"{args.inputs.get('namePrefix', resource_id)}-{mock_hash(resource_id)[:8]}"
    access = args.inputs.get("access")
    region = access.get("region") if isinstance(access, dict) else None
    return {
        "arn": f"arn:aws:network-firewall:{region or _region(args)}:{MOCK_AWS_ACCOUNT}:"
        f"firewall-policy/{name}",
        "firewallPolicyName": name,
    }


def _microvm_image(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    # What MicrovmImageProvider.create returns: the name gets a random suffix in AWS.
    name = f"{args.inputs.get('namePrefix', resource_id)}-{mock_hash(resource_id)[:8]}"
    access = args.inputs.get("access")
    region = access.get("region") if isinstance(access, dict) else None
    return {
        "arn": f"arn:aws:lambda:{region or _region(args)}:{MOCK_AWS_ACCOUNT}:microvm-image:{name}",
        "imageName": name,
        "imageVersion": "1",
    }


def _aws_http_api(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    # API Gateway picks a random id per API: one per stack here, as two stacks get two.
    stack = args.stack if isinstance(args, ResourceArgs) else ""
    api_id = mock_hash(stack + resource_id)[:10]
    region = _region(args)
    return {
        **_aws_arn(args, resource_id),
        "apiEndpoint": f"https://{api_id}.execute-api.{region}.amazonaws.com",
        "executionArn": f"arn:aws:execute-api:{region}:{MOCK_AWS_ACCOUNT}:{api_id}",
    }


def _aws_function(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    outputs = _aws_arn(args, resource_id)
    outputs["invokeArn"] = (
        f"arn:aws:apigateway:{_region(args)}:lambda:path/2015-03-31/functions/"
        f"{outputs['arn']}/invocations"
    )
    return outputs


KINDS: tuple[ResourceKind, ...] = (
    ResourceKind(
        tokens.SECURITY_GROUP.token,
        export=TerraformType("aws_security_group", TF_AWS, blocks=frozenset({"ingress", "egress"})),
    ),
    ResourceKind(
        tokens.VPC.token,
        export=TerraformType("aws_vpc", TF_AWS),
    ),
    ResourceKind(
        tokens.SUBNET.token,
        export=TerraformType("aws_subnet", TF_AWS),
    ),
    ResourceKind(
        tokens.INTERNET_GATEWAY.token,
        export=TerraformType("aws_internet_gateway", TF_AWS),
        unchecked="attaches to the VPC; no settings of its own",
    ),
    ResourceKind(
        tokens.NAT_GATEWAY.token,
        export=TerraformType("aws_nat_gateway", TF_AWS),
        unchecked="references its subnet and address; no settings to judge",
    ),
    ResourceKind(
        tokens.EIP.token,
        export=TerraformType("aws_eip", TF_AWS),
    ),
    ResourceKind(
        tokens.ROUTE_TABLE.token,
        export=TerraformType(
            "aws_route_table", TF_AWS, blocks=frozenset({"routes"}), renames={"routes": "route"}
        ),
    ),
    ResourceKind(
        tokens.ROUTE.token,
        export=TerraformType("aws_route", TF_AWS),
    ),
    ResourceKind(
        tokens.ROUTE_ASSOCIATION.token,
        export=TerraformType("aws_route_table_association", TF_AWS),
        unchecked="pairs a subnet and a route table",
    ),
    ResourceKind(
        tokens.FLOW_LOG.token,
        export=TerraformType("aws_flow_log", TF_AWS),
        unchecked=(
            "read by checkov's graph check CKV2_AWS_11 through its VPC, which reports on the VPC"
        ),
    ),
    ResourceKind(
        tokens.LOG_GROUP.token,
        export=TerraformType("aws_cloudwatch_log_group", TF_AWS),
        mock_outputs=_aws_log_group,
        settings={"CKV_AWS_338": "profile.audit.logRetentionDays"},
    ),
    ResourceKind(
        tokens.ROLE.token,
        export=TerraformType(
            "aws_iam_role",
            TF_AWS,
            blocks=frozenset({"inlinePolicies"}),
            renames={"inlinePolicies": "inline_policy"},
        ),
    ),
    ResourceKind(
        tokens.ROLE_POLICY.token,
        export=TerraformType("aws_iam_role_policy", TF_AWS),
    ),
    ResourceKind(
        # ingress: authToken's managed policy, for the platform to attach.
        tokens.POLICY.token,
        export=TerraformType("aws_iam_policy", TF_AWS),
    ),
    ResourceKind(
        tokens.SECRET.token,
        export=TerraformType("aws_secretsmanager_secret", TF_AWS),
    ),
    ResourceKind(
        tokens.SECRET_VERSION.token,
        export=TerraformType("aws_secretsmanager_secret_version", TF_AWS),
        unchecked="its only value is the secret, which the export replaces by a placeholder",
    ),
    ResourceKind(
        tokens.FUNCTION.token,
        export=TerraformType(
            "aws_lambda_function",
            TF_AWS,
            blocks=frozenset(
                {"environment", "loggingConfig", "vpcConfig", "tracingConfig", "deadLetterConfig"}
            ),
            maps=frozenset({*TAGS, "environment.variables"}),
            omit=frozenset({"code"}),
        ),
        mock_outputs=_aws_function,
    ),
    ResourceKind(
        tokens.PERMISSION.token,
        export=TerraformType("aws_lambda_permission", TF_AWS),
    ),
    # Lambda network connectors and MicroVM images are new in terraform-provider-aws; the type
    # names follow the bridge's rule (module prefix + snake_cased resource) and have no
    # built-in checkov checks, so the kit's checks read them.
    ResourceKind(
        tokens.CONNECTOR.token,
        export=TerraformType(
            "aws_lambda_core_network_connector",
            TF_AWS,
            blocks=frozenset({"configuration", "configuration.vpcEgressConfiguration"}),
        ),
        mock_outputs=_aws_lambda_arn("network-connector"),
    ),
    ResourceKind(
        tokens.MICROVM_IMAGE.token,
        export=TerraformType(
            "aws_lambdamicrovms_image", TF_AWS, blocks=frozenset({"codeArtifact"})
        ),
        mock_outputs=_aws_lambda_arn("microvm-image"),
    ),
    ResourceKind(
        tokens.KIT_MICROVM_IMAGE.token,
        not_exported=(
            "a dynamic resource holding the MicroVM image in the API's own shape (lifecycle "
            "hooks, which pulumi-aws and terraform-provider-aws cannot express); judged by the "
            "CrossGuard pack"
        ),
        mock_outputs=_microvm_image,
    ),
    ResourceKind(
        tokens.API.token,
        export=TerraformType(
            "aws_apigatewayv2_api", TF_AWS, blocks=frozenset({"corsConfiguration"})
        ),
        mock_outputs=_aws_http_api,
    ),
    ResourceKind(
        tokens.STAGE.token,
        export=TerraformType(
            "aws_apigatewayv2_stage",
            TF_AWS,
            blocks=frozenset({"accessLogSettings", "defaultRouteSettings", "routeSettings"}),
            renames={"routeSettings": "route_settings"},
        ),
    ),
    ResourceKind(
        tokens.INTEGRATION.token,
        export=TerraformType("aws_apigatewayv2_integration", TF_AWS),
        unchecked=(
            "binds the launcher route to the Lambda function; no setting beyond the two references"
        ),
    ),
    ResourceKind(
        tokens.API_ROUTE.token,
        export=TerraformType("aws_apigatewayv2_route", TF_AWS),
    ),
    ResourceKind(
        tokens.FIREWALL.token,
        export=TerraformType(
            "aws_networkfirewall_firewall",
            TF_AWS,
            blocks=frozenset({"subnetMappings"}),
            renames={"subnetMappings": "subnet_mapping"},
        ),
        mock_outputs=_aws_network_firewall,
    ),
    ResourceKind(
        tokens.FIREWALL_POLICY.token,
        export=TerraformType(
            "aws_networkfirewall_firewall_policy",
            TF_AWS,
            blocks=frozenset(
                {
                    "firewallPolicy",
                    "firewallPolicy.statefulEngineOptions",
                    "firewallPolicy.statefulRuleGroupReferences",
                }
            ),
            renames={"firewallPolicy.statefulRuleGroupReferences": "stateful_rule_group_reference"},
        ),
    ),
    ResourceKind(
        tokens.FIREWALL_POLICY_DOCUMENT.token,
        not_exported=(
            "a dynamic resource holding the Network Firewall policy in the API's own shape "
            "(resolved-IP validation, which terraform-provider-aws cannot express); judged by "
            "the CrossGuard pack (SBX-NET-003)"
        ),
        mock_outputs=_firewall_policy_document,
    ),
    ResourceKind(
        tokens.RULE_GROUP.token,
        export=TerraformType(
            "aws_networkfirewall_rule_group",
            TF_AWS,
            blocks=frozenset(
                {
                    "ruleGroup",
                    "ruleGroup.rulesSource",
                    "ruleGroup.rulesSource.rulesSourceList",
                    "ruleGroup.statefulRuleOptions",
                }
            ),
        ),
    ),
    ResourceKind(
        tokens.FIREWALL_LOGGING.token,
        export=TerraformType(
            "aws_networkfirewall_logging_configuration",
            TF_AWS,
            blocks=frozenset(
                {"loggingConfiguration", "loggingConfiguration.logDestinationConfigs"}
            ),
            maps=frozenset({"loggingConfiguration.logDestinationConfigs.logDestination"}),
            renames={"loggingConfiguration.logDestinationConfigs": "log_destination_config"},
        ),
    ),
    ResourceKind(
        tokens.DNS_FIREWALL_CONFIG.token,
        export=TerraformType("aws_route53_resolver_firewall_config", TF_AWS),
    ),
    ResourceKind(
        tokens.DNS_LIST.token,
        export=TerraformType("aws_route53_resolver_firewall_domain_list", TF_AWS),
        unchecked=(
            "the allowlisted names, judged by the CrossGuard pack against the profile's allowlist"
        ),
    ),
    ResourceKind(
        tokens.DNS_RULE.token,
        export=TerraformType("aws_route53_resolver_firewall_rule", TF_AWS),
        unchecked="allow and block actions between references; judged by the CrossGuard pack",
    ),
    ResourceKind(
        tokens.DNS_GROUP.token,
        export=TerraformType("aws_route53_resolver_firewall_rule_group", TF_AWS),
        unchecked="a named container of rules",
    ),
    ResourceKind(
        tokens.DNS_ASSOCIATION.token,
        export=TerraformType("aws_route53_resolver_firewall_rule_group_association", TF_AWS),
        unchecked="associates the rule group with the VPC; checkov has no check for it",
    ),
    ResourceKind(
        tokens.PROVIDER.token,
        not_exported=(
            "provider configuration (region, credentials checks), not an AWS resource; the "
            "plan's provider_config is not read by checkov's resource checks"
        ),
    ),
    ResourceKind(
        "aws:",
        mock_outputs=_aws_arn,
    ),
)

# The account every role's trust policy is pinned to (``sts:GetCallerIdentity``).
CALLS = (
    MockCall(
        "aws:index/getCallerIdentity:getCallerIdentity",
        lambda _: {
            "accountId": MOCK_AWS_ACCOUNT,
            "arn": f"arn:aws:iam::{MOCK_AWS_ACCOUNT}:user/sandboxkit-render",
            "id": MOCK_AWS_ACCOUNT,
            "userId": "AIDAMOCKRENDER",
        },
    ),
)
