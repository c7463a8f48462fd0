"""One home and one matching rule per resource type: ``sandboxkit.type_tokens``.

pulumi-azure-native declares each resource once per API version beside the default
(``azure-native:app/v20240202preview:ContainerAppsSessionPool``), and pulumi-kubernetes names
every kind by group and version. A stack that registers such a token holds the same resource, so
it must get every check the plain token gets (resource checks, stack checks, the egress reader
and the checkov export), with the same findings for the same bad input and the same silence for
a good one. Before one matcher existed the reader took the versioned pool while none of the
target's seven resource checks did.
"""

from __future__ import annotations

import copy
import importlib
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from test_program_mutations import check as program_check
from test_program_mutations import findings as program_findings
from test_program_mutations import program_project

import support as testing
from sandboxkit import gate, kit_guard, targets
from sandboxkit.azure.deployer import GRANTS, azure_policy
from sandboxkit.catalog import all_kinds, kind_of
from sandboxkit.checkov_bridge.mapping import export_type, setting_for
from sandboxkit.deployer import MissingGrantError, granted
from sandboxkit.effective_egress import EffectiveEgress, ResourceView
from sandboxkit.guard import Handler
from sandboxkit.kubernetes.deployer import deployer_cluster_role
from sandboxkit.policy_rules import SIZE_LIMITS
from sandboxkit.render import RenderedStack
from sandboxkit.type_tokens import EVERY_TYPE, VERSIONED_PACKAGES, TypeToken, without_version
from support import with_input

PROJECT = Path(__file__).resolve().parents[2]
PROD_CONFIG = gate.environment_config_path(gate.pack_dir(PROJECT), "prod")
POOL_TOKEN = "azure-native:app:ContainerAppsSessionPool"
VERSIONED_POOL = "azure-native:app/v20240202preview:ContainerAppsSessionPool"
POOL = "azure-sessions-pool"


# --- the matcher ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rendered", "kind"),
    [
        (VERSIONED_POOL, POOL_TOKEN),
        (POOL_TOKEN, POOL_TOKEN),
        (
            "azure-native:app/v20250202preview:ManagedEnvironment",
            "azure-native:app:ManagedEnvironment",
        ),
        (
            "azure-native:authorization/v20220401:RoleAssignment",
            "azure-native:authorization:RoleAssignment",
        ),
        ("kubernetes:apps/v1:Deployment", "kubernetes:apps:Deployment"),
        ("kubernetes:core/v1:Namespace", "kubernetes:core:Namespace"),
        (
            "kubernetes:extensions.agents.x-k8s.io/v1alpha1:SandboxTemplate",
            "kubernetes:extensions.agents.x-k8s.io:SandboxTemplate",
        ),
        ("kubernetes:yaml:ConfigFile", "kubernetes:yaml:ConfigFile"),
        # Packages without API versions keep every segment: cloudrunv2 is a module's name.
        ("gcp:cloudrunv2/service:Service", "gcp:cloudrunv2/service:Service"),
        ("aws:ec2/vpc:Vpc", "aws:ec2/vpc:Vpc"),
        ("pulumi:providers:azure-native", "pulumi:providers:azure-native"),
        ("not-a-token", "not-a-token"),
    ],
)
def test_a_token_without_its_version_is_its_kind(rendered: str, kind: str) -> None:
    assert without_version(rendered) == kind


def test_a_type_matches_any_version_of_its_own_group_and_name_only() -> None:
    pool = TypeToken(POOL_TOKEN)
    assert pool.matches(VERSIONED_POOL)
    assert pool.matches(POOL_TOKEN)
    assert not pool.matches("azure-native:app:ManagedEnvironment")
    assert not pool.matches("azure-native:web:ContainerAppsSessionPool")
    assert not pool.matches("azure:app/v20240202preview:ContainerAppsSessionPool")
    policy = TypeToken("kubernetes:networking.k8s.io/v1:NetworkPolicy")
    assert policy.matches("kubernetes:networking.k8s.io/v1beta1:NetworkPolicy")
    # Calico's NetworkPolicy is another kind of another group: the reader does not read it.
    assert not policy.matches("kubernetes:crd.projectcalico.org/v1:NetworkPolicy")
    assert not TypeToken("gcp:cloudrunv2/service:Service").matches("gcp:cloudrun/service:Service")
    assert EVERY_TYPE.matches("anything:at/all:Really")


