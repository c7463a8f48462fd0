"""CKV_SBX_14: a Lambda network connector sends MicroVM egress through the kit's VPC."""

from __future__ import annotations

from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck


def first(conf: dict[str, Any], key: str) -> Any:
    """A plan attribute as checkov holds it (wrapped in a list), unwrapped."""
    value = conf.get(key)
    return value[0] if isinstance(value, list) and value else value


class MicrovmConnectorVpcEgress(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(
            name=(
                "Ensure Lambda network connectors route MicroVM egress through VPC subnets "
                "and security groups"
            ),
            id="CKV_SBX_14",
            categories=(CheckCategories.NETWORKING,),
            supported_resources=("aws_lambda_core_network_connector",),
        )

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        configuration = first(conf, "configuration") or {}
        vpc = first(configuration, "vpc_egress_configuration") or {}
        attached = vpc.get("subnet_ids") and vpc.get("security_group_ids")
        return CheckResult.PASSED if attached else CheckResult.FAILED


check = MicrovmConnectorVpcEgress()
