"""CKV_SBX_19: a Cloud Run v2 IAM member never grants a role to everyone."""

from __future__ import annotations

from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck

PUBLIC = ("allUsers", "allAuthenticatedUsers")


class CloudRunV2InvokerNotPublic(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure Cloud Run v2 IAM members are named principals, never allUsers",
            id="CKV_SBX_19",
            categories=(CheckCategories.IAM,),
            supported_resources=("google_cloud_run_v2_service_iam_member",),
        )

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        member = conf.get("member")
        member = member[0] if isinstance(member, list) and member else member
        if not isinstance(member, str) or member in PUBLIC:
            return CheckResult.FAILED
        return CheckResult.PASSED


check = CloudRunV2InvokerNotPublic()
