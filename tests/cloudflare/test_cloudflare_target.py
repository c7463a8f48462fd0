"""The cloudflare target: WorkerSandbox children and inputs, the wrangler config, the errors."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
from typer.testing import CliRunner

from sandboxkit import cli
from sandboxkit.cloudflare import spec as cf_spec
from sandboxkit.cloudflare.deployer import cloudflare_policy
from sandboxkit.cloudflare.spec import (
    SPEC,
    WORKER_MODULE,
    CloudflareSettings,
    check_egress,
    cloudflare_enforcement,
    egress_policy,
    instance_type_for,
    worker_sandbox_args,
)
from sandboxkit.cloudflare.type_tokens import WRANGLER_SCRIPT
from sandboxkit.cloudflare.workers import WorkerSandbox
from sandboxkit.cloudflare.wrangler import script_inputs as planned_inputs
from sandboxkit.cloudflare.wrangler import wrangler_config
from sandboxkit.config import ConfigSource, load_stack
from sandboxkit.effective_egress import ResourceView
from sandboxkit.errors import ConfigError
from sandboxkit.profile import SandboxProfile
from sandboxkit.render import Recorder, is_secret_value
from sandboxkit.secrets import SecretValue
from sandboxkit.targets import KitContext
from support import named, one, shipped_render

SCRIPT = WRANGLER_SCRIPT.token
ACCOUNT = "0" * 32
IMAGE = "registry.cloudflare.com/00000000000000000000000000000000/sandbox:v1"
SIGNING_KEY = "signing-key-test-value-7f3a9c1e5b2d4f6a8c0e"
ID_KEY = "id-key-test-value-1b3d5f7a9c2e4a6c8e0b"
ALLOWLIST = ["pypi.org", "*.pythonhosted.org", "api.example.com:80"]
ALLOWLIST_POLICY = (
    '{"mode":"allowlist","allow":['
    '{"host":"api.example.com","port":80,"wildcard":false},'
    '{"host":"pypi.org","port":443,"wildcard":false},'
    '{"host":"pythonhosted.org","port":443,"wildcard":true}]}'
)


@pytest.fixture
def worker_module() -> Path:
    """The Worker module the script uploads (shipped in the package)."""
    assert WORKER_MODULE.is_file()
    return WORKER_MODULE


def settings(**overrides: Any) -> CloudflareSettings:
    values: dict[str, Any] = {
        "accountId": ACCOUNT,
        "image": IMAGE,
        "tokenSigningKey": SecretValue(SIGNING_KEY),
        "sandboxIdKey": SecretValue(ID_KEY),
        **overrides,
    }
    return CloudflareSettings.model_validate(values)


def profile(**sections: Any) -> SandboxProfile:
    return SandboxProfile.model_validate(sections)


def build(
    engine: Recorder, worker_module: Path, prof: SandboxProfile | None = None, **overrides: Any
) -> WorkerSandbox:
    args = worker_sandbox_args(
        prof or profile(), settings(**overrides), KitContext("test", "dev", "cloudflare")
    )
    args["worker_module_path"] = str(worker_module)
    component: WorkerSandbox = engine.run(lambda: WorkerSandbox("cloudflare", args))
    return component


def script_inputs(engine: Recorder) -> dict[str, Any]:
    return dict(one(engine.resources, SCRIPT).inputs)


def binding(engine: Recorder, name: str) -> dict[str, Any]:
    found = [b for b in script_inputs(engine)["bindings"] if b["name"] == name]
    assert len(found) == 1
    return dict(found[0])


def plain_strings(value: Any) -> Iterator[str]:
    """Every string in a wire-form value outside secret wrappers."""
    if is_secret_value(value):
        return
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from plain_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from plain_strings(item)
    elif isinstance(value, str):
        yield value


# --- the component -------------------------------------------------------------------------


def test_the_one_child_is_the_script(engine: Recorder, worker_module: Path) -> None:
    # wrangler alone writes workers.dev: no WorkersScriptSubdomain beside it.
    build(engine, worker_module)
    component = named(engine.resources, "cloudflare")
    assert component.type == "sandboxkit:index:WorkerSandbox"
    assert {(r.type, r.name, r.parent) for r in engine.resources if r is not component} == {
        (SCRIPT, "cloudflare-script", component.urn),
    }


def test_script_uploads_the_worker_module_with_the_pinned_runtime(
    engine: Recorder, worker_module: Path
) -> None:
    build(engine, worker_module, compatibilityDate="2026-01-15", scriptName="agents")
    inputs = script_inputs(engine)
    assert inputs["content"] == worker_module.read_text()
    assert inputs["mainModule"] == "index.js"
    assert inputs["compatibilityDate"] == "2026-01-15"
    # Same-zone fetches from the egress gateway go through Cloudflare's front door, not to origin.
    assert inputs["compatibilityFlags"] == ["global_fetch_strictly_public"]
    assert inputs["scriptName"] == "agents"
    assert inputs["accountId"] == ACCOUNT


def test_default_script_name_follows_the_stack(engine: Recorder, worker_module: Path) -> None:
    build(engine, worker_module)
    assert script_inputs(engine)["scriptName"] == "sandboxkit-test"


def test_bindings_are_exactly_the_workers_contract(engine: Recorder, worker_module: Path) -> None:
    build(engine, worker_module)
    assert [(b["name"], b["type"]) for b in script_inputs(engine)["bindings"]] == [
        ("SANDBOX", "durable_object_namespace"),
        ("JWT_SIGNING_KEY", "secret_text"),
        ("SANDBOX_ID_KEY", "secret_text"),
        ("EGRESS_POLICY", "plain_text"),
        ("IDLE_TIMEOUT_SECONDS", "plain_text"),
        ("MAX_LIFETIME_SECONDS", "plain_text"),
        ("EXEC_TIMEOUT_SECONDS", "plain_text"),
        ("JWT_ISSUER", "plain_text"),
        ("JWT_AUDIENCE", "plain_text"),
        ("JWT_MAX_LIFETIME_SECONDS", "plain_text"),
        # The container's image, for the gate (no Pulumi resource holds the container).
        ("CONTAINER_IMAGE", "plain_text"),
    ]
    assert binding(engine, "SANDBOX") == {
        "name": "SANDBOX",
        "type": "durable_object_namespace",
        "className": "Sandbox",
    }


def test_limits_are_bound_as_decimal_seconds(engine: Recorder, worker_module: Path) -> None:
    limits = {"execTimeoutSeconds": 45, "maxLifetimeSeconds": 7200, "idleTimeoutSeconds": 120}
    build(engine, worker_module, profile(limits=limits))
    assert binding(engine, "IDLE_TIMEOUT_SECONDS")["text"] == "120"
    assert binding(engine, "MAX_LIFETIME_SECONDS")["text"] == "7200"
    assert binding(engine, "EXEC_TIMEOUT_SECONDS")["text"] == "45"


def test_token_checks_default_to_the_kits_issuer_and_this_scripts_audience(
    engine: Recorder, worker_module: Path
) -> None:
    build(engine, worker_module)
    assert binding(engine, "JWT_ISSUER")["text"] == "sandboxkit"
    assert binding(engine, "JWT_AUDIENCE")["text"] == "sandboxkit-test"
    assert binding(engine, "JWT_MAX_LIFETIME_SECONDS")["text"] == "900"


def test_token_checks_follow_the_settings(engine: Recorder, worker_module: Path) -> None:
    build(
        engine,
        worker_module,
        scriptName="agents",
        tokenIssuer="https://platform.example.com",
        tokenMaxLifetimeSeconds=120,
    )
    assert binding(engine, "JWT_ISSUER")["text"] == "https://platform.example.com"
    # The audience is the script: a token for one deployment opens no other sharing the key.
    assert binding(engine, "JWT_AUDIENCE")["text"] == "agents"
    assert binding(engine, "JWT_MAX_LIFETIME_SECONDS")["text"] == "120"


def test_durable_object_class_is_created_sqlite_backed(
    engine: Recorder, worker_module: Path
) -> None:
    build(engine, worker_module)
    # wrangler's ledger: it sends only the migrations after the live script's tag.
    assert script_inputs(engine)["migrations"] == [{"tag": "v1", "newSqliteClasses": ["Sandbox"]}]


def test_the_script_carries_its_container_application(
    engine: Recorder, worker_module: Path
) -> None:
    build(engine, worker_module, profile(pool={"ready": 0, "maxConcurrent": 9}))
    inputs = script_inputs(engine)
    assert inputs["containers"] == [
        {
            "name": "sandboxkit-test-sandbox",
            "className": "Sandbox",
            "image": IMAGE,
            "instanceType": "standard-2",
            "maxInstances": 9,
        }
    ]
    assert (inputs["workersDev"], inputs["previewUrls"], inputs["routes"]) == (False, False, [])


def test_routes_and_custom_domains_reach_the_script_in_order(
    engine: Recorder, worker_module: Path
) -> None:
    routes = [
        {"pattern": "sandbox.example.com", "customDomain": True},
        {"pattern": "*.example.com/run/*", "zoneName": "example.com"},
        {"pattern": "api.example.org/sandbox*", "zoneId": "f" * 32},
    ]
    build(engine, worker_module, routes=routes)
    assert script_inputs(engine)["routes"] == routes


def test_the_api_token_is_absent_without_the_stacks_secret(
    engine: Recorder, worker_module: Path
) -> None:
    build(engine, worker_module)
    assert script_inputs(engine).get("apiToken") is None


def test_the_api_token_is_the_stacks_secret(
    engine: Recorder, worker_module: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pulumi-cloudflare's own key: the provider hands the same secret to wrangler.
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps({"cloudflare:apiToken": "cf-token-value"}))
    build(engine, worker_module)
    token = script_inputs(engine)["apiToken"]
    assert is_secret_value(token) and token["value"] == "cf-token-value"


def test_secret_bindings_are_pulumi_secrets(engine: Recorder, worker_module: Path) -> None:
    build(engine, worker_module)
    for name, value in (("JWT_SIGNING_KEY", SIGNING_KEY), ("SANDBOX_ID_KEY", ID_KEY)):
        text = binding(engine, name)["text"]
        assert is_secret_value(text)
        assert text["value"] == value


def test_no_secret_appears_in_plain_text_in_any_recorded_input(
    engine: Recorder, worker_module: Path
) -> None:
    build(engine, worker_module)
    for resource in engine.resources:
        for text in plain_strings(dict(resource.inputs)):
            assert SIGNING_KEY not in text and ID_KEY not in text, resource.name
        shown = json.dumps(resource.display())
        assert SIGNING_KEY not in shown and ID_KEY not in shown


def test_observability_keeps_every_request_and_log(engine: Recorder, worker_module: Path) -> None:
    build(engine, worker_module)
    assert script_inputs(engine)["observability"] == {
        "enabled": True,
        "headSamplingRate": 1,
        "logs": {"enabled": True, "invocationLogs": True, "persist": True, "headSamplingRate": 1},
    }


def test_workers_dev_and_preview_urls_are_off_by_default(
    engine: Recorder, worker_module: Path
) -> None:
    build(engine, worker_module)
    script = dict(one(engine.resources, SCRIPT).inputs)
    assert (script["workersDev"], script["previewUrls"]) == (False, False)
    config = wrangler_config(script, "index.js")
    assert (config["workers_dev"], config["preview_urls"]) == (False, False)


def test_workers_dev_only_when_asked(engine: Recorder, worker_module: Path) -> None:
    build(engine, worker_module, workersDev=True)
    script = dict(one(engine.resources, SCRIPT).inputs)
    assert (script["workersDev"], script["previewUrls"]) == (True, False)
    assert wrangler_config(script, "index.js")["workers_dev"] is True


def test_the_exposure_output_is_the_scripts(engine: Recorder, worker_module: Path) -> None:
    args = worker_sandbox_args(
        profile(), settings(workersDev=True), KitContext("test", "dev", "cloudflare")
    )
    args["worker_module_path"] = str(worker_module)
    engine.run(lambda: pulumi.export("cf", WorkerSandbox("cloudflare", args).outputs()))
    assert engine.outputs["cf"]["workersDevEnabled"] is True


def test_egress_policy_binding_for_deny(engine: Recorder, worker_module: Path) -> None:
    build(engine, worker_module)
    assert binding(engine, "EGRESS_POLICY")["text"] == '{"mode":"deny","allow":[]}'


def test_egress_policy_binding_for_an_allowlist(engine: Recorder, worker_module: Path) -> None:
    build(engine, worker_module, profile(egress={"mode": "allowlist", "allow": ALLOWLIST}))
    assert binding(engine, "EGRESS_POLICY")["text"] == ALLOWLIST_POLICY


def test_outputs_name_the_script_and_its_exposure(engine: Recorder, worker_module: Path) -> None:
    args = worker_sandbox_args(profile(), settings(), KitContext("test", "dev", "cloudflare"))
    args["worker_module_path"] = str(worker_module)
    engine.run(lambda: pulumi.export("cf", WorkerSandbox("cloudflare", args).outputs()))
    assert engine.outputs["cf"] == {
        "scriptName": "sandboxkit-test",
        "workersDevEnabled": False,
        "instanceType": "standard-2",
    }


def test_a_plain_var_cannot_shadow_a_fixed_binding(engine: Recorder, worker_module: Path) -> None:
    args = worker_sandbox_args(profile(), settings(), KitContext("test", "dev", "cloudflare"))
    args["worker_module_path"] = str(worker_module)
    args["plain_vars"] = {**args["plain_vars"], "JWT_SIGNING_KEY": "oops"}
    with pytest.raises(ValueError, match=r"plain_vars \['JWT_SIGNING_KEY'\]"):
        engine.run(lambda: WorkerSandbox("cloudflare", args))


# --- pure mappings ---------------------------------------------------------------------------


def test_egress_policy_for_open() -> None:
    assert egress_policy(profile(egress={"mode": "open"})) == '{"mode":"open","allow":[]}'


def test_open_egress_is_refused_naming_the_mode_and_the_alternatives() -> None:
    with pytest.raises(ConfigError) as caught:
        check_egress(profile(egress={"mode": "open"}))
    [problem] = caught.value.problems
    assert (problem.key, problem.value) == ("sandboxkit:profile.egress.mode", "open")
    assert problem.expected.startswith("deny or allowlist for target cloudflare: ")
    assert problem.expected.endswith(
        "use a target whose open mode reaches every port: aws-microvm, gcp-cloudrun, "
        "kubernetes or gcp-gke"
    )


@pytest.mark.parametrize(
    ("vcpu", "memory", "expected"),
    [
        (0.0625, 256, "lite"),
        (0.25, 256, "basic"),
        (0.25, 1024, "basic"),
        (0.5, 1025, "standard-1"),
        (1, 2048, "standard-2"),
        (0.5, 4097, "standard-2"),
        (1.5, 1024, "standard-3"),
        (2, 8193, "standard-4"),
        (4, 12288, "standard-4"),
    ],
)
def test_instance_type_is_the_smallest_covering_both_limits(
    vcpu: float, memory: int, expected: str
) -> None:
    assert instance_type_for(vcpu, memory).name == expected


def test_instance_type_beyond_the_largest_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        instance_type_for(4, 12289)
    assert caught.value.keys == ("sandboxkit:profile.limits",)
    assert "containers/platform/limits" in str(caught.value)


def stack_wrangler_config(prof: SandboxProfile, stack: str, main: str) -> dict[str, Any]:
    """The wrangler config of a one-target stack with this profile and the default settings."""
    plan = worker_sandbox_args(prof, settings(), KitContext(stack, "prod", "cloudflare"))
    return wrangler_config(planned_inputs(plan, "", {}), main)


def test_wrangler_config_is_exact() -> None:
    prof = profile(
        egress={"mode": "allowlist", "allow": ALLOWLIST},
        limits={"vcpu": 0.5, "memoryMiB": 4096, "execTimeoutSeconds": 60},
        pool={"ready": 0, "maxConcurrent": 12},
    )
    config = stack_wrangler_config(prof, "prod", "../worker/src/index.js")
    assert config == {
        "name": "sandboxkit-prod",
        "account_id": ACCOUNT,
        "main": "../worker/src/index.js",
        "no_bundle": True,
        "compatibility_date": "2026-07-01",
        "compatibility_flags": ["global_fetch_strictly_public"],
        "workers_dev": False,
        "preview_urls": False,
        "observability": {
            "enabled": True,
            "head_sampling_rate": 1,
            "logs": {
                "enabled": True,
                "invocation_logs": True,
                "persist": True,
                "head_sampling_rate": 1,
            },
        },
        "durable_objects": {"bindings": [{"name": "SANDBOX", "class_name": "Sandbox"}]},
        "migrations": [{"tag": "v1", "new_sqlite_classes": ["Sandbox"]}],
        "containers": [
            {
                "name": "sandboxkit-prod-sandbox",
                "class_name": "Sandbox",
                "image": IMAGE,
                "instance_type": "standard-1",
                "max_instances": 12,
            }
        ],
        "vars": {
            "EGRESS_POLICY": ALLOWLIST_POLICY,
            "IDLE_TIMEOUT_SECONDS": "600",
            "MAX_LIFETIME_SECONDS": "3600",
            "EXEC_TIMEOUT_SECONDS": "60",
            "JWT_ISSUER": "sandboxkit",
            "JWT_AUDIENCE": "sandboxkit-prod",
            "JWT_MAX_LIFETIME_SECONDS": "900",
            "CONTAINER_IMAGE": IMAGE,
        },
    }
    # Secrets never enter the config: wrangler uploads them from --secrets-file.
    assert "JWT_SIGNING_KEY" not in json.dumps(config)


def test_wrangler_config_is_the_one_the_script_deploys(
    engine: Recorder, worker_module: Path
) -> None:
    # cloudflare-config writes exactly what the WranglerScript's provider hands wrangler.
    prof = profile(egress={"mode": "allowlist", "allow": ALLOWLIST})
    build(engine, worker_module, prof)
    deployed = wrangler_config(script_inputs(engine), "index.js")
    assert deployed == stack_wrangler_config(prof, "test", "index.js")


def test_wrangler_config_carries_routes_in_wranglers_shapes() -> None:
    routes = [
        {"pattern": "sandbox.example.com", "customDomain": True},
        {"pattern": "sandbox.example.net", "customDomain": True, "zoneName": "example.net"},
        {"pattern": "*.example.com/run/*", "zoneName": "example.com"},
        {"pattern": "api.example.org/sandbox*", "zoneId": "f" * 32},
    ]
    plan = worker_sandbox_args(
        profile(), settings(routes=routes), KitContext("prod", "prod", "cloudflare")
    )
    assert wrangler_config(planned_inputs(plan, "", {}), "index.js")["routes"] == [
        {"pattern": "sandbox.example.com", "custom_domain": True},
        {"pattern": "sandbox.example.net", "custom_domain": True, "zone_name": "example.net"},
        {"pattern": "*.example.com/run/*", "zone_name": "example.com"},
        {"pattern": "api.example.org/sandbox*", "zone_id": "f" * 32},
    ]


def test_enforcement_map() -> None:
    entries = cloudflare_enforcement(profile())
    assert {field: entry.kind for field, entry in entries.items()} == {
        "egress.mode": "runtime",
        "limits.vcpu": "platform",
        "limits.memoryMiB": "platform",
        "limits.execTimeoutSeconds": "runtime",
        "limits.maxLifetimeSeconds": "runtime",
        "limits.idleTimeoutSeconds": "runtime",
        "pool.ready": "none",
        "pool.maxConcurrent": "platform",
        "audit.logRetentionDays": "none",
    }
    assert "instance_type standard-2" in entries["limits.vcpu"].where
    assert "generated wrangler config" in entries["limits.memoryMiB"].where
    assert entries["pool.maxConcurrent"].where.endswith("containers[0].max_instances")
    assert "no warm pool" in entries["pool.ready"].where
    assert "7 days on Workers Paid" in entries["audit.logRetentionDays"].where
    assert "EGRESS_POLICY" in entries["egress.mode"].where


# --- stack validation (exit-2 errors) --------------------------------------------------------


def source(prof: dict[str, Any] | None = None, **cloudflare: Any) -> ConfigSource:
    values = {
        "environment": "dev",
        "targets": ["cloudflare"],
        "profile": prof or {},
        "cloudflare": {
            "accountId": ACCOUNT,
            "image": IMAGE,
            "tokenSigningKey": SIGNING_KEY,
            "sandboxIdKey": ID_KEY,
            **cloudflare,
        },
    }
    secret = frozenset({"cloudflare.tokenSigningKey", "cloudflare.sandboxIdKey"})
    return ConfigSource(values=values, secret_paths=secret)


def test_a_valid_stack_loads_with_secret_settings() -> None:
    spec = load_stack(source(), "dev")
    loaded = spec.settings["cloudflare"]
    assert isinstance(loaded, CloudflareSettings)
    assert loaded.token_signing_key == SecretValue(SIGNING_KEY)
    assert loaded.token_issuer == "sandboxkit"
    assert loaded.token_max_lifetime_seconds == 900
    assert loaded.workers_dev is False


def test_an_ip_allowlist_entry_is_refused_by_name() -> None:
    prof = {"egress": {"mode": "allowlist", "allow": ["pypi.org", "151.101.0.223:8443"]}}
    with pytest.raises(ConfigError) as caught:
        load_stack(source(prof), "dev")
    assert caught.value.keys == ("sandboxkit:profile.egress.allow",)
    assert caught.value.problems[0].value == "151.101.0.223:8443"
    assert "DNS names only for target cloudflare" in str(caught.value)


def test_a_port_other_than_80_or_443_is_refused_by_name() -> None:
    prof = {"egress": {"mode": "allowlist", "allow": ["github.com:80", "*.example.com:8443"]}}
    with pytest.raises(ConfigError) as caught:
        load_stack(source(prof), "dev")
    assert [(p.key, p.value) for p in caught.value.problems] == [
        ("sandboxkit:profile.egress.allow", "*.example.com:8443")
    ]
    assert caught.value.problems[0].expected == (
        "ports 80 and 443 only for target cloudflare: Cloudflare Containers intercept no other "
        "port (source: developers.cloudflare.com/containers/configuration/outbound-traffic/ "
        "(Non-HTTP traffic)), so *.example.com:8443 could never be reached. Write "
        "*.example.com:443 (or :80) if the host serves there, or use a target that filters "
        "other ports (kubernetes, aws-microvm)"
    )


def test_a_plaintext_secret_is_refused() -> None:
    plain = ConfigSource(
        values=source().values, secret_paths=frozenset({"cloudflare.sandboxIdKey"})
    )
    with pytest.raises(ConfigError) as caught:
        load_stack(plain, "dev")
    assert caught.value.keys == ("sandboxkit:cloudflare.tokenSigningKey",)
    assert SIGNING_KEY not in str(caught.value)


def test_the_old_shared_bearer_token_setting_is_refused_by_name() -> None:
    values = source().values
    cloudflare = dict(values["cloudflare"])
    cloudflare["authToken"] = cloudflare.pop("tokenSigningKey")
    old = ConfigSource(
        values={**values, "cloudflare": cloudflare},
        secret_paths=frozenset({"cloudflare.authToken", "cloudflare.sandboxIdKey"}),
    )
    with pytest.raises(ConfigError) as caught:
        load_stack(old, "dev")
    assert {(p.key, p.expected.split(";")[0]) for p in caught.value.problems} == {
        ("sandboxkit:cloudflare.authToken", "no such key"),
        ("sandboxkit:cloudflare.tokenSigningKey", "a value (this key is required)"),
    }
    assert SIGNING_KEY not in str(caught.value)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("tokenMaxLifetimeSeconds", 3601, "less than or equal to 3600"),
        ("tokenMaxLifetimeSeconds", 0, "greater than or equal to 1"),
        ("tokenIssuer", "", "expected 1 to 256 printable ASCII characters without spaces"),
        ("tokenIssuer", "two words", "expected 1 to 256 printable ASCII characters without spaces"),
    ],
)
def test_token_settings_out_of_range_are_refused_by_name(
    key: str, value: Any, expected: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_stack(source(**{key: value}), "dev")
    assert caught.value.keys == (f"sandboxkit:cloudflare.{key}",)
    assert expected in str(caught.value)


def test_a_profile_beyond_the_largest_instance_is_refused_with_its_source() -> None:
    with pytest.raises(ConfigError) as caught:
        load_stack(source({"limits": {"vcpu": 8, "memoryMiB": 16384}}), "dev")
    assert caught.value.keys == (
        "sandboxkit:profile.limits.vcpu",
        "sandboxkit:profile.limits.memoryMiB",
    )
    assert "at most 4 for target cloudflare" in str(caught.value)
    assert "from 256 to 12288 for target cloudflare" in str(caught.value)
    assert "developers.cloudflare.com/containers/platform/limits/" in str(caught.value)


def test_a_lifetime_beyond_the_workers_bound_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        load_stack(source({"limits": {"maxLifetimeSeconds": 604801}}), "dev")
    assert caught.value.keys == ("sandboxkit:profile.limits.maxLifetimeSeconds",)
    assert "MAX_CONFIG_SECONDS" in str(caught.value)


def test_a_compatibility_date_without_ctx_exports_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        load_stack(source(compatibilityDate="2025-11-16"), "dev")
    assert caught.value.keys == ("sandboxkit:cloudflare.compatibilityDate",)
    assert "2025-11-17 or later" in str(caught.value)


def test_an_explicit_warm_pool_needs_acknowledging() -> None:
    with pytest.raises(ConfigError) as caught:
        load_stack(source({"pool": {"ready": 2}}), "dev")
    assert caught.value.keys == ("sandboxkit:profile.pool.ready",)
    spec = load_stack(source({"pool": {"ready": 2}}, unenforced=["pool.ready"]), "dev")
    assert spec.enforcement["cloudflare"]["pool.ready"].kind == "none"


def test_the_account_id_is_required() -> None:
    values = dict(source().values)
    values["cloudflare"] = {k: v for k, v in values["cloudflare"].items() if k != "accountId"}
    with pytest.raises(ConfigError) as caught:
        load_stack(ConfigSource(values=values, secret_paths=source().secret_paths), "dev")
    assert caught.value.keys == ("sandboxkit:cloudflare.accountId",)


ZONE = "example.com"


@pytest.mark.parametrize(
    ("route", "key", "expected"),
    [
        (
            {"pattern": "https://x.example.com/*", "zoneName": ZONE},
            "routes[0].pattern",
            "a route pattern HOST/PATH with '*' only at the start of the host and the end of the "
            "path, no scheme and no query (source: developers.cloudflare.com/workers/"
            "configuration/routing/routes/",
        ),
        (
            {"pattern": "x.example.com/a*b", "zoneName": ZONE},
            "routes[0].pattern",
            "a route pattern HOST/PATH",
        ),
        (
            {"pattern": "x.example.com/?q=*", "zoneName": ZONE},
            "routes[0].pattern",
            "no query",
        ),
        (
            {"pattern": "x.example.com/*", "zoneName": "example.org"},
            "routes[0].pattern",
            "a host in zone example.org (zoneName); x.example.com is not",
        ),
        (
            {"pattern": "x.example.com/*"},
            "routes[0]",
            "a zone for route 'x.example.com/*': set zoneName (or zoneId)",
        ),
        (
            {"pattern": "x.example.com/*", "zoneName": ZONE, "zoneId": "a" * 32},
            "routes[0]",
            "zoneName or zoneId, not both",
        ),
        (
            {"pattern": "x.example.com/*", "zoneId": "EXAMPLE"},
            "routes[0].zoneId",
            "a zone id: 32 lower-case hexadecimal digits",
        ),
        (
            {"pattern": "*.example.com", "customDomain": True},
            "routes[0].pattern",
            "a host name only for a custom domain, without wildcard, scheme or path",
        ),
        (
            {"pattern": "sandbox.example.com/api", "customDomain": True},
            "routes[0].pattern",
            "a host name only for a custom domain",
        ),
        (
            {"pattern": "localhost", "customDomain": True},
            "routes[0].pattern",
            "a host name of at least two labels",
        ),
        (
            {"pattern": "bad_name.example.com", "customDomain": True},
            "routes[0].pattern",
            "a host name: a DNS name of letters, digits and hyphens",
        ),
        (
            {"pattern": "sandbox.example.com", "customDomain": True, "zoneName": "example.org"},
            "routes[0].pattern",
            "a host in zone example.org (zoneName); sandbox.example.com is not",
        ),
        (
            {"pattern": "sandbox.example.com/*", "zoneName": ZONE, "zone_nme": ZONE},
            "routes[0].zone_nme",
            "no such key (did you mean 'zoneName'?)",
        ),
    ],
)
def test_a_bad_route_is_refused_naming_its_key(
    route: dict[str, Any], key: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_stack(source(routes=[route]), "dev")
    assert caught.value.keys == (f"sandboxkit:cloudflare.{key}",)
    assert expected in str(caught.value)


def test_a_repeated_route_pattern_is_refused() -> None:
    twice = [{"pattern": "sandbox.example.com", "customDomain": True}] * 2
    with pytest.raises(ConfigError) as caught:
        load_stack(source(routes=twice), "dev")
    assert caught.value.keys == ("sandboxkit:cloudflare.routes",)
    assert "each pattern once; repeated: sandbox.example.com" in str(caught.value)


def test_good_routes_load_as_given() -> None:
    routes = [
        {"pattern": "sandbox.example.com", "customDomain": True},
        {"pattern": "example.com/run/*", "zoneName": ZONE},
        {"pattern": "*example.com/*", "zoneName": ZONE},
        {"pattern": "*.example.com/run*", "zoneName": ZONE},
    ]
    loaded = load_stack(source(routes=routes), "dev").settings["cloudflare"]
    assert isinstance(loaded, CloudflareSettings)
    assert [route.inputs() for route in loaded.routes] == routes


def test_zone_routes_add_the_zone_groups_to_the_token() -> None:
    def policies(routes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        view = ResourceView.of(SCRIPT, "cloudflare-script", {"routes": routes})
        return list(cloudflare_policy("cloudflare", ACCOUNT, [view]).document["policies"])

    account = f"com.cloudflare.api.account.{ACCOUNT}"
    [only] = policies([{"pattern": "sandbox.example.com", "customDomain": True}])
    # A custom domain is attached with Workers Scripts Write (the API's Attach Domain).
    assert only == {
        "effect": "allow",
        "resources": {account: "*"},
        "permission_groups": [{"name": "Containers Write"}, {"name": "Workers Scripts Write"}],
    }
    [_, zones] = policies([{"pattern": "x.example.com/*", "zoneName": "example.com"}])
    assert zones == {
        "effect": "allow",
        "resources": {account: {"com.cloudflare.api.account.zone.*": "*"}},
        "permission_groups": [{"name": "Workers Routes Write"}, {"name": "Zone Read"}],
    }


def test_caps_carry_their_sources() -> None:
    assert {(c.field, c.maximum) for c in SPEC.caps} == {
        ("limits.vcpu", 4),
        ("limits.memoryMiB", 12288),
        ("limits.maxLifetimeSeconds", 604800),
        ("pool.maxConcurrent", 24000),
    }
    assert all(c.source for c in SPEC.caps)


# --- the CLI and the prod stack --------------------------------------------------------------

STACK_FILE = """\
config:
  sandboxkit:environment: dev
  sandboxkit:targets: [cloudflare]
  sandboxkit:profile:
{profile}
  sandboxkit:cloudflare:
    accountId: "{account}"
    image: {image}
    tokenSigningKey:{auth_token}
    sandboxIdKey:
      secure: v1:BBBBBBBBBBBBBBBB:cXV1eGNvcmdlZ3JhdWx0Zm9vYmFyYmF6
