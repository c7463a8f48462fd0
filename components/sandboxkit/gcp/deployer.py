"""What the identity running ``pulumi up`` on Google Cloud needs: per resource type, the
predefined roles and the APIs (services) to enable in the project.

Roles: Google Cloud's predefined roles reference (https://cloud.google.com/iam/docs/roles-permissions):
``roles/run.admin`` holds ``run.services.*`` and ``run.services.setIamPolicy``;
``roles/compute.networkAdmin`` networks, subnetworks, routers and NAT;
``roles/compute.securityAdmin`` ``compute.firewallPolicies.*`` (network firewall policies, their
rules and associations); ``roles/dns.admin`` ``dns.responsePolicies.*`` and
``dns.responsePolicyRules.*``; ``roles/logging.configWriter`` ``logging.buckets.*`` and
``logging.sinks.*``; ``roles/iam.serviceAccountAdmin`` ``iam.serviceAccounts.create/delete``;
``roles/iam.serviceAccountUser`` ``iam.serviceAccounts.actAs``, which a Cloud Run service or a
GKE node pool running as a service account needs; ``roles/resourcemanager.projectIamAdmin``
``resourcemanager.projects.setIamPolicy`` for project-level role grants; ``roles/container.admin``
clusters, node pools and every Kubernetes object in them. APIs: each product's "Enable the API"
step (run, compute, dns, logging, iam, cloudresourcemanager, container). Enabling needs
``roles/serviceusage.serviceUsageAdmin`` once, by whoever enables them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sandboxkit.deployer import DeployerPolicy, granted, union
from sandboxkit.effective_egress import ResourceView
from sandboxkit.gcp.type_tokens import (
    ASSOCIATION,
    CLUSTER,
    FIREWALL_POLICY,
    FIREWALL_RULE,
    INVOKER_MEMBER,
    LOG_BUCKET,
    LOG_SINK,
    NAT,
    NETWORK,
    NODE_POOL,
    PROJECT_MEMBER,
    RESPONSE_POLICY,
    RESPONSE_RULE,
    ROUTER,
    SERVICE,
    SERVICE_ACCOUNT,
    SUBNET,
)
from sandboxkit.type_tokens import TypeToken


@dataclass(frozen=True)
class GcpGrant:
    """What one GCP resource type needs: predefined roles and APIs (``run.googleapis.com``)."""

    roles: tuple[str, ...]
    services: tuple[str, ...]


_RUN = "run.googleapis.com"
_COMPUTE = "compute.googleapis.com"
_NETWORK = GcpGrant(("roles/compute.networkAdmin",), (_COMPUTE,))
_FIREWALL = GcpGrant(("roles/compute.securityAdmin",), (_COMPUTE,))
_LOGGING = GcpGrant(("roles/logging.configWriter",), ("logging.googleapis.com",))
_DNS = GcpGrant(("roles/dns.admin",), ("dns.googleapis.com",))
_CONTAINER = GcpGrant(
    ("roles/container.admin", "roles/iam.serviceAccountUser"), ("container.googleapis.com",)
)

GRANTS: dict[TypeToken, GcpGrant] = {
    SERVICE: GcpGrant(("roles/run.admin", "roles/iam.serviceAccountUser"), (_RUN,)),
    INVOKER_MEMBER: GcpGrant(("roles/run.admin",), (_RUN,)),
    NETWORK: _NETWORK,
    SUBNET: _NETWORK,
    ROUTER: _NETWORK,
    NAT: _NETWORK,
    FIREWALL_POLICY: _FIREWALL,
    FIREWALL_RULE: _FIREWALL,
    # Associating a policy with a network also needs compute.networks.setFirewallPolicy,
    # which roles/compute.networkAdmin holds.
    ASSOCIATION: GcpGrant(
        ("roles/compute.securityAdmin", "roles/compute.networkAdmin"), (_COMPUTE,)
    ),
    RESPONSE_POLICY: _DNS,
    RESPONSE_RULE: _DNS,
    LOG_BUCKET: _LOGGING,
    LOG_SINK: _LOGGING,
    SERVICE_ACCOUNT: GcpGrant(("roles/iam.serviceAccountAdmin",), ("iam.googleapis.com",)),
    PROJECT_MEMBER: GcpGrant(
        ("roles/resourcemanager.projectIamAdmin",), ("cloudresourcemanager.googleapis.com",)
    ),
    CLUSTER: _CONTAINER,
    NODE_POOL: _CONTAINER,
}


def gcp_document(target: str, project: str, resources: Sequence[ResourceView]) -> dict[str, Any]:
    """``{project, roles, services}`` for the GCP resources of ``resources`` (Kubernetes objects
    are left to the caller).

    Raises:
        MissingGrantError: for a GCP resource type ``GRANTS`` lacks.
    """
    found = granted(target, GRANTS, [r for r in resources if r.type.startswith("gcp:")])
    return {
        "project": project,
        "roles": union(g.roles for g in found.values()),
        "services": union(g.services for g in found.values()),
    }


def gcp_policy(target: str, project: str, resources: Sequence[ResourceView]) -> DeployerPolicy:
    """The deployer policy of a gcp target without cluster objects (``gcp-cloudrun``)."""
    document = gcp_document(target, project, resources)
    return DeployerPolicy(target, document, apply_hint(document))


def apply_hint(document: dict[str, Any]) -> str:
    """The gcloud commands that enable the document's APIs and grant its roles."""
    project = document["project"]
    grants = "; ".join(
        f"gcloud projects add-iam-policy-binding {project} --member DEPLOYER --role {role}"
        for role in document["roles"]
    )
    return (
        f"enable the APIs: gcloud services enable {' '.join(document['services'])} --project "
        f"{project}; grant the roles (DEPLOYER as serviceAccount:EMAIL or user:EMAIL): {grants}"
    )
