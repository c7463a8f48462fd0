"""The mutation table: each hardened default the components set, weakened, and the policy that
catches it.

A row weakens a shipped stack either through its config (what a user could write) or, when no
config can weaken it, through one rendered input. The unmutated stack must be silent for the
policy; the mutated one must raise exactly the expected policies and nothing else new.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from sandboxkit import gate, testing
from sandboxkit.render import RenderedStack
from sandboxkit.testing import REMOVE, with_input, without

PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def analyzer() -> gate.InProcessAnalyzer:
    """The pack's analyzer servicer in this process (every check reconfigures it)."""
    return gate.InProcessAnalyzer(gate.pack_dir(PROJECT))


def stack_values(stack: str) -> dict[str, Any]:
    return testing.stack_values(PROJECT, stack)


def render(stack: str, values: dict[str, Any]) -> RenderedStack:
    return testing.render_values(PROJECT, stack, values)


ConfigMutation = Callable[[dict[str, Any]], None]
InputMutation = Callable[[RenderedStack], RenderedStack]

TEMPLATE = "kubernetes-template"
POD = ("spec", "podTemplate", "spec")
CONTAINER = (*POD, "containers", 0)
SECURITY = (*CONTAINER, "securityContext")


def _profile(section: str, key: str, value: Any) -> ConfigMutation:
    def mutate(values: dict[str, Any]) -> None:
        values.setdefault("profile", {}).setdefault(section, {})[key] = value

    return mutate


def _open_egress(values: dict[str, Any]) -> None:
    values["profile"]["egress"] = {"mode": "open"}


def _big_pool(values: dict[str, Any]) -> None:
    values["profile"]["pool"] = {"ready": 150, "maxConcurrent": 500}


def _host_runtime(values: dict[str, Any]) -> None:
    values["kubernetes"]["runtimeClass"] = {"name": "runc", "create": False}


def _set(name: str, path: tuple[str | int, ...], value: Any) -> InputMutation:
    return lambda rendered: with_input(rendered, name, path, value)


def _drop(name: str) -> InputMutation:
    return lambda rendered: without(rendered, name)


@dataclass(frozen=True)
class Row:
    """One hardened default: where it lives, how it is weakened, what must catch it.

    ``expected`` holds (policy id, resource name) pairs; ``targets`` narrows the stack to some
    of its targets (when a value beyond one target's cap is refused by config validation).
    """

    id: str
    stack: str
    expected: frozenset[tuple[str, str]]
    config: ConfigMutation | None = None
    inputs: InputMutation | None = None
    targets: tuple[str, ...] = ()


def _caught(*pairs: tuple[str, str]) -> frozenset[tuple[str, str]]:
    return frozenset(pairs)


KUBERNETES_ONLY = ("kubernetes",)
POOL = "azure-sessions-pool"
SESSION = ("customContainerTemplate", "containers", 0)
COOLDOWN = ("dynamicPoolConfiguration", "lifecycleConfiguration")
EXECUTOR = "azure-sessions-executor-0"
ZERO_GUID = "00000000-0000-0000-0000-000000000000"
ROLE_DEFINITIONS = f"/subscriptions/{ZERO_GUID}/providers/Microsoft.Authorization/roleDefinitions"
OWNER_ROLE = "8e3af657-a8ff-443c-a75c-2fe8c4bcb635"


