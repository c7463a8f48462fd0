"""What the stack uses but does not create: the gate says it cannot verify it (SBX-K8S-009).

A RuntimeClass the kubernetes target references (``runtimeClass.create: false``) has a handler
only the cluster knows; a gcp-gke ``existingCluster`` renders no cluster, so the cluster checks
would pass on nothing. Each is reported at SBX-K8S-009's level (mandatory in prod, advisory in
dev) unless the organisation accepts it in the pack config, and ``preview`` warns.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import support as testing
from sandboxkit import gate
from sandboxkit.errors import ConfigError
from sandboxkit.render import RenderedStack

PROJECT = Path(__file__).resolve().parents[2]
TEMPLATE = "kubernetes-template"
POOL = "gcp-gke-gvisor-pool"
CLUSTER = "projects/example-sandboxkit-prod/locations/us-central1/clusters/agents"

RUNTIME_CLASS_UNSEEN = (
    "Cannot verify the handler of RuntimeClass gvisor, which SandboxTemplate kubernetes-template "
    "runs its sandbox pods under: it lives outside the stack, so the gate cannot see whether "
    "the class runs gVisor (runsc) or Kata Containers, or plain runc, which shares the node's "
    "kernel (SBX-K8S-004 checks only the name); set sandboxkit:kubernetes.runtimeClass.create "
    "to true so the kit creates the class with a sandboxed handler, or, once you have checked "
    "it, accept it on purpose by listing RuntimeClass/gvisor in acceptedExternalReferences of "
    "sbx-k8s-009 in the pack config."
)
CLUSTER_UNSEEN = (
    f"Cannot verify GKE cluster {CLUSTER}, which node pool gcp-gke-gvisor-pool joins: it lives "
    "outside the stack, so the gate cannot see whether it enforces network policy with "
    "Dataplane V2 (SBX-NET-003), has private nodes, a private endpoint and master authorized "
    "networks, workload identity, shielded nodes, legacy ABAC off, the Agent Sandbox add-on and "
    "a system node pool without GKE Sandbox; remove sandboxkit:gcp-gke.existingCluster so the "
    "kit creates the cluster with them, or, once you have checked it, accept it on purpose by "
    f"listing {CLUSTER} in acceptedExternalReferences of sbx-k8s-009 in the pack config."
)


@pytest.fixture(scope="module")
def analyzer() -> gate.InProcessAnalyzer:
    return gate.InProcessAnalyzer(gate.pack_dir(PROJECT))


def rendered(target: str, environment: str, **settings: Any) -> RenderedStack:
    """The prod stack's ``target`` alone, with ``settings`` added, as stack ``environment``."""
    values = testing.stack_values(PROJECT, "prod")
    for dropped in set(values["targets"]) - {target}:
        del values[dropped]
    values["targets"] = [target]
    values["environment"] = environment
    values[target].update(settings)
    return testing.render_values(PROJECT, environment, values)


def findings(
    analyzer: gate.InProcessAnalyzer, stack: RenderedStack, pack_config: Path | None = None
) -> set[tuple[str, str, str, str]]:
    result = gate.check_rendered(analyzer, stack, PROJECT, pack_config)
    return {
        (v.policy, v.enforcement, v.urn.rsplit("::", 1)[-1], v.message) for v in result.violations
    }


def accepting(tmp_path: Path, *references: str) -> Path:
    """prod's pack config with ``references`` accepted by SBX-K8S-009."""
    path = tmp_path / "accepting.json"
    config = {
        "all": "mandatory",
        "sbx-k8s-009": {"enforcementLevel": "mandatory", "acceptedExternalReferences": references},
    }
    path.write_text(json.dumps(config))
    return path


REFERENCED_CLASS = {"runtimeClass": {"name": "gvisor", "create": False}}
EXISTING_CLUSTER = {"existingCluster": "agents"}


