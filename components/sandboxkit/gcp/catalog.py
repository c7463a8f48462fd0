"""Resource types of the Google Cloud plumbing both gcp targets create (network, NAT, log
bucket, service account and its roles): terraform-provider-google resource names.

See ``sandboxkit.catalog``: mock outputs for the offline render and checkov export types.
"""

from __future__ import annotations

from typing import Any

from pulumi.runtime import MockResourceArgs

from sandboxkit.catalog import TF_GOOGLE, ResourceKind, TerraformType
from sandboxkit.gcp.type_tokens import (
    LOG_BUCKET,
    LOG_SINK,
    NAT,
    NETWORK,
    PROJECT_MEMBER,
    PROVIDER,
    RESPONSE_POLICY,
    RESPONSE_RULE,
    ROUTER,
    SERVICE_ACCOUNT,
    SUBNET,
)

MOCK_GCP_PROJECT = "example-project"


def _gcp_service_account(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    project = args.inputs.get("project", MOCK_GCP_PROJECT)
    account_id = args.inputs.get("accountId", resource_id)
    return {"email": f"{account_id}@{project}.iam.gserviceaccount.com"}


KINDS: tuple[ResourceKind, ...] = (
    ResourceKind(
        NETWORK.token,
        export=TerraformType("google_compute_network", TF_GOOGLE),
    ),
    ResourceKind(
        SUBNET.token,
        export=TerraformType(
            "google_compute_subnetwork",
            TF_GOOGLE,
            blocks=frozenset({"logConfig", "secondaryIpRanges"}),
            renames={"secondaryIpRanges": "secondary_ip_range"},
        ),
    ),
    ResourceKind(
        ROUTER.token,
        export=TerraformType("google_compute_router", TF_GOOGLE),
        unchecked="a Cloud Router for NAT; no setting beyond its network",
    ),
    ResourceKind(
        NAT.token,
        export=TerraformType(
            "google_compute_router_nat",
            TF_GOOGLE,
            blocks=frozenset({"logConfig", "subnetworks"}),
            renames={"subnetworks": "subnetwork"},
        ),
        unchecked=(
            "NAT for the GKE nodes; its logging is set by the component, no kit check reads it yet"
        ),
    ),
    ResourceKind(
        RESPONSE_POLICY.token,
        export=TerraformType(
            "google_dns_response_policy", TF_GOOGLE, blocks=frozenset({"networks"})
        ),
        unchecked=(
            "binds the sandbox network's DNS rules; the policy gate judges that the sandbox "
            "network has them, no checkov check reads DNS response policies"
        ),
    ),
    ResourceKind(
        RESPONSE_RULE.token,
        export=TerraformType(
            "google_dns_response_policy_rule",
            TF_GOOGLE,
            blocks=frozenset({"localData", "localData.localDatas"}),
        ),
        unchecked=(
            "a catch-all answered locally or a bypass of one allowed name; the policy gate "
            "judges them, no checkov check reads DNS response policies"
        ),
    ),
    ResourceKind(
        LOG_BUCKET.token,
        export=TerraformType("google_logging_project_bucket_config", TF_GOOGLE),
        settings={"CKV_SBX_21": "profile.audit.logRetentionDays"},
    ),
    ResourceKind(
        LOG_SINK.token,
        export=TerraformType("google_logging_project_sink", TF_GOOGLE),
    ),
    ResourceKind(
        PROJECT_MEMBER.token,
        export=TerraformType("google_project_iam_member", TF_GOOGLE),
    ),
    ResourceKind(
        SERVICE_ACCOUNT.token,
        export=TerraformType("google_service_account", TF_GOOGLE),
        unchecked=(
            "an identity without settings; its grants are IAM members, which checkov judges"
        ),
        mock_outputs=_gcp_service_account,
    ),
    ResourceKind(
        PROVIDER.token,
        not_exported=(
            "provider configuration (project, region), not a Google Cloud resource; checkov's"
            " resource checks do not read it"
        ),
    ),
)
