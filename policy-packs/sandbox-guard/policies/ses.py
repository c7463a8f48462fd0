"""SES: who may reach a sandbox session, and with which identifier.

The checks are the targets' (``HANDLERS`` in each target folder's ``guard.py``).
"""

from __future__ import annotations

from pulumi_policy import Severity

from ._common import ResourceRule, Rule, StackRule

SERVER_CHOSEN_IDS = ResourceRule(
    Rule(
        id="SBX-SES-001",
        title="Session identifiers are not client-chosen",
        severity=Severity.HIGH,
        description="Checks that a Worker routing requests to sandbox Durable Objects holds a "
        "secret key to derive object ids (an HMAC of tenant and session), so a client cannot "
        "pick or guess another tenant's sandbox, and a key to verify client tokens with, so "
        "the tenant and session a request may touch come from verified claims, not its path.",
        remediation="Bind the kit's session-id key and token signing key as secret_text "
        "bindings, derive Durable Object ids from the first and take tenant and session scope "
        "from tokens verified with the second, never from a raw client-supplied id.",
        properties={
            "sessionKeyBindings": {
                "type": "array",
                "items": {"type": "string"},
                "default": ["SESSION_KEY", "HMAC", "ID_KEY"],
                "description": "Name fragments of the secret binding holding the id key.",
            },
            "credentialKeyBindings": {
                "type": "array",
                "items": {"type": "string"},
                "default": ["JWT", "SIGNING_KEY"],
                "description": "Name fragments of the secret binding holding the key client "
                "tokens are verified with.",
            },
        },
    )
)

AUTHENTICATED_WORKER = ResourceRule(
    Rule(
        id="SBX-SES-002",
        title="Worker requests are authenticated",
        severity=Severity.HIGH,
        description="Checks that a sandbox Worker holds the secret it authenticates every "
        "request with, and is not exposed on workers.dev unless the organisation allows it.",
        remediation="Bind the bearer or JWT key as a secret_text binding and keep the "
        "workers.dev subdomain disabled.",
        properties={
            "authBindings": {
                "type": "array",
                "items": {"type": "string"},
                "default": ["AUTH", "TOKEN", "JWT"],
                "description": "Name fragments of the secret binding that authenticates callers.",
            },
            "allowWorkersDev": {
                "type": "boolean",
                "default": False,
                "description": "Allow the workers.dev subdomain for sandbox Workers.",
            },
            "maxTokenLifetimeSeconds": {
                "type": "integer",
                "default": 900,
                "description": "Longest exp - iat a sandbox Worker accepts on a client token "
                "(JWT_MAX_LIFETIME_SECONDS), seconds: 15 minutes, the access-token lifetime "
                "OWASP's JSON Web Token Cheat Sheet gives as its example and the kit's default; "
                "a stolen token opens a tenant's sandboxes until it expires.",
            },
        },
    )
)

SIGNED_WEBHOOKS = ResourceRule(
    Rule(
        id="SBX-SES-003",
        title="Webhooks are signature-checked",
        severity=Severity.HIGH,
        description="Checks that a sandbox launcher function is given the webhook signing "
        "secret it verifies every webhook with, accepts a signed webhook only within a short "
        "replay window, and that the key it signs worker credentials with is replaced within "
        "a bounded age.",
        remediation="Pass the launcher the webhook secret's reference (a Secrets Manager ARN), "
        "keep the kit's signature check and keep replayWindowSeconds and "
        "workerCredentialKeyMaxAgeDays within the pack's ceilings.",
        properties={
            "webhookSecretVariables": {
                "type": "array",
                "items": {"type": "string"},
                "default": ["WEBHOOK_SECRET"],
                "description": "Name fragments of the launcher variable naming the secret.",
            },
            "maxReplayWindowSeconds": {
                "type": "integer",
                "default": 300,
                "description": "Longest webhook timestamp skew a launcher accepts "
                "(REPLAY_WINDOW_SECONDS), seconds: five minutes, the tolerance of Stripe's "
                "(docs.stripe.com/webhooks, 'Prevent replay attacks') and Slack's "
                "(api.slack.com/authentication/verifying-requests-from-slack) signed requests; "
                "a captured webhook can be replayed for that long.",
            },
            "maxCredentialKeyAgeDays": {
                "type": "integer",
                "default": 90,
                "description": "Longest life of the key that signs worker credentials (the "
                "sandboxkit-max-age-days tag of its secret), days: 90, the rotation period of "
                "CIS AWS Foundations Benchmark v3.0.0 control 1.14 for access keys.",
            },
        },
    )
)

LAUNCHER_APART = StackRule(
    Rule(
        id="SBX-SES-004",
        title="Sandboxes share neither the launcher's filesystem nor its identity's reach",
        severity=Severity.HIGH,
        description="Checks that a Cloud Run sandbox launcher starts sandboxes from a template "
        "of a separate image (a sandbox without one mounts the launcher container's root "
        "filesystem at /), that the launcher is told the template in "
        "SANDBOXKIT_SANDBOX_TEMPLATE, and that the launcher's service account holds no Cloud "
        "Logging role on a whole project, folder or organization.",
        remediation="Set sandboxkit:gcp-cloudrun.sandboxImage (the kit renders the template and "
        "tells the launcher its name) and drop project-wide logging grants to the launcher's "
        "account: its audit record goes to stdout.",
    )
)

RULES = [SERVER_CHOSEN_IDS, AUTHENTICATED_WORKER, SIGNED_WEBHOOKS, LAUNCHER_APART]
