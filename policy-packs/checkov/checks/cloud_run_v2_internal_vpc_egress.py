"""CKV_SBX_18: a Cloud Run v2 service is internal-only and sends all egress through its VPC."""

from __future__ import annotations

from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck


def first(value: Any) -> Any:
    """A plan value as checkov holds it (wrapped in a list), unwrapped."""
    return value[0] if isinstance(value, list) and value else value


class CloudRunV2InternalVpcEgress(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(
            name=(
                "Ensure Cloud Run v2 services accept internal traffic only and route all "
                "egress through the VPC"
            ),
            id="CKV_SBX_18",
            categories=(CheckCategories.NETWORKING,),
            supported_resources=("google_cloud_run_v2_service",),
        )

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        template = first(conf.get("template")) or {}
        vpc = first(template.get("vpc_access")) or {}
        # Without ALL_TRAFFIC only private ranges use the VPC and the rest leaves directly,
        # past the network firewall policy.
        internal = first(conf.get("ingress")) == "INGRESS_TRAFFIC_INTERNAL_ONLY"
        walled = first(vpc.get("egress")) == "ALL_TRAFFIC" and vpc.get("network_interfaces")
        return CheckResult.PASSED if internal and walled else CheckResult.FAILED


check = CloudRunV2InternalVpcEgress()
