"""Config outside the kit's namespace: endpoint, proxy and identity keys of the providers, and
plain-text credentials under any namespace, exit 2 naming the key; the rest stays the stack's."""

from __future__ import annotations

import importlib.util
import inspect
import re
from pathlib import Path

import pulumi_kubernetes
import pytest

from sandboxkit.config import load_stack_file
from sandboxkit.errors import ConfigError
from sandboxkit.provider_config import CUSTOM_ENDPOINT, MOVING_KEYS
from support import GOOD, make_project

MOVED = "no such key: it moves where the"
PLAIN = "a Pulumi secret: a credential in plain text"


def _with(tmp_path: Path, lines: str) -> Path:
    return make_project(tmp_path, {"dev": GOOD.replace("config:\n", f"config:\n{lines}", 1)})


def _refusal(tmp_path: Path, line: str) -> tuple[str, str]:
    """The one problem of a stack whose config gains ``line`` first: the key it names (the
    location after it checked: line 2 of the stack's file) and what it expects."""
    root = _with(tmp_path, f"  {line}\n")
    with pytest.raises(ConfigError) as caught:
        load_stack_file(root, "dev")
    [problem] = caught.value.problems
    where = f" ({root}/stacks/Pulumi.dev.yaml line 2)"
    assert problem.key.endswith(where)
    return problem.key.removesuffix(where), problem.expected


@pytest.mark.parametrize(
    "line",
    [
        "cloudflare:baseUrl: https://cf-api.attacker.example/client/v4",
        "gcp:computeCustomEndpoint: https://gce.attacker.example/compute/v1/",
        "gcp:cloudRunV2CustomEndpoint: https://run.attacker.example/v2/",
        "gcp:impersonateServiceAccount: deployer@other-project.iam.gserviceaccount.com",
        "gcp:universeDomain: attacker.example",
        "aws:endpoints: [{lambda: 'https://lambda.attacker.example'}]",
        "aws:assumeRoles: [{roleArn: 'arn:aws:iam::999999999999:role/x'}]",
        "azure-native:metadataHost: management.attacker.example",
        "kubernetes:kubeconfig: {secure: AAABAKz0}",
    ],
)
def test_a_key_moving_a_providers_endpoint_or_identity_exits_2_naming_it(
    tmp_path: Path, line: str
) -> None:
    key, expected = _refusal(tmp_path, line)
    assert key == ":".join(line.split(":", 2)[:2])
    assert expected.startswith(MOVED)


@pytest.mark.parametrize(
    "line",
    [
        "gcp:config:impersonateServiceAccount: deployer@other-project.iam.gserviceaccount.com",
        "cloudflare:config:baseUrl: https://evil.example.com",
        "aws:config:endpoints: [{lambda: 'https://lambda.attacker.example'}]",
        "azure_native:config:metadataHost: management.attacker.example",
    ],
)
def test_the_legacy_config_spelling_of_a_moving_key_exits_2_naming_it(
    tmp_path: Path, line: str
) -> None:
    # newcomer F12: the engine reads <ns>:config:<name> as <ns>:<name>; these exited 0.
    key, expected = _refusal(tmp_path, line)
    assert key == line.split(": ", 1)[0]
    assert expected.startswith(MOVED)


@pytest.mark.parametrize(
    ("line", "refusal"),
    [("gcp:config:accessToken: ya29.plain", MOVED), ("myorg:config:apiToken: plain-text", PLAIN)],
)
def test_the_legacy_config_spelling_of_a_credential_exits_2(
    tmp_path: Path, line: str, refusal: str
) -> None:
    key, expected = _refusal(tmp_path, line)
    assert key == line.split(": ", 1)[0]
    assert expected.startswith(refusal)


@pytest.mark.parametrize(
    "line",
    [
        "cloudflare:apiToken: plain-token-value",
        "aws:secretKey: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "myorg:databasePassword: hunter2",
        "myorg:settings: {clientSecret: abc}",
    ],
)
def test_a_plain_credential_under_any_namespace_exits_2_naming_it(
    tmp_path: Path, line: str
) -> None:
    key, expected = _refusal(tmp_path, line)
    assert key == ("myorg:settings.clientSecret" if "{" in line else line.split(": ", 1)[0])
    assert expected.startswith(PLAIN)


def test_region_flags_and_secrets_outside_the_namespace_stay_the_stacks(tmp_path: Path) -> None:
    root = _with(
        tmp_path,
        "  aws:region: eu-west-1\n"
        "  aws:skipCredentialsValidation: true\n"
        "  gcp:project: example-project\n"
        "  cloudflare:apiToken:\n    secure: AAABAKz0ZXhhbXBsZQ==\n",
    )
    assert load_stack_file(root, "dev").environment == "dev"


@pytest.mark.parametrize("package", ["aws", "gcp", "azure-native", "cloudflare"])
def test_every_refused_key_is_a_key_of_the_providers_config_module(package: str) -> None:
    # The names are the SDKs' own: pulumi_<package>/config/vars.py reads each of them.
    spec = importlib.util.find_spec(f"pulumi_{package.replace('-', '_')}")
    assert spec is not None and spec.origin is not None
    text = (Path(spec.origin).parent / "config" / "vars.py").read_text()
    read = set(re.findall(r"__config__\.get\w*\('(\w+)'\)", text))
    assert MOVING_KEYS[package] <= read
    if package == "gcp":
        endpoints = {key for key in read if CUSTOM_ENDPOINT.fullmatch(key)}
        assert {"computeCustomEndpoint", "cloudRunV2CustomEndpoint"} <= endpoints


def test_the_kubernetes_keys_are_the_providers_arguments() -> None:
    parameters = inspect.signature(pulumi_kubernetes.ProviderArgs.__init__).parameters
    assert {"kubeconfig", "context", "cluster"} <= set(parameters)
