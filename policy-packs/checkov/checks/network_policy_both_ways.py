"""CKV_SBX_3: a NetworkPolicy governs both directions and admits no unbounded egress."""

from __future__ import annotations

from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.kubernetes.checks.resource.base_spec_check import BaseK8Check

ANYWHERE = ("0.0.0.0/0", "::/0")


class NetworkPolicyBothWays(BaseK8Check):
    def __init__(self) -> None:
        super().__init__(
            name=(
                "Ensure network policies restrict ingress and egress and allow no egress to "
                "every address"
            ),
            id="CKV_SBX_3",
            categories=(CheckCategories.NETWORKING,),
            supported_entities=("NetworkPolicy",),
        )

    def scan_spec_conf(self, conf: dict[str, Any]) -> CheckResult:
        spec = conf.get("spec") or {}
        if not {"Ingress", "Egress"} <= set(spec.get("policyTypes") or []):
            return CheckResult.FAILED
        for rule in spec.get("egress") or []:
            peers = rule.get("to")
            # A rule without peers admits every destination.
            if not peers:
                return CheckResult.FAILED
            for peer in peers:
                block = peer.get("ipBlock") or {}
                # Anywhere minus the private ranges is the kit's "open" mode, judged by policy.
                if block.get("cidr") in ANYWHERE and not block.get("except"):
                    return CheckResult.FAILED
        return CheckResult.PASSED


check = NetworkPolicyBothWays()
