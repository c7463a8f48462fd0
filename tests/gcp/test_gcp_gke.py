"""gcp-gke: exact children, the hardened cluster and gVisor pool, the sandbox objects on it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import pytest
from typer.testing import CliRunner

from sandboxkit import cli
from sandboxkit.config import ConfigSource, load_stack
from sandboxkit.errors import ConfigError
from sandboxkit.gcp.gke.catalog import MOCK_GKE_CA, MOCK_GKE_DNS_ENDPOINT
from sandboxkit.gcp.gke.cluster import (
    GVISOR_NODE_LABEL,
    GVISOR_TOLERATION,
    NODE_ROLES,
    GkeAgentSandbox,
)
from sandboxkit.gcp.gke.plan import MAX_OBJECT_NAME, GkeAgentSandboxArgs
from sandboxkit.gcp.gke.spec import gke_version
from sandboxkit.render import Recorder, is_secret_value
from support import build_target, named, of_type, one

CLUSTER = "gcp:container/cluster:Cluster"
POOL = "gcp:container/nodePool:NodePool"
TEMPLATE = "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate"
SETTINGS = {
    "project": "example-project",
    "region": "us-central1",
    "image": "example.com/sandbox:1",
    "masterAuthorizedNetworks": ["10.0.0.0/24"],
}


def build(engine: Recorder, profile: dict[str, Any] | None = None, **settings: Any) -> list[Any]:
    return build_target(engine, "gcp-gke", {**SETTINGS, **settings}, profile)


def test_the_component_refuses_an_object_name_longer_than_its_plan_allows(
    engine: Recorder,
) -> None:
    values = {"environment": "prod", "targets": ["gcp-gke"], "gcp-gke": SETTINGS}
    plan = load_stack(ConfigSource(values=values), "test").plans["gcp-gke"]
    assert len(plan["object_name"]) <= MAX_OBJECT_NAME == 24
    args = cast(GkeAgentSandboxArgs, {**plan, "object_name": "s" * 25})
    with pytest.raises(ValueError, match="a lower-case name of 24 or fewer"):
        engine.run(lambda: GkeAgentSandbox("gcp-gke", args))


SANDBOX_CHILDREN = [
    ("sandboxkit:index:AgentSandbox", "gcp-gke-agent-sandbox"),
    ("kubernetes:core/v1:Namespace", "gcp-gke-agent-sandbox-namespace"),
    (TEMPLATE, "gcp-gke-agent-sandbox-template"),
    ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "gcp-gke-agent-sandbox-network-policy"),
    ("kubernetes:core/v1:ResourceQuota", "gcp-gke-agent-sandbox-quota"),
    (
        "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxWarmPool",
        "gcp-gke-agent-sandbox-warm-pool",
    ),
]


def test_children_are_exactly_the_documented_set(engine: Recorder) -> None:
    resources = build(engine)
    assert sorted((r.type, r.name) for r in resources) == sorted(
        [
            ("sandboxkit:index:GkeAgentSandbox", "gcp-gke"),
            ("gcp:serviceaccount/account:Account", "gcp-gke-node-service-account"),
            (
                "gcp:projects/iAMMember:IAMMember",
                "gcp-gke-role-container-defaultNodeServiceAccount",
            ),
            ("gcp:compute/network:Network", "gcp-gke-network"),
            ("gcp:compute/subnetwork:Subnetwork", "gcp-gke-subnet"),
            ("gcp:compute/router:Router", "gcp-gke-router"),
            ("gcp:compute/routerNat:RouterNat", "gcp-gke-nat"),
            (CLUSTER, "gcp-gke-cluster"),
            (POOL, "gcp-gke-system-pool"),
            (POOL, "gcp-gke-gvisor-pool"),
            ("pulumi:providers:kubernetes", "gcp-gke-k8s-provider"),
            ("gcp:logging/projectBucketConfig:ProjectBucketConfig", "gcp-gke-log-bucket"),
            ("gcp:logging/projectSink:ProjectSink", "gcp-gke-log-sink"),
            *SANDBOX_CHILDREN,
        ]
    )
    component = named(resources, "gcp-gke")
    sandbox = named(resources, "gcp-gke-agent-sandbox")
    for resource in resources:
        if resource.type.startswith("kubernetes:"):
            assert resource.parent == sandbox.urn
        elif resource is not component:
            assert resource.parent == component.urn


def test_the_cluster_is_private_hardened_and_runs_agent_sandbox(engine: Recorder) -> None:
    cluster = one(build(engine), CLUSTER).inputs
    assert cluster["privateClusterConfig"] == {
        "enablePrivateNodes": True,
        "enablePrivateEndpoint": True,
        "masterIpv4CidrBlock": "172.16.0.16/28",
    }
    assert cluster["masterAuthorizedNetworksConfig"] == {
        "cidrBlocks": [{"cidrBlock": "10.0.0.0/24", "displayName": "sandboxkit-0"}],
        "gcpPublicCidrsAccessEnabled": False,
    }
    assert cluster["workloadIdentityConfig"] == {"workloadPool": "example-project.svc.id.goog"}
    assert cluster["enableShieldedNodes"] is True
    assert cluster["enableLegacyAbac"] is False
    assert cluster["datapathProvider"] == "ADVANCED_DATAPATH"
    # FQDN network policy cannot learn from the kit's resolver: the (paid) feature stays off.
    assert "enableFqdnNetworkPolicy" not in cluster
    assert cluster["addonsConfig"] == {"agentSandboxConfig": {"enabled": True}}
    assert cluster["removeDefaultNodePool"] is True
    assert cluster["deletionProtection"] is True
    assert cluster["location"] == "us-central1"
    assert cluster["minMasterVersion"] == "1.36"
    assert cluster["releaseChannel"] == {"channel": "REGULAR"}
    # The deployer reaches the private control plane by its IAM-authorized DNS endpoint.
    assert cluster["controlPlaneEndpointsConfig"] == {
        "dnsEndpointConfig": {"allowExternalTraffic": True}
    }
    assert cluster["privateClusterConfig"]["enablePrivateEndpoint"] is True
    assert cluster["nodeConfig"]["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}


def test_the_gvisor_pool_is_shielded_with_the_metadata_server_and_a_minimal_account(
    engine: Recorder,
) -> None:
    resources = build(engine)
    pool = named(resources, "gcp-gke-gvisor-pool").inputs
    node = pool["nodeConfig"]
    assert node["sandboxConfig"] == {"type": "GVISOR"}
    assert node["imageType"] == "COS_CONTAINERD"
    assert node["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert node["shieldedInstanceConfig"] == {
        "enableSecureBoot": True,
        "enableIntegrityMonitoring": True,
    }
    assert node["metadata"] == {"disable-legacy-endpoints": "true"}
    assert node["serviceAccount"] == "sbx-test-nodes@example-project.iam.gserviceaccount.com"
    assert pool["management"] == {"autoRepair": True, "autoUpgrade": True}
    assert pool["autoscaling"] == {"minNodeCount": 1, "maxNodeCount": 10}
    grants = [
        (r.inputs["role"], r.inputs["member"])
        for r in of_type(resources, "gcp:projects/iAMMember:IAMMember")
    ]
    assert list(NODE_ROLES) == ["roles/container.defaultNodeServiceAccount"]
    assert grants == [
        (
            "roles/container.defaultNodeServiceAccount",
            f"serviceAccount:{node['serviceAccount']}",
        )
    ]


def test_sandboxes_run_on_the_gvisor_pool_with_its_toleration(engine: Recorder) -> None:
    resources = build(engine)
    pod = one(resources, TEMPLATE).inputs["spec"]["podTemplate"]["spec"]
    assert pod["runtimeClassName"] == "gvisor"
    assert pod["tolerations"] == [GVISOR_TOLERATION]
    assert pod["nodeSelector"] == GVISOR_NODE_LABEL == {"sandbox.gke.io/runtime": "gvisor"}
    # GKE supplies the gvisor RuntimeClass: the kit references it and creates none.
    assert not of_type(resources, "kubernetes:node.k8s.io/v1:RuntimeClass")


def test_the_kubeconfig_is_a_secret_built_from_the_cluster(engine: Recorder) -> None:
    provider = named(build(engine), "gcp-gke-k8s-provider").inputs
    assert is_secret_value(provider["kubeconfig"])
    config = json.loads(provider["kubeconfig"]["value"])
    # The DNS endpoint: publicly trusted TLS, so no authority data.
    assert config["clusters"][0]["cluster"] == {"server": f"https://{MOCK_GKE_DNS_ENDPOINT}"}
    assert config["users"][0]["user"]["exec"]["command"] == "gke-gcloud-auth-plugin"


def test_authorized_networks_access_uses_the_ip_endpoint_and_its_authority(
    engine: Recorder,
) -> None:
    resources = build(engine, controlPlaneAccess="authorizedNetworks", privateEndpoint=False)
    cluster = one(resources, CLUSTER).inputs
    assert cluster["controlPlaneEndpointsConfig"] == {
        "dnsEndpointConfig": {"allowExternalTraffic": False}
    }
    provider = named(resources, "gcp-gke-k8s-provider").inputs
    config = json.loads(provider["kubeconfig"]["value"])
    assert config["clusters"][0]["cluster"] == {
        "server": "https://192.0.2.10",
        "certificate-authority-data": MOCK_GKE_CA,
    }


def test_a_private_endpoint_only_authorized_networks_reach_is_refused() -> None:
    # Shipped prod before the fix: private endpoint, one authorized network outside the VPC the
    # same `pulumi up` creates, and the Kubernetes objects on that control plane.
    with pytest.raises(ConfigError) as caught:
        load_stack(
            ConfigSource(
                values={
                    "environment": "prod",
                    "targets": ["gcp-gke"],
                    "gcp-gke": {**SETTINGS, "controlPlaneAccess": "authorizedNetworks"},
                }
            ),
            "test",
        )
    (problem,) = caught.value.problems
    assert (problem.key, problem.value) == (
        "sandboxkit:gcp-gke.controlPlaneAccess",
        "authorizedNetworks",
    )
    assert problem.expected.startswith("dns with privateEndpoint true on a cluster this stack")
    assert "privateEndpoint false with the deployer's public range" in problem.expected
    assert "existingCluster" in problem.expected


def test_an_existing_cluster_is_reached_by_its_dns_endpoint(engine: Recorder) -> None:
    provider = named(build(engine, existingCluster="agents"), "gcp-gke-k8s-provider").inputs
    cluster = json.loads(provider["kubeconfig"]["value"])["clusters"][0]["cluster"]
    assert "certificate-authority-data" not in cluster


def test_system_pods_get_an_untainted_pool_without_gke_sandbox(engine: Recorder) -> None:
    """GKE Sandbox needs a second, non-sandboxed pool for system pods (kube-dns, the Agent
    Sandbox controller, the kit's resolver): the gVisor pool is tainted."""
    resources = build(engine, systemMachineType="e2-standard-4", systemNodes=2)
    pool = named(resources, "gcp-gke-system-pool").inputs
    node = pool["nodeConfig"]
    assert "sandboxConfig" not in node
    assert "taints" not in node
    assert node["labels"] == {"sandboxkit-node-pool": "system"}
    assert node["machineType"] == "e2-standard-4"
    assert node["workloadMetadataConfig"] == {"mode": "GKE_METADATA"}
    assert node["serviceAccount"] == "sbx-test-nodes@example-project.iam.gserviceaccount.com"
    assert (pool["name"], pool["nodeCount"]) == ("sbx-test-system", 2)
    assert pool["management"] == {"autoRepair": True, "autoUpgrade": True}


def test_open_egress_deploys_the_resolver_forwarding_to_the_metadata_server_only(
    engine: Recorder,
) -> None:
    resources = build(engine, {"egress": {"mode": "open"}}, resolver={"image": "example.com/r:1"})
    policy = named(resources, "gcp-gke-agent-sandbox-resolver-policy").inputs["spec"]
    assert policy["egress"] == [
        {
            "to": [{"ipBlock": {"cidr": "169.254.169.254/32"}}],
            "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
        }
    ]
    resolver = named(resources, "gcp-gke-agent-sandbox-resolver").inputs["spec"]["template"]
    # No gVisor toleration: the resolver runs on the system pool.
    assert "tolerations" not in resolver["spec"]


def test_an_existing_cluster_gets_only_the_node_pool(engine: Recorder) -> None:
    resources = build(engine, existingCluster="agents")
    types = {r.type for r in resources}
    assert CLUSTER not in types
    assert "gcp:compute/network:Network" not in types
    # The existing cluster keeps its own pool for system pods.
    assert one(resources, POOL).inputs["cluster"] == "agents"
    sink = one(resources, "gcp:logging/projectSink:ProjectSink").inputs
    assert 'resource.labels.cluster_name="agents"' in sink["filter"]


def test_log_retention_reaches_the_bucket(engine: Recorder) -> None:
    resources = build(engine, {"audit": {"logRetentionDays": 400}})
    bucket = one(resources, "gcp:logging/projectBucketConfig:ProjectBucketConfig").inputs
    assert bucket["retentionDays"] == 400
    sink = one(resources, "gcp:logging/projectSink:ProjectSink").inputs
    assert 'resource.labels.namespace_name="agent-sandboxes"' in sink["filter"]


@pytest.mark.parametrize(
    "lower,higher",
    [
        ("1.36.3-gke.1767000", "1.36.10-gke.1"),
        ("1.36.3-gke.999", "1.36.3-gke.1767000"),
        ("1.36", "1.36.0-gke.1"),
        ("1.9.9", "1.36"),
    ],
)
def test_gke_versions_compare_as_numbers_not_text(lower: str, higher: str) -> None:
    assert gke_version(lower) < gke_version(higher)
    assert gke_version("1.36.3-gke.1767000") == (1, 36, 3, 1767000)


def test_preview_exits_2_naming_min_nodes_without_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: sandboxkit\nstackConfigDir: stacks\n")
    (tmp_path / "stacks").mkdir()
    (tmp_path / "stacks" / "Pulumi.t.yaml").write_text(
        "config:\n"
        "  sandboxkit:environment: prod\n"
        "  sandboxkit:targets: [gcp-gke]\n"
        "  sandboxkit:gcp-gke:\n"
        "    project: example-project\n"
        "    region: us-central1\n"
        "    image: example.com/sandbox:1\n"
        "    minNodes: 5\n"
        "    maxNodes: 2\n"
    )
    arguments = ["preview", "--stack", "t", "--project-dir", str(tmp_path)]
    result = CliRunner().invoke(cli.app, arguments)
    assert result.exit_code == 2
    assert "sandboxkit:gcp-gke.minNodes: got 5; expected at most maxNodes (2)" in result.output
    assert "Traceback" not in result.output
