"""The resource types of both gcp targets (pulumi-gcp v8: gcp-cloudrun and gcp-gke), each
stated once.

The catalogs, the policy handlers, the stack checks and gcp-cloudrun's egress reader match
rendered resources through ``TypeToken.matches`` (pulumi-gcp tokens carry no API version:
``cloudrunv2`` is the module's name, so a match is the exact token).
"""

from __future__ import annotations

from sandboxkit.type_tokens import TypeToken

NETWORK = TypeToken("gcp:compute/network:Network")
SUBNET = TypeToken("gcp:compute/subnetwork:Subnetwork")
ROUTER = TypeToken("gcp:compute/router:Router")
NAT = TypeToken("gcp:compute/routerNat:RouterNat")
FIREWALL_POLICY = TypeToken("gcp:compute/networkFirewallPolicy:NetworkFirewallPolicy")
# A policy holding its rules inline (``rules``: the fields of a NetworkFirewallPolicyRule).
FIREWALL_POLICY_WITH_RULES = TypeToken(
    "gcp:compute/networkFirewallPolicyWithRules:NetworkFirewallPolicyWithRules"
)
ASSOCIATION = TypeToken(
    "gcp:compute/networkFirewallPolicyAssociation:NetworkFirewallPolicyAssociation"
)
FIREWALL_RULE = TypeToken("gcp:compute/networkFirewallPolicyRule:NetworkFirewallPolicyRule")
RESPONSE_POLICY = TypeToken("gcp:dns/responsePolicy:ResponsePolicy")
RESPONSE_RULE = TypeToken("gcp:dns/responsePolicyRule:ResponsePolicyRule")
LOG_BUCKET = TypeToken("gcp:logging/projectBucketConfig:ProjectBucketConfig")
LOG_SINK = TypeToken("gcp:logging/projectSink:ProjectSink")
SECRET_VERSION = TypeToken("gcp:secretmanager/secretVersion:SecretVersion")
SERVICE_ACCOUNT = TypeToken("gcp:serviceaccount/account:Account")
PROJECT_MEMBER = TypeToken("gcp:projects/iAMMember:IAMMember")
PROJECT_BINDING = TypeToken("gcp:projects/iAMBinding:IAMBinding")
FOLDER_MEMBER = TypeToken("gcp:folder/iAMMember:IAMMember")
FOLDER_BINDING = TypeToken("gcp:folder/iAMBinding:IAMBinding")
ORGANIZATION_MEMBER = TypeToken("gcp:organizations/iAMMember:IAMMember")
ORGANIZATION_BINDING = TypeToken("gcp:organizations/iAMBinding:IAMBinding")
ACCOUNT_MEMBER = TypeToken("gcp:serviceaccount/iAMMember:IAMMember")
ACCOUNT_BINDING = TypeToken("gcp:serviceaccount/iAMBinding:IAMBinding")
SERVICE = TypeToken("gcp:cloudrunv2/service:Service")
INVOKER_MEMBER = TypeToken("gcp:cloudrunv2/serviceIamMember:ServiceIamMember")
INVOKER_BINDING = TypeToken("gcp:cloudrunv2/serviceIamBinding:ServiceIamBinding")
CLUSTER = TypeToken("gcp:container/cluster:Cluster")
NODE_POOL = TypeToken("gcp:container/nodePool:NodePool")
PROVIDER = TypeToken("pulumi:providers:gcp")

# Grants of a project role to a member (SBX-IAM-001 reads each).
IAM_GRANTS = (PROJECT_MEMBER, PROJECT_BINDING, ACCOUNT_MEMBER, ACCOUNT_BINDING)
INVOKER_GRANTS = (INVOKER_MEMBER, INVOKER_BINDING)
