"""CKV_SBX_15: a Lambda MicroVM image egresses only through customer network connectors."""

from __future__ import annotations

from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck


class MicrovmImageKitConnector(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(
            name=(
                "Ensure MicroVM images name egress network connectors and none of AWS's "
                "managed internet connectors"
            ),
            id="CKV_SBX_15",
            categories=(CheckCategories.NETWORKING,),
            supported_resources=("aws_lambdamicrovms_image",),
        )

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        connectors = conf.get("egress_network_connectors")
        # A plan holds the connector by reference when it is created in the same plan.
        if connectors is None and "egress_network_connectors" in str(conf.get("__references__")):
            return CheckResult.PASSED
        flat = [c for c in connectors or [] if isinstance(c, str)]
        for group in connectors or []:
            if isinstance(group, list):
                flat += [c for c in group if isinstance(c, str)]
        # AWS-managed connectors live in account "aws" (…:aws:network-connector:…).
        if not flat or any(":aws:network-connector:" in c for c in flat):
            return CheckResult.FAILED
        return CheckResult.PASSED


check = MicrovmImageKitConnector()
