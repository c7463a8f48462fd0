"""CKV_SBX_8: GitHub workflow steps use actions pinned by full commit SHA."""

from __future__ import annotations

import re
from typing import Any

from checkov.common.models.enums import CheckResult
from checkov.github_actions.checks.base_github_action_check import BaseGithubActionsCheck
from checkov.yaml_doc.enums import BlockType

# A tag or branch can be moved to other code after review; a commit SHA cannot.
PINNED = re.compile(r"^[^@\s]+@[0-9a-f]{40}$")


class ActionsPinnedBySha(BaseGithubActionsCheck):
    def __init__(self) -> None:
        super().__init__(
            name="Ensure workflow steps use actions pinned by full commit SHA",
            id="CKV_SBX_8",
            block_type=BlockType.ARRAY,
            supported_entities=("jobs", "jobs.*.steps[]"),
        )

    def scan_conf(self, conf: dict[str, Any]) -> tuple[CheckResult, dict[str, Any]]:
        if not isinstance(conf, dict):
            return CheckResult.UNKNOWN, conf
        uses = conf.get("uses")
        # Local actions live in the reviewed repository; docker:// images pin by digest.
        if uses is None or uses.startswith("./"):
            return CheckResult.PASSED, conf
        pinned = "@sha256:" in uses if uses.startswith("docker://") else bool(PINNED.match(uses))
        return (CheckResult.PASSED if pinned else CheckResult.FAILED), conf


check = ActionsPinnedBySha()
