"""`sandboxkit deployer-policy`: what each target's deployer needs, derived from the render and
each target's per-type mapping, so no resource type ships without its permission."""

from __future__ import annotations

import importlib
import json
from pathlib import Path, PurePosixPath
from typing import Any

import pytest

from sandboxkit.catalog import all_kinds
from sandboxkit.deployer import (
    MANAGE_VERBS,
    NO_CLOUD_OBJECT_PREFIXES,
    MissingGrantError,
    api_group,
    cloud_types,
)
from sandboxkit.effective_egress import ResourceView
from sandboxkit.local.type_tokens import EGRESS_GATEWAY_POLICY
from sandboxkit.render import RenderedStack
from sandboxkit.targets import TARGET_MODULES, KitContext, get_target
from sandboxkit.type_tokens import of_type
from support import invoke_cli

ROOT = Path(__file__).resolve().parents[2]
# The folder module holding each target's per-type mapping (``GRANTS``).
MAPPINGS = {
    "kubernetes": ("sandboxkit.kubernetes.deployer",),
    "gcp-cloudrun": ("sandboxkit.gcp.deployer",),
    "gcp-gke": ("sandboxkit.gcp.deployer", "sandboxkit.kubernetes.deployer"),
    "azure-sessions": ("sandboxkit.azure.deployer",),
    "cloudflare": ("sandboxkit.cloudflare.deployer",),
    "local": ("sandboxkit.local.deployer",),
}

# The "Constrain roles" condition of Azure's delegate-role-assignments-examples, for the Azure
# ContainerApps Session Executor role (built-in role id 0fb8eba5-...), written out once here so
# a change to the kit's text is seen.
_EXECUTOR = "0fb8eba5-a2bb-4abe-b1c1-49dfad359bb0"
SESSION_EXECUTOR_ONLY = (
    "((!(ActionMatches{'Microsoft.Authorization/roleAssignments/write'})) OR "
    "(@Request[Microsoft.Authorization/roleAssignments:RoleDefinitionId] "
    f"ForAnyOfAnyValues:GuidEquals {{{_EXECUTOR}}})) AND "
    "((!(ActionMatches{'Microsoft.Authorization/roleAssignments/delete'})) OR "
    "(@Resource[Microsoft.Authorization/roleAssignments:RoleDefinitionId] "
    f"ForAnyOfAnyValues:GuidEquals {{{_EXECUTOR}}}))"
)


def _grants(target: str) -> dict[str, Any]:
    merged: dict[str, Any] = {}
    for module in MAPPINGS[target]:
        merged.update({t.token: g for t, g in importlib.import_module(module).GRANTS.items()})
    return merged


def _policy(rendered: RenderedStack, target: str) -> Any:
    spec = rendered.spec
    context = KitContext(rendered.stack, spec.environment, target)
    return get_target(target).deployer_policy(
        context, spec.settings[target], rendered.target_views(target)
    )


def _cases(renders: list[RenderedStack], target: str) -> list[RenderedStack]:
    found = [r for r in renders if target in r.spec.targets]
    assert found, target
    return found


@pytest.mark.parametrize("target", MAPPINGS)
def test_every_resource_type_a_target_can_create_has_its_permission(target: str) -> None:
    # The catalog lists every type the target's components register (mock outputs, checkov
    # export): a new one without a deployer entry fails here.
    folder = TARGET_MODULES[target].rpartition(".")[0]
    module = importlib.import_module(f"{folder}.catalog")
    kit_types = {k.type for k in module.KINDS if not k.is_prefix}
    kit_types |= {
        k.type
        for k in all_kinds()
        if target == "gcp-gke" and k.type.startswith("kubernetes:") and not k.is_prefix
    }
    cloud = {t for t in kit_types if not t.startswith(NO_CLOUD_OBJECT_PREFIXES)}
    assert cloud - set(_grants(target)) == set()


@pytest.mark.parametrize("target", ["gcp-cloudrun", "gcp-gke"])
def test_gcp_roles_and_apis_are_the_union_over_the_rendered_types(
    renders: list[RenderedStack], target: str
) -> None:
    grants = _grants(target)
    for rendered in _cases(renders, target):
        types = [t for t in cloud_types(rendered.target_views(target)) if t.startswith("gcp:")]
        document = _policy(rendered, target).document
        roles = {role for t in types for role in grants[t].roles}
        if rendered.spec.settings[target].model_dump().get("existing_cluster"):
            roles.add("roles/container.clusterViewer")
        assert document["roles"] == sorted(roles), rendered.stack
        assert document["services"] == sorted({s for t in types for s in grants[t].services})
        assert document["project"] == rendered.spec.settings[target].model_dump()["project"]


