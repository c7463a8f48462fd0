"""Settings and caps shared by the Google Cloud targets (no SDK import here)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Annotated, Final

from pydantic import AfterValidator, Field

from sandboxkit.addresses import operator_network_reason, private_use_reason
from sandboxkit.targets import Cap, TargetSettings

# CPU seconds to import what both targets use of pulumi_gcp (``TargetSpec.sdks``): its resource
# modules, not compute's whole __init__ (``sdk_parts``); about 1.4 times aws-microvm's render
# once compute loads in part (benchmarks/README.md, "Main after the workerd decider, sdk_parts
# and launch").
GCP_SDKS: Final[Mapping[str, float]] = {"pulumi_gcp": 0.55}

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
    reason = private_use_reason(network) if network.version == 4 else "an IPv6 range"
    if reason is not None:
        raise ValueError(
            f"a private-use (RFC 1918) IPv4 range such as 10.8.0.0/24, inside 10.0.0.0/8, "
            f"172.16.0.0/12 or 192.168.0.0/16: {reason}"
        )
    return value


# The widest network that may reach a control plane: a /8 is the largest IPv4 block ever
# assigned to one organisation, a /32 the usual IPv6 allocation to one provider. Anything wider
# (0.0.0.0/0, ::/0, 0.0.0.0/1 ...) admits a meaningful share of the internet.
MIN_AUTHORIZED_PREFIX = {4: 8, 6: 32}


def _authorized_network(value: str) -> str:
    try:
        network = ipaddress.ip_network(value, strict=True)
    except ValueError:
        raise ValueError("a network in CIDR form such as 10.0.0.0/24") from None
    widest = MIN_AUTHORIZED_PREFIX[network.version]
    if network.prefixlen < widest:
        raise ValueError(
            f"an IPv{network.version} network no wider than /{widest}, such as the operators' "
            "10.0.0.0/24: a wider block (0.0.0.0/0, ::/0) opens the control plane to much "
            "of the internet"
        )
    reason = operator_network_reason(network)
    if reason is not None:
        raise ValueError(f"a public or private-use network operators connect from: {reason}")
    return value


PrivateCidr = Annotated[str, AfterValidator(_private_cidr)]
"""A private-use IPv4 range in CIDR form (subnets, pod and service ranges), inside one RFC 1918
block as IANA's special-purpose registry (``sandboxkit.addresses.private_use_reason``) says."""
AuthorizedNetwork = Annotated[str, AfterValidator(_authorized_network)]
"""A network in CIDR form allowed to reach a control plane, at most ``MIN_AUTHORIZED_PREFIX``
wide (/8 for IPv4, /32 for IPv6), of public or private-use space only
(``sandboxkit.addresses.operator_network_reason``: no loopback, link-local or documentation
block)."""


class GcpSettings(TargetSettings):
    """Settings every Google Cloud target takes explicitly (never the ambient gcloud config).

    Attributes:
        project: project id of every resource, 6 to 30 lower-case letters, digits and hyphens.
        region: region of every regional resource (service or cluster, subnet, NAT, log
            bucket), e.g. ``us-central1``.
    """

    project: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")]
    region: Annotated[str, Field(pattern=r"^[a-z]+-[a-z]+[0-9]+$")]
