"""SEC: secrets never travel as plain text, and sandbox images are the ones reviewed.

pulumi-policy 1.21 hands ``Analyze`` the values of Pulumi secrets unwrapped, so a policy cannot
tell a secret input from a plain one. These rules therefore judge where a value lands: an
environment variable or plain binding is readable through the cloud's API whatever Pulumi
thought of it; a secret store, secret binding or ``secretKeyRef`` is not.

SBX-SEC-001, SBX-SEC-003 and SBX-SEC-004 are checked by the targets (``HANDLERS`` in each
target folder's ``guard.py``); SBX-SEC-002 reads every input of every resource type, here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from pulumi_policy import Severity

from sandboxkit.credentials import CREDENTIAL_SHAPES
from sandboxkit.guard import CheckContext, walk_strings

from ._common import ResourceRule, Rule

PLAINTEXT_ENV = ResourceRule(
    Rule(
        id="SBX-SEC-001",
        title="No secret in plain environment variables or bindings",
        severity=Severity.CRITICAL,
        description="Prohibits environment variables and plain-text bindings whose name says "
        "they hold a secret (token, password, key) and whose value is written inline instead "
        "of referencing a secret store.",
        remediation="Keep the secret in the platform's secret store (Secrets Manager, Secret "
        "Manager, Key Vault or container-app secret, Kubernetes Secret, Worker secret binding) "
        "and pass only a reference.",
        properties={
            "secretNamePatterns": {
                "type": "array",
                "items": {"type": "string"},
                "default": [
                    "SECRET",
                    "TOKEN",
                    "PASSWORD",
                    "PASSWD",
                    "_KEY",
                    "APIKEY",
                    "CREDENTIAL",
                ],
                "description": "Name fragments that mark a variable as a secret.",
            },
            "referenceSuffixes": {
                "type": "array",
                "items": {"type": "string"},
                "default": ["_ARN", "_ID", "_NAME", "_REF", "_URI", "_PATH", "_FILE"],
                "description": "Name endings of variables that hold a reference to a secret.",
            },
        },
    )
)


# Inputs that are secret stores: a credential there is where it belongs.
SECRET_SINKS = {
    "kubernetes:core/v1:Secret": ("data", "stringData"),
    "aws:secretsmanager/secretVersion:SecretVersion": ("secretString", "secretBinary"),
    "gcp:secretmanager/secretVersion:SecretVersion": ("secretData",),
    "azure-native:app:ContainerAppsSessionPool": ("secrets",),
    "azure-native:app:ManagedEnvironment": ("appLogsConfiguration",),
}


def scan_credentials(resource_type: str, props: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """``(input path, what it looks like)`` for each credential-shaped string in ``props``."""
    skipped = SECRET_SINKS.get(resource_type, ())
    # walk_strings skips unknown inputs: a value computed from another resource, or a secret,
    # is not text the stack wrote, so it never decides this policy.
    for path, text in walk_strings(props):
        if re.split(r"[.\[]", path, maxsplit=1)[0] in skipped:
            continue
        if resource_type.endswith(":WorkersScript") and _secret_binding_text(props, path):
            continue
        for label, shape in CREDENTIAL_SHAPES.items():
            if shape.search(text):
                yield path, label


def _secret_binding_text(props: Mapping[str, Any], path: str) -> bool:
    match = re.fullmatch(r"bindings\[(\d+)\]\.text", path)
    if not match:
        return False
    binding = props["bindings"][int(match.group(1))]
    return isinstance(binding, Mapping) and binding.get("type") == "secret_text"


def _credentials(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    resource_type = ctx.resource_type
    for path, label in scan_credentials(resource_type, props):
        yield (
            f"Input {path} of {ctx.name} holds what looks like {label} in plain text; remove "
            "it, rotate it, and pass it as a Pulumi secret to a secret store."
        )


NO_CREDENTIALS = ResourceRule(
    Rule(
        id="SBX-SEC-002",
        title="No credential in any plain input",
        severity=Severity.CRITICAL,
        description="Prohibits values shaped like credentials (cloud access keys, private "
        "keys, API tokens, JWTs) in any resource input other than a secret store.",
        remediation="Remove the credential from the stack config or program, rotate it, and "
        "set it with pulumi config set --secret so it reaches only a secret store.",
    ),
    every_type=_credentials,
)


DIGEST_PINNED = ResourceRule(
    Rule(
        id="SBX-SEC-003",
        title="Sandbox images pinned by digest",
        severity=Severity.MEDIUM,
        description="Checks that every image the kit runs is pinned by digest "
        "(image@sha256:<64 hex>), so a moved tag cannot change what runs: SandboxTemplate "
        "containers, the kit's DNS resolver Deployment, Cloud Run containers (the launcher's "
        "too) and sandbox templates, session-pool custom containers, and the container image a "
        "sandbox Worker carries for its Durable Objects.",
        remediation="Reference each sandbox image by its digest (image@sha256:<64 hex digits>), "
        "as the registry reports it after the push.",
    )
)

TRUSTED_SOURCES = ResourceRule(
    Rule(
        id="SBX-SEC-004",
        title="Launcher code and base images come from trusted accounts",
        severity=Severity.HIGH,
        description="Checks that every Lambda layer of a MicroVM launcher (code that runs "
        "beside both HMAC keys) and every MicroVM base image comes from AWS itself or from an "
        "account the stack names as trusted (sandboxkit:aws-microvm.trustedAccounts and "
        "assumeRole's account, tagged sandboxkit-trusted-accounts on the resource).",
        remediation="Use layers and base images from your own account or AWS, or list the "
        "account that publishes them in sandboxkit:aws-microvm.trustedAccounts once you trust "
        "it.",
    )
)

RULES = [PLAINTEXT_ENV, NO_CREDENTIALS, DIGEST_PINNED, TRUSTED_SOURCES]