@pytest.mark.parametrize("text", ["", "aws", "aws:Function", "aws::Function", "kubernetes:*:"])
def test_a_malformed_token_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"give <package>:<module>:<type>"):
        TypeToken(text)


def test_a_handler_names_types_by_token_never_by_text() -> None:
    with pytest.raises(TypeError) as refused:
        Handler(SIZE_LIMITS, (POOL_TOKEN,), lambda p, c: (), "pools")  # type: ignore[arg-type]
    assert str(refused.value) == (
        "Handler for SBX-RES-001 names type 'azure-native:app:ContainerAppsSessionPool': name the "
        "target's TypeToken (its type_tokens.py), whose match takes in every API version"
    )


# --- every target: one home, one rule ----------------------------------------------------------


def _folder(target: str) -> str:
    return targets.TARGET_MODULES[target].rpartition(".")[0]


def _tokens_in(module: ModuleType) -> set[TypeToken]:
    """The ``TypeToken`` objects a module holds at its top level (alone or in tuples)."""
    found: set[TypeToken] = set()
    for value in vars(module).values():
        values = value if isinstance(value, tuple) else (value,)
        found |= {v for v in values if isinstance(v, TypeToken)}
    return found - {EVERY_TYPE}


def _home(target: str) -> set[TypeToken]:
    """The tokens of the target's own ``type_tokens.py`` and of those it builds on (gcp-gke
    builds the kubernetes objects; both gcp targets share ``gcp/type_tokens.py``)."""
    folders = {_folder(target), _folder(target).rpartition(".")[0]}
    if target == "gcp-gke":
        folders.add(_folder("kubernetes"))
    found: set[TypeToken] = set()
    for folder in folders:
        name = f"{folder}.type_tokens"
        if importlib.util.find_spec(name) is not None:
            found |= _tokens_in(importlib.import_module(name))
    return found


def variant(token: str) -> str:
    """Another API version's token of the same resource: an azure-native or kubernetes token
    with a version segment put in or changed; any other token unchanged (its package has no
    versions)."""
    package, module, name = token.split(":")
    if package not in VERSIONED_PACKAGES:
        return token
    group = module.rpartition("/")[0] if re.search(r"/v[0-9]", module) else module
    version = "v20240202preview" if package == "azure-native" else "v9alpha9"
    return f"{package}:{group}/{version}:{name}"


def _handlers() -> list[Handler]:
    return [h for h in kit_guard.declared_handlers() if isinstance(h, Handler)]


@pytest.mark.parametrize("target", list(targets.TARGET_MODULES))
def test_every_token_the_reader_reads_lives_in_the_targets_module_and_matches_every_version(
    target: str,
) -> None:
    reader_name = f"{_folder(target)}.egress_reader"
    reader = importlib.import_module(reader_name)
    # gcp-gke's reader is the kubernetes one, named for the target.
    delegates = [m for m in vars(reader).values() if isinstance(m, ModuleType)]
    read = _tokens_in(reader).union(
        *(_tokens_in(m) for m in delegates if m.__name__.endswith(".egress_reader"))
    )
    home = _home(target)
    assert read, f"{reader_name} reads no type token"
    # Stated once: the reader, the handlers and the catalog hold the very objects of the
    # target's type_tokens.py, never a copy of the text.
    assert read <= home
    handlers = _handlers()
    guard = importlib.import_module(f"{_folder(target)}.guard")
    assert {t for h in guard.HANDLERS if isinstance(h, Handler) for t in h.types} - {
        EVERY_TYPE
    } <= home
    assert {sink.type for sink in getattr(guard, "SECRET_SINKS", ())} <= home
    kinds = all_kinds()
    for token in sorted(read | home, key=str):
        other = variant(token.token)
        assert token.matches(other), other
        # Every check that reads the plain token reads the other version's, and no other.
        assert [h for h in handlers if h.applies_to(other)] == [
            h for h in handlers if h.applies_to(token.token)
        ], other
        assert kind_of(other, kinds) == kind_of(token.token, kinds), other
    for kind in kinds:
        if not kind.is_prefix and kind.export is not None:
            other = variant(kind.type)
            assert export_type(other) == export_type(kind.type), other
            for check in kind.settings:
                assert setting_for(other, check) == setting_for(kind.type, check)


