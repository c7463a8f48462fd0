"""Issue 32's weakenings the prod gate passed, beyond the mutation table's rows: what silences
each finding on purpose (a reason, a trusted account, an accepted reference, a reviewed port)
and the exact sentences.

Each case narrows the shipped prod stack to one target, weakens it through its config as a user
would, and compares the gate's findings with prod's pack config.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pack_calls import resource_reports

import support as testing
from sandboxkit import gate

PROJECT = Path(__file__).resolve().parents[2]
FOREIGN = "999999999999"
PUBLIC_SLASH_EIGHTS = [f"{first}.0.0.0/8" for first in range(11, 59)]


@pytest.fixture(scope="module")
def analyzer() -> gate.InProcessAnalyzer:
    return gate.InProcessAnalyzer(gate.pack_dir(PROJECT))


def values_of(target: str, **settings: Any) -> dict[str, Any]:
    values = testing.stack_values(PROJECT, "prod")
    for dropped in set(values["targets"]) - {target}:
        del values[dropped]
    values["targets"] = [target]
    values[target].update(settings)
    return values


def findings(
    analyzer: gate.InProcessAnalyzer,
    values: dict[str, Any],
    pack_config: dict[str, Any] | None = None,
    tmp_path: Path | None = None,
) -> set[tuple[str, str, str]]:
    config = None
    if pack_config is not None:
        assert tmp_path is not None
        config = tmp_path / "pack.json"
        config.write_text(json.dumps({"all": "mandatory", **pack_config}))
    rendered = testing.render_values(PROJECT, "prod", values)
    result = gate.check_rendered(analyzer, rendered, PROJECT, config)
    return {(v.policy, v.urn.rsplit("::", 1)[-1], v.message) for v in result.violations}


# --- 3. the GKE control plane -------------------------------------------------------------------


def test_a_public_control_plane_behind_48_slash_eights_is_reported_twice(
    analyzer: gate.InProcessAnalyzer,
) -> None:
    values = values_of(
        "gcp-gke", privateEndpoint=False, masterAuthorizedNetworks=PUBLIC_SLASH_EIGHTS
    )
    assert findings(analyzer, values) == {
        (
            "SBX-NET-009",
            "gcp-gke-cluster",
            "GKE cluster gcp-gke-cluster has a public control-plane endpoint, reachable from the "
            "internet by whoever holds a credential and an authorized address; set "
            "sandboxkit:gcp-gke.privateEndpoint to true, or acknowledge it with "
            "sandboxkit:gcp-gke.publicEndpointReason.",
        ),
        (
            "SBX-NET-009",
            "gcp-gke-cluster",
            "GKE cluster gcp-gke-cluster's master authorized networks together hold 805306368 "
            "public IPv4 addresses, more than the 16777216 sbx-net-009 allows, so the control "
            "plane faces that much of the internet however narrow each entry is; list only the "
            "networks that administer the cluster in sandboxkit:gcp-gke.masterAuthorizedNetworks.",
        ),
    }


def test_an_acknowledged_endpoint_behind_a_few_networks_is_silent(
    analyzer: gate.InProcessAnalyzer,
) -> None:
    values = values_of(
        "gcp-gke",
        privateEndpoint=False,
        publicEndpointReason="the deployer runs outside the VPC until the bastion exists",
        masterAuthorizedNetworks=["140.82.112.0/20", "10.0.0.0/8", "172.16.0.0/12"],
    )
    assert findings(analyzer, values) == set()


def test_more_networks_than_gke_takes_are_reported_by_the_pack() -> None:
    # Config refuses a 51st entry; a cluster built another way is judged by the pack.
    cluster = {
        "privateClusterConfig": {"enablePrivateEndpoint": True},
        "masterAuthorizedNetworksConfig": {
            "cidrBlocks": [{"cidrBlock": f"10.0.{n}.0/24"} for n in range(51)]
        },
    }
    assert resource_reports("sbx-net-009", "gcp:container/cluster:Cluster", cluster) == [
        "GKE cluster r lists 51 master authorized networks; GKE takes at most 50 (GKE API v1 "
        "MasterAuthorizedNetworksConfig.cidr_blocks); list only the networks that administer "
        "the cluster."
    ]


# --- 4. what the stack relies on but does not create ---------------------------------------------

NAMESPACE_FINDING = (
    "SBX-K8S-009",
    "kubernetes-template",
    "Cannot verify namespace agent-sandboxes, which SandboxTemplate kubernetes-template runs its "
    "sandbox pods in: it lives outside the stack, so the gate cannot see whether it enforces "
    "Pod Security restricted (SBX-K8S-007) and which other NetworkPolicies it holds: policies "
    "are additive, so one that allows all egress there voids the kit's deny; set "
    "sandboxkit:kubernetes.createNamespace to true so the kit creates it with Pod Security "
    "restricted, or, once you have checked it, accept it on purpose by listing "
    "Namespace/agent-sandboxes in acceptedExternalReferences of sbx-k8s-009 in the pack config.",
)


def test_an_existing_namespace_cannot_be_verified_unless_accepted(
    analyzer: gate.InProcessAnalyzer, tmp_path: Path
) -> None:
    values = values_of("kubernetes", createNamespace=False)
    assert findings(analyzer, values) == {NAMESPACE_FINDING}
    accepted = {"sbx-k8s-009": {"acceptedExternalReferences": ["Namespace/agent-sandboxes"]}}
    assert findings(analyzer, values, accepted, tmp_path) == set()


# --- 5. a deny stack's control plane --------------------------------------------------------------


def test_a_reviewed_control_plane_port_is_accepted_through_the_pack_config(
    analyzer: gate.InProcessAnalyzer, tmp_path: Path
) -> None:
    values = values_of("aws-microvm", controlPlaneHosts=["telemetry.example.com:8443"])
    found = {(p, r) for p, r, _ in findings(analyzer, values)}
    assert ("SBX-NET-008", "aws-microvm") in found
    reviewed = {
        "sbx-net-008": {"controlPlanePorts": [443, 8443]},
        "sbx-net-001": {"allowedPorts": [443, 80, 53, 8443]},
    }
    assert findings(analyzer, values, reviewed, tmp_path) == set()


def test_a_resolver_port_is_refused_whatever_the_pack_config_allows(
    analyzer: gate.InProcessAnalyzer, tmp_path: Path
) -> None:
    values = values_of("aws-microvm", controlPlaneHosts=["ns1.example.net:853"])
    allowing = {
        "sbx-net-008": {"controlPlanePorts": [443, 853]},
        "sbx-net-001": {"allowedPorts": [443, 80, 53, 853]},
    }
    assert findings(analyzer, values, allowing, tmp_path) == {
        (
            "SBX-NET-008",
            "aws-microvm",
            "aws-microvm grants control-plane host ns1.example.net:853 on resolver port 853: a "
            "host reached on a DNS port is a DNS channel to any name, whatever it is called; "
            "remove it from sandboxkit:aws-microvm.controlPlaneHosts (sandboxes resolve names "
            "only through their target's own resolver).",
        )
    }


# --- 7. ceilings and trusted accounts -------------------------------------------------------------


def test_the_ceilings_are_the_pack_configs(
    analyzer: gate.InProcessAnalyzer, tmp_path: Path
) -> None:
    values = values_of("aws-microvm", replayWindowSeconds=600)
    assert {(p, r) for p, r, _ in findings(analyzer, values)} == {
        ("SBX-SES-003", "aws-microvm-launcher")
    }
    raised = {"sbx-ses-003": {"maxReplayWindowSeconds": 600}}
    assert findings(analyzer, values, raised, tmp_path) == set()


def test_layers_and_base_images_of_trusted_accounts_pass(
    analyzer: gate.InProcessAnalyzer,
) -> None:
    foreign = {
        "launcherLayers": [f"arn:aws:lambda:eu-west-1:{FOREIGN}:layer:boto3:7"],
        "baseImageArn": f"arn:aws:lambda:eu-west-1:{FOREIGN}:microvm-image:worker-base",
    }
    assert findings(analyzer, values_of("aws-microvm", **foreign)) == {
        (
            "SBX-SEC-004",
            "aws-microvm-launcher",
            f"Launcher function aws-microvm-launcher runs layer arn:aws:lambda:eu-west-1:{FOREIGN}"
            f":layer:boto3:7 from account {FOREIGN}, which the stack does not trust; use one from "
            "your own account or AWS in sandboxkit:aws-microvm.launcherLayers, or list the "
            "account in sandboxkit:aws-microvm.trustedAccounts once you trust it.",
        ),
        (
            "SBX-SEC-004",
            "aws-microvm-image",
            f"MicroVM image aws-microvm-image builds on base image arn:aws:lambda:eu-west-1:"
            f"{FOREIGN}:microvm-image:worker-base from account {FOREIGN}, which the stack does "
            "not trust; use one from your own account or AWS in "
            "sandboxkit:aws-microvm.baseImageArn, or list the account in "
            "sandboxkit:aws-microvm.trustedAccounts once you trust it.",
        ),
    }
    trusted = values_of("aws-microvm", **foreign, trustedAccounts=[FOREIGN])
    assert findings(analyzer, trusted) == set()
    # assumeRole's account is the stack's own: trusted without being listed.
    own = values_of(
        "aws-microvm",
        **foreign,
        assumeRole={"roleArn": f"arn:aws:iam::{FOREIGN}:role/sandboxkit-deployer"},
    )
    assert findings(analyzer, own) == set()
