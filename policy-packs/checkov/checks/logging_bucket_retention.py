"""CKV_SBX_21: a Cloud Logging bucket keeps audit logs for at least the kit's minimum."""

from __future__ import annotations

from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck

# The profile's default audit.logRetentionDays.
MIN_RETENTION_DAYS = 30


class LoggingBucketRetention(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(
            name=f"Ensure Cloud Logging buckets keep logs at least {MIN_RETENTION_DAYS} days",
            id="CKV_SBX_21",
            categories=(CheckCategories.LOGGING,),
            supported_resources=("google_logging_project_bucket_config",),
        )

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        days = conf.get("retention_days")
        days = days[0] if isinstance(days, list) and days else days
        kept = isinstance(days, int) and not isinstance(days, bool) and days >= MIN_RETENTION_DAYS
        return CheckResult.PASSED if kept else CheckResult.FAILED


check = LoggingBucketRetention()