def test_the_versioned_session_pool_gets_every_resource_check_of_the_plain_one() -> None:
    reading = [h for h in _handlers() if h.applies_to(VERSIONED_POOL)]
    assert [h.policy for h in reading] == [
        h.policy for h in _handlers() if h.applies_to(POOL_TOKEN)
    ]
    assert sorted(h.policy for h in reading) == [
        "SBX-IAM-002",
        "SBX-NET-001",
        "SBX-RES-001",
        "SBX-RES-002",
        "SBX-RES-003",
        "SBX-SEC-001",
        "SBX-SEC-002",
        "SBX-SEC-003",
    ]


# --- the rendered versioned tokens, judged by the whole pack ------------------------------------


@pytest.fixture(scope="module")
def analyzer() -> testing.RememberingAnalyzer:
    """The pack's analyzer in this process, remembering unchanged resources' answers."""
    return testing.RememberingAnalyzer(gate.InProcessAnalyzer(gate.pack_dir(PROJECT)))


def _render(stack: str, kept: tuple[str, ...], allow: list[str] | None = None) -> RenderedStack:
    """Shipped ``stack`` with only the targets ``kept``; ``allow`` makes its egress that
    allowlist."""
    values = testing.stack_values(PROJECT, stack)
    dropped = set(values["targets"]) - set(kept)
    values = {k: v for k, v in values.items() if k not in dropped}
    values["targets"] = list(kept)
    if allow is not None:
        values["profile"]["egress"] = {"mode": "allowlist", "allow": allow}
    return testing.render_values(PROJECT, stack, values)


def versioned(rendered: RenderedStack, chosen: Callable[[str], bool]) -> RenderedStack:
    """``rendered`` with the type of every custom resource ``chosen`` picks registered as another
    API version's token of it (``variant``), in its type and URN, as a program transform
    changing the token would register it."""
    resources = []
    for resource in rendered.resources:
        other = variant(resource.type)
        if resource.custom and chosen(resource.type) and other != resource.type:
            head, _, name = resource.urn.rpartition("::")
            urn = f"{head[: -len(resource.type)]}{other}::{name}"
            inputs = copy.deepcopy(resource.inputs)
            resources.append(replace(resource, type=other, urn=urn, inputs=inputs))
        else:
            resources.append(resource)
    return replace(rendered, resources=tuple(resources))


def plain_names(rendered: RenderedStack) -> dict[str, str]:
    """Each versioned token ``versioned`` gives a type of ``rendered`` -> that plain type."""
    return {variant(r.type): r.type for r in rendered.resources if variant(r.type) != r.type}


def _plain(text: str, names: dict[str, str]) -> str:
    """``text`` with each versioned token of ``names`` written as its plain one."""
    for other, token in names.items():
        text = text.replace(other, token)
    return text


def findings(
    analyzer: gate.Analyzer, rendered: RenderedStack, names: dict[str, str]
) -> list[tuple[str, str, str]]:
    """``(rule, resource name, message)`` of each finding the pack reports (prod's pack
    config), versioned tokens written as the plain ones."""
    result = gate.check_rendered(analyzer, rendered, PROJECT, PROD_CONFIG)
    return sorted(
        (v.policy, v.urn.rsplit("::", 1)[-1], _plain(v.message, names)) for v in result.violations
    )


def grants(rendered: RenderedStack, target: str, names: dict[str, str]) -> EffectiveEgress:
    """What ``target``'s reader reads in ``rendered``, versioned tokens written as plain ones."""
    found = targets.get_target(target).read_egress(rendered.target_views(target))
    assert found is not None
    return replace(
        found,
        connect=tuple(replace(g, resource=_plain(g.resource, names)) for g in found.connect),
        resolve=tuple(replace(g, resource=_plain(g.resource, names)) for g in found.resolve),
    )


def _azure(token: str) -> bool:
    return token.startswith("azure-native:")


def _kubernetes(token: str) -> bool:
    return token.startswith("kubernetes:")


Edit = Callable[[RenderedStack], RenderedStack]


def _pool(path: tuple[str | int, ...], value: Any) -> Edit:
    return lambda rendered: with_input(rendered, POOL, path, value)


