"""What ``MicrovmSandbox`` is built from: its inputs, as the ``aws-microvm`` spec plans them,
and the RunMicrovm bounds both the spec and the component check.

No SDK and no settings here: the component imports this module and nothing of the spec.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

from sandboxkit.egress_contract import EgressRule
from sandboxkit.secrets import SecretValue

# botocore 1.44.8 `lambda-microvms` service model, RunMicrovm request shapes.
MAX_DURATION_SECONDS = 28_800  # RunMicrovmRequestMaximumDurationInSecondsInteger: 1 to 28800
MIN_IDLE_SECONDS = 60  # IdlePolicyMaxIdleDurationSecondsInteger: min 60


# Network Firewall rule-group capacity is fixed when the group is created (developer guide,
# "Setting rule group capacity"): the kit's name rule group holds two Suricata rules per name
# entry (TLS SNI and HTTP Host) in 1,000, its IP rule group one per IP entry in 100. Resolved-IP
# validation exempts at most 100 destination ranges (botocore shape
# Route53ResolvedIPValidationAddresses), one per IP entry.
MAX_NAME_ENTRIES = 500
MAX_IP_ENTRIES = 100


@dataclass(frozen=True)
class EgressPlan:
    """What the network enforces, derived from the profile and the control-plane settings.

    Attributes:
        mode: ``deny``, ``allowlist`` or ``open``.
        names: name and wildcard entries with their ports, sorted (control-plane hosts
            included in every mode); each becomes a TLS SNI and an HTTP Host pass rule on its
            port (``sandboxkit.aws.suricata``).
        dns_names: Route 53 Resolver DNS Firewall domains, sorted: ``*.x`` or the exact name.
        tcp_ports: TCP ports the connector's security group opens to any address: the ports
            of ``names`` (the firewall ties each name to its own); with ``open``, every port.
        ip_rules: IPv4-literal entries, enforced by a stateful pass rule for exactly IP:port and
            a security-group rule for that address.
    """

    mode: str
    names: tuple[EgressRule, ...]
    dns_names: tuple[str, ...]
    tcp_ports: tuple[int, ...]
    ip_rules: tuple[EgressRule, ...]


@dataclass(frozen=True)
class AwsAccess:
    """Where and as whom the stack calls AWS: the explicit provider's settings, which the
    firewall policy's API calls use too (never ``AWS_REGION`` or ``AWS_DEFAULT_REGION``).

    Attributes:
        region: AWS region of every resource.
        profile: shared-config profile to start from, or ``None`` for the default chain.
        role_arn: role to assume from that identity, or ``None``.
        external_id: the role's external id, if its trust policy asks for one.
    """

    region: str
    profile: str | None = None
    role_arn: str | None = None
    external_id: str | None = None

    def inputs(self) -> dict[str, str]:
        """The set fields, camel-cased (a dynamic resource's ``access`` input)."""
        fields = {
            "region": self.region,
            "profile": self.profile,
            "roleArn": self.role_arn,
            "externalId": self.external_id,
        }
        return {key: value for key, value in fields.items() if value is not None}

    @staticmethod
    def of(inputs: Any) -> AwsAccess:
        """The ``AwsAccess`` an ``inputs()`` mapping describes."""
        return AwsAccess(
            region=inputs["region"],
            profile=inputs.get("profile"),
            role_arn=inputs.get("roleArn"),
            external_id=inputs.get("externalId"),
        )


class MicrovmSandboxArgs(TypedDict, total=False):
    """Inputs of ``MicrovmSandbox``; ``spec.microvm_args`` builds them from profile and settings."""

    access: AwsAccess
    """Region and credentials of every child (an explicit ``aws.Provider``) and of the firewall
    policy's API calls."""
    egress: EgressPlan
    """What the firewall, DNS Firewall and security group allow (``spec.egress_plan``)."""
    control_plane_url: str
    """``https://`` URL of the platform API the worker calls (launcher ``CONTROL_PLANE_URL``)."""
    worker_artifact_uri: str
    """``s3://bucket/key.zip`` of the worker code."""
    worker_artifact_arn: str
    """ARN of that S3 object (the build role may read it and nothing else)."""
    base_image_arn: str
    """MicroVM base image ARN."""
    webhook_secret: SecretValue
    """HMAC key shared with the platform."""
    worker_credential_key: SecretValue
    """HMAC key the launcher signs each MicroVM's per-launch worker credential with (shared
    with the platform's verifier; never handed to a MicroVM)."""
    worker_credential_key_max_age_days: int
    """Longest life of that key, days (tagged on its secret)."""
    vpc_cidr: str
    """IPv4 CIDR of the VPC (RFC 1918, /16 to /24)."""
    availability_zones: tuple[str, ...]
    """AZs of the connector, firewall and NAT subnets (one of each per AZ)."""
    execution_role_policy: dict[str, Any] | None
    """IAM policy document of the MicroVM execution role, or ``None`` for no role."""
    max_duration_seconds: int
    """Hard cap on a MicroVM's life, seconds (1 to 28,800)."""
    idle_timeout_seconds: int
    """Idle time before a MicroVM is suspended and then terminated, seconds (60+)."""
    exec_timeout_seconds: int
    """Per-command timeout the worker enforces, seconds."""
    replay_window_seconds: int
    """Accepted webhook timestamp skew, seconds."""
    ingress: str
    """``none`` or ``authToken``."""
    ingress_port: int
    """The MicroVM port auth tokens may name (``authToken``)."""
    launcher_concurrency: int
    """Reserved concurrency of the launcher Lambda."""
    launcher_layers: tuple[str, ...]
    """Lambda layer ARNs of the launcher."""
    trusted_accounts: tuple[str, ...]
    """12-digit AWS accounts whose layers and base images the stack trusts besides AWS's own
    (``assumeRole``'s account and ``trustedAccounts``), tagged on the launcher and the image."""
    dns_firewall_mutation_protection: bool
    """``MutationProtection`` ``ENABLED`` on the DNS Firewall association (blocks its delete)."""
    log_retention_days: int
    """CloudWatch retention of every log group, days (an allowed CloudWatch value)."""
    labels: dict[str, str]
    """The kit's tags, set on every child that takes tags."""
