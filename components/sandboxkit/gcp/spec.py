"""Settings and caps shared by the Google Cloud targets (no SDK import here)."""

from __future__ import annotations

import ipaddress
from typing import Annotated

from pydantic import AfterValidator, Field

from sandboxkit.targets import Cap, TargetSettings

# Cloud Logging keeps a user-defined bucket's logs from 1 to 3650 days.
LOG_RETENTION_CAP = Cap(
    "audit.logRetentionDays",
    1,
    3650,
    "Cloud Logging bucket retention_days, 1 to 3650 "
    "(https://cloud.google.com/logging/docs/buckets#custom-retention)",
)


def _private_cidr(value: str) -> str:
    try:
        network = ipaddress.ip_network(value, strict=True)
    except ValueError:
        raise ValueError("an IPv4 network in CIDR form such as 10.8.0.0/24") from None
    if network.version != 4 or not network.is_private:
        raise ValueError("a private (RFC 1918) IPv4 range such as 10.8.0.0/24")
    return value


def _any_cidr(value: str) -> str:
    try:
        ipaddress.ip_network(value, strict=True)
    except ValueError:
        raise ValueError("a network in CIDR form such as 203.0.113.0/24") from None
    return value


PrivateCidr = Annotated[str, AfterValidator(_private_cidr)]
"""A private IPv4 range in CIDR form (subnets, pod and service ranges)."""
Cidr = Annotated[str, AfterValidator(_any_cidr)]
"""Any network in CIDR form (operator networks allowed to reach a control plane)."""


class GcpSettings(TargetSettings):
    """Settings every Google Cloud target takes explicitly (never the ambient gcloud config).

    Attributes:
        project: project id, 6 to 30 lower-case letters, digits and hyphens.
        region: region of every regional resource, e.g. ``us-central1``.
    """

    project: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")]
    region: Annotated[str, Field(pattern=r"^[a-z]+-[a-z]+[0-9]+$")]
