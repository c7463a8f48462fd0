"""CKV_SBX_10: a Log Analytics workspace keeps audit logs for at least the kit's minimum."""

from __future__ import annotations

from typing import Any

from checkov.arm.base_resource_check import BaseResourceCheck
from checkov.common.models.enums import CheckCategories, CheckResult

# The profile's default audit.logRetentionDays; also the smallest retention Azure accepts on
# PerGB2018 workspaces (workspace properties.retentionInDays, 30-730).
MIN_RETENTION_DAYS = 30


class LogAnalyticsRetention(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(
            name=f"Ensure Log Analytics workspaces keep logs at least {MIN_RETENTION_DAYS} days",
            id="CKV_SBX_10",
            categories=(CheckCategories.LOGGING,),
            supported_resources=("Microsoft.OperationalInsights/workspaces",),
        )

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        days = (conf.get("properties") or {}).get("retentionInDays")
        kept = isinstance(days, int) and not isinstance(days, bool) and days >= MIN_RETENTION_DAYS
        return CheckResult.PASSED if kept else CheckResult.FAILED


check = LogAnalyticsRetention()