@pytest.mark.parametrize("target", ["kubernetes", "gcp-gke"])
def test_the_cluster_role_manages_exactly_the_rendered_objects(
    renders: list[RenderedStack], target: str
) -> None:
    grants = _grants(target)
    for rendered in _cases(renders, target):
        document = _policy(rendered, target).document
        role = document if target == "kubernetes" else document["kubernetes"]
        assert role["kind"] == "ClusterRole"
        assert role["metadata"]["name"] == f"sandboxkit-deployer-{rendered.stack}"
        managed = {
            (group, resource)
            for rule in role["rules"]
            if rule["verbs"] == list(MANAGE_VERBS)
            for group in rule["apiGroups"]
            for resource in rule["resources"]
        }
        objects = [
            t for t in cloud_types(rendered.target_views(target)) if t.startswith("kubernetes:")
        ]
        assert managed == {(api_group(t), grants[t].resource) for t in objects}


def test_prod_documents_are_these(renders: list[RenderedStack]) -> None:
    prod = next(r for r in renders if r.stack == "prod")
    assert _policy(prod, "gcp-cloudrun").document["roles"] == [
        "roles/compute.networkAdmin",
        "roles/compute.securityAdmin",
        "roles/dns.admin",
        "roles/iam.serviceAccountAdmin",
        "roles/iam.serviceAccountUser",
        "roles/logging.configWriter",
        "roles/run.admin",
    ]
    assert _policy(prod, "gcp-gke").document["services"] == [
        "cloudresourcemanager.googleapis.com",
        "compute.googleapis.com",
        "container.googleapis.com",
        "iam.googleapis.com",
        "logging.googleapis.com",
    ]
    subscription = "/subscriptions/00000000-0000-0000-0000-000000000000"
    # prod creates its resource group: every role is assigned above it.
    assert _policy(prod, "azure-sessions").document == {
        "subscriptionId": "00000000-0000-0000-0000-000000000000",
        "assignments": [
            {"role": "Contributor", "scope": subscription},
            {
                "role": "Managed Identity Operator",
                "scope": f"{subscription}/resourceGroups/rg-sandboxkit-identities/providers/"
                "Microsoft.ManagedIdentity/userAssignedIdentities/id-sandbox-image-pull",
            },
            # newcomer F16: unconditioned, this could grant Owner to anyone (= Owner).
            {
                "role": "Role Based Access Control Administrator",
                "scope": subscription,
                "condition": SESSION_EXECUTOR_ONLY,
                "conditionVersion": "2.0",
            },
        ],
        "resourceProviders": ["Microsoft.App", "Microsoft.OperationalInsights"],
    }
    [policy] = _policy(prod, "cloudflare").document["policies"]
    assert policy == {
        "effect": "allow",
        "resources": {"com.cloudflare.api.account.00000000000000000000000000000000": "*"},
        "permission_groups": [{"name": "Containers Write"}, {"name": "Workers Scripts Write"}],
    }


@pytest.mark.parametrize("target", TARGET_MODULES)
def test_every_target_says_what_its_deployer_needs(
    renders: list[RenderedStack], target: str
) -> None:
    prod = next(r for r in renders if r.stack == "prod")
    assert target in prod.spec.targets
    policy = _policy(prod, target)
    assert policy is not None and policy.target == target
    assert policy.document and policy.apply


def test_the_local_document_follows_the_rendered_gateway_policy(
    renders: list[RenderedStack],
) -> None:
    modes = set()
    for rendered in _cases(renders, "local"):
        [view] = of_type(rendered.target_views("local"), EGRESS_GATEWAY_POLICY)
        document = _policy(rendered, "local").document
        paths = [PurePosixPath(str(view.props[key])) for key in ("policyFile", "auditLog")]
        written = {
            (p["path"], f.split(":")[0]) for p in document["writablePaths"] for f in p["files"]
        }
        assert written == {(str(path.parent), path.name) for path in paths}, rendered.stack
        # Only a stack whose sandboxes reach out runs the gateway in a namespace of its own.
        gateway = ["CAP_NET_ADMIN", "CAP_SYS_ADMIN"] if view.props["mode"] != "deny" else []
        assert document["capabilities"] == gateway, rendered.stack
        assert document["debianPackages"] == ["bubblewrap", "libseccomp2"]
        assert document["cgroups"]["controllers"] == ["cpu", "memory", "pids"]
        modes.add(view.props["mode"])
    assert {"deny", "allowlist"} <= modes