SESSION = ("customContainerTemplate", "containers", 0)
KEY = "AKIAABCDEFGHIJKLMNOP"
IN_REACH = ("managedIdentitySettings", 0, "lifecycle")
SESSIONS_CAP = ("scaleConfiguration", "maxConcurrentSessions")
POOL_EDITS: dict[str, tuple[Edit, set[str]]] = {
    "good": (lambda r: r, set()),
    "egress enabled": (
        _pool(("sessionNetworkConfiguration", "status"), "EgressEnabled"),
        {"SBX-NET-001", "SBX-NET-008"},
    ),
    "identity in reach": (_pool(IN_REACH, "Main"), {"SBX-IAM-002"}),
    "no size limits": (_pool((*SESSION, "resources"), {}), {"SBX-RES-001"}),
    "too many sessions": (_pool(SESSIONS_CAP, 10_000), {"SBX-RES-003"}),
    "image by tag": (_pool((*SESSION, "image"), "ghcr.io/example/agent:latest"), {"SBX-SEC-003"}),
    # A credential in the pool's secrets is where it belongs; in a plain variable it is not.
    "key in secrets": (_pool(("secrets",), [{"name": "key", "value": KEY}]), set()),
    "key in env": (_pool((*SESSION, "env"), [{"name": "KEY", "value": KEY}]), {"SBX-SEC-002"}),
}


@pytest.fixture(scope="module")
def azure_prod() -> RenderedStack:
    return _render("prod", ("azure-sessions",))


@pytest.mark.parametrize("edit", list(POOL_EDITS))
def test_the_versioned_session_pool_is_judged_and_read_as_the_plain_one(
    analyzer: gate.Analyzer, azure_prod: RenderedStack, edit: str
) -> None:
    change, caught = POOL_EDITS[edit]
    plain = change(azure_prod)
    other = versioned(plain, _azure)
    assert [r.type for r in plain.resources if r.name == POOL] == [POOL_TOKEN]
    assert [r.type for r in other.resources if r.name == POOL] == [VERSIONED_POOL]
    names = plain_names(plain)
    baseline = {p for p, name, _ in findings(analyzer, azure_prod, names) if name == POOL}
    found = findings(analyzer, plain, names)
    assert {p for p, name, _ in found if name == POOL} - baseline == caught
    assert findings(analyzer, other, names) == found
    # The reader reads the versioned pool the same: every address (TCP and UDP) and every name
    # when egress is enabled (two TCP and two UDP connect grants, one resolve grant), nothing
    # when it is disabled.
    read = grants(plain, "azure-sessions", names)
    assert grants(other, "azure-sessions", names) == read
    opened = "SBX-NET-001" in caught
    assert (len(read.connect), len(read.resolve)) == ((4, 1) if opened else (0, 0))


# dev's Cilium allowlist with the kit's resolver (NetworkPolicy, CiliumNetworkPolicy, the
# resolver's ConfigMap and Deployment); gcp-gke with one address entry (it takes IP entries only).
KUBERNETES_CASES = {
    "kubernetes": ("dev", None),
    "gcp-gke": ("prod", ["151.101.0.223:443"]),
}


@pytest.mark.parametrize("target", list(KUBERNETES_CASES))
def test_kubernetes_objects_of_another_api_version_are_judged_and_read_the_same(
    analyzer: gate.Analyzer, target: str
) -> None:
    stack, allow = KUBERNETES_CASES[target]
    plain = _render(stack, (target,), allow)
    other = versioned(plain, _kubernetes)
    changed = {r.type for r in other.resources} - {r.type for r in plain.resources}
    assert {t.rpartition(":")[2] for t in changed} >= {"NetworkPolicy", "SandboxTemplate"}
    names = plain_names(plain)
    assert findings(analyzer, other, names) == findings(analyzer, plain, names)
    read = grants(plain, target, names)
    assert read.connect
    assert grants(other, target, names) == read


def test_the_deployer_policy_of_versioned_tokens_is_the_plain_ones(
    azure_prod: RenderedStack,
) -> None:
    # Each rendered type takes its target's deployer entry (TypeToken.matches): a versioned
    # pool or object needs what the plain one needs, never a missing-permission refusal.
    def azure(rendered: RenderedStack) -> Any:
        views = rendered.target_views("azure-sessions")
        return azure_policy("azure-sessions", "sub", "rg", None, views).document

    other = versioned(azure_prod, _azure)
    assert VERSIONED_POOL in {r.type for r in other.resources}
    assert azure(other) == azure(azure_prod)
    dev = _render("dev", ("kubernetes",))

    def role(rendered: RenderedStack) -> Any:
        return deployer_cluster_role("kubernetes", "dev", rendered.target_views("kubernetes"))

    assert role(versioned(dev, _kubernetes)) == role(dev)
    with pytest.raises(MissingGrantError, match=r"azure-native:app/v20240202preview:Job"):
        granted(
            "azure-sessions", GRANTS, [ResourceView.of(variant("azure-native:app:Job"), "j", {})]
        )


