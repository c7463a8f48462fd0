"""CKV_SBX_6: FQDN egress policies (Cilium, GKE) name hosts and never match every name."""

from __future__ import annotations

from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.kubernetes.checks.resource.base_spec_check import BaseK8Check

MATCH_ALL = ("*", "*.*", "**")
# Cilium egress rule keys that select ports or ICMP types, not peers.
NOT_PEERS = ("toPorts", "toICMPs")


class FqdnPolicyNamedHosts(BaseK8Check):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure FQDN egress policies allow named hosts only, never every name",
            id="CKV_SBX_6",
            categories=(CheckCategories.NETWORKING,),
            supported_entities=("CiliumNetworkPolicy", "FQDNNetworkPolicy"),
        )

    def scan_spec_conf(self, conf: dict[str, Any]) -> CheckResult:
        spec = conf.get("spec") or {}
        if conf.get("kind") == "CiliumNetworkPolicy":
            matches = [m for rule in spec.get("egress") or [] for m in rule.get("toFQDNs") or []]
            patterns = [m.get("matchPattern") or m.get("matchName") for m in matches]
            # Cilium: an egress rule with no peer selector at all admits every destination.
            for rule in spec.get("egress") or []:
                if not any(k.startswith("to") and k not in NOT_PEERS for k in rule):
                    return CheckResult.FAILED
        else:
            matches = [m for rule in spec.get("egress") or [] for m in rule.get("matches") or []]
            patterns = [m.get("pattern") or m.get("name") for m in matches]
        if not patterns or any(p in MATCH_ALL or not p for p in patterns):
            return CheckResult.FAILED
        return CheckResult.PASSED


check = FqdnPolicyNamedHosts()