@pytest.mark.parametrize(("environment", "level"), [("prod", "mandatory"), ("dev", "advisory")])
def test_a_referenced_runtime_class_cannot_be_verified(
    analyzer: gate.InProcessAnalyzer, environment: str, level: str
) -> None:
    stack = rendered("kubernetes", environment, **REFERENCED_CLASS)
    assert findings(analyzer, stack) == {("SBX-K8S-009", level, TEMPLATE, RUNTIME_CLASS_UNSEEN)}


@pytest.mark.parametrize(("environment", "level"), [("prod", "mandatory"), ("dev", "advisory")])
def test_an_existing_gke_cluster_cannot_be_verified(
    analyzer: gate.InProcessAnalyzer, environment: str, level: str
) -> None:
    stack = rendered("gcp-gke", environment, **EXISTING_CLUSTER)
    assert findings(analyzer, stack) == {("SBX-K8S-009", level, POOL, CLUSTER_UNSEEN)}


@pytest.mark.parametrize("target", ["kubernetes", "gcp-gke"])
def test_what_the_stack_creates_itself_is_silent(
    analyzer: gate.InProcessAnalyzer, target: str
) -> None:
    assert findings(analyzer, rendered(target, "prod")) == set()


def test_the_organisation_accepts_a_runtime_class_on_purpose(
    analyzer: gate.InProcessAnalyzer, tmp_path: Path
) -> None:
    stack = rendered("kubernetes", "prod", **REFERENCED_CLASS)
    assert findings(analyzer, stack, accepting(tmp_path, "RuntimeClass/gvisor")) == set()
    other = accepting(tmp_path, "RuntimeClass/kata", CLUSTER)
    assert findings(analyzer, stack, other) == {
        ("SBX-K8S-009", "mandatory", TEMPLATE, RUNTIME_CLASS_UNSEEN)
    }


def test_the_organisation_accepts_an_existing_cluster_on_purpose(
    analyzer: gate.InProcessAnalyzer, tmp_path: Path
) -> None:
    stack = rendered("gcp-gke", "prod", **EXISTING_CLUSTER)
    assert findings(analyzer, stack, accepting(tmp_path, CLUSTER)) == set()
    other = accepting(tmp_path, CLUSTER.replace("agents", "others"))
    assert findings(analyzer, stack, other) == {("SBX-K8S-009", "mandatory", POOL, CLUSTER_UNSEEN)}


def test_preview_warns_what_the_kit_cannot_see() -> None:
    assert rendered("kubernetes", "prod", **REFERENCED_CLASS).warnings == (
        "sandboxkit:kubernetes.runtimeClass.create is false: the kit cannot see which handler "
        "the cluster's RuntimeClass gvisor has (gVisor, Kata, or plain runc, which shares the "
        "node's kernel); the policy gate reports it as cannot verify (SBX-K8S-009, mandatory in "
        "prod unless the pack config accepts RuntimeClass/gvisor)",
    )
    assert rendered("gcp-gke", "prod", **EXISTING_CLUSTER).warnings == (
        f"sandboxkit:gcp-gke.existingCluster is set: the kit cannot see how cluster {CLUSTER} is "
        "configured (Dataplane V2, private nodes and endpoint, master authorized networks, "
        "workload identity, the Agent Sandbox add-on, a system node pool); the policy gate "
        "reports it as cannot verify (SBX-K8S-009, mandatory in prod unless the pack config "
        "accepts it)",
    )
    assert rendered("kubernetes", "prod").warnings == ()


def test_an_accepted_reference_must_name_a_class_or_a_cluster(
    analyzer: gate.InProcessAnalyzer, tmp_path: Path
) -> None:
    stack = rendered("kubernetes", "prod", **REFERENCED_CLASS)
    config = accepting(tmp_path, "gvisor")
    with pytest.raises(ConfigError) as refused:
        findings(analyzer, stack, config)
    assert [(p.key, p.value) for p in refused.value.problems] == [
        (f"{config}: sbx-k8s-009.acceptedExternalReferences[0]", "gvisor")
    ]
