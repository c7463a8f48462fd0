"""LOG: audit and flow logs exist and are kept long enough."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy import Severity

from sandboxkit.guard import dig, items, number

from ._common import Context, ResourceRule, Rule, StackRule

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


def _retention(kind: str, name: str, days: Any, ctx: Context, never_expires: bool) -> Iterator[str]:
    minimum = ctx.setting("minimumRetentionDays")
    if days is None or days == 0:
        if not never_expires:
            yield (
                f"{kind} {name} sets no retention; set it to at least {number(minimum)} days from "
                "sandboxkit:profile.audit.logRetentionDays."
            )
        return
    if days < minimum:
        yield (
            f"{kind} {name} keeps logs {number(days)} days, fewer than {number(minimum)}; raise "
            "sandboxkit:profile.audit.logRetentionDays."
        )


@RETENTION.on("aws:cloudwatch/logGroup:LogGroup")
def _log_group(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    # CloudWatch keeps logs forever when retentionInDays is unset or 0.
    yield from _retention("Log group", ctx.name, props.get("retentionInDays"), ctx, True)


@RETENTION.on("azure-native:operationalinsights:Workspace")
def _workspace(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    yield from _retention(
        "Log Analytics workspace", ctx.name, props.get("retentionInDays"), ctx, False
    )


@RETENTION.on("gcp:logging/projectBucketConfig:ProjectBucketConfig")
def _gcp_bucket(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    yield from _retention("Log bucket", ctx.name, props.get("retentionDays"), ctx, False)


def _logs_exist(resources: Sequence[Any], ctx: Context) -> Iterator[tuple[str, Any]]:
    def of(suffix: str) -> list[Any]:
        return [r for r in resources if r.resource_type.endswith(suffix)]

    logged = {
        str(dest.get("logType"))
        for config in of("networkfirewall/loggingConfiguration:LoggingConfiguration")
        for dest in items(dig(config.props, "loggingConfiguration.logDestinationConfigs"))
    }
    for firewall in of("networkfirewall/firewall:Firewall"):
        missing = sorted({"FLOW", "ALERT"} - logged)
        if missing:
            yield (
                f"Network Firewall {firewall.name} sends no {' or '.join(missing)} logs; add a "
                "LoggingConfiguration with FLOW and ALERT destinations.",
                firewall.urn,
            )
    workspaces = of("operationalinsights:Workspace")
    for pool in of("app:ContainerAppsSessionPool"):
        if not workspaces:
            yield (
                f"Session pool {pool.name} has no Log Analytics workspace in the stack; send "
                "the environment's logs to one.",
                pool.urn,
            )
    for script in of("index/workersScript:WorkersScript"):
        if dig(script.props, "observability.enabled") is not True:
            yield (
                f"Worker {script.name} has observability off, so commands leave no audit "
                "trail; set observability.enabled to true.",
                script.urn,
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
    ),
    _logs_exist,
)

RULES = [RETENTION, AUDIT_LOGS]