# A resource type token as text: "<package>:<module>:<Type>" of a provider the kit's targets use.
TOKEN_TEXT = re.compile(
    r"[\"'](?:aws|gcp|azure-native|cloudflare|kubernetes|pulumi-python):[^\"'\s]*:[A-Z]\w*[\"']"
)
# A type compared or matched some other way than TypeToken.matches.
OTHER_MATCH = re.compile(
    r"(?<!for )(?:\.type|resource_type)\s*(?:==|!=|\bin\b|\bnot in\b)\s*[\w(\[{]"
    r"|(?:\.type|resource_type)\.endswith\(|re\.compile\([^)]*(?:azure-native|kubernetes):"
)


def _folders() -> set[Path]:
    package = PROJECT / "components"
    return {package.joinpath(*_folder(target).split(".")) for target in targets.TARGET_MODULES} | {
        PROJECT / "components" / "sandboxkit" / "kit_guard.py"
    }


@pytest.mark.parametrize("pattern", [TOKEN_TEXT, OTHER_MATCH], ids=["token text", "other match"])
def test_targets_state_tokens_in_their_module_and_match_them_one_way(
    pattern: re.Pattern[str],
) -> None:
    found = []
    for place in sorted(_folders()):
        for path in sorted(place.rglob("*.py")) if place.is_dir() else [place]:
            if path.name == "type_tokens.py":
                continue
            for number, line in enumerate(path.read_text().splitlines(), 1):
                if pattern.search(line):
                    found.append(f"{path.relative_to(PROJECT)}:{number}: {line.strip()}")
    assert found == []


@pytest.mark.parametrize(
    ("line", "pattern"),
    [
        ('POOL = "azure-native:app:ContainerAppsSessionPool"', TOKEN_TEXT),
        ("    if view.type == NETWORK_POLICY:", OTHER_MATCH),
        ("        if r.resource_type.endswith(':SandboxTemplate'):", OTHER_MATCH),
        ('_POOL = re.compile(r"^azure-native:app(/v[0-9a-z]+)?:X$")', OTHER_MATCH),
        ("    found = [v for v in resources if v.type in kinds]", OTHER_MATCH),
        ("    kinds = [k for k in (FOO,) if k.resource_type != BAR]", OTHER_MATCH),
    ],
)
def test_the_scan_finds_the_old_ways(line: str, pattern: re.Pattern[str]) -> None:
    assert pattern.search(line)


def _pool_program(token: str) -> str:
    """A program body registering its own session pool of ``token`` beside the kit's: egress
    enabled, an image by tag, no container resources."""
    return f"""
    pulumi.CustomResource(
        {token!r},
        "acme-pool",
        {{
            "resourceGroupName": "rg-acme",
            "sessionPoolName": "acme-pool",
            "location": "westeurope",
            "poolManagementType": "Dynamic",
            "containerType": "CustomContainer",
            "sessionNetworkConfiguration": {{"status": "EgressEnabled"}},
            "customContainerTemplate": {{
                "containers": [{{"name": "agent", "image": "ghcr.io/acme/agent:latest"}}]
            }},
        }},
    )
    """


def test_a_programs_own_versioned_pool_fails_the_gate_as_a_plain_one(tmp_path: Path) -> None:
    # pulumi-azure-native declares the versioned token as an alias of the pool
    # (ContainerAppsSessionPool's alias_opts); a project's program may register either.
    example = (PROJECT / "docs" / "examples" / "azure-sessions.yaml").read_text()
    judged = {}
    for token in (POOL_TOKEN, VERSIONED_POOL):
        root = tmp_path / token.split(":")[1].replace("/", "-")
        root.mkdir()
        ran = program_check(program_project(root, _pool_program(token), example))
        assert ran.returncode == 1, ran.stdout + ran.stderr
        judged[token] = sorted(
            (policy, message.replace(VERSIONED_POOL, POOL_TOKEN))
            for policy, message in program_findings(ran)
        )
    assert judged[VERSIONED_POOL] == judged[POOL_TOKEN]
    on_pool = {policy for policy, message in judged[POOL_TOKEN] if "acme-pool" in message}
    assert on_pool >= {"SBX-NET-001", "SBX-NET-008", "SBX-RES-001", "SBX-SEC-003"}
