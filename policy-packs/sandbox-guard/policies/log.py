"""LOG: audit and flow logs exist and are kept long enough.

The checks are the targets' (``HANDLERS`` in each target folder's ``guard.py``).
"""

from __future__ import annotations

from pulumi_policy import Severity

from ._common import ResourceRule, Rule, StackRule

RETENTION = ResourceRule(
    Rule(
        id="SBX-LOG-001",
        title="Audit and flow logs are kept long enough",
        severity=Severity.MEDIUM,
        description="Checks that log groups, workspaces and log buckets keep audit, flow and "
        "launcher logs for at least the organisation's minimum retention.",
        remediation="Set sandboxkit:profile.audit.logRetentionDays to at least the pack's "
        "minimumRetentionDays.",
        properties={
            "minimumRetentionDays": {
                "type": "integer",
                "default": 30,
                "description": "Fewest days audit and flow logs are kept.",
            }
        },
    )
)

AUDIT_LOGS = StackRule(
    Rule(
        id="SBX-LOG-002",
        title="Audit and flow logs exist",
        severity=Severity.MEDIUM,
        description="Checks that every sandbox platform in the stack sends its audit and flow "
        "logs somewhere: Network Firewall FLOW and ALERT logs, a Log Analytics workspace for "
        "session pools, Workers observability.",
        remediation="Deploy sandboxes through the kit's targets, which create the log sinks.",
    )
)

RULES = [RETENTION, AUDIT_LOGS]
