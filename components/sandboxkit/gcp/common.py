"""Children both Google Cloud targets create: the audit log bucket and sink, and Cloud NAT."""

from __future__ import annotations

import pulumi
import pulumi_gcp as gcp


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
) -> gcp.compute.RouterNat:
    """A Cloud Router and Cloud NAT for ``subnetwork`` only, logging every translation.

    Children: ``<name>-router`` and ``<name>-nat``. Private addresses reach the internet only
    through it; what they may reach is the firewall's decision, not the NAT's.
    """
    router = gcp.compute.Router(
        f"{name}-router",
        project=project,
        region=region,
        name=f"{object_name}-router",
        network=network,
        opts=opts,
    )
    return gcp.compute.RouterNat(
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
