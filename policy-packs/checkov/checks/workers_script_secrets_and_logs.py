"""CKV_SBX_22: a Workers script keeps credentials in secret bindings and persists its logs."""

from __future__ import annotations

import re
from typing import Any

from checkov.common.models.enums import CheckCategories, CheckResult
from checkov.terraform.checks.resource.base_resource_check import BaseResourceCheck

# Binding names that hold credentials: they must be secret_text, never plain_text.
CREDENTIAL = re.compile(r"(TOKEN|SECRET|PASSWORD|KEY)$")


def first(value: Any) -> Any:
    return value[0] if isinstance(value, list) and value else value


class WorkersScriptSecretsAndLogs(BaseResourceCheck):
    def __init__(self) -> None:
        super().__init__(
            name=(
                "Ensure Workers scripts bind credentials as secret_text and persist invocation logs"
            ),
            id="CKV_SBX_22",
            categories=(CheckCategories.SECRETS,),
            supported_resources=("cloudflare_workers_script",),
        )

    def scan_resource_conf(self, conf: dict[str, Any]) -> CheckResult:
        for binding in conf.get("bindings") or []:
            if not isinstance(binding, dict):  # an empty list arrives as [[]]
                continue
            name = str(first(binding.get("name")) or "")
            if CREDENTIAL.search(name) and first(binding.get("type")) != "secret_text":
                return CheckResult.FAILED
        observability = first(conf.get("observability")) or {}
        logs = first(observability.get("logs")) or {}
        persisted = first(logs.get("enabled")) is True and first(logs.get("persist")) is True
        return CheckResult.PASSED if persisted else CheckResult.FAILED


check = WorkersScriptSecretsAndLogs()
