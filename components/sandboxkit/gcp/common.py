"""Children both Google Cloud targets create: a service account with project roles, a private
network with flow logs (and Cloud NAT), and the audit log bucket and sink; and the check of the
object name that prefixes their GCP names."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pulumi
import pulumi_gcp as gcp

# The compute resource modules themselves, not the package: an offline render then loads these
# four of pulumi_gcp.compute's ~290 modules (``sdk_parts``).
from pulumi_gcp.compute.network import Network
from pulumi_gcp.compute.router import Router
from pulumi_gcp.compute.router_nat import RouterNat
from pulumi_gcp.compute.subnetwork import Subnetwork

if TYPE_CHECKING:
    from pulumi_gcp.compute import (
        SubnetworkLogConfigArgsDict,
        SubnetworkSecondaryIpRangeArgsDict,
    )

# VPC flow logs of every connection, unsampled, with all metadata
# (https://cloud.google.com/vpc/docs/flow-logs#key_properties).
FLOW_LOGS: SubnetworkLogConfigArgsDict = {
    "aggregation_interval": "INTERVAL_5_SEC",
    "flow_sampling": 1.0,
    "metadata": "INCLUDE_ALL_METADATA",
}


def check_object_name(object_name: str, longest: int) -> None:
    """Refuse an ``object_name`` that cannot prefix a component's GCP names.

    The form is a service account id's and an RFC 1035 label's (``[a-z]([-a-z0-9]*[a-z0-9])?``,
    IAM ``projects.serviceAccounts.create`` accountId); ``longest`` is the component's room for
    it (its plan's ``MAX_OBJECT_NAME``, which its spec derives the name within).

    Raises:
        ValueError: for a name of another form or longer than ``longest`` characters.
    """
    if not re.match(rf"^[a-z]([-a-z0-9]{{0,{longest - 2}}}[a-z0-9])?$", object_name):
        raise ValueError(f"object_name {object_name!r}: a lower-case name of {longest} or fewer")


def service_account(
    name: str,
    part: str,
    *,
    project: str,
    account_id: str,
    display_name: str,
    description: str,
    roles: Sequence[str],
    opts: pulumi.ResourceOptions,
) -> tuple[gcp.serviceaccount.Account, list[gcp.projects.IAMMember]]:
    """A service account and one project-level grant of each of ``roles`` to it.

    Children: ``<name>-<part>`` (the account) and ``<name>-role-<role>`` per role, ``<role>``
    without ``roles/`` and with dots as hyphens (``roles/logging.logWriter`` ->
    ``<name>-role-logging-logWriter``). Returns the account and the grants, in ``roles`` order,
    for callers to depend on.
    """
    account = gcp.serviceaccount.Account(
        f"{name}-{part}",
        project=project,
        account_id=account_id,
        display_name=display_name,
        description=description,
        opts=opts,
    )
    member = account.email.apply(lambda email: f"serviceAccount:{email}")
    grants = [
        gcp.projects.IAMMember(
            f"{name}-role-{role.removeprefix('roles/').replace('.', '-')}",
            project=project,
            role=role,
            member=member,
            opts=opts,
        )
        for role in roles
    ]
    return account, grants


def private_network(
    name: str,
    *,
    project: str,
    region: str,
    object_name: str,
    description: str,
    subnet_cidr: str,
    private_ip_google_access: bool,
    nat: bool,
    opts: pulumi.ResourceOptions,
    secondary_ip_ranges: Sequence[SubnetworkSecondaryIpRangeArgsDict] | None = None,
    network_firewall_policy_enforcement_order: str | None = None,
    delete_default_routes_on_create: bool | None = None,
) -> tuple[Network, Subnetwork]:
    """A custom-mode regional VPC named ``object_name`` with one subnet of the same name that
    logs every flow (``FLOW_LOGS``), and with ``nat`` a Cloud NAT for it (``cloud_nat``).

    Children: ``<name>-network``, ``<name>-subnet``, and with ``nat`` ``<name>-router`` and
    ``<name>-nat``. ``subnet_cidr`` and ``secondary_ip_ranges`` (``{"range_name",
    "ip_cidr_range"}`` dicts) are private CIDR ranges. The last two arguments go to the network
    unchanged; left ``None`` they are not set at all.
    """
    network = Network(
        f"{name}-network",
        project=project,
        name=object_name,
        description=description,
        auto_create_subnetworks=False,
        routing_mode="REGIONAL",
        network_firewall_policy_enforcement_order=network_firewall_policy_enforcement_order,
        delete_default_routes_on_create=delete_default_routes_on_create,
        opts=opts,
    )
    subnet = Subnetwork(
        f"{name}-subnet",
        project=project,
        region=region,
        name=object_name,
        network=network.id,
        ip_cidr_range=subnet_cidr,
        secondary_ip_ranges=secondary_ip_ranges,
        private_ip_google_access=private_ip_google_access,
        log_config=FLOW_LOGS,
        opts=opts,
    )
    if nat:
        cloud_nat(
            name,
            project=project,
            region=region,
            network=network.id,
            subnetwork=subnet.id,
            object_name=object_name,
            opts=opts,
        )
    return network, subnet


def audit_log_bucket(
    name: str,
    *,
    project: str,
    region: str,
    bucket_id: str,
    retention_days: int,
    log_filter: pulumi.Input[str],
    opts: pulumi.ResourceOptions,
) -> gcp.logging.ProjectBucketConfig:
    """A regional log bucket keeping ``retention_days`` and a sink routing ``log_filter`` to it.

    Children: ``<name>-log-bucket`` and ``<name>-log-sink``. A sink into a bucket of its own
    project needs no IAM grant (https://cloud.google.com/logging/docs/export/configure_export_v2).
    The ``_Default`` bucket keeps its own copy at the project's retention: the kit leaves
    project-wide routing alone.
    """
    bucket = gcp.logging.ProjectBucketConfig(
        f"{name}-log-bucket",
        project=project,
        location=region,
        bucket_id=bucket_id,
        retention_days=retention_days,
        description="sandboxkit audit logs: sandbox launcher, network flows and firewall",
        opts=opts,
    )
    gcp.logging.ProjectSink(
        f"{name}-log-sink",
        project=project,
        name=bucket_id,
        destination=(
            f"logging.googleapis.com/projects/{project}/locations/{region}/buckets/{bucket_id}"
        ),
        filter=log_filter,
        unique_writer_identity=True,
        opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[bucket])),
    )
    return bucket


def cloud_nat(
    name: str,
    *,
    project: str,
    region: str,
    network: pulumi.Input[str],
    subnetwork: pulumi.Input[str],
    object_name: str,
    opts: pulumi.ResourceOptions,
) -> RouterNat:
    """A Cloud Router and Cloud NAT for ``subnetwork`` only, logging every translation.

    Children: ``<name>-router`` and ``<name>-nat``. Private addresses reach the internet only
    through it; what they may reach is the firewall's decision, not the NAT's.
    """
    router = Router(
        f"{name}-router",
        project=project,
        region=region,
        name=f"{object_name}-router",
        network=network,
        opts=opts,
    )
    return RouterNat(
        f"{name}-nat",
        project=project,
        region=region,
        name=f"{object_name}-nat",
        router=router.name,
        nat_ip_allocate_option="AUTO_ONLY",
        source_subnetwork_ip_ranges_to_nat="LIST_OF_SUBNETWORKS",
        subnetworks=[{"name": subnetwork, "source_ip_ranges_to_nats": ["ALL_IP_RANGES"]}],
        log_config={"enable": True, "filter": "ALL"},
        opts=opts,
    )
