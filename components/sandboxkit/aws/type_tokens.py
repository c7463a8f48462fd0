"""The aws-microvm target's resource types (pulumi-aws v7 and the kit's two dynamic
resources), each stated once.

The catalog, the policy handlers, the stack checks and the egress reader match rendered
resources through ``TypeToken.matches`` (pulumi-aws tokens carry no API version, so a match is
the exact token).
"""

from __future__ import annotations

from sandboxkit.type_tokens import TypeToken

VPC = TypeToken("aws:ec2/vpc:Vpc")
SUBNET = TypeToken("aws:ec2/subnet:Subnet")
INTERNET_GATEWAY = TypeToken("aws:ec2/internetGateway:InternetGateway")
NAT_GATEWAY = TypeToken("aws:ec2/natGateway:NatGateway")
EIP = TypeToken("aws:ec2/eip:Eip")
ROUTE_TABLE = TypeToken("aws:ec2/routeTable:RouteTable")
ROUTE = TypeToken("aws:ec2/route:Route")
ROUTE_ASSOCIATION = TypeToken("aws:ec2/routeTableAssociation:RouteTableAssociation")
SECURITY_GROUP = TypeToken("aws:ec2/securityGroup:SecurityGroup")
GROUP_RULE = TypeToken("aws:ec2/securityGroupRule:SecurityGroupRule")
EGRESS_RULE = TypeToken("aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule")
FLOW_LOG = TypeToken("aws:ec2/flowLog:FlowLog")
LOG_GROUP = TypeToken("aws:cloudwatch/logGroup:LogGroup")
ROLE = TypeToken("aws:iam/role:Role")
ROLE_POLICY = TypeToken("aws:iam/rolePolicy:RolePolicy")
POLICY = TypeToken("aws:iam/policy:Policy")
POLICY_ATTACHMENT = TypeToken("aws:iam/rolePolicyAttachment:RolePolicyAttachment")
SECRET = TypeToken("aws:secretsmanager/secret:Secret")
SECRET_VERSION = TypeToken("aws:secretsmanager/secretVersion:SecretVersion")
FUNCTION = TypeToken("aws:lambda/function:Function")
PERMISSION = TypeToken("aws:lambda/permission:Permission")
CONNECTOR = TypeToken("aws:lambda/coreNetworkConnector:CoreNetworkConnector")
MICROVM_IMAGE = TypeToken("aws:lambdamicrovms/image:Image")
API = TypeToken("aws:apigatewayv2/api:Api")
STAGE = TypeToken("aws:apigatewayv2/stage:Stage")
INTEGRATION = TypeToken("aws:apigatewayv2/integration:Integration")
API_ROUTE = TypeToken("aws:apigatewayv2/route:Route")
FIREWALL = TypeToken("aws:networkfirewall/firewall:Firewall")
FIREWALL_POLICY = TypeToken("aws:networkfirewall/firewallPolicy:FirewallPolicy")
RULE_GROUP = TypeToken("aws:networkfirewall/ruleGroup:RuleGroup")
FIREWALL_LOGGING = TypeToken("aws:networkfirewall/loggingConfiguration:LoggingConfiguration")
DNS_FIREWALL_CONFIG = TypeToken("aws:route53/resolverFirewallConfig:ResolverFirewallConfig")
DNS_LIST = TypeToken("aws:route53/resolverFirewallDomainList:ResolverFirewallDomainList")
DNS_RULE = TypeToken("aws:route53/resolverFirewallRule:ResolverFirewallRule")
DNS_GROUP = TypeToken("aws:route53/resolverFirewallRuleGroup:ResolverFirewallRuleGroup")
DNS_ASSOCIATION = TypeToken(
    "aws:route53/resolverFirewallRuleGroupAssociation:ResolverFirewallRuleGroupAssociation"
)
PROVIDER = TypeToken("pulumi:providers:aws")
# The target's component (sandboxkit.aws.microvm.MicrovmSandbox).
COMPONENT = TypeToken("sandboxkit:index:MicrovmSandbox")
# The kit's dynamic resources: pulumi-python names a dynamic resource's type after its module
# and class (sandboxkit.aws.firewall_policy.FirewallPolicy, microvm_image.MicrovmImage).
FIREWALL_POLICY_DOCUMENT = TypeToken("pulumi-python:dynamic/networkfirewall:FirewallPolicy")
KIT_MICROVM_IMAGE = TypeToken("pulumi-python:dynamic/lambdamicrovms:MicrovmImage")
MICROVM_IMAGES = (MICROVM_IMAGE, KIT_MICROVM_IMAGE)
