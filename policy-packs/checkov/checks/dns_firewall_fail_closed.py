"""CKV_SBX_16: the Route 53 Resolver DNS firewall of a VPC fails closed."""

from __future__ import annotations

from checkov.common.models.enums import CheckCategories
from checkov.terraform.checks.resource.base_resource_value_check import BaseResourceValueCheck


class DnsFirewallFailClosed(BaseResourceValueCheck):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure Route 53 Resolver DNS firewalls fail closed",
            id="CKV_SBX_16",
            categories=(CheckCategories.NETWORKING,),
            supported_resources=("aws_route53_resolver_firewall_config",),
        )

    def get_inspected_key(self) -> str:
        return "firewall_fail_open"

    def get_expected_value(self) -> str:
        return "DISABLED"


check = DnsFirewallFailClosed()
