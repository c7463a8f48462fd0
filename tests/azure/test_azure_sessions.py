"""The azure-sessions target: its children, hardened inputs, stack config and exit-2 cases."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from sandboxkit.azure.plan import SESSION_EXECUTOR_ROLE_ID
from sandboxkit.azure.sessions import SessionPoolSandbox
from sandboxkit.azure.spec import AzureSessionsSettings, session_pool_args
from sandboxkit.config import ConfigSource, load_stack
from sandboxkit.errors import ConfigError
from sandboxkit.profile import SandboxProfile
from sandboxkit.render import Recorder, is_secret_value, render_source
from sandboxkit.targets import KitContext
from support import named, one, shipped_render

SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"
EXECUTOR = "11111111-1111-1111-1111-111111111111"
IDENTITY = (
    f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-identities/providers/"
    "Microsoft.ManagedIdentity/userAssignedIdentities/id-pull"
)
POOL = "azure-native:app:ContainerAppsSessionPool"
TAGS = {
    "managed-by": "sandboxkit",
    "sandboxkit-stack": "test",
    "sandboxkit-environment": "prod",
    "sandboxkit-target": "azure-sessions",
}
BASE_SETTINGS: dict[str, Any] = {
    "subscriptionId": SUBSCRIPTION,
    "location": "westeurope",
    "resourceGroupName": "rg-sbx",
    "createResourceGroup": True,
    "executors": [{"principalId": EXECUTOR, "principalType": "ServicePrincipal"}],
}
CUSTOM_SETTINGS: dict[str, Any] = {
    **BASE_SETTINGS,
    "containerType": "CustomContainer",
    "image": "example.azurecr.io/sandbox:1",
    "identity": {
        "resourceId": IDENTITY,
        "lifecycle": "None",
        "registryServer": "example.azurecr.io",
    },
}


def _source(
    settings: dict[str, Any] | None = None, profile: dict[str, Any] | None = None
) -> ConfigSource:
    return ConfigSource(
        values={
            "environment": "prod",
            "targets": ["azure-sessions"],
            "profile": profile or {},
            "azure-sessions": copy.deepcopy(settings if settings is not None else BASE_SETTINGS),
        }
    )


def _build(
    engine: Recorder, settings: dict[str, Any], profile: dict[str, Any] | None = None
) -> None:
    spec = load_stack(_source(settings, profile), "test")
    parsed = spec.settings["azure-sessions"]
    assert isinstance(parsed, AzureSessionsSettings)
    context = KitContext(stack="test", environment="prod", target="azure-sessions")
    engine.run(
        lambda: SessionPoolSandbox(
            "azure-sessions", session_pool_args(spec.profile, parsed, context)
        )
    )


def _problem_keys(
    settings: dict[str, Any], profile: dict[str, Any] | None = None
) -> tuple[str, ...]:
    with pytest.raises(ConfigError) as caught:
        load_stack(_source(settings, profile), "test")
    return caught.value.keys


def test_children_are_exactly_these(engine: Recorder) -> None:
    _build(engine, CUSTOM_SETTINGS)
    assert sorted((r.type, r.name) for r in engine.resources) == sorted(
        [
            ("sandboxkit:index:SessionPoolSandbox", "azure-sessions"),
            ("pulumi:providers:azure-native", "azure-sessions-provider"),
            ("azure-native:resources:ResourceGroup", "azure-sessions-resource-group"),
            ("azure-native:operationalinsights:Workspace", "azure-sessions-logs"),
            ("azure-native:app:ManagedEnvironment", "azure-sessions-environment"),
            (POOL, "azure-sessions-pool"),
            ("azure-native:authorization:RoleAssignment", "azure-sessions-executor-0"),
        ]
    )
    component = named(engine.resources, "azure-sessions")
    assert all(r.parent == component.urn for r in engine.resources if r is not component)


def test_an_existing_resource_group_is_used_not_created(engine: Recorder) -> None:
    _build(engine, {**BASE_SETTINGS, "createResourceGroup": False})
    assert not [r for r in engine.resources if r.type == "azure-native:resources:ResourceGroup"]
    assert named(engine.resources, "azure-sessions-pool").inputs["resourceGroupName"] == "rg-sbx"


def test_provider_is_pinned_to_the_settings(engine: Recorder) -> None:
    _build(engine, BASE_SETTINGS)
    provider = named(engine.resources, "azure-sessions-provider")
    assert provider.inputs["subscriptionId"] == SUBSCRIPTION
    assert provider.inputs["location"] == "westeurope"


def test_deny_pool_is_hardened(engine: Recorder) -> None:
    _build(
        engine,
        CUSTOM_SETTINGS,
        {"limits": {"idleTimeoutSeconds": 900}, "pool": {"ready": 3, "maxConcurrent": 20}},
    )
    pool = one(engine.resources, POOL).inputs
    assert pool["poolManagementType"] == "Dynamic"
    assert pool["containerType"] == "CustomContainer"
    assert pool["sessionNetworkConfiguration"] == {"status": "EgressDisabled"}
    assert pool["dynamicPoolConfiguration"] == {
        "lifecycleConfiguration": {"lifecycleType": "Timed", "cooldownPeriodInSeconds": 900}
    }
    assert pool["scaleConfiguration"] == {"maxConcurrentSessions": 20, "readySessionInstances": 3}
    assert pool["customContainerTemplate"]["containers"] == [
        {
            "name": "sandbox",
            "image": "example.azurecr.io/sandbox:1",
            "resources": {"cpu": 1, "memory": "2Gi"},
        }
    ]
    assert pool["identity"] == {"type": "UserAssigned", "userAssignedIdentities": [IDENTITY]}
    assert pool["managedIdentitySettings"] == [{"identity": IDENTITY, "lifecycle": "None"}]
    assert pool["customContainerTemplate"]["registryCredentials"] == {
        "server": "example.azurecr.io",
        "identity": IDENTITY,
    }
    assert "secrets" not in pool
    assert pool["tags"] == TAGS


def test_python_pool_has_no_identity_no_template_no_ready_count(engine: Recorder) -> None:
    _build(engine, BASE_SETTINGS)
    pool = one(engine.resources, POOL).inputs
    assert pool["containerType"] == "PythonLTS"
    assert pool["scaleConfiguration"] == {"maxConcurrentSessions": 50}
    assert "identity" not in pool
    assert "managedIdentitySettings" not in pool
    assert "customContainerTemplate" not in pool


def test_the_component_s_egress_switch(engine: Recorder) -> None:
    # The component takes the switch as given (a fork may turn egress on); the target never
    # plans it on (see test_open_egress_is_refused).
    spec = load_stack(_source(BASE_SETTINGS), "test")
    parsed = spec.settings["azure-sessions"]
    assert isinstance(parsed, AzureSessionsSettings)
    args = session_pool_args(spec.profile, parsed, KitContext("test", "prod", "azure-sessions"))
    assert args["egress_enabled"] is False
    engine.run(lambda: SessionPoolSandbox("azure-sessions", {**args, "egress_enabled": True}))
    assert one(engine.resources, POOL).inputs["sessionNetworkConfiguration"] == {
        "status": "EgressEnabled"
    }


def test_open_egress_is_refused() -> None:
    with pytest.raises(ConfigError) as caught:
        load_stack(_source(BASE_SETTINGS, {"egress": {"mode": "open"}}), "test")
    [problem] = caught.value.problems
    assert (problem.key, problem.value) == ("sandboxkit:profile.egress.mode", "open")
    assert problem.expected.startswith("deny for target azure-sessions: ")
    assert "aws-microvm" in problem.expected


def test_executor_role_is_scoped_to_this_pool(engine: Recorder) -> None:
    group = {"principalId": "22222222-2222-2222-2222-222222222222", "principalType": "Group"}
    _build(engine, {**BASE_SETTINGS, "executors": [*BASE_SETTINGS["executors"], group]})
    pool = named(engine.resources, "azure-sessions-pool")
    role_definition = (
        f"/subscriptions/{SUBSCRIPTION}/providers/Microsoft.Authorization/roleDefinitions/"
        "0fb8eba5-a2bb-4abe-b1c1-49dfad359bb0"
    )
    assert SESSION_EXECUTOR_ROLE_ID == "0fb8eba5-a2bb-4abe-b1c1-49dfad359bb0"
    assignments = [named(engine.resources, f"azure-sessions-executor-{n}") for n in (0, 1)]
    pool_id = (
        f"/subscriptions/{SUBSCRIPTION}/resourceGroups/{pool.inputs['resourceGroupName']}"
        f"/providers/Microsoft.App/sessionPools/{pool.inputs['sessionPoolName']}"
    )
    assert [
        (a.inputs["principalId"], a.inputs["principalType"], a.inputs["scope"]) for a in assignments
    ] == [(EXECUTOR, "ServicePrincipal", pool_id), (group["principalId"], "Group", pool_id)]
    assert {a.inputs["roleDefinitionId"] for a in assignments} == {role_definition}


def test_workspace_retention_and_environment_logs(engine: Recorder) -> None:
    _build(engine, BASE_SETTINGS, {"audit": {"logRetentionDays": 90}})
    workspace = named(engine.resources, "azure-sessions-logs").inputs
    assert workspace["retentionInDays"] == 90
    assert workspace["sku"] == {"name": "PerGB2018"}
    assert workspace["tags"] == TAGS
    environment = named(engine.resources, "azure-sessions-environment").inputs
    logs = environment["appLogsConfiguration"]
    assert logs["destination"] == "log-analytics"
    assert logs["logAnalyticsConfiguration"]["customerId"] == SUBSCRIPTION
    assert is_secret_value(logs["logAnalyticsConfiguration"]["sharedKey"])
    assert logs["logAnalyticsConfiguration"]["sharedKey"]["value"] == "mock-primary-shared-key"
    assert environment["workloadProfiles"] == [
        {"name": "Consumption", "workloadProfileType": "Consumption"}
    ]
    assert environment["tags"] == TAGS
    assert named(engine.resources, "azure-sessions-resource-group").inputs["tags"] == TAGS


def test_stack_outputs(project_dir: Path) -> None:
    rendered = render_source(project_dir, "test", _source())
    assert rendered.outputs["azure-sessions"] == {
        "poolManagementEndpoint": (
            f"https://westeurope.dynamicsessions.io/subscriptions/{SUBSCRIPTION}"
            "/resourceGroups/rg-sbx/sessionPools/sbx-test-pool"
        ),
        "poolName": "sbx-test-pool",
        "environmentName": "sbx-test-env",
        "workspaceName": "sbx-test-logs",
        "workspaceId": f"/subscriptions/{SUBSCRIPTION}/mock/azure-sessions-logs",
    }


def test_allowlist_exits_naming_the_key_and_alternatives() -> None:
    profile = {"egress": {"mode": "allowlist", "allow": ["pypi.org"]}}
    with pytest.raises(ConfigError) as caught:
        load_stack(_source(profile=profile), "test")
    assert caught.value.keys == ("sandboxkit:profile.egress.mode",)
    expected = caught.value.problems[0].expected
    for alternative in ("deny", "aws-microvm", "gcp-cloudrun", "kubernetes", "cloudflare"):
        assert alternative in expected


@pytest.mark.parametrize("idle", [299, 3601])
def test_cooldown_outside_the_api_range_exits(idle: int) -> None:
    profile = {"limits": {"idleTimeoutSeconds": idle, "maxLifetimeSeconds": 7200}}
    settings = {**BASE_SETTINGS, "unenforced": ["limits.maxLifetimeSeconds"]}
    with pytest.raises(ConfigError) as caught:
        load_stack(_source(settings, profile), "test")
    assert caught.value.keys == ("sandboxkit:profile.limits.idleTimeoutSeconds",)
    assert "from 300 to 3600" in caught.value.problems[0].expected


@pytest.mark.parametrize(
    ("section", "value", "key"),
    [
        ({"audit": {"logRetentionDays": 29}}, 29, "sandboxkit:profile.audit.logRetentionDays"),
        ({"audit": {"logRetentionDays": 731}}, 731, "sandboxkit:profile.audit.logRetentionDays"),
        ({"pool": {"maxConcurrent": 601}}, 601, "sandboxkit:profile.pool.maxConcurrent"),
    ],
)
def test_other_caps_exit(section: dict[str, Any], value: int, key: str) -> None:
    assert _problem_keys(BASE_SETTINGS, section) == (key,)


@pytest.mark.parametrize("lifecycle", ["Main", "All"])
def test_identity_reachable_from_session_code_exits(lifecycle: str) -> None:
    settings = {**BASE_SETTINGS, "identity": {"resourceId": IDENTITY, "lifecycle": lifecycle}}
    assert _problem_keys(settings) == ("sandboxkit:azure-sessions.identity.lifecycle",)


@pytest.mark.parametrize(
    ("limits", "key"),
    [
        ({"vcpu": 0.3, "memoryMiB": 614}, "sandboxkit:profile.limits.vcpu"),
        ({"vcpu": 4.25, "memoryMiB": 8704}, "sandboxkit:profile.limits.vcpu"),
        ({"vcpu": 1, "memoryMiB": 4096}, "sandboxkit:profile.limits.memoryMiB"),
    ],
)
def test_custom_container_size_outside_the_combinations_exits(
    limits: dict[str, Any], key: str
) -> None:
    assert _problem_keys(CUSTOM_SETTINGS, {"limits": limits}) == (key,)


@pytest.mark.parametrize(
    ("change", "key"),
    [
        ({"subscriptionId": None}, "sandboxkit:azure-sessions.subscriptionId"),
        ({"location": None}, "sandboxkit:azure-sessions.location"),
        ({"resourceGroupName": None}, "sandboxkit:azure-sessions.resourceGroupName"),
        ({"createResourceGroup": None}, "sandboxkit:azure-sessions.createResourceGroup"),
        ({"executors": []}, "sandboxkit:azure-sessions.executors"),
        ({"subscriptionId": "not-a-uuid"}, "sandboxkit:azure-sessions.subscriptionId"),
        ({"image": "example.azurecr.io/x:1"}, "sandboxkit:azure-sessions.image"),
        ({"containerType": "CustomContainer"}, "sandboxkit:azure-sessions.image"),
        ({"containerType": "NodeLTS"}, "sandboxkit:azure-sessions.containerType"),
    ],
)
def test_bad_settings_exit_naming_the_key(change: dict[str, Any], key: str) -> None:
    settings = {k: v for k, v in {**BASE_SETTINGS, **change}.items() if v is not None}
    assert _problem_keys(settings) == (key,)


@pytest.mark.parametrize(
    ("executors", "key", "expected"),
    [
        (
            [{"principalId": EXECUTOR, "principalType": "Everyone"}],
            "sandboxkit:azure-sessions.executors[0].principalType",
            "'ServicePrincipal', 'User' or 'Group'",
        ),
        (
            [
                {"principalId": EXECUTOR, "principalType": "User"},
                {"principalId": "not-a-uuid", "principalType": "Group"},
            ],
            "sandboxkit:azure-sessions.executors[1].principalId",
            "a GUID (8-4-4-4-12 hexadecimal digits)",
        ),
        (
            [],
            "sandboxkit:azure-sessions.executors",
            "at least one executor ({principalId: <uuid>, principalType: ServicePrincipal, "
            "User or Group}) given the Session Executor role",
        ),
    ],
    ids=["bad-type", "bad-second-id", "none"],
)
def test_one_bad_executor_is_one_problem(
    executors: list[dict[str, str]], key: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        load_stack(_source({**BASE_SETTINGS, "executors": executors}), "test")
    (problem,) = caught.value.problems
    assert problem.key == key
    assert problem.expected.startswith(expected)


def test_explicit_lifetime_needs_acknowledging() -> None:
    profile = {"limits": {"maxLifetimeSeconds": 1800}}
    assert _problem_keys(BASE_SETTINGS, profile) == (
        "sandboxkit:profile.limits.maxLifetimeSeconds",
    )
    settings = {**BASE_SETTINGS, "unenforced": ["limits.maxLifetimeSeconds"]}
    enforcement = load_stack(_source(settings, profile), "test").enforcement["azure-sessions"]
    assert enforcement["limits.maxLifetimeSeconds"].kind == "none"
    assert enforcement["limits.idleTimeoutSeconds"].kind == "platform"


def test_a_secure_setting_that_is_no_secret_exits() -> None:
    source = _source()
    source = ConfigSource(
        values=source.values, secret_paths=frozenset({"azure-sessions.subscriptionId"})
    )
    with pytest.raises(ConfigError) as caught:
        load_stack(source, "test")
    assert caught.value.keys == ("sandboxkit:azure-sessions.subscriptionId",)


def test_prod_stack_renders_the_pool_with_egress_disabled(project_dir: Path) -> None:
    rendered = shipped_render(project_dir, "prod")
    pools = [r for r in rendered.resources if r.type == POOL]
    assert [rendered.target_of(p) for p in pools] == ["azure-sessions"]
    assert pools[0].inputs["sessionNetworkConfiguration"] == {"status": "EgressDisabled"}


def test_component_refuses_an_identity_lifecycle_of_main(engine: Recorder) -> None:
    profile = SandboxProfile()
    settings = AzureSessionsSettings.model_validate(BASE_SETTINGS)
    context = KitContext(stack="test", environment="prod", target="azure-sessions")
    args = session_pool_args(profile, settings, context)
    args["identity_resource_id"] = IDENTITY
    args["identity_lifecycle"] = "Main"
    with pytest.raises(ValueError, match="identity_lifecycle 'Main': None or Init"):
        engine.run(lambda: SessionPoolSandbox("azure-sessions", args))


def test_component_refuses_a_cooldown_outside_the_api_range(engine: Recorder) -> None:
    settings = AzureSessionsSettings.model_validate(BASE_SETTINGS)
    context = KitContext(stack="test", environment="prod", target="azure-sessions")
    args = session_pool_args(SandboxProfile(), settings, context)
    args["cooldown_seconds"] = 200
    with pytest.raises(ValueError, match="cooldown_seconds 200: from 300 to 3600"):
        engine.run(lambda: SessionPoolSandbox("azure-sessions", args))


# The shipped prod stack before the fix: it created rg-sandboxkit-prod and pointed at an
# identity inside it (absent group: the pool finds no identity; present: creating it fails).
SAME_GROUP_IDENTITY = (
    f"/subscriptions/{SUBSCRIPTION}/resourceGroups/RG-SBX/providers/"
    "Microsoft.ManagedIdentity/userAssignedIdentities/id-pull"
)


def test_a_created_group_holding_the_identity_exits_naming_both_keys() -> None:
    settings = {**CUSTOM_SETTINGS, "identity": {**CUSTOM_SETTINGS["identity"]}}
    settings["identity"]["resourceId"] = SAME_GROUP_IDENTITY
    with pytest.raises(ConfigError) as caught:
        load_stack(_source(settings), "test")
    (problem,) = caught.value.problems
    assert problem.key == "sandboxkit:azure-sessions.identity.resourceId"
    assert problem.value == SAME_GROUP_IDENTITY
    assert problem.expected == (
        "an identity outside resource group rg-sbx while createResourceGroup is true (the "
        "stack creates that group, so it cannot already hold the identity); set "
        "createResourceGroup: false to deploy into the existing group that holds it, or use "
        "an identity in another group"
    )


def test_an_existing_group_may_hold_the_identity(engine: Recorder) -> None:
    settings = {
        **CUSTOM_SETTINGS,
        "createResourceGroup": False,
        "identity": {**CUSTOM_SETTINGS["identity"], "resourceId": SAME_GROUP_IDENTITY},
    }
    _build(engine, settings)
    pool = one(engine.resources, POOL).inputs
    assert pool["identity"]["userAssignedIdentities"] == [SAME_GROUP_IDENTITY]
    assert not [r for r in engine.resources if r.type == "azure-native:resources:ResourceGroup"]