"""


SECURE_TOKEN = "\n      secure: v1:AAAAAAAAAAAAAAAA:Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0"


def project(tmp_path: Path, profile_yaml: str, auth_token: str = SECURE_TOKEN) -> Path:
    (tmp_path / "Pulumi.yaml").write_text("name: sandboxkit\nstackConfigDir: stacks\n")
    (tmp_path / "stacks").mkdir()
    text = STACK_FILE.format(
        profile=profile_yaml, account=ACCOUNT, image=IMAGE, auth_token=auth_token
    )
    (tmp_path / "stacks" / "Pulumi.t.yaml").write_text(text)
    return tmp_path


DENY_PROFILE = "    egress: {mode: deny}\n    pool: {maxConcurrent: 7}"


def run_cli(root: Path, out: Path) -> Any:
    arguments = ["cloudflare-config", "--stack", "t", "--out", str(out), "--project-dir", str(root)]
    return CliRunner().invoke(cli.app, arguments)


def test_cli_writes_the_wrangler_config(tmp_path: Path) -> None:
    root = project(tmp_path, DENY_PROFILE)
    out = root / "deploy" / "wrangler.jsonc"
    out.parent.mkdir()
    result = run_cli(root, out)
    assert result.exit_code == 0, result.output
    assert f"npx wrangler deploy --dry-run --config {out}" in result.output
    written = json.loads(out.read_text())
    assert (out.parent / written["main"]).resolve() == cf_spec.WORKER_MODULE
    assert written["containers"] == [
        {
            "name": "sandboxkit-t-sandbox",
            "class_name": "Sandbox",
            "image": IMAGE,
            "instance_type": "standard-2",
            "max_instances": 7,
        }
    ]
    assert written["vars"]["EGRESS_POLICY"] == '{"mode":"deny","allow":[]}'
    assert "v1:" not in out.read_text()


@pytest.mark.parametrize(
    ("profile_yaml", "auth_token", "key"),
    [
        (
            "    egress: {mode: allowlist, allow: ['151.101.0.223']}",
            SECURE_TOKEN,
            "sandboxkit:profile.egress.allow: got '151.101.0.223:443'; expected DNS names only",
        ),
        (
            DENY_PROFILE,
            f" {SIGNING_KEY}",
            "sandboxkit:cloudflare.tokenSigningKey: got '[secret]'",
        ),
        ("    limits: {vcpu: 6}", SECURE_TOKEN, "sandboxkit:profile.limits.vcpu: got 6.0"),
    ],
    ids=["ip-entry", "plaintext-secret", "too-large-instance"],
)
def test_cli_exits_2_naming_the_key(
    tmp_path: Path, profile_yaml: str, auth_token: str, key: str
) -> None:
    root = project(tmp_path, profile_yaml, auth_token)
    out = root / "wrangler.jsonc"
    result = run_cli(root, out)
    assert result.exit_code == 2
    assert key in result.output
    assert "Traceback" not in result.output
    assert SIGNING_KEY not in result.output
    assert not out.exists()


def test_cli_refuses_a_toml_out_file(tmp_path: Path) -> None:
    root = project(tmp_path, DENY_PROFILE)
    result = run_cli(root, root / "wrangler.toml")
    assert result.exit_code == 2
    assert "--out" in result.output


def test_external_config_for_cloudflare_is_the_wrangler_config(tmp_path: Path) -> None:
    root = project(tmp_path, DENY_PROFILE)
    alias, generic = root / "a" / "wrangler.jsonc", root / "b" / "wrangler.jsonc"
    alias.parent.mkdir()
    generic.parent.mkdir()
    assert run_cli(root, alias).exit_code == 0
    arguments = ["external-config", "--stack", "t", "--target", "cloudflare", "--out"]
    result = CliRunner().invoke(cli.app, [*arguments, str(generic), "--project-dir", str(root)])
    assert result.exit_code == 0, result.output
    assert generic.read_text() == alias.read_text()


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (
            "kubernetes",
            "sandboxkit:targets: got [cloudflare]; expected a list including kubernetes",
        ),
        ("fly", "--target: got 'fly'; expected one of kubernetes, azure-sessions"),
        ("cloudflare", ""),
    ],
)
def test_external_config_names_the_target_it_cannot_write(
    tmp_path: Path, target: str, expected: str
) -> None:
    root = project(tmp_path, DENY_PROFILE)
    out = root / "out.jsonc"
    arguments = ["external-config", "--stack", "t", "--target", target, "--out", str(out)]
    result = CliRunner().invoke(cli.app, [*arguments, "--project-dir", str(root)])
    assert result.exit_code == (2 if expected else 0)
    assert expected in result.output
    assert out.exists() is not bool(expected)


def test_external_config_of_a_target_that_needs_none_exits_2(project_dir: Path) -> None:
    arguments = ["external-config", "--stack", "dev", "--target", "kubernetes", "--out", "x.json"]
    result = CliRunner().invoke(cli.app, [*arguments, "--project-dir", str(project_dir)])
    assert result.exit_code == 2
    assert (
        "--target: got 'kubernetes'; expected a target that needs config outside Pulumi: "
        "cloudflare\n" in result.output
    )
    assert not (project_dir / "x.json").exists()


def test_prod_stack_renders_the_cloudflare_target(project_dir: Path, worker_module: Path) -> None:
    rendered = shipped_render(project_dir, "prod")
    mine = {(r.type, r.name) for r in rendered.resources if rendered.target_of(r) == "cloudflare"}
    assert mine == {
        ("sandboxkit:index:WorkerSandbox", "cloudflare"),
        (SCRIPT, "cloudflare-script"),
    }
    script = one(rendered.resources, SCRIPT)
    texts = {b["name"]: b["text"] for b in script.inputs["bindings"] if "text" in b}
    assert is_secret_value(texts["JWT_SIGNING_KEY"]) and is_secret_value(texts["SANDBOX_ID_KEY"])
    assert texts["JWT_AUDIENCE"] == "sandboxkit-prod"
    assert texts["EGRESS_POLICY"] == '{"mode":"deny","allow":[]}'
    assert script.inputs["workersDev"] is False
    assert script.inputs["containers"][0]["maxInstances"] == 50
