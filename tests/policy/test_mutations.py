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
    """One hardened default: where it lives, how it is weakened, what must catch it."""

    id: str
    stack: str
    expected: frozenset[str]
    config: ConfigMutation | None = None
    inputs: InputMutation | None = None


ROWS = [
    # Config a user could write.
    Row("egress-open", "prod", frozenset({"SBX-NET-001"}), config=_open_egress),
    Row(
        "vcpu-above-max", "prod", frozenset({"SBX-RES-001"}), config=_profile("limits", "vcpu", 16)
    ),
    Row(
        "memory-above-max",
        "prod",
        frozenset({"SBX-RES-001"}),
        config=_profile("limits", "memoryMiB", 65536),
    ),
    Row(
        "lifetime-above-max",
        "prod",
        frozenset({"SBX-RES-002"}),
        config=_profile("limits", "maxLifetimeSeconds", 86400),
    ),
    Row(
        "concurrency-above-max",
        "prod",
        frozenset({"SBX-RES-003"}),
        config=_profile("pool", "maxConcurrent", 2000),
    ),
    Row("warm-pool-above-max", "prod", frozenset({"SBX-RES-003"}), config=_big_pool),
    Row("host-kernel-runtime", "prod", frozenset({"SBX-K8S-004"}), config=_host_runtime),
    # Rendered inputs no config can weaken.
    Row(
        "network-policy-managed",
        "prod",
        frozenset({"SBX-NET-001"}),
        inputs=_set(TEMPLATE, ("spec", "networkPolicyManagement"), "Managed"),
    ),
    Row(
        "network-policy-ingress-only",
        "prod",
        frozenset({"SBX-NET-001", "SBX-NET-005"}),
        inputs=_set("kubernetes-network-policy", ("spec", "policyTypes"), ["Ingress"]),
    ),
    Row(
        "network-policy-admits-all",
        "prod",
        frozenset({"SBX-NET-001"}),
        inputs=_set("kubernetes-network-policy", ("spec", "egress"), [{"ports": []}]),
    ),
    Row(
        "network-policy-removed",
        "prod",
        frozenset({"SBX-NET-005"}),
        inputs=_drop("kubernetes-network-policy"),
    ),
    Row(
        "allow-private-range",
        "prod",
        frozenset({"SBX-NET-002"}),
        inputs=_set(
            "kubernetes-network-policy",
            ("spec", "egress"),
            [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}],
        ),
    ),
    Row(
        "allow-metadata-address",
        "prod",
        frozenset({"SBX-NET-002"}),
        inputs=_set(
            "kubernetes-network-policy",
            ("spec", "egress"),
            [{"to": [{"ipBlock": {"cidr": "169.254.169.254/32"}}]}],
        ),
    ),
    Row(
        "fqdn-wildcard-everything",
        "dev",
        frozenset({"SBX-NET-002"}),
        inputs=_set(
            "kubernetes-fqdn-policy", ("spec", "egress", 1, "toFQDNs", 0), {"matchPattern": "*"}
        ),
    ),
    Row(
        "fqdn-world-entity",
        "dev",
        frozenset({"SBX-NET-001"}),
        inputs=_set("kubernetes-fqdn-policy", ("spec", "egress", 1, "toEntities"), ["world"]),
    ),
    Row(
        "service-account-token",
        "prod",
        frozenset({"SBX-IAM-002"}),
        inputs=_set(TEMPLATE, (*POD, "automountServiceAccountToken"), True),
    ),
    Row(
        "writable-root",
        "prod",
        frozenset({"SBX-K8S-001"}),
        inputs=_set(TEMPLATE, (*SECURITY, "readOnlyRootFilesystem"), False),
    ),
    Row(
        "capabilities-kept",
        "prod",
        frozenset({"SBX-K8S-002"}),
        inputs=_set(TEMPLATE, (*SECURITY, "capabilities"), {"drop": []}),
    ),
    Row(
        "capability-added",
        "prod",
        frozenset({"SBX-K8S-002"}),
        inputs=_set(TEMPLATE, (*SECURITY, "capabilities"), {"drop": ["ALL"], "add": ["NET_RAW"]}),
    ),
    Row(
        "root-user",
        "prod",
        frozenset({"SBX-K8S-003"}),
        inputs=_set(TEMPLATE, (*SECURITY, "runAsNonRoot"), False),
    ),
    Row(
        "privilege-escalation",
        "prod",
        frozenset({"SBX-K8S-003"}),
        inputs=_set(TEMPLATE, (*SECURITY, "allowPrivilegeEscalation"), True),
    ),
    Row(
        "privileged",
        "prod",
        frozenset({"SBX-K8S-003"}),
        inputs=_set(TEMPLATE, (*SECURITY, "privileged"), True),
    ),
    Row(
        "no-runtime-class",
        "prod",
        frozenset({"SBX-K8S-004"}),
        inputs=_set(TEMPLATE, (*POD, "runtimeClassName"), REMOVE),
    ),
    Row(
        "host-network",
        "prod",
        frozenset({"SBX-K8S-005"}),
        inputs=_set(TEMPLATE, (*POD, "hostNetwork"), True),
    ),
    Row(
        "host-path-volume",
        "prod",
        frozenset({"SBX-K8S-005"}),
        inputs=_set(TEMPLATE, (*POD, "volumes", 0), {"name": "scratch", "hostPath": {"path": "/"}}),
    ),
    Row(
        "seccomp-unconfined",
        "prod",
        frozenset({"SBX-K8S-006"}),
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
        frozenset({"SBX-K8S-007"}),
        inputs=_set(
            "kubernetes-namespace",
            ("metadata", "labels", "pod-security.kubernetes.io/enforce"),
            "privileged",
        ),
    ),
    Row(
        "claims-inject-env",
        "prod",
        frozenset({"SBX-K8S-008"}),
        inputs=_set(TEMPLATE, ("spec", "envVarsInjectionPolicy"), "Allowed"),
    ),
    Row(
        "claims-inject-volumes",
        "prod",
        frozenset({"SBX-K8S-008"}),
        inputs=_set(TEMPLATE, ("spec", "volumeClaimTemplatesPolicy"), "Allowed"),
    ),
    Row(
        "no-cpu-memory-limits",
        "prod",
        frozenset({"SBX-RES-001"}),
        inputs=_set(TEMPLATE, (*CONTAINER, "resources"), {}),
    ),
    Row(
        "no-deadline",
        "prod",
        frozenset({"SBX-RES-002"}),
        inputs=_set(TEMPLATE, (*POD, "activeDeadlineSeconds"), REMOVE),
    ),
    Row(
        "quota-removed",
        "prod",
        frozenset({"SBX-RES-004"}),
        inputs=_drop("kubernetes-quota"),
    ),
    Row(
        "secret-in-env",
        "prod",
        frozenset({"SBX-SEC-001"}),
        inputs=_set(TEMPLATE, (*CONTAINER, "env"), [{"name": "API_TOKEN", "value": "t0ken"}]),
    ),
    Row(
        "credential-in-input",
        "prod",
        frozenset({"SBX-SEC-002"}),
        inputs=_set(
            TEMPLATE, (*CONTAINER, "env"), [{"name": "MIRROR", "value": "AKIAABCDEFGHIJKLMNOP"}]
        ),
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_weakened_default_is_caught_by_exactly_its_policy(
    row: Row, analyzer: gate.InProcessAnalyzer
) -> None:
    def check(rendered: RenderedStack) -> gate.CheckResult:
        return gate.check_rendered(analyzer, rendered, PROJECT)

    values = stack_values(row.stack)
    baseline = check(render(row.stack, values))
    assert not {v.policy for v in baseline.violations} & row.expected
    if row.config is not None:
        row.config(values)
    rendered = render(row.stack, values)
    if row.inputs is not None:
        rendered = row.inputs(rendered)
    mutated = check(rendered)
    before = {(v.policy, v.urn) for v in baseline.violations}
    new = {v.policy for v in mutated.violations if (v.policy, v.urn) not in before}
    assert new == row.expected
    for violation in mutated.violations:
        if violation.policy in row.expected:
            assert violation.enforcement == _level(row.stack, violation.policy)


def _level(stack: str, policy: str) -> str:
    # The shipped per-environment default: NET and SEC mandatory in prod, all else advisory.
    strict = stack == "prod" and policy.split("-")[1] in ("NET", "SEC")
    return "mandatory" if strict else "advisory"


def test_every_policy_that_applies_to_kubernetes_has_a_row() -> None:
    caught = {policy for row in ROWS for policy in row.expected}
    assert caught == {
        "SBX-NET-001",
        "SBX-NET-002",
        "SBX-NET-005",
        "SBX-IAM-002",
        "SBX-RES-001",
        "SBX-RES-002",
        "SBX-RES-003",
        "SBX-RES-004",
        "SBX-SEC-001",
        "SBX-SEC-002",
        *(f"SBX-K8S-00{n}" for n in range(1, 9)),
    }
