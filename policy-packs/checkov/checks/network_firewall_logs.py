"""CKV_SBX_17: a Network Firewall logs both alerts and flows."""

from __future__ import annotations

from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck

REQUIRED = {"ALERT", "FLOW"}


class NetworkFirewallLogs(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure Network Firewall logging configurations log both ALERT and FLOW",
            id="CKV_SBX_17",
            categories=(CheckCategories.LOGGING,),
            supported_resources=("aws_networkfirewall_logging_configuration",),
        )

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        logging = conf.get("logging_configuration") or [{}]
        destinations = (logging[0] or {}).get("log_destination_config") or []
        kinds = set()
        for destination in destinations:
            log_type = destination.get("log_type")
            kinds.add(log_type[0] if isinstance(log_type, list) else log_type)
        return CheckResult.PASSED if kinds >= REQUIRED else CheckResult.FAILED


check = NetworkFirewallLogs()
