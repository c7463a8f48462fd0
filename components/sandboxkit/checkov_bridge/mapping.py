"""The one table from the kit's Pulumi resource types to the types checkov knows.

checkov has no Pulumi framework, but every resource the kit creates has an exact counterpart it
does read: bridged AWS, GCP and Cloudflare resources are Terraform resources (same schema,
attribute names camelCased by the bridge), azure-native resources are ARM resources (inputs are
the ARM body with ``properties`` flattened), and Kubernetes objects are manifests.

Every type token a component registers must appear either in ``TYPES`` or, with the reason, in
``NOT_EXPORTED`` / ``NOT_EXPORTED_PREFIXES``; ``tests/checkov/test_checkov_mapping.py`` renders
every stack and fails on a type in neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# Terraform provider addresses as `terraform show -json` writes them (``provider_name``).
TF_AWS = "registry.terraform.io/hashicorp/aws"
TF_GOOGLE = "registry.terraform.io/hashicorp/google"
TF_CLOUDFLARE = "registry.terraform.io/cloudflare/cloudflare"
# Map attributes of tagged and labelled resources (AWS tags, GCP labels).
TAGS = ("tags", "tagsAll", "labels", "resourceLabels")


@dataclass(frozen=True)
class TerraformType:
    """A bridged resource and the Terraform resource it is.

    Paths below are dotted camelCase input paths as the engine sees them (list items add no
    segment: ``ingress.cidrBlocks``). Keys are snake_cased everywhere except inside ``maps``.

    Attributes:
        tf_type: the Terraform resource type, e.g. ``aws_lambda_function``.
        provider: the provider address, e.g. ``TF_AWS``.
        blocks: inputs that are nested blocks: a plan holds each as a list of objects, also for
            blocks of at most one item, which the bridge flattens to a single object.
        objects: inputs that are object-typed attributes (plugin-framework nested attributes):
            kept as one object with snake_cased keys.
        maps: inputs that are map attributes (tags, labels, environment variables): keys kept.
        renames: inputs whose Terraform name is not the snake_cased Pulumi name (the bridge
            pluralises repeated blocks: ``rules`` is Terraform's ``rule``).
        omit: inputs a plan does not hold as values (assets and archives: a plan holds a file
            name or hash).
    """

    tf_type: str
    provider: str
    blocks: frozenset[str] = frozenset()
    objects: frozenset[str] = frozenset()
    maps: frozenset[str] = frozenset(TAGS)
    renames: Mapping[str, str] = field(default_factory=dict)
    omit: frozenset[str] = frozenset()


@dataclass(frozen=True)
class ArmType:
    """An azure-native resource and the ARM resource it is.

    Attributes:
        arm_type: the ARM resource type, e.g. ``Microsoft.App/sessionPools``.
        api_version: the API version the azure-native SDK module targets.
        name_input: the input holding the resource name (e.g. ``sessionPoolName``); when the
            engine auto-names the resource (no such input), the logical name is used.
        path_params: inputs that are URL path parameters, not body properties.
        envelope: inputs that sit beside ``properties`` in the ARM resource (besides
            ``ARM_ENVELOPE``), e.g. ``scope`` of an extension resource.
    """

    arm_type: str
    api_version: str
    name_input: str
    path_params: frozenset[str] = frozenset({"resourceGroupName"})
    envelope: frozenset[str] = frozenset()


@dataclass(frozen=True)
class KubernetesType:
    """A Kubernetes object; its inputs are the manifest (apiVersion, kind, metadata, ...).

    Attributes:
        kind: the object kind.
        pod_template: for a custom resource that carries a pod template, the dotted path to it;
            the export adds a ``v1/PodTemplate`` of it so checkov's pod checks evaluate what
            the controller will run.
    """

    kind: str
    pod_template: str | None = None


ExportType = TerraformType | ArmType | KubernetesType

# Resource envelope keys of an ARM resource: everything else an azure-native resource takes
# goes into ``properties``.
ARM_ENVELOPE = frozenset(
    {"location", "tags", "identity", "sku", "kind", "zones", "extendedLocation"}
)

TYPES: dict[str, ExportType] = {
    # --- kubernetes target (sandboxkit.kubernetes.agent_sandbox) ---
    "kubernetes:core/v1:Namespace": KubernetesType("Namespace"),
    "kubernetes:core/v1:ResourceQuota": KubernetesType("ResourceQuota"),
    "kubernetes:node.k8s.io/v1:RuntimeClass": KubernetesType("RuntimeClass"),
    "kubernetes:networking.k8s.io/v1:NetworkPolicy": KubernetesType("NetworkPolicy"),
    "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate": KubernetesType(
        "SandboxTemplate", pod_template="spec.podTemplate"
    ),
    "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxWarmPool": KubernetesType(
        "SandboxWarmPool"
    ),
    "kubernetes:cilium.io/v2:CiliumNetworkPolicy": KubernetesType("CiliumNetworkPolicy"),
    "kubernetes:networking.gke.io/v1alpha1:FQDNNetworkPolicy": KubernetesType("FQDNNetworkPolicy"),
    # --- aws-microvm target (sandboxkit.aws): terraform-provider-aws resource names ---
    "aws:ec2/securityGroup:SecurityGroup": TerraformType(
        "aws_security_group", TF_AWS, blocks=frozenset({"ingress", "egress"})
    ),
    "aws:ec2/vpc:Vpc": TerraformType("aws_vpc", TF_AWS),
    "aws:ec2/subnet:Subnet": TerraformType("aws_subnet", TF_AWS),
    "aws:ec2/internetGateway:InternetGateway": TerraformType("aws_internet_gateway", TF_AWS),
    "aws:ec2/natGateway:NatGateway": TerraformType("aws_nat_gateway", TF_AWS),
    "aws:ec2/eip:Eip": TerraformType("aws_eip", TF_AWS),
    "aws:ec2/routeTable:RouteTable": TerraformType(
        "aws_route_table", TF_AWS, blocks=frozenset({"routes"}), renames={"routes": "route"}
    ),
    "aws:ec2/route:Route": TerraformType("aws_route", TF_AWS),
    "aws:ec2/routeTableAssociation:RouteTableAssociation": TerraformType(
        "aws_route_table_association", TF_AWS
    ),
    "aws:ec2/flowLog:FlowLog": TerraformType("aws_flow_log", TF_AWS),
    "aws:cloudwatch/logGroup:LogGroup": TerraformType("aws_cloudwatch_log_group", TF_AWS),
    "aws:iam/role:Role": TerraformType(
        "aws_iam_role",
        TF_AWS,
        blocks=frozenset({"inlinePolicies"}),
        renames={"inlinePolicies": "inline_policy"},
    ),
    "aws:iam/rolePolicy:RolePolicy": TerraformType("aws_iam_role_policy", TF_AWS),
    "aws:secretsmanager/secret:Secret": TerraformType("aws_secretsmanager_secret", TF_AWS),
    "aws:secretsmanager/secretVersion:SecretVersion": TerraformType(
        "aws_secretsmanager_secret_version", TF_AWS
    ),
    "aws:lambda/function:Function": TerraformType(
        "aws_lambda_function",
        TF_AWS,
        blocks=frozenset(
            {"environment", "loggingConfig", "vpcConfig", "tracingConfig", "deadLetterConfig"}
        ),
        maps=frozenset({*TAGS, "environment.variables"}),
        omit=frozenset({"code"}),
    ),
    "aws:lambda/permission:Permission": TerraformType("aws_lambda_permission", TF_AWS),
    # Lambda network connectors and MicroVM images are new in terraform-provider-aws; the type
    # names follow the bridge's rule (module prefix + snake_cased resource) and have no
    # built-in checkov checks, so the kit's checks read them.
    "aws:lambda/coreNetworkConnector:CoreNetworkConnector": TerraformType(
        "aws_lambda_core_network_connector",
        TF_AWS,
        blocks=frozenset({"configuration", "configuration.vpcEgressConfiguration"}),
    ),
    "aws:lambdamicrovms/image:Image": TerraformType(
        "aws_lambdamicrovms_image", TF_AWS, blocks=frozenset({"codeArtifact"})
    ),
    "aws:apigatewayv2/api:Api": TerraformType(
        "aws_apigatewayv2_api", TF_AWS, blocks=frozenset({"corsConfiguration"})
    ),
    "aws:apigatewayv2/stage:Stage": TerraformType(
        "aws_apigatewayv2_stage",
        TF_AWS,
        blocks=frozenset({"accessLogSettings", "defaultRouteSettings", "routeSettings"}),
        renames={"routeSettings": "route_settings"},
    ),
    "aws:apigatewayv2/integration:Integration": TerraformType(
        "aws_apigatewayv2_integration", TF_AWS
    ),
    "aws:apigatewayv2/route:Route": TerraformType("aws_apigatewayv2_route", TF_AWS),
    "aws:networkfirewall/firewall:Firewall": TerraformType(
        "aws_networkfirewall_firewall",
        TF_AWS,
        blocks=frozenset({"subnetMappings"}),
        renames={"subnetMappings": "subnet_mapping"},
    ),
    "aws:networkfirewall/firewallPolicy:FirewallPolicy": TerraformType(
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
    "aws:networkfirewall/ruleGroup:RuleGroup": TerraformType(
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
    "aws:networkfirewall/loggingConfiguration:LoggingConfiguration": TerraformType(
        "aws_networkfirewall_logging_configuration",
        TF_AWS,
        blocks=frozenset({"loggingConfiguration", "loggingConfiguration.logDestinationConfigs"}),
        maps=frozenset({"loggingConfiguration.logDestinationConfigs.logDestination"}),
        renames={"loggingConfiguration.logDestinationConfigs": "log_destination_config"},
    ),
    "aws:route53/resolverFirewallConfig:ResolverFirewallConfig": TerraformType(
        "aws_route53_resolver_firewall_config", TF_AWS
    ),
    "aws:route53/resolverFirewallDomainList:ResolverFirewallDomainList": TerraformType(
        "aws_route53_resolver_firewall_domain_list", TF_AWS
    ),
    "aws:route53/resolverFirewallRule:ResolverFirewallRule": TerraformType(
        "aws_route53_resolver_firewall_rule", TF_AWS
    ),
    "aws:route53/resolverFirewallRuleGroup:ResolverFirewallRuleGroup": TerraformType(
        "aws_route53_resolver_firewall_rule_group", TF_AWS
    ),
    "aws:route53/resolverFirewallRuleGroupAssociation:ResolverFirewallRuleGroupAssociation": (
        TerraformType("aws_route53_resolver_firewall_rule_group_association", TF_AWS)
    ),
    # --- gcp-cloudrun and gcp-gke targets: terraform-provider-google resource names ---
    "gcp:cloudrunv2/service:Service": TerraformType(
        "google_cloud_run_v2_service",
        TF_GOOGLE,
        blocks=frozenset(
            {
                "template",
                "template.containers",
                "template.containers.ports",
                "template.containers.resources",
                "template.scaling",
                "template.vpcAccess",
                "template.vpcAccess.networkInterfaces",
            }
        ),
        maps=frozenset(
            {*TAGS, "annotations", "template.labels", "template.containers.resources.limits"}
        ),
    ),
    "gcp:cloudrunv2/serviceIamMember:ServiceIamMember": TerraformType(
        "google_cloud_run_v2_service_iam_member", TF_GOOGLE
    ),
    "gcp:compute/network:Network": TerraformType("google_compute_network", TF_GOOGLE),
    "gcp:compute/subnetwork:Subnetwork": TerraformType(
        "google_compute_subnetwork",
        TF_GOOGLE,
        blocks=frozenset({"logConfig", "secondaryIpRanges"}),
        renames={"secondaryIpRanges": "secondary_ip_range"},
    ),
    "gcp:compute/router:Router": TerraformType("google_compute_router", TF_GOOGLE),
    "gcp:compute/routerNat:RouterNat": TerraformType(
        "google_compute_router_nat",
        TF_GOOGLE,
        blocks=frozenset({"logConfig", "subnetworks"}),
        renames={"subnetworks": "subnetwork"},
    ),
    "gcp:compute/networkFirewallPolicy:NetworkFirewallPolicy": TerraformType(
        "google_compute_network_firewall_policy", TF_GOOGLE
    ),
    "gcp:compute/networkFirewallPolicyAssociation:NetworkFirewallPolicyAssociation": (
        TerraformType("google_compute_network_firewall_policy_association", TF_GOOGLE)
    ),
    "gcp:compute/networkFirewallPolicyRule:NetworkFirewallPolicyRule": TerraformType(
        "google_compute_network_firewall_policy_rule",
        TF_GOOGLE,
        blocks=frozenset({"match", "match.layer4Configs"}),
    ),
    "gcp:container/cluster:Cluster": TerraformType(
        "google_container_cluster",
        TF_GOOGLE,
        blocks=frozenset(
            {
                "addonsConfig",
                "addonsConfig.agentSandboxConfig",
                "ipAllocationPolicy",
                "masterAuthorizedNetworksConfig",
                "masterAuthorizedNetworksConfig.cidrBlocks",
                "nodeConfig",
                "nodeConfig.shieldedInstanceConfig",
                "nodeConfig.workloadMetadataConfig",
                "privateClusterConfig",
                "workloadIdentityConfig",
            }
        ),
        maps=frozenset({*TAGS, "nodeConfig.metadata", "nodeConfig.resourceLabels"}),
    ),
    "gcp:container/nodePool:NodePool": TerraformType(
        "google_container_node_pool",
        TF_GOOGLE,
        blocks=frozenset(
            {
                "autoscaling",
                "management",
                "nodeConfig",
                "nodeConfig.sandboxConfig",
                "nodeConfig.shieldedInstanceConfig",
                "nodeConfig.workloadMetadataConfig",
            }
        ),
        maps=frozenset({*TAGS, "nodeConfig.metadata", "nodeConfig.resourceLabels"}),
    ),
    "gcp:logging/projectBucketConfig:ProjectBucketConfig": TerraformType(
        "google_logging_project_bucket_config", TF_GOOGLE
    ),
    "gcp:logging/projectSink:ProjectSink": TerraformType("google_logging_project_sink", TF_GOOGLE),
    "gcp:projects/iAMMember:IAMMember": TerraformType("google_project_iam_member", TF_GOOGLE),
    "gcp:serviceaccount/account:Account": TerraformType("google_service_account", TF_GOOGLE),
    # --- cloudflare target: terraform-provider-cloudflare v5 (plugin framework: nested
    # attributes are objects and lists of objects, not blocks) ---
    "cloudflare:index/workersScript:WorkersScript": TerraformType(
        "cloudflare_workers_script",
        TF_CLOUDFLARE,
        objects=frozenset({"observability", "observability.logs", "migrations", "bindings"}),
    ),
    "cloudflare:index/workersScriptSubdomain:WorkersScriptSubdomain": TerraformType(
        "cloudflare_workers_script_subdomain", TF_CLOUDFLARE
    ),
    # --- azure-sessions target (azure-native app module, API 2025-02-02-preview) ---
    "azure-native:app:ContainerAppsSessionPool": ArmType(
        "Microsoft.App/sessionPools", "2025-02-02-preview", "sessionPoolName"
    ),
    "azure-native:app:ManagedEnvironment": ArmType(
        "Microsoft.App/managedEnvironments", "2025-02-02-preview", "environmentName"
    ),
    "azure-native:operationalinsights:Workspace": ArmType(
        "Microsoft.OperationalInsights/workspaces", "2023-09-01", "workspaceName"
    ),
    "azure-native:resources:ResourceGroup": ArmType(
        "Microsoft.Resources/resourceGroups", "2024-03-01", "resourceGroupName", frozenset()
    ),
    "azure-native:authorization:RoleAssignment": ArmType(
        "Microsoft.Authorization/roleAssignments",
        "2022-04-01",
        "roleAssignmentName",
        frozenset(),
        envelope=frozenset({"scope"}),
    ),
}

# Types deliberately not exported, with the reason.
NOT_EXPORTED: dict[str, str] = {
    "pulumi:providers:kubernetes": (
        "provider configuration (kubeconfig context), not a cluster object; checkov has no "
        "checks for it"
    ),
    "pulumi:providers:aws": (
        "provider configuration (region, credentials checks), not an AWS resource; the plan's "
        "provider_config is not read by checkov's resource checks"
    ),
    "pulumi:providers:gcp": (
        "provider configuration (project, region), not a Google Cloud resource; checkov's "
        "resource checks do not read it"
    ),
    "pulumi:providers:cloudflare": (
        "provider configuration (API token), not a Cloudflare resource; checkov's resource "
        "checks do not read it"
    ),
    "pulumi:providers:azure-native": (
        "provider configuration (subscription, location), not an Azure resource; an ARM "
        "template has no counterpart"
    ),
}
NOT_EXPORTED_PREFIXES: dict[str, str] = {
    "sandboxkit:index:": (
        "the kit's component resources only group their children, which are exported; they "
        "create nothing in a cloud"
    ),
}


# Exported types that neither checkov 3.3.30 nor a kit check evaluates, with the reason: plumbing
# whose only settings are references to other resources, or a value that is a secret.
# tests/checkov/test_checkov_baseline.py fails when this list and the coverage disagree.
UNCHECKED: dict[str, str] = {
    "aws:apigatewayv2/integration:Integration": (
        "binds the launcher route to the Lambda function; no setting beyond the two references"
    ),
    "aws:ec2/flowLog:FlowLog": (
        "read by checkov's graph check CKV2_AWS_11 through its VPC, which reports on the VPC"
    ),
    "aws:ec2/internetGateway:InternetGateway": "attaches to the VPC; no settings of its own",
    "aws:ec2/natGateway:NatGateway": "references its subnet and address; no settings to judge",
    "aws:ec2/routeTableAssociation:RouteTableAssociation": "pairs a subnet and a route table",
    "aws:route53/resolverFirewallDomainList:ResolverFirewallDomainList": (
        "the allowlisted names, judged by the CrossGuard pack against the profile's allowlist"
    ),
    "aws:route53/resolverFirewallRule:ResolverFirewallRule": (
        "allow and block actions between references; judged by the CrossGuard pack"
    ),
    "aws:route53/resolverFirewallRuleGroup:ResolverFirewallRuleGroup": "a named container of rules",
    "aws:route53/resolverFirewallRuleGroupAssociation:ResolverFirewallRuleGroupAssociation": (
        "associates the rule group with the VPC; checkov has no check for it"
    ),
    "aws:secretsmanager/secretVersion:SecretVersion": (
        "its only value is the secret, which the export replaces by a placeholder"
    ),
    "gcp:compute/networkFirewallPolicy:NetworkFirewallPolicy": (
        "a named container; its rules are checked (CKV_SBX_20)"
    ),
    "gcp:compute/networkFirewallPolicyAssociation:NetworkFirewallPolicyAssociation": (
        "attaches the policy to the network; no setting beyond the two references"
    ),
    "gcp:compute/router:Router": "a Cloud Router for NAT; no setting beyond its network",
    "gcp:compute/routerNat:RouterNat": (
        "NAT for the GKE nodes; its logging is set by the component, no kit check reads it yet"
    ),
    "gcp:serviceaccount/account:Account": (
        "an identity without settings; its grants are IAM members, which checkov judges"
    ),
}


class UnmappedTypeError(LookupError):
    """A resource type with no entry in ``TYPES`` nor ``NOT_EXPORTED``."""

    def __init__(self, type_token: str) -> None:
        super().__init__(
            f"resource type {type_token} has no checkov mapping: add it to TYPES or, with the "
            "reason, to NOT_EXPORTED in sandboxkit/checkov_bridge/mapping.py"
        )
        self.type_token = type_token


def export_type(type_token: str) -> ExportType | None:
    """The export of ``type_token``; ``None`` when deliberately not exported.

    Raises:
        UnmappedTypeError: when the type is in neither table.
    """
    if type_token in TYPES:
        return TYPES[type_token]
    if type_token in NOT_EXPORTED or any(type_token.startswith(p) for p in NOT_EXPORTED_PREFIXES):
        return None
    raise UnmappedTypeError(type_token)