ROWS = [
    # Config a user could write.
    Row(
        "egress-open",
        "prod",
        _caught(("SBX-NET-001", "kubernetes-network-policy"), ("SBX-NET-001", POOL)),
        config=_open_egress,
    ),
    Row(
        "vcpu-above-max",
        "prod",
        _caught(("SBX-RES-001", TEMPLATE)),
        config=_profile("limits", "vcpu", 16),
        targets=KUBERNETES_ONLY,
    ),
    Row(
        "memory-above-max",
        "prod",
        _caught(("SBX-RES-001", TEMPLATE)),
        config=_profile("limits", "memoryMiB", 65536),
        targets=KUBERNETES_ONLY,
    ),
    Row(
        "lifetime-above-max",
        "prod",
        _caught(("SBX-RES-002", TEMPLATE)),
        config=_profile("limits", "maxLifetimeSeconds", 86400),
    ),
    Row(
        "concurrency-above-max",
        "prod",
        _caught(("SBX-RES-003", "kubernetes-quota")),
        config=_profile("pool", "maxConcurrent", 2000),
        targets=KUBERNETES_ONLY,
    ),
    Row(
        "warm-pool-above-max",
        "prod",
        _caught(("SBX-RES-003", "kubernetes-warm-pool"), ("SBX-RES-003", POOL)),
        config=_big_pool,
    ),
    Row("host-kernel-runtime", "prod", _caught(("SBX-K8S-004", TEMPLATE)), config=_host_runtime),
    # Rendered inputs no config can weaken.
    Row(
        "network-policy-managed",
        "prod",
        _caught(("SBX-NET-001", TEMPLATE)),
        inputs=_set(TEMPLATE, ("spec", "networkPolicyManagement"), "Managed"),
    ),
    Row(
        "network-policy-ingress-only",
        "prod",
        _caught(("SBX-NET-001", "kubernetes-network-policy"), ("SBX-NET-005", TEMPLATE)),
        inputs=_set("kubernetes-network-policy", ("spec", "policyTypes"), ["Ingress"]),
    ),
    Row(
        "network-policy-admits-all",
        "prod",
        _caught(("SBX-NET-001", "kubernetes-network-policy")),
        inputs=_set("kubernetes-network-policy", ("spec", "egress"), [{"ports": []}]),
    ),
    Row(
        "network-policy-removed",
        "prod",
        _caught(("SBX-NET-005", TEMPLATE)),
        inputs=_drop("kubernetes-network-policy"),
    ),
    Row(
        "allow-private-range",
        "prod",
        _caught(("SBX-NET-002", "kubernetes-network-policy")),
        inputs=_set(
            "kubernetes-network-policy",
            ("spec", "egress"),
            [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}],
        ),
    ),
    Row(
        "allow-metadata-address",
        "prod",
        _caught(("SBX-NET-002", "kubernetes-network-policy")),
        inputs=_set(
            "kubernetes-network-policy",
            ("spec", "egress"),
            [{"to": [{"ipBlock": {"cidr": "169.254.169.254/32"}}]}],
        ),
    ),
    Row(
        "fqdn-wildcard-everything",
        "dev",
        _caught(("SBX-NET-002", "kubernetes-fqdn-policy")),
        inputs=_set(
            "kubernetes-fqdn-policy", ("spec", "egress", 1, "toFQDNs", 0), {"matchPattern": "*"}
        ),
    ),
    Row(
        "fqdn-world-entity",
        "dev",
        _caught(("SBX-NET-001", "kubernetes-fqdn-policy")),
        inputs=_set("kubernetes-fqdn-policy", ("spec", "egress", 1, "toEntities"), ["world"]),
    ),
    Row(
        "service-account-token",
        "prod",
        _caught(("SBX-IAM-002", TEMPLATE)),
        inputs=_set(TEMPLATE, (*POD, "automountServiceAccountToken"), True),
    ),
    Row(
        "writable-root",
        "prod",
        _caught(("SBX-K8S-001", TEMPLATE)),
        inputs=_set(TEMPLATE, (*SECURITY, "readOnlyRootFilesystem"), False),
    ),
    Row(
        "capabilities-kept",
        "prod",
        _caught(("SBX-K8S-002", TEMPLATE)),
        inputs=_set(TEMPLATE, (*SECURITY, "capabilities"), {"drop": []}),
    ),
    Row(
        "capability-added",
        "prod",
        _caught(("SBX-K8S-002", TEMPLATE)),
        inputs=_set(TEMPLATE, (*SECURITY, "capabilities"), {"drop": ["ALL"], "add": ["NET_RAW"]}),
    ),
    Row(
        "root-user",
        "prod",
        _caught(("SBX-K8S-003", TEMPLATE)),
        inputs=_set(TEMPLATE, (*SECURITY, "runAsNonRoot"), False),
    ),
    Row(
        "privilege-escalation",
        "prod",
        _caught(("SBX-K8S-003", TEMPLATE)),
        inputs=_set(TEMPLATE, (*SECURITY, "allowPrivilegeEscalation"), True),
    ),
    Row(
        "privileged",
        "prod",
        _caught(("SBX-K8S-003", TEMPLATE)),
        inputs=_set(TEMPLATE, (*SECURITY, "privileged"), True),
    ),
    Row(
        "no-runtime-class",
        "prod",
        _caught(("SBX-K8S-004", TEMPLATE)),
        inputs=_set(TEMPLATE, (*POD, "runtimeClassName"), REMOVE),
    ),
    Row(
        "host-network",
        "prod",
        _caught(("SBX-K8S-005", TEMPLATE)),
        inputs=_set(TEMPLATE, (*POD, "hostNetwork"), True),
    ),
    Row(
        "host-path-volume",
        "prod",
        _caught(("SBX-K8S-005", TEMPLATE)),
        inputs=_set(TEMPLATE, (*POD, "volumes", 0), {"name": "scratch", "hostPath": {"path": "/"}}),
    ),
    Row(
        "seccomp-unconfined",
        "prod",
        _caught(("SBX-K8S-006", TEMPLATE)),
        inputs=lambda r: with_input(
            with_input(r, TEMPLATE, (*POD, "securityContext", "seccompProfile"), REMOVE),
            TEMPLATE,
            (*SECURITY, "seccompProfile", "type"),
            "Unconfined",
        ),
    ),
    Row(
        "namespace-not-restricted",
        "prod",
        _caught(("SBX-K8S-007", "kubernetes-namespace")),
        inputs=_set(
            "kubernetes-namespace",
            ("metadata", "labels", "pod-security.kubernetes.io/enforce"),
            "privileged",
        ),
    ),
    Row(
        "claims-inject-env",
        "prod",
        _caught(("SBX-K8S-008", TEMPLATE)),
        inputs=_set(TEMPLATE, ("spec", "envVarsInjectionPolicy"), "Allowed"),
    ),
    Row(
        "claims-inject-volumes",
        "prod",
        _caught(("SBX-K8S-008", TEMPLATE)),
        inputs=_set(TEMPLATE, ("spec", "volumeClaimTemplatesPolicy"), "Allowed"),
    ),
    Row(
        "no-cpu-memory-limits",
        "prod",
        _caught(("SBX-RES-001", TEMPLATE)),
        inputs=_set(TEMPLATE, (*CONTAINER, "resources"), {}),
    ),
    Row(
        "no-deadline",
        "prod",
        _caught(("SBX-RES-002", TEMPLATE)),
        inputs=_set(TEMPLATE, (*POD, "activeDeadlineSeconds"), REMOVE),
    ),
    Row(
        "quota-removed",
        "prod",
        _caught(("SBX-RES-004", TEMPLATE)),
        inputs=_drop("kubernetes-quota"),
    ),
    Row(
        "secret-in-env",
        "prod",
        _caught(("SBX-SEC-001", TEMPLATE)),
        inputs=_set(TEMPLATE, (*CONTAINER, "env"), [{"name": "API_TOKEN", "value": "t0ken"}]),
    ),
    Row(
        "credential-in-input",
        "prod",
        _caught(("SBX-SEC-002", TEMPLATE)),
        inputs=_set(
            TEMPLATE, (*CONTAINER, "env"), [{"name": "MIRROR", "value": "AKIAABCDEFGHIJKLMNOP"}]
        ),
    ),
    # azure-sessions: rendered inputs (config beyond the target's caps exits 2 instead).
    Row(
        "session-egress-enabled",
        "prod",
        _caught(("SBX-NET-001", POOL)),
        inputs=_set(POOL, ("sessionNetworkConfiguration", "status"), "EgressEnabled"),
    ),
    Row(
        "session-identity-in-reach",
        "prod",
        _caught(("SBX-IAM-002", POOL)),
        inputs=_set(POOL, ("managedIdentitySettings", 0, "lifecycle"), "Main"),
    ),
    Row(
        "executor-owner-role",
        "prod",
        _caught(("SBX-IAM-001", EXECUTOR)),
        inputs=_set(EXECUTOR, ("roleDefinitionId",), f"{ROLE_DEFINITIONS}/{OWNER_ROLE}"),
    ),
    Row(
        "executor-scope-wider-than-pool",
        "prod",
        _caught(("SBX-IAM-004", EXECUTOR)),
        inputs=_set(EXECUTOR, ("scope",), f"/subscriptions/{ZERO_GUID}/resourceGroups/rg"),
    ),
    Row(
        "session-no-size-limits",
        "prod",
        _caught(("SBX-RES-001", POOL)),
        inputs=_set(POOL, (*SESSION, "resources"), {}),
    ),
    Row(
        "session-cooldown-above-cap",
        "prod",
        _caught(("SBX-RES-002", POOL)),
        inputs=_set(POOL, (*COOLDOWN, "cooldownPeriodInSeconds"), 7200),
    ),
    Row(
        "session-pool-unbounded",
        "prod",
        _caught(("SBX-RES-003", POOL)),
        inputs=_set(POOL, ("scaleConfiguration", "maxConcurrentSessions"), REMOVE),
    ),
    Row(
        "workspace-retention-short",
        "prod",
        _caught(("SBX-LOG-001", "azure-sessions-logs")),
        inputs=_set("azure-sessions-logs", ("retentionInDays",), 7),
    ),
    Row(
        "workspace-removed",
        "prod",
        _caught(("SBX-LOG-002", POOL)),
        inputs=_drop("azure-sessions-logs"),
    ),
    Row(
        "session-secret-in-env",
        "prod",
        _caught(("SBX-SEC-001", POOL)),
        inputs=_set(POOL, (*SESSION, "env"), [{"name": "DB_PASSWORD", "value": "hunter2"}]),
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_weakened_default_is_caught_by_exactly_its_policy(
    row: Row, analyzer: gate.InProcessAnalyzer
) -> None:
    values = stack_values(row.stack)
    if row.targets:
        values = {k: v for k, v in values.items() if k not in values["targets"]}
        values["targets"] = list(row.targets)
        values.update({t: stack_values(row.stack)[t] for t in row.targets})
    baseline = gate.check_rendered(analyzer, render(row.stack, values), PROJECT)
    if row.config is not None:
        row.config(values)
    rendered = render(row.stack, values)
    if row.inputs is not None:
        rendered = row.inputs(rendered)
    mutated = gate.check_rendered(analyzer, rendered, PROJECT)
    before = {(v.policy, v.urn) for v in baseline.violations}
    new = [v for v in mutated.violations if (v.policy, v.urn) not in before]
    assert {(v.policy, v.urn.rsplit("::", 1)[-1]) for v in new} == row.expected
    assert not {v.policy for v in baseline.violations} & {p for p, _ in row.expected}
    for violation in new:
        assert violation.enforcement == _level(row.stack, violation.policy)
    assert mutated.failed == any(v.mandatory for v in new)


def _level(stack: str, policy: str) -> str:
    # The shipped per-environment default: NET and SEC mandatory in prod, all else advisory.
    strict = stack == "prod" and policy.split("-")[1] in ("NET", "SEC")
    return "mandatory" if strict else "advisory"


def test_every_policy_that_applies_to_a_landed_target_has_a_row() -> None:
    caught = {policy for row in ROWS for policy, _ in row.expected}
    assert caught == {
        "SBX-NET-001",
        "SBX-NET-002",
        "SBX-NET-005",
        "SBX-IAM-001",
        "SBX-IAM-002",
        "SBX-IAM-004",
        "SBX-RES-001",
        "SBX-RES-002",
        "SBX-RES-003",
        "SBX-RES-004",
        "SBX-LOG-001",
        "SBX-LOG-002",
        "SBX-SEC-001",
        "SBX-SEC-002",
        *(f"SBX-K8S-00{n}" for n in range(1, 9)),
    }
