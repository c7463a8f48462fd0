"""What a newcomer's mistakes get told: dotted keys copied from the docs, defaults in refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandboxkit.config import PATTERN_WORDS, ConfigSource, load_stack, read_stack_file
from sandboxkit.errors import NOT_SHOWN, ConfigError
from sandboxkit.targets import TARGET_MODULES, get_target

KUBERNETES = {"context": "kind-test", "image": "example.com/sandbox:1"}


def with_profile(profile: dict[str, object]) -> dict[str, object]:
    return {
        "environment": "dev",
        "targets": ["kubernetes"],
        "kubernetes": KUBERNETES,
        "profile": profile,
    }


def problems(values: dict[str, object]) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_stack(ConfigSource(values=values), "test")
    return [str(p) for p in caught.value.problems]


def test_a_dotted_target_key_copied_from_the_docs_gets_the_nested_form(tmp_path: Path) -> None:
    stack_file = tmp_path / "Pulumi.try.yaml"
    stack_file.write_text(
        "config:\n"
        "  sandboxkit:environment: dev\n"
        "  sandboxkit:targets: [gcp-cloudrun]\n"
        "  sandboxkit:gcp-cloudrun.project: my-project\n"
        "  sandboxkit:gcp-cloudrun.region: europe-west1\n"
        "  sandboxkit:gcp-cloudrun.image: europe-docker.pkg.dev/p/r/launcher:1\n"
        "  sandboxkit:gcp-cloudrun:\n"
        "    sandboxImage: europe-docker.pkg.dev/p/r/sandbox:1\n"
    )
    found = problems(dict(read_stack_file(stack_file).values))
    nest = "; a dotted name is not a path in a stack file: nest it, "
    known = (
        "; known keys: environment, targets, profile, kubernetes, azure-sessions, aws-microvm, "
        "gcp-cloudrun, gcp-gke, cloudflare, local"
    )
    assert found == [
        f"sandboxkit:gcp-cloudrun.{key}: got {NOT_SHOWN!r}; expected no such key{nest}"
        f"sandboxkit:gcp-cloudrun: {{{key}: <value>}}{known}"
        for key in ("project", "region", "image")
    ] + [
        f"sandboxkit:gcp-cloudrun.{key}: got (missing); expected a value (this key is "
        f"required); the stack has a key literally named 'gcp-cloudrun.{key}' instead{nest}"
        f"sandboxkit:gcp-cloudrun: {{{key}: <value>}}"
        for key in ("project", "region", "image")
    ]


def test_a_dotted_key_inside_a_mapping_gets_the_nested_form_from_the_top() -> None:
    found = problems(with_profile({"limits.vcpu": 2}))
    assert found == [
        f"sandboxkit:profile.limits.vcpu: got {NOT_SHOWN!r}; expected no such key; a dotted "
        "name is not a path in a stack file: nest it, sandboxkit:profile: {limits: {vcpu: "
        "<value>}}; known keys: egress, limits, pool, audit"
    ]


def test_a_dotted_key_whose_head_is_unknown_gets_the_near_name_only() -> None:
    found = problems(
        {"environment": "dev", "targets": ["kubernetes"], "kubernetes": KUBERNETES, "profle.x": 1}
    )
    assert len(found) == 1
    assert "nest it" not in found[0]
    assert found[0].startswith("sandboxkit:profle.x: got '[value not shown]'; expected no such key")


def test_a_short_lifetime_names_every_default_it_contradicts_as_a_default() -> None:
    found = problems(with_profile({"limits": {"maxLifetimeSeconds": 100}}))
    assert found == [
        "sandboxkit:profile.limits.execTimeoutSeconds: got 300; expected at most "
        "limits.maxLifetimeSeconds (100 s) (default 300, not set in the stack: set "
        "execTimeoutSeconds explicitly); on kubernetes also acknowledge it with "
        "sandboxkit:kubernetes.unenforced: [limits.execTimeoutSeconds] (Kubernetes has no "
        "per-command timeout; the caller's exec client must apply it)",
        "sandboxkit:profile.limits.idleTimeoutSeconds: got 600; expected at most "
        "limits.maxLifetimeSeconds (100 s) (default 600, not set in the stack: set "
        "idleTimeoutSeconds explicitly); on kubernetes also acknowledge it with "
        "sandboxkit:kubernetes.unenforced: [limits.idleTimeoutSeconds] (agent-sandbox has no "
        "idle shutdown; claims set lifecycle.shutdownTime)",
    ]


def test_a_value_the_stack_set_is_not_called_a_default() -> None:
    limits = {"maxLifetimeSeconds": 100, "execTimeoutSeconds": 200}
    found = problems(with_profile({"limits": limits}))
    assert found[0] == (
        "sandboxkit:profile.limits.execTimeoutSeconds: got 200; expected at most "
        "limits.maxLifetimeSeconds (100 s)"
    )
    assert "default 600" in found[1]


def test_a_default_ready_above_max_concurrent_says_it_is_the_default() -> None:
    found = problems(with_profile({"pool": {"maxConcurrent": 1}}))
    assert found == [
        "sandboxkit:profile.pool.ready: got 2; expected at most pool.maxConcurrent (1) "
        "(default 2, not set in the stack: set ready explicitly)"
    ]


def _patterns(schema: object) -> set[str]:
    if isinstance(schema, dict):
        own = {schema["pattern"]} if isinstance(schema.get("pattern"), str) else set()
        return own.union(*map(_patterns, schema.values()))
    if isinstance(schema, list):
        return set().union(*map(_patterns, schema))
    return set()


def test_every_pattern_a_setting_uses_is_said_in_words() -> None:
    models = [get_target(t).settings_model for t in TARGET_MODULES]
    used = set().union(*(_patterns(m.__pydantic_core_schema__) for m in models))
    assert used, "no pattern found: the walk reads nothing"
    assert sorted(used - set(PATTERN_WORDS)) == []


@pytest.mark.parametrize(
    ("target", "settings", "key", "words"),
    [
        (
            "aws-microvm",
            {"region": "EU-West-1"},
            "region",
            "an AWS region name (e.g. eu-west-1)",
        ),
        (
            "kubernetes",
            {**KUBERNETES, "namespace": "Agent_Sandboxes"},
            "namespace",
            "a DNS label: 1 to 63 lower-case letters, digits or hyphens, starting and ending "
            "with a letter or digit",
        ),
    ],
)
def test_a_refusal_says_the_rule_in_words_not_a_regular_expression(
    target: str, settings: dict[str, object], key: str, words: str
) -> None:
    found = problems({"environment": "dev", "targets": [target], target: settings})
    line = next(p for p in found if p.startswith(f"sandboxkit:{target}.{key}:"))
    assert line.endswith(f"; expected {words}")
    assert not any(mark in line for mark in ("^", "$", "\\", "{0,"))


def test_a_plain_text_secret_does_not_hide_the_other_settings_problems() -> None:
    found = problems(
        {
            "environment": "dev",
            "targets": ["cloudflare"],
            "cloudflare": {
                "accountId": "not-hex",
                "image": "registry.cloudflare.com/x/agent:1",
                "tokenSigningKey": "plain",
            },
        }
    )
    keys = [line.split(": got")[0] for line in found]
    assert keys == [
        "sandboxkit:cloudflare.tokenSigningKey",
        "sandboxkit:cloudflare.accountId",
        "sandboxkit:cloudflare.sandboxIdKey",
    ]
    assert "a Pulumi secret, not plain text" in found[0]


def test_a_missing_secret_says_how_to_set_it_and_the_offline_placeholder() -> None:
    found = problems(
        {
            "environment": "dev",
            "targets": ["cloudflare"],
            "cloudflare": {"accountId": "0" * 32, "image": "registry.cloudflare.com/x/agent:1"},
        }
    )
    assert found == [
        f"sandboxkit:cloudflare.{key}: got (missing); expected a value (this key is required); "
        f"it is a secret: pulumi config set --secret --path 'sandboxkit:cloudflare.{key}' "
        "<value> (offline, a secure: placeholder as in docs/examples/ renders as an unknown "
        "secret)"
        for key in ("tokenSigningKey", "sandboxIdKey")
    ]
