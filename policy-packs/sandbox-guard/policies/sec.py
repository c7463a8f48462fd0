"""SEC: secrets never travel as plain text, and sandbox images are the ones reviewed.

pulumi-policy 1.21 hands ``Analyze`` the values of Pulumi secrets unwrapped, so a policy cannot
tell a secret input from a plain one. These rules therefore judge where a value lands: an
environment variable or plain binding is readable through the cloud's API whatever Pulumi
thought of it; a secret store, secret binding or ``secretKeyRef`` is not.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pulumi_policy import Severity

from sandboxkit.guard import (
    SANDBOX_POD_KINDS,
    containers_of,
    dig,
    items,
    plain_bindings,
    sandbox_pod_spec,
    walk_strings,
)

from ._common import WORKERS_SCRIPT, Context, ResourceRule, Rule

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


def _secret_named(name: str, value: Any, ctx: Context) -> bool:
    upper = name.upper()
    if any(upper.endswith(s) for s in ctx.setting("referenceSuffixes")):
        return False
    if isinstance(value, str) and value.startswith("arn:"):
        return False
    return any(p in upper for p in ctx.setting("secretNamePatterns"))


def _inline(kind: str, name: str, pairs: Sequence[tuple[str, Any]], ctx: Context) -> Iterator[str]:
    for variable, value in pairs:
        if value is not None and _secret_named(variable, value, ctx):
            yield (
                f"{kind} {name} sets {variable} inline, where anyone who can read the "
                "configuration reads the secret; move it to a secret store and pass a reference."
            )


@PLAINTEXT_ENV.on(*SANDBOX_POD_KINDS)
def _pod_env(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    for container in containers_of(sandbox_pod_spec(props)):
        pairs = [(str(e.get("name")), e.get("value")) for e in items(container.get("env"))]
        yield from _inline("SandboxTemplate", ctx.name, pairs, ctx)


@PLAINTEXT_ENV.on("gcp:cloudrunv2/service:Service")
def _cloud_run_env(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    for container in items(dig(props, "template.containers")):
        pairs = [(str(e.get("name")), e.get("value")) for e in items(dig(container, "envs"))]
        yield from _inline("Cloud Run service", ctx.name, pairs, ctx)


@PLAINTEXT_ENV.on("azure-native:app:ContainerAppsSessionPool")
def _pool_env(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    for container in items(dig(props, "customContainerTemplate.containers")):
        pairs = [(str(e.get("name")), e.get("value")) for e in items(dig(container, "env"))]
        yield from _inline("Session pool", ctx.name, pairs, ctx)


@PLAINTEXT_ENV.on("aws:lambda/function:Function")
def _lambda_env(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    variables = dig(props, "environment.variables", {}) or {}
    yield from _inline("Lambda function", ctx.name, [(k, variables[k]) for k in variables], ctx)


@PLAINTEXT_ENV.on("aws:lambdamicrovms/image:Image")
def _image_env(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    variables = props.get("environmentVariables") or {}
    yield from _inline("MicroVM image", ctx.name, [(k, variables[k]) for k in variables], ctx)


@PLAINTEXT_ENV.on(WORKERS_SCRIPT)
def _plain_bindings(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    yield from _inline("Worker", ctx.name, list(plain_bindings(props).items()), ctx)


CREDENTIAL_SHAPES = {
    "an AWS access key id": re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),
    "a private key": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    "a GitHub token": re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),
    "a Slack token": re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    "a Google API key": re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"),
    "an API secret key": re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"),
    "a JSON Web Token": re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"),
}
# Inputs that are secret stores: a credential there is where it belongs.
SECRET_SINKS = {
    "kubernetes:core/v1:Secret": ("data", "stringData"),
    "aws:secretsmanager/secretVersion:SecretVersion": ("secretString", "secretBinary"),
    "gcp:secretmanager/secretVersion:SecretVersion": ("secretData",),
    "azure-native:app:ContainerAppsSessionPool": ("secrets",),
    "azure-native:app:ManagedEnvironment": ("appLogsConfiguration",),
}

NO_CREDENTIALS = ResourceRule(
    Rule(
        id="SBX-SEC-002",
        title="No credential in any plain input",
        severity=Severity.CRITICAL,
        description="Prohibits values shaped like credentials (cloud access keys, private "
        "keys, API tokens, JWTs) in any resource input other than a secret store.",
        remediation="Remove the credential from the stack config or program, rotate it, and "
        "set it with pulumi config set --secret so it reaches only a secret store.",
    )
)


def scan_credentials(resource_type: str, props: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """``(input path, what it looks like)`` for each credential-shaped string in ``props``."""
    skipped = SECRET_SINKS.get(resource_type, ())
    for key in props:
        if key in skipped:
            continue
        for path, text in walk_strings(props[key], key):
            if resource_type.endswith(":WorkersScript") and _secret_binding_text(props, path):
                continue
            for label, shape in CREDENTIAL_SHAPES.items():
                if shape.search(text):
                    yield path, label


def _secret_binding_text(props: Mapping[str, Any], path: str) -> bool:
    match = re.fullmatch(r"bindings\[(\d+)\]\.text", path)
    if not match:
        return False
    binding = items(props.get("bindings"))[int(match.group(1))]
    return isinstance(binding, Mapping) and binding.get("type") == "secret_text"


@NO_CREDENTIALS.on_any()
def _credentials(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    resource_type = ctx.resource_type
    for path, label in scan_credentials(resource_type, props):
        yield (
            f"Input {path} of {ctx.name} holds what looks like {label} in plain text; remove "
            "it, rotate it, and pass it as a Pulumi secret to a secret store."
        )


DIGEST_PINNED = ResourceRule(
    Rule(
        id="SBX-SEC-003",
        title="Sandbox images pinned by digest",
        severity=Severity.MEDIUM,
        description="Checks that every image a sandbox runs (SandboxTemplate containers, Cloud "
        "Run containers and sandbox templates, session-pool custom containers) is pinned by "
        "digest (image@sha256:<64 hex>), so a moved tag cannot change what runs.",
        remediation="Reference each sandbox image by its digest (image@sha256:<64 hex digits>), "
        "as the registry reports it after the push.",
    )
)
DIGEST = re.compile(r"@sha256:[0-9a-f]{64}")


def _unpinned(kind: str, name: str, images: Sequence[Any]) -> Iterator[str]:
    # Unknown values (an image from another resource's output) are not strings: not judged.
    for image in images:
        if isinstance(image, str) and not DIGEST.search(image):
            yield (
                f"{kind} {name} runs image {image} by tag, which can be moved to other "
                "content; pin it by digest (image@sha256:<64 hex digits>)."
            )


@DIGEST_PINNED.on(*SANDBOX_POD_KINDS)
def _pod_images(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    images = [c.get("image") for c in containers_of(sandbox_pod_spec(props))]
    yield from _unpinned("SandboxTemplate", ctx.name, images)


@DIGEST_PINNED.on("gcp:cloudrunv2/service:Service")
def _cloud_run_images(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    containers = items(dig(props, "template.containers"))
    templates = items(dig(props, "template.sandboxes.templates"))
    images = [dig(entry, "image") for entry in containers + templates]
    yield from _unpinned("Cloud Run service", ctx.name, images)


@DIGEST_PINNED.on("azure-native:app:ContainerAppsSessionPool")
def _pool_images(props: Mapping[str, Any], ctx: Context) -> Iterator[str]:
    containers = items(dig(props, "customContainerTemplate.containers"))
    yield from _unpinned("Session pool", ctx.name, [dig(c, "image") for c in containers])


RULES = [PLAINTEXT_ENV, NO_CREDENTIALS, DIGEST_PINNED]
