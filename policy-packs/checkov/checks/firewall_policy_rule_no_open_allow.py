"""CKV_SBX_20: a network firewall policy rule never allows egress to every address."""

from __future__ import annotations

from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck

ANYWHERE = ("0.0.0.0/0", "::/0")


def first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else value


class FirewallPolicyRuleNoOpenAllow(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure network firewall policy rules never allow egress to every address",
            id="CKV_SBX_20",
            categories=(CheckCategories.NETWORKING,),
            supported_resources=("google_compute_network_firewall_policy_rule",),
        )

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        action = first(conf.get("action"))
        direction = first(conf.get("direction"))
        match = first(conf.get("match")) or {}
        ranges = match.get("dest_ip_ranges") or []
        ranges = ranges[0] if ranges and isinstance(ranges[0], list) else ranges
        if direction == "EGRESS" and action == "allow" and set(ranges) & set(ANYWHERE):
            return CheckResult.FAILED
        return CheckResult.PASSED


check = FirewallPolicyRuleNoOpenAllow()
