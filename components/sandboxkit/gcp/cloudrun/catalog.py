"""Resource types of the ``gcp-cloudrun`` target, with the shared Google Cloud plumbing.

See ``sandboxkit.catalog``: mock outputs for the offline render and checkov export types.
"""

from __future__ import annotations

from typing import Any

from pulumi.runtime import MockResourceArgs

from sandboxkit.catalog import TAGS, TF_GOOGLE, ResourceKind, TerraformType, mock_hash, setting_of
from sandboxkit.gcp.catalog import KINDS as GCP_KINDS
from sandboxkit.gcp.type_tokens import (
    ASSOCIATION,
    FIREWALL_POLICY,
    FIREWALL_RULE,
    INVOKER_MEMBER,
    SERVICE,
)


def _gcp_cloud_run_service(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    # Cloud Run's deterministic URL, https://<service>-<project number>.<region>.run.app
    # (cloud.google.com/run/docs/triggering/https-request#deterministic); the project number
    # is made up from the project id.
    name = args.inputs.get("name", resource_id)
    region = setting_of(args, "location", "us-central1")
    number = int(mock_hash(setting_of(args, "project", name)), 16) % 10**12
    return {"uri": f"https://{name}-{number:012d}.{region}.run.app"}


KINDS: tuple[ResourceKind, ...] = (
    *GCP_KINDS,
    ResourceKind(
        SERVICE.token,
        export=TerraformType(
            "google_cloud_run_v2_service",
            TF_GOOGLE,
            blocks=frozenset(
                {
                    "template",
                    "template.containers",
                    "template.containers.envs",
                    "template.containers.ports",
                    "template.containers.resources",
                    "template.sandboxes",
                    "template.sandboxes.templates",
                    "template.scaling",
                    "template.vpcAccess",
                    "template.vpcAccess.networkInterfaces",
                }
            ),
            # The bridge pluralises repeated Terraform blocks and list attributes: the
            # launcher's template variable is an `env` block, a template's entrypoint `command`.
            renames={
                "template.containers.envs": "env",
                "template.sandboxes.templates.commands": "command",
            },
            maps=frozenset(
                {*TAGS, "annotations", "template.labels", "template.containers.resources.limits"}
            ),
        ),
        mock_outputs=_gcp_cloud_run_service,
    ),
    ResourceKind(
        INVOKER_MEMBER.token,
        export=TerraformType("google_cloud_run_v2_service_iam_member", TF_GOOGLE),
    ),
    ResourceKind(
        FIREWALL_POLICY.token,
        export=TerraformType("google_compute_network_firewall_policy", TF_GOOGLE),
        unchecked="a named container; its rules are checked (CKV_SBX_20)",
    ),
    ResourceKind(
        ASSOCIATION.token,
        export=TerraformType("google_compute_network_firewall_policy_association", TF_GOOGLE),
        unchecked="attaches the policy to the network; no setting beyond the two references",
    ),
    ResourceKind(
        FIREWALL_RULE.token,
        export=TerraformType(
            "google_compute_network_firewall_policy_rule",
            TF_GOOGLE,
            blocks=frozenset({"match", "match.layer4Configs"}),
        ),
        settings={"CKV_SBX_20": "profile.egress"},
    ),
)