def test_the_local_command_prints_the_hosts_needs() -> None:
    ran = invoke_cli("deployer-policy", "--stack", "staging", "--target", "local", cwd=ROOT)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout) == {
        "debianPackages": ["bubblewrap", "libseccomp2"],
        "cgroups": {
            "controllers": ["cpu", "memory", "pids"],
            "v1": "root: a child folder under /sys/fs/cgroup/<controller> per sandbox",
            "v2": "a subtree delegated to the deploying user with these controllers enabled",
        },
        "capabilities": ["CAP_NET_ADMIN", "CAP_SYS_ADMIN"],
        "writablePaths": [
            {
                "path": "~/.local/state/sandboxkit/staging",
                "files": [
                    "local-audit.jsonl: the audit log and its rotated files (sandboxkit run)",
                    "local-egress-policy.json: the egress gateway's policy (pulumi up, "
                    "pulumi destroy)",
                ],
            }
        ],
        "runAs": "root, or a user with the cgroup v2 delegation and the capabilities above",
    }
    assert ran.stderr.startswith(
        "install the packages (bash .ci/install-debian bubblewrap libseccomp2), then run "
        "pulumi up and sandboxkit run as root"
    )


def test_a_foreign_type_in_a_local_stack_is_refused_by_name() -> None:
    views = [ResourceView("command:local:Command", "x", {})]
    with pytest.raises(MissingGrantError, match=r"local: .* command:local:Command"):
        get_target("local").deployer_policy(KitContext("dev", "dev", "local"), None, views)


def test_an_existing_azure_group_scopes_the_roles_to_it(renders: list[RenderedStack]) -> None:
    example = next(r for r in renders if r.stack == "try-azure-sessions")
    settings = example.spec.settings["azure-sessions"]
    group = f"/subscriptions/{settings.model_dump()['subscription_id']}/resourceGroups/rg"
    views = [v for v in example.target_views("azure-sessions") if "ResourceGroup" not in v.type]
    policy = get_target("azure-sessions").deployer_policy(
        KitContext("x", "dev", "azure-sessions"),
        settings.model_copy(update={"resource_group_name": "rg"}),
        views,
    )
    assert policy is not None
    document = policy.document
    assert {(a["role"], a["scope"]) for a in document["assignments"]} >= {
        ("Contributor", group),
        ("Role Based Access Control Administrator", group),
    }
    [administrator] = [a for a in document["assignments"] if a["role"].startswith("Role Based")]
    assert administrator["condition"] == SESSION_EXECUTOR_ONLY
    assert f'--scope {group} --condition "{SESSION_EXECUTOR_ONLY}" --condition-version 2.0' in (
        policy.apply
    )


def test_a_type_without_a_mapping_is_refused_by_name(renders: list[RenderedStack]) -> None:
    prod = next(r for r in renders if r.stack == "prod")
    views = [
        *prod.target_views("gcp-cloudrun"),
        ResourceView("gcp:redis/instance:Instance", "x", {}),
    ]
    with pytest.raises(MissingGrantError, match=r"gcp-cloudrun: .* gcp:redis/instance:Instance"):
        get_target("gcp-cloudrun").deployer_policy(
            KitContext("prod", "prod", "gcp-cloudrun"), prod.spec.settings["gcp-cloudrun"], views
        )


def test_the_command_prints_the_document_and_how_to_apply_it() -> None:
    ran = invoke_cli("deployer-policy", "--stack", "staging", "--target", "gcp-cloudrun", cwd=ROOT)
    assert ran.returncode == 0, ran.stderr
    assert json.loads(ran.stdout)["project"] == "example-sandboxkit-staging"
    assert ran.stderr.startswith("enable the APIs: gcloud services enable compute.googleapis.com")


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("azure-sessions", "; expected a list including azure-sessions (its deployer policy"),
        ("gcp", "--target: got 'gcp'; expected one of kubernetes, azure-sessions,"),
    ],
)
def test_a_target_the_stack_does_not_list_exits_2(target: str, message: str) -> None:
    ran = invoke_cli("deployer-policy", "--stack", "staging", "--target", target, cwd=ROOT)
    assert (ran.returncode, ran.stdout) == (2, "")
    assert message in ran.stderr


def test_the_aws_document_is_the_one_aws_deployer_derives_from_the_plan(
    renders: list[RenderedStack],
) -> None:
    from sandboxkit.aws.deployer import plan_deployer_policy

    for rendered in _cases(renders, "aws-microvm"):
        types = cloud_types(rendered.target_views("aws-microvm"))
        plan = rendered.spec.plans["aws-microvm"]
        expected = plan_deployer_policy(types, plan, stack=rendered.stack, component="aws-microvm")
        found = _policy(rendered, "aws-microvm")
        assert found.document == expected
        assert found.document["Statement"]
