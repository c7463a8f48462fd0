"""IAM: what sandbox identities may do, and who may reach sandboxes.

The checks are the targets' (``HANDLERS`` in each target folder's ``guard.py``).
"""

from __future__ import annotations

from pulumi_policy import Severity

from ._common import ResourceRule, Rule

LEAST_PRIVILEGE = ResourceRule(
    Rule(
        id="SBX-IAM-001",
        title="No admin, owner, editor or wildcard permissions",
        severity=Severity.CRITICAL,
        description="Prohibits admin, owner, editor and wildcard grants to the identities the "
        "kit creates (IAM policies, role bindings and role assignments).",
        remediation="Grant only the named actions on the named resources the sandbox launcher "
        "needs; never a wildcard action or an administrator role.",
    )
)

NO_GUEST_IDENTITY = ResourceRule(
    Rule(
        id="SBX-IAM-002",
        title="No guest-visible identity without an explicit override",
        severity=Severity.HIGH,
        description="Prohibits credentials that sandbox code can read: mounted service-account "
        "tokens, session-pool managed identities available to session code, GKE nodes without "
        "the GKE metadata server, MicroVM execution roles, unless the resource is named in the "
        "policy's allowedGuestIdentities.",
        remediation="Give sandboxes no identity; if one is truly needed, grant it least "
        "privilege and name the resource in the pack config's allowedGuestIdentities.",
        properties={
            "allowedGuestIdentities": {
                "type": "array",
                "items": {"type": "string"},
                "default": [],
                "description": "Logical names of resources allowed to expose an identity to "
                "sandbox code (an explicit, reviewed override).",
            }
        },
    )
)

NO_PUBLIC_INVOKER = ResourceRule(
    Rule(
        id="SBX-IAM-003",
        title="Cloud Run has no public invoker",
        severity=Severity.CRITICAL,
        description="Prohibits allUsers or allAuthenticatedUsers on Cloud Run services and "
        "turning off the invoker IAM check.",
        remediation="Grant roles/run.invoker to the named caller service account only, and "
        "keep invokerIamDisabled false.",
    )
)

EXECUTOR_NAMED = ResourceRule(
    Rule(
        id="SBX-IAM-004",
        title="Session pools grant the executor role to named principals on the pool only",
        severity=Severity.HIGH,
        description="Checks that the Azure ContainerApps Session Executor role is assigned to "
        "a named principal and scoped to one session pool, not a resource group or "
        "subscription.",
        remediation="Assign the Session Executor role to the caller's own principal id with "
        "the session pool's resource id as scope.",
    )
)

SOURCE_PINNED = ResourceRule(
    Rule(
        id="SBX-IAM-005",
        title="Service roles are assumable for their own account only",
        severity=Severity.HIGH,
        description="Checks that every IAM role trust policy letting an AWS service principal "
        "assume the role carries an aws:SourceAccount or aws:SourceArn condition, so the "
        "service cannot be made to assume it on another account's behalf (confused deputy).",
        remediation="Add a condition pinning aws:SourceAccount to the role's own account, and "
        "aws:SourceArn to the service's resources where the service documents the key.",
    )
)

RULES = [LEAST_PRIVILEGE, NO_GUEST_IDENTITY, NO_PUBLIC_INVOKER, EXECUTOR_NAMED, SOURCE_PINNED]
