"""The sandbox-guard checks of what both gcp targets create (``gcp/common.py``): project IAM
grants and the log bucket. gcp-cloudrun and gcp-gke re-export them."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from sandboxkit.gcp.type_tokens import IAM_GRANTS, LOG_BUCKET, SECRET_VERSION
from sandboxkit.guard import CheckContext, Handler, SecretSink
from sandboxkit.guard_checks import retention_problems
from sandboxkit.policy_rules import LEAST_PRIVILEGE, RETENTION

GCP_BASIC_ROLES = ("roles/owner", "roles/editor")


# --- SBX-IAM-001 -------------------------------------------------------------------------------


def broad_role(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    """SBX-IAM-001 on any GCP IAM grant (``role``): a basic role or an admin role."""
    role = str(props.get("role", ""))
    if role in GCP_BASIC_ROLES or role.lower().endswith("admin"):
        yield f"IAM grant {ctx.name} gives {role}; grant the narrowest predefined role instead."


# --- SBX-LOG-001 -------------------------------------------------------------------------------


def _log_bucket(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    yield from retention_problems("Log bucket", ctx.name, props.get("retentionDays"), ctx, False)


# A Secret Manager version holds the secret: SBX-SEC-002 does not read its data.
SECRET_SINKS = (SecretSink(SECRET_VERSION, ("secretData",)),)

HANDLERS = (
    Handler(
        LEAST_PRIVILEGE, IAM_GRANTS, broad_role, "IAM members and bindings: no basic or admin role"
    ),
    Handler(RETENTION, (LOG_BUCKET,), _log_bucket, "Cloud Logging buckets: retentionDays"),
)
