"""``GkeAgentSandbox``: a private GKE cluster (or an existing one) with a gVisor node pool and
the Agent Sandbox add-on, and the kit's ``AgentSandbox`` objects on it.

See docs/targets/gcp-gke.md and ``sandboxkit.gcp.gke.spec`` for the sources.
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_gcp as gcp
import pulumi_kubernetes as k8s

from sandboxkit.boundary import NODE_POOL_LABEL, SYSTEM_NODE_POOL
from sandboxkit.gcp.common import (
    audit_log_bucket,
    check_object_name,
    private_network,
    service_account,
)
from sandboxkit.gcp.gke.plan import (
    GVISOR_NODE_LABEL,
    GVISOR_TOLERATION,
    MAX_OBJECT_NAME,
    GkeAgentSandboxArgs,
    cluster_description,
)
from sandboxkit.kubernetes.agent_sandbox import AgentSandbox

# Project roles of the node service account. roles/container.defaultNodeServiceAccount is GKE's
# least-privilege node role: write logs and metrics, read monitoring and resource metadata
# (https://cloud.google.com/kubernetes-engine/docs/how-to/service-accounts#default-gke-service-agent).
# Pulling a private Artifact Registry image needs roles/artifactregistry.reader, granted by the
# caller on that repository only, never here on the whole project.
NODE_ROLES = ("roles/container.defaultNodeServiceAccount",)
# Node access is governed by IAM (NODE_ROLES), so the scope is the broad one GKE recommends.
NODE_OAUTH_SCOPES = ("https://www.googleapis.com/auth/cloud-platform",)
PODS_RANGE = "pods"
SERVICES_RANGE = "services"


def kubeconfig(cluster_name: str, endpoint: str | None, ca_certificate: str | None) -> str:
    """A kubeconfig for one cluster that authenticates with ``gke-gcloud-auth-plugin``.

    ``endpoint`` is the IP endpoint with the cluster's ``ca_certificate``, or the DNS-based
    endpoint (``gke-<id>.<region>.gke.goog``) with ``ca_certificate`` ``None``: that endpoint
    presents a publicly trusted certificate, so the kubeconfig names no authority
    (https://cloud.google.com/kubernetes-engine/docs/how-to/latest/network-isolation, "DNS-based
    endpoint").
    """
    server: dict[str, str] = {"server": f"https://{endpoint or ''}"}
    if ca_certificate is not None:
        server["certificate-authority-data"] = ca_certificate
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1",
            "command": "gke-gcloud-auth-plugin",
            "provideClusterInfo": True,
            "interactiveMode": "Never",
        }
    }
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": cluster_name,
                    "cluster": server,
                }
            ],
            "users": [{"name": cluster_name, "user": user}],
            "contexts": [
                {"name": cluster_name, "context": {"cluster": cluster_name, "user": cluster_name}}
            ],
            "current-context": cluster_name,
        }
    )


class GkeAgentSandbox(pulumi.ComponentResource):
    """A private GKE cluster with the Agent Sandbox add-on, a gVisor node pool, and the kit's
    agent-sandbox objects on it.

    Children (``<name>`` is the component name):
        ``<name>-node-service-account``, ``<name>-role-<role>`` per ``NODE_ROLES``; unless
        ``existing_cluster``: ``<name>-network``, ``<name>-subnet``, ``<name>-router``,
        ``<name>-nat``, ``<name>-cluster``, ``<name>-system-pool`` (untainted, without GKE
        Sandbox: GKE's own pods, kube-dns, the Agent Sandbox controller and the kit's resolver
        run there); then ``<name>-gvisor-pool``,
        ``<name>-k8s-provider``, ``<name>-agent-sandbox`` (an ``AgentSandbox`` and its
        children), ``<name>-log-bucket`` and ``<name>-log-sink``.

    Raises:
        ValueError: an object name that cannot prefix GCP names, ``min_nodes`` above
            ``max_nodes``, or sandbox args without the gVisor toleration and node selector.
    """

    cluster_name: pulumi.Output[str]
    node_pool_name: pulumi.Output[str]
    node_service_account_email: pulumi.Output[str]

    def __init__(
        self, name: str, args: GkeAgentSandboxArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("sandboxkit:index:GkeAgentSandbox", name, None, opts)
        object_name = args["object_name"]
        check_object_name(object_name, MAX_OBJECT_NAME)
        if not 0 <= args["min_nodes"] <= args["max_nodes"]:
            raise ValueError(f"min_nodes {args['min_nodes']}: from 0 to max_nodes")
        sandbox = args["sandbox"]
        if (
            GVISOR_TOLERATION not in sandbox.get("tolerations", [])
            or sandbox.get("node_selector") != GVISOR_NODE_LABEL
        ):
            raise ValueError("sandbox: needs the gVisor toleration and node selector")

        project, region = args["project"], args["region"]
        labels = dict(args["labels"])
        child = pulumi.ResourceOptions(parent=self)

        account, grants = service_account(
            name,
            "node-service-account",
            project=project,
            account_id=f"{object_name}-nodes",
            display_name="sandboxkit gVisor sandbox nodes",
            description="Runs GKE sandbox nodes; holds only NODE_ROLES.",
            roles=NODE_ROLES,
            opts=child,
        )
        node_config: Any = {
            "service_account": account.email,
            "oauth_scopes": list(NODE_OAUTH_SCOPES),
            "workload_metadata_config": {"mode": "GKE_METADATA"},
            "shielded_instance_config": {
                "enable_secure_boot": True,
                "enable_integrity_monitoring": True,
            },
            "metadata": {"disable-legacy-endpoints": "true"},
            "resource_labels": labels,
        }

        existing = args.get("existing_cluster")
        endpoint: pulumi.Output[Any]
        ca_certificate: pulumi.Output[Any]
        if existing:
            cluster_name: pulumi.Input[str] = existing
            found = gcp.container.get_cluster_output(
                name=existing,
                location=region,
                project=project,
                opts=pulumi.InvokeOptions(parent=self),
            )
            if args["control_plane_access"] == "dns":
                endpoint = found.control_plane_endpoints_configs.apply(
                    lambda configs: next(
                        (d.endpoint for c in configs or () for d in c.dns_endpoint_configs), None
                    )
                )
                ca_certificate = pulumi.Output.from_input(None)
            else:
                endpoint = found.endpoint
                ca_certificate = found.master_auths.apply(
                    lambda auths: auths[0].cluster_ca_certificate if auths else None
                )
            pool_depends: list[pulumi.Resource] = list(grants)
            # The existing cluster keeps its own pool for system pods (see GkeSettings).
            system_pools: list[pulumi.Resource] = []
        else:
            cluster = self._cluster(name, args, node_config, grants, child)
            cluster_name = cluster.name
            if args["control_plane_access"] == "dns":
                endpoint = cluster.control_plane_endpoints_config.apply(
                    lambda config: (
                        config.dns_endpoint_config.endpoint
                        if config and config.dns_endpoint_config
                        else None
                    )
                )
                ca_certificate = pulumi.Output.from_input(None)
            else:
                endpoint = cluster.endpoint
                ca_certificate = cluster.master_auth.cluster_ca_certificate
            pool_depends = [cluster, *grants]
            system_pool = gcp.container.NodePool(
                f"{name}-system-pool",
                project=project,
                location=region,
                cluster=cluster_name,
                name=f"{object_name}-system",
                node_count=args["system_nodes"],
                management={"auto_repair": True, "auto_upgrade": True},
                node_config={
                    **node_config,
                    "machine_type": args["system_machine_type"],
                    "image_type": "COS_CONTAINERD",
                    "labels": {NODE_POOL_LABEL: SYSTEM_NODE_POOL},
                },
                opts=pulumi.ResourceOptions(parent=self, depends_on=pool_depends),
            )
            system_pools = [system_pool]

        pool = gcp.container.NodePool(
            f"{name}-gvisor-pool",
            project=project,
            location=region,
            cluster=cluster_name,
            name=f"{object_name}-gvisor",
            autoscaling={"min_node_count": args["min_nodes"], "max_node_count": args["max_nodes"]},
            management={"auto_repair": True, "auto_upgrade": True},
            node_config={
                **node_config,
                "machine_type": args["machine_type"],
                "image_type": "COS_CONTAINERD",
                "sandbox_config": {"type": "GVISOR"},
            },
            opts=pulumi.ResourceOptions(parent=self, depends_on=pool_depends),
        )

        config_text: pulumi.Output[str] = pulumi.Output.all(
            cluster_name, endpoint, ca_certificate
        ).apply(lambda values: kubeconfig(values[0], values[1], values[2]))
        secret_config: pulumi.Output[str] = pulumi.Output.secret(config_text)
        provider = k8s.Provider(f"{name}-k8s-provider", kubeconfig=secret_config, opts=child)
        agent_sandbox = AgentSandbox(
            f"{name}-agent-sandbox",
            sandbox,
            opts=pulumi.ResourceOptions(
                parent=self, providers=[provider], depends_on=[pool, *system_pools]
            ),
        )

        audit_log_bucket(
            name,
            project=project,
            region=region,
            bucket_id=f"{object_name}-gke-audit",
            retention_days=args["log_retention_days"],
            log_filter=pulumi.Output.from_input(cluster_name).apply(
                lambda cluster: (
                    f'resource.type="k8s_container" AND '
                    f'resource.labels.cluster_name="{cluster}" AND '
                    f'resource.labels.namespace_name="{sandbox["namespace"]}"'
                )
            ),
            opts=child,
        )

        self._sandbox = agent_sandbox
        self.cluster_name = pulumi.Output.from_input(cluster_name)
        self.node_pool_name = pool.name
        self.node_service_account_email = account.email
        self.register_outputs(self.outputs())

    def outputs(self) -> dict[str, pulumi.Output[str]]:
        """Stack outputs: clusterName, nodePoolName, nodeServiceAccountEmail and the
        ``AgentSandbox`` outputs (namespace, sandboxTemplateName, warmPoolName,
        networkPolicyName)."""
        return {
            "clusterName": self.cluster_name,
            "nodePoolName": self.node_pool_name,
            "nodeServiceAccountEmail": self.node_service_account_email,
            **self._sandbox.outputs(),
        }

    def _cluster(
        self,
        name: str,
        args: GkeAgentSandboxArgs,
        node_config: Any,
        grants: list[gcp.projects.IAMMember],
        child: pulumi.ResourceOptions,
    ) -> gcp.container.Cluster:
        project, region, object_name = args["project"], args["region"], args["object_name"]
        network, subnet = private_network(
            name,
            project=project,
            region=region,
            object_name=f"{object_name}-gke",
            description="sandboxkit: GKE Agent Sandbox cluster network",
            subnet_cidr=args["subnet_cidr"],
            secondary_ip_ranges=[
                {"range_name": PODS_RANGE, "ip_cidr_range": args["pods_cidr"]},
                {"range_name": SERVICES_RANGE, "ip_cidr_range": args["services_cidr"]},
            ],
            # Private nodes reach Google APIs (logging, Artifact Registry) without NAT.
            private_ip_google_access=True,
            # Private nodes pull images from outside registries through NAT; what sandbox pods
            # may reach is the NetworkPolicy's decision.
            nat=True,
            opts=child,
        )
        return gcp.container.Cluster(
            f"{name}-cluster",
            project=project,
            location=region,
            name=object_name,
            description=cluster_description(args["public_endpoint_reason"]),
            network=network.id,
            subnetwork=subnet.id,
            min_master_version=args["min_master_version"],
            remove_default_node_pool=True,
            initial_node_count=1,
            deletion_protection=True,
            networking_mode="VPC_NATIVE",
            ip_allocation_policy={
                "cluster_secondary_range_name": PODS_RANGE,
                "services_secondary_range_name": SERVICES_RANGE,
            },
            datapath_provider="ADVANCED_DATAPATH",
            release_channel={"channel": args["release_channel"]},
            control_plane_endpoints_config={
                "dns_endpoint_config": {
                    "allow_external_traffic": args["control_plane_access"] == "dns"
                }
            },
            private_cluster_config={
                "enable_private_nodes": True,
                "enable_private_endpoint": args["private_endpoint"],
                "master_ipv4_cidr_block": args["master_cidr"],
            },
            master_authorized_networks_config={
                "cidr_blocks": [
                    {"cidr_block": cidr, "display_name": f"sandboxkit-{index}"}
                    for index, cidr in enumerate(args["master_authorized_networks"])
                ],
                "gcp_public_cidrs_access_enabled": False,
            },
            workload_identity_config={"workload_pool": f"{project}.svc.id.goog"},
            enable_shielded_nodes=True,
            enable_legacy_abac=False,
            addons_config={"agent_sandbox_config": {"enabled": True}},
            # The default pool lives only until removal, but never with the default account.
            node_config=node_config,
            resource_labels=dict(args["labels"]),
            opts=pulumi.ResourceOptions(parent=self, depends_on=grants),
        )
