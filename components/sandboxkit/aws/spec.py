"""Settings, egress plan, enforcement map and caps of the ``aws-microvm`` target (no SDK import).

The target runs each sandbox as an AWS Lambda MicroVM started by the kit's launcher Lambda for
one signed webhook. Egress leaves only through the kit's VPC connector, an AWS Network Firewall
and a NAT gateway, with a Route 53 Resolver DNS Firewall in front of name resolution.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar, Final, Literal
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from sandboxkit.addresses import address_of, private_use_reason
from sandboxkit.aws.plan import (
    MAX_DURATION_SECONDS,
    MAX_IP_ENTRIES,
    MAX_NAME_ENTRIES,
    MIN_IDLE_SECONDS,
    AwsAccess,
    EgressPlan,
    MicrovmSandboxArgs,
)
from sandboxkit.aws.worker.build import HOOKS_PORT
from sandboxkit.deployer import DeployerPolicy, MissingGrantError, cloud_types
from sandboxkit.effective_egress import ResourceView
from sandboxkit.egress_contract import EgressRule, parse_rule
from sandboxkit.errors import REDACTED, ConfigError, FieldError, Problem, did_you_mean
from sandboxkit.profile import MAX_POOL_SIZE, PROFILE_KEY, SandboxProfile
from sandboxkit.targets import (
    Cap,
    EgressAcceptance,
    Enforcement,
    KitComponent,
    KitContext,
    TargetSettings,
    TargetSpec,
)
from sandboxkit.value_formats import SharedSecret

TARGET = "aws-microvm"
SETTINGS_KEY = f"sandboxkit:{TARGET}"

MAX_DURATION_SOURCE = (
    "lambda-microvms RunMicrovm maximumDurationInSeconds, 1 to 28800 (botocore 1.44.8 shape "
    "RunMicrovmRequestMaximumDurationInSecondsInteger; pulumi-aws lambdamicrovms.Microvm docs)"
)
MIN_IDLE_SOURCE = (
    "lambda-microvms RunMicrovm idlePolicy.maxIdleDurationSeconds, at least 60 (botocore "
    "1.44.8 shape IdlePolicyMaxIdleDurationSecondsInteger)"
)
# CloudWatch Logs accepts only these retention periods (botocore `logs` shape Days, the
# PutRetentionPolicy retentionInDays documentation). A request between two is rounded up.
LOG_RETENTION_DAYS = (
    1,
    3,
    5,
    7,
    14,
    30,
    60,
    90,
    120,
    150,
    180,
    365,
    400,
    545,
    731,
    1096,
    1827,
    2192,
    2557,
    2922,
    3288,
    3653,
)
LOG_RETENTION_SOURCE = (
    "CloudWatch Logs PutRetentionPolicy retentionInDays: one of 1, 3, 5, ... 3653 "
    "(botocore `logs` shape Days); other values round up to the next allowed one"
)

# A control-plane URL without a port is HTTPS on 443.
HTTPS_PORT = 443
# Five minutes of clock skew: the common webhook default (the launcher's own default too).
DEFAULT_REPLAY_WINDOW_SECONDS = 300
# A leaked credential key mints worker credentials until it is replaced; thirty days bounds
# that without rotation.
DEFAULT_WORKER_CREDENTIAL_KEY_MAX_AGE_DAYS = 30
# The MicroVM's HTTPS endpoint stays closed unless the stack asks for token-based ingress.
DEFAULT_INGRESS: Final = "none"
# The DNS Firewall association cannot be disassociated while mutation protection is on: the
# safe default, at the price of a two-step destroy (dnsFirewallMutationProtection).
DEFAULT_DNS_FIREWALL_MUTATION_PROTECTION: Final = True
# Port-scoped auth tokens name a port; 8080 is the endpoint's default routing port
# (Lambda MicroVMs developer guide, "Port routing").
DEFAULT_INGRESS_PORT = 8080
# AWS-managed Amazon Linux 2023 base image, major version 1 (pulumi-aws Image docs).
DEFAULT_BASE_IMAGE = "al2023-1"

# Setting names that suggest the platform's session-creating key. That key never goes to AWS:
# the guest sees only its own job's worker credential, so a leak from a sandbox cannot mint
# sessions.
_SESSION_KEY_NAME = re.compile(
    r"(session|admin|api|platform|master|root).?(key|token|secret)", re.I
)
# Settings that would choose the MicroVM's network path. There is one: the kit's connector;
# the service default (the AWS-managed INTERNET_EGRESS connector) is never used.
_NETWORK_PATH_NAME = re.compile(r"(egress|connector)", re.I)
# The settings of the static worker key every MicroVM used to receive (issue 14): refused by
# name, so an old stack file fails with the replacement spelled out.
_STATIC_WORKER_KEY_SETTINGS = frozenset({"workerKey", "workerKeyMaxAgeDays"})
_REGION = r"^[a-z]{2}(-[a-z]+)+-[0-9]+$"
_PROFILE = r"^[A-Za-z0-9_.@+-]+$"
_ROLE_ARN = r"^arn:aws[a-z-]*:iam::[0-9]{12}:role/[A-Za-z0-9_+=,.@/-]{1,512}$"
# ARN kinds the kit takes, as the service models spell them (botocore 1.44.8):
# lambda-microvms shape MicrovmImageArn (20 to 2048 characters) and lambda shape
# LayerVersionArn (a published layer version, ending in its version number).
_MICROVM_IMAGE_ARN = re.compile(r"^arn:[a-z0-9-]+:lambda:[a-z0-9-]*:[a-z0-9]*:microvm-image:.+$")
_MICROVM_IMAGE_ARN_SOURCE = "botocore 1.44.8 lambda-microvms shape MicrovmImageArn"
_LAYER_VERSION_ARN = re.compile(
    r"^arn:aws[a-zA-Z-]*:lambda:(eusc-)?[a-z]{2}((-gov)|(-iso([a-z]?)))?-[a-z]+-\d:\d{12}:"
    r"layer:[a-zA-Z0-9_-]+:[0-9]+$"
)
# Trusted accounts travel as one tag value of "-"-joined 12-digit ids: AWS tag values hold at
# most 256 characters (Tagging AWS resources, "Tag naming limits and requirements"), 19 ids.
MAX_TRUSTED_ACCOUNTS = 19
# A function takes at most five layers (Lambda quotas, "Function layers: five layers",
# docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html).
MAX_LAYERS = 5
# General purpose bucket naming rules (docs.aws.amazon.com/AmazonS3/latest/userguide/
# bucketnamingrules.html): 3 to 63 lower-case letters, digits, dots and hyphens, a letter or
# digit at each end, no two adjacent dots, not an IP address, none of the reserved prefixes
# and suffixes (S3 access point aliases, Object Lambda, Multi-Region Access Points,
# directory and table buckets).
BUCKET_NAMING_SOURCE = "docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html"
_BUCKET_SHAPE = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$", re.ASCII)
RESERVED_BUCKET_PREFIXES: Final = ("xn--", "sthree-", "amzn-s3-demo-")
RESERVED_BUCKET_SUFFIXES: Final = ("-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3")


def bucket_name(value: str) -> str:
    """``value`` when S3 takes it as a general purpose bucket name (``BUCKET_NAMING_SOURCE``).

    Raises:
        ValueError: naming the rule the name breaks: its length or alphabet (3 to 63 of
            ``a-z 0-9 . -``, a letter or digit first and last), two adjacent dots, the form of
            an IPv4 address (``192.168.1.1``), a reserved prefix (``RESERVED_BUCKET_PREFIXES``)
            or suffix (``RESERVED_BUCKET_SUFFIXES``).
    """
    rules = (
        (
            "3 to 63 lower-case letters, digits, dots and hyphens, beginning and ending with "
            "a letter or digit",
            _BUCKET_SHAPE.match(value) is not None,
        ),
        ("no two adjacent dots", ".." not in value),
        ("not an IP address", address_of(value) is None),
        *(
            (f"no {p!r} prefix (reserved)", not value.startswith(p))
            for p in RESERVED_BUCKET_PREFIXES
        ),
        *((f"no {x!r} suffix (reserved)", not value.endswith(x)) for x in RESERVED_BUCKET_SUFFIXES),
    )
    broken = next((rule for rule, holds in rules if not holds), None)
    if broken is not None:
        raise ValueError(
            f"an S3 bucket name the bucket naming rules admit: {broken}, e.g. "
            f"example-sandboxkit-artifacts (source: {BUCKET_NAMING_SOURCE})"
        )
    return value


# IAM matches * and ? anywhere in an action ("s3:Get*", "iam:?ut*"): each one grants a family.
_ACTION_WILDCARDS = ("*", "?")


class WorkerArtifact(BaseModel):
    """``sandboxkit:aws-microvm.workerArtifact``: the worker's code zip in S3.

    Attributes:
        bucket: S3 bucket name, as the general purpose bucket naming rules admit it
            (``bucket_name``).
        key: object key of the zip built by ``python -m sandboxkit.aws.worker.build --out DIR``
            (a deterministic zip with the worker and its Dockerfile), ending ``.zip``; the image
            build role may read that object only.
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    bucket: Annotated[str, AfterValidator(bucket_name)]
    key: Annotated[str, Field(min_length=5, max_length=1024, pattern=r"^[^*?]+\.zip$")]

    @property
    def uri(self) -> str:
        """``s3://bucket/key``."""
        return f"s3://{self.bucket}/{self.key}"

    @property
    def object_arn(self) -> str:
        """The object's ARN (``arn:aws:s3:::bucket/key``)."""
        return f"arn:aws:s3:::{self.bucket}/{self.key}"


class AssumeRole(BaseModel):
    """``sandboxkit:aws-microvm.assumeRole``: the role the stack's AWS calls run as.

    Attributes:
        roleArn: IAM role ARN (``arn:aws:iam::<account>:role/<name>``), assumed from the
            ``awsProfile`` identity (or the default chain).
        externalId: the external id the role's trust policy asks for, if any (STS AssumeRole
            ExternalId: 2 to 1224 characters of letters, digits and ``_+=,.@:/-``).
    """

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    role_arn: Annotated[str, Field(pattern=_ROLE_ARN)] = Field(alias="roleArn")
    external_id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_+=,.@:/-]{2,1224}$")] | None = Field(
        None, alias="externalId"
    )


@functools.cache
def aws_regions() -> tuple[str, ...]:
    """Every region of every AWS partition (``aws``, ``aws-cn``, ``aws-us-gov``, the ISO
    partitions), sorted, from the endpoints data of the installed botocore
    (``botocore/data/endpoints.json``, ``partitions[].regions``): what the SDKs, and so the
    Pulumi AWS provider's region check, know. Read once per process."""
    from botocore.loaders import create_loader

    data = create_loader().load_data("endpoints")
    return tuple(sorted(region for p in data["partitions"] for region in p["regions"]))


class MicrovmSettings(TargetSettings):
    """``sandboxkit:aws-microvm`` settings.

    Attributes:
        region: AWS region of every resource (explicit: never the ambient default).
        awsProfile: shared-config profile the stack's AWS calls start from (the explicit
            provider's ``profile``, and the firewall policy's API calls); default the standard
            credential chain.
        assumeRole: ``{roleArn, externalId}`` of a role to assume from that identity (the
            provider's ``assumeRoles``, and the firewall policy's calls); default none.
        controlPlaneUrl: ``https://`` base URL of the agent platform API the worker calls; its
            host (one exact name, never a wildcard) is always allowed (``CONTROL_PLANE_URL`` of
            the launcher).
        controlPlaneHosts: further ``host[:port]`` entries the worker must reach (same syntax
            as ``profile.egress.allow``); allowed with every egress mode, ``deny`` included, so
            each must be one exact name: wildcards (``*.example.com``) and IP literals are
            refused.
        workerArtifact: ``{bucket, key}`` of the worker code zip (see ``WorkerArtifact``).
        baseImageArn: MicroVM base image ARN
            (``arn:aws:lambda:<region>:<account>:microvm-image:<name>``, the service model's
            MicrovmImageArn); default the AWS-managed ``al2023-1`` of ``region``.
        webhookSecret: HMAC key shared with the platform (Pulumi secret of at least 32
            characters, ``sandboxkit.value_formats.MIN_SHARED_SECRET_LENGTH``), stored in Secrets
            Manager and read by the launcher.
        workerCredentialKey: the HMAC key (Pulumi secret of at least 32
            characters) the launcher signs each MicroVM's
            worker credential with, shared with the platform's verifier only: stored in Secrets
            Manager, read by the launcher, never handed to a MicroVM. Each MicroVM receives a
            credential for its own job and session that expires with its lifetime
            (``sandboxkit.aws.launcher.handler``, "Worker credentials"). The old static
            ``workerKey``, handed to every MicroVM, is refused. The platform's session-creating
            key is never placed in AWS: a setting named like it (``sessionKey``, ``adminKey``,
            ``apiKey`` ...) is refused.
        workerCredentialKeyMaxAgeDays: the longest the credential key may live before it is
            replaced (days, 1 to 365); tagged ``sandboxkit-max-age-days`` on its secret for
            rotation audits.
        vpcCidr: IPv4 CIDR of the kit's VPC, a /16 to /24 inside one private-use (RFC 1918)
            block of IANA's special-purpose registry (not ``0.0.0.0/16``, ``127.0.0.0/16``,
            ``169.254.0.0/16`` ...), carved into 16 equal subnets.
        availabilityZones: AZ names of ``region`` (1 to 4) for the connector, firewall and NAT
            subnets.
        executionRolePolicy: IAM policy document for a MicroVM execution role; none by default
            (no AWS credentials in the guest). Actions with ``*`` or ``?`` anywhere (``*``,
            ``s3:*``, ``s3:Get*``, ``iam:?ut*``) and ``NotAction`` are refused, naming the
            statement and action (e.g. ``executionRolePolicy.Statement[0].Action[1]``); the
            render warns, because the guest can read the role's credentials.
        replayWindowSeconds: accepted webhook timestamp skew, seconds (1 to 3600).
        ingress: ``none`` (no one is granted MicroVM auth tokens) or ``authToken`` (a managed
            IAM policy, to attach to the platform, lets it mint short-lived tokens for this
            account's MicroVMs and denies shell tokens; IAM has no key for the port, so the
            platform must request ``ingressPort`` only: see ``webhook.ingress_document``).
        ingressPort: the one MicroVM port tokens should name (``authToken`` only); never the
            worker's lifecycle-hook port 9000.
        launcherConcurrency: reserved concurrency of the launcher and the API stage's throttle
            (default ``pool.maxConcurrent``), at most the kit-wide pool bound (1,000,000).
        launcherLayers: Lambda layer version ARNs for the launcher
            (``arn:aws:lambda:<region>:<account>:layer:<name>:<version>``, at most 5). None is
            needed for ``lambda-microvms``: the launcher package bundles its own boto3
            (``sandboxkit.aws.launcher_package``). Each from an account the stack trusts
            (SBX-SEC-004): the launcher holds both HMAC keys.
        dnsFirewallMutationProtection: ``true`` (default) sets the DNS Firewall association's
            ``MutationProtection`` ``ENABLED``: nobody can disassociate the rule group from the
            VPC (and so switch name filtering off) while it is on. It also refuses the kit's
            own delete: ``pulumi destroy``, or a change that replaces the association, fails
            with ``RSLVR-02307`` (terraform-provider-aws #21278). Set it ``false`` and run
            ``pulumi up`` first (an in-place update), then destroy or replace; set it back
            after a replacement (docs/running-for-real.md).
        trustedAccounts: 12-digit AWS accounts (at most 19) whose launcher layers and MicroVM
            base images the stack trusts besides AWS's own (``aws``) and ``assumeRole``'s
            account; list the stack's own account here when ``assumeRole`` is not set (the gate
            cannot know where a stack deploys before it runs).
    """

    region: Annotated[str, Field(pattern=_REGION)]
    aws_profile: Annotated[str, Field(min_length=1, max_length=64, pattern=_PROFILE)] | None = (
        Field(None, alias="awsProfile")
    )
    assume_role: AssumeRole | None = Field(None, alias="assumeRole")
    control_plane_url: str = Field(alias="controlPlaneUrl")
    control_plane_hosts: tuple[str, ...] = Field((), alias="controlPlaneHosts")
    worker_artifact: WorkerArtifact = Field(alias="workerArtifact")
    base_image_arn: Annotated[str, Field(min_length=20, max_length=2048)] | None = Field(
        None, alias="baseImageArn"
    )
    webhook_secret: SharedSecret = Field(alias="webhookSecret", json_schema_extra={"secret": True})
    worker_credential_key: SharedSecret = Field(
        alias="workerCredentialKey", json_schema_extra={"secret": True}
    )
    worker_credential_key_max_age_days: Annotated[int, Field(ge=1, le=365)] = Field(
        DEFAULT_WORKER_CREDENTIAL_KEY_MAX_AGE_DAYS, alias="workerCredentialKeyMaxAgeDays"
    )
    vpc_cidr: str = Field(alias="vpcCidr")
    availability_zones: tuple[str, ...] = Field(alias="availabilityZones")
    execution_role_policy: dict[str, Any] | None = Field(None, alias="executionRolePolicy")
    replay_window_seconds: Annotated[int, Field(ge=1, le=3600)] = Field(
        DEFAULT_REPLAY_WINDOW_SECONDS, alias="replayWindowSeconds"
    )
    ingress: Literal["none", "authToken"] = DEFAULT_INGRESS
    ingress_port: Annotated[int, Field(ge=1, le=65535)] = Field(
        DEFAULT_INGRESS_PORT, alias="ingressPort"
    )
    launcher_concurrency: Annotated[int, Field(ge=1, le=MAX_POOL_SIZE)] | None = Field(
        None, alias="launcherConcurrency"
    )
    launcher_layers: tuple[str, ...] = Field((), alias="launcherLayers")
    trusted_accounts: Annotated[
        tuple[Annotated[str, Field(pattern=r"^[0-9]{12}$")], ...],
        Field(max_length=MAX_TRUSTED_ACCOUNTS),
    ] = Field((), alias="trustedAccounts")
    dns_firewall_mutation_protection: bool = Field(
        DEFAULT_DNS_FIREWALL_MUTATION_PROTECTION, alias="dnsFirewallMutationProtection"
    )

    @model_validator(mode="before")
    @classmethod
    def _no_session_key(cls, data: object) -> object:
        if isinstance(data, dict):
            for key in data:
                if isinstance(key, str) and _SESSION_KEY_NAME.search(key):
                    raise FieldError(
                        f".{key}",
                        REDACTED,
                        "no such setting: the platform's session-creating key is never placed "
                        "in AWS (a sandbox that leaked it could create sessions). Give the "
                        "key that signs per-job worker credentials as workerCredentialKey",
                    )
                if key in _STATIC_WORKER_KEY_SETTINGS:
                    raise FieldError(
                        f".{key}",
                        REDACTED,
                        "no such setting: a static worker key handed to every MicroVM is no "
                        "longer used; give workerCredentialKey (the HMAC key the launcher signs "
                        "each MicroVM's per-job credential with, shared with the platform's "
                        "verifier) and workerCredentialKeyMaxAgeDays",
                    )
                if isinstance(key, str) and _NETWORK_PATH_NAME.search(key):
                    raise FieldError(
                        f".{key}",
                        data[key],
                        "no such setting: MicroVM egress leaves only through the kit's VPC "
                        "connector and firewall (never the INTERNET_EGRESS connector); set what "
                        "sandboxes reach with sandboxkit:profile.egress",
                    )
        return data

    @field_validator(
        "control_plane_hosts",
        "availability_zones",
        "launcher_layers",
        "trusted_accounts",
        mode="before",
    )
    @classmethod
    def _tuple(cls, value: object) -> object:
        return tuple(value) if isinstance(value, list) else value

    @field_validator("base_image_arn")
    @classmethod
    def _image_arn(cls, value: str | None) -> str | None:
        if value is not None and not _MICROVM_IMAGE_ARN.match(value):
            raise ValueError(
                "a MicroVM image ARN, arn:<partition>:lambda:<region>:<account or aws>:"
                f"microvm-image:<name> ({_MICROVM_IMAGE_ARN_SOURCE})"
            )
        return value

    @field_validator("launcher_layers")
    @classmethod
    def _layer_versions(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if len(value) > MAX_LAYERS:
            raise ValueError(f"at most {MAX_LAYERS} layers (Lambda quota: five per function)")
        for index, arn in enumerate(value):
            if not isinstance(arn, str) or not _LAYER_VERSION_ARN.match(arn):
                raise FieldError(
                    f"[{index}]",
                    arn,
                    "a Lambda layer version ARN, arn:aws:lambda:<region>:<12-digit account>:"
                    "layer:<name>:<version> (botocore 1.44.8 lambda shape LayerVersionArn)",
                )
        return value

    @field_validator("control_plane_url")
    @classmethod
    def _https_url(cls, value: str) -> str:
        control_plane_rule(value)
        return value

    @field_validator("control_plane_hosts")
    @classmethod
    def _hosts(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for index, entry in enumerate(value):
            try:
                exact_control_plane_host(parse_rule(entry))
            except ValueError as exc:
                raise FieldError(f"[{index}]", entry, str(exc)) from None
        return value

    @field_validator("ingress_port")
    @classmethod
    def _not_the_hooks_port(cls, value: int) -> int:
        # An auth token naming the hooks port would reach the worker's lifecycle listener.
        if value == HOOKS_PORT:
            raise ValueError(
                f"must not be {HOOKS_PORT}, the worker's lifecycle-hook port "
                "(sandboxkit.aws.worker.build.HOOKS_PORT); the default is 8080"
            )
        return value

    @field_validator("vpc_cidr")
    @classmethod
    def _cidr(cls, value: str) -> str:
        try:
            network = ipaddress.IPv4Network(value)
        except ValueError:
            raise ValueError("an IPv4 CIDR block such as 10.20.0.0/16") from None
        reason = private_use_reason(network)
        if reason is not None or not 16 <= network.prefixlen <= 24:
            why = f": {reason}" if reason else ""
            raise ValueError(
                f"a private-use (RFC 1918) IPv4 block from /16 to /24, e.g. 10.20.0.0/16{why}"
            )
        return value

    @field_validator("region")
    @classmethod
    def _known_region(cls, value: str) -> str:
        regions = aws_regions()
        if value not in regions:
            raise ValueError(
                f"an AWS region{did_you_mean(value, regions)}: one of the {len(regions)} regions "
                "of botocore's endpoints data, e.g. eu-west-1 (aws ec2 describe-regions lists "
                "your account's)"
            )
        return value

    @field_validator("availability_zones")
    @classmethod
    def _zones(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not 1 <= len(value) <= 4 or len(set(value)) != len(value):
            raise ValueError("1 to 4 distinct availability zone names, e.g. [eu-west-1a]")
        for zone in value:
            if not re.fullmatch(r"[a-z]{2}(-[a-z]+)+-[0-9]+[a-z]", zone):
                raise ValueError(f"availability zone names such as eu-west-1a, not {zone!r}")
        return value

    @field_validator("execution_role_policy")
    @classmethod
    def _least_privilege(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        statements = value.get("Statement")
        if not isinstance(statements, list) or not statements:
            raise ValueError("an IAM policy document with a non-empty Statement list")
        for number, statement in enumerate(statements):
            if not isinstance(statement, dict) or "NotAction" in statement:
                raise ValueError("statements with Action (NotAction grants too much)")
            raw = statement.get("Action")
            actions = [raw] if isinstance(raw, str) else raw
            if not isinstance(actions, list) or not actions:
                raise ValueError("statements each naming their Action")
            for index, action in enumerate(actions):
                if not isinstance(action, str) or any(w in action for w in _ACTION_WILDCARDS):
                    where = f".Statement[{number}].Action"
                    raise FieldError(
                        where if isinstance(raw, str) else f"{where}[{index}]",
                        action,
                        "an exact action name without * or ? (a wildcard grants every "
                        "matching action, and the guest can read this role's credentials)",
                    )
        return value

    @model_validator(mode="after")
    def _region_consistent(self) -> MicrovmSettings:
        for zone in self.availability_zones:
            if not zone.startswith(self.region):
                raise FieldError(
                    ".availabilityZones", list(self.availability_zones), f"zones of {self.region}"
                )
        return self

    def trusted(self) -> tuple[str, ...]:
        """The accounts whose layers and base images the stack trusts besides AWS's own:
        ``assumeRole``'s account (the stack's own, when the settings name it) and
        ``trustedAccounts``, in that order, each once."""
        own = (self.assume_role.role_arn.split(":")[4],) if self.assume_role else ()
        return tuple(dict.fromkeys((*own, *self.trusted_accounts)))

    def base_image(self) -> str:
        """The base image ARN: ``baseImageArn`` or the AWS-managed al2023 image of ``region``."""
        return self.base_image_arn or (
            f"arn:aws:lambda:{self.region}:aws:microvm-image:{DEFAULT_BASE_IMAGE}"
        )


def exact_control_plane_host(rule: EgressRule) -> EgressRule:
    """``rule`` when it names one exact host.

    Control-plane hosts are allowed with every egress mode, ``deny`` included, so a wildcard
    would open a whole domain to sandbox code, and an IP literal an address whatever name it
    serves.

    Raises:
        ValueError: for a wildcard or IP-literal entry.
    """
    if rule.kind != "name":
        what = "a wildcard" if rule.kind == "wildcard" else "an IP address"
        raise ValueError(
            f"an exact host name, not {what}: control-plane hosts are allowed even with egress "
            "deny, so list each exact name the worker reaches (e.g. telemetry.example.com:443)"
        )
    return rule


_NOT_IN_URLS = '<>"{}|\\^`'


def control_plane_rule(url: str) -> EgressRule:
    """The ``host:port`` rule of an ``https://`` control-plane URL (port 443 unless given).

    Raises:
        ValueError: for a URL that is not ``https://host[:port][/path]`` (a space, control
            character or other character RFC 3986 excludes anywhere in it), whose host the
            egress parser refuses, or whose host is not one exact name
            (``exact_control_plane_host``).
    """
    # RFC 3986 section 2: a URL holds no space, control character or any of <>"{}|\^`; urlsplit
    # takes them, while the worker's HTTP client would send them or fail (percent-encode them).
    stray = next((c for c in url if c.isspace() or not c.isprintable() or c in _NOT_IN_URLS), None)
    if stray is not None:
        encoded = "".join(f"%{byte:02X}" for byte in stray.encode())
        raise ValueError(
            f"an https:// URL without spaces, control characters or {_NOT_IN_URLS} (RFC 3986 "
            f"section 2); it holds {stray!r} at {url.index(stray)}: percent-encode it ({encoded})"
        )
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise ValueError("an https:// URL with a host, e.g. https://api.example.com")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ValueError("an https:// URL without user info, query or fragment")
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    # The port as written, for parse_rule to judge: urlsplit reads ":0" as port 0, which
    # "or HTTPS_PORT" turned into 443 while the launcher was told :0, and it reads other
    # scripts' digits or fails with its own words.
    after_host = parts.netloc.rpartition("]")[2] if parts.netloc.startswith("[") else parts.netloc
    _, has_port, port = after_host.partition(":")
    try:
        return exact_control_plane_host(parse_rule(f"{host}:{port if has_port else HTTPS_PORT}"))
    except ValueError as exc:
        raise ValueError(f"a URL whose host and port are allowed: {exc}") from None


def control_plane_rules(settings: MicrovmSettings) -> tuple[EgressRule, ...]:
    """The control-plane hosts, allowed in every egress mode: ``controlPlaneUrl``'s host first,
    then ``controlPlaneHosts`` (each already validated as one exact public name)."""
    return (
        control_plane_rule(settings.control_plane_url),
        *(parse_rule(entry) for entry in settings.control_plane_hosts),
    )


def _plan_problem(key: str, rule: EgressRule, why: str) -> Problem:
    return Problem(key, str(rule), why)


def egress_plan(profile: SandboxProfile, settings: MicrovmSettings) -> EgressPlan:
    """Split the control-plane hosts and ``profile.egress.allow`` into what each layer holds.

    Names (any port) go to the firewall's Suricata pass rules, TLS SNI and HTTP Host on their
    own port, and to the DNS Firewall. IPv4 literals go to a stateful pass rule for exactly
    IP:port, a security-group rule and the resolved-IP validation's exemptions. IPv6 literals
    are refused: the VPC is IPv4-only.

    Raises:
        ConfigError: naming each entry the network cannot enforce exactly, and more than
            ``MAX_NAME_ENTRIES`` names or ``MAX_IP_ENTRIES`` addresses.
    """
    url, *hosts = control_plane_rules(settings)
    sources: list[tuple[str, EgressRule]] = [(f"{SETTINGS_KEY}.controlPlaneUrl", url)]
    sources += [(f"{SETTINGS_KEY}.controlPlaneHosts", rule) for rule in hosts]
    sources += [(f"{PROFILE_KEY}.egress.allow", rule) for rule in profile.egress.allow]
    problems: list[Problem] = []
    names: set[EgressRule] = set()
    ips: set[EgressRule] = set()
    for key, rule in sources:
        if rule.kind != "ip":
            names.add(rule)
        elif ":" in rule.host:
            problems.append(
                _plan_problem(
                    key,
                    rule,
                    "an IPv4 address or a name: the kit's VPC and its connector are IPv4-only",
                )
            )
        else:
            ips.add(rule)
    for found, most, what in (
        (names, MAX_NAME_ENTRIES, "names (two firewall rules each, in a rule group of 1000)"),
        (ips, MAX_IP_ENTRIES, "IP addresses (resolved-IP validation exempts at most 100)"),
    ):
        if len(found) > most:
            problems.append(
                Problem(
                    f"{PROFILE_KEY}.egress.allow",
                    f"{len(found)} entries",
                    f"at most {most} {what} on target {TARGET}; cover several hosts of one "
                    "domain you trust with a wildcard (*.example.com), or use a target with an "
                    "egress proxy",
                )
            )
    if problems:
        raise ConfigError(*problems)
    return EgressPlan(
        mode=profile.egress.mode,
        names=tuple(sorted(names)),
        dns_names=tuple(sorted({r.pattern for r in names})),
        tcp_ports=tuple(sorted({rule.port for rule in names})),
        ip_rules=tuple(sorted(ips)),
    )


def log_retention(days: int) -> int:
    """The smallest CloudWatch retention period of at least ``days`` (see ``LOG_RETENTION_DAYS``).

    Raises:
        ValueError: above 3653 days (the ``audit.logRetentionDays`` cap stops that first).
    """
    for allowed in LOG_RETENTION_DAYS:
        if allowed >= days:
            return allowed
    raise ValueError(f"logRetentionDays {days}: at most {LOG_RETENTION_DAYS[-1]}")


def microvm_args(
    profile: SandboxProfile, settings: MicrovmSettings, context: KitContext
) -> MicrovmSandboxArgs:
    """Map the profile and ``sandboxkit:aws-microvm`` settings to component inputs.

    Raises:
        ConfigError: for allowlist entries the network cannot enforce (see ``egress_plan``).
    """
    limits = profile.limits
    role = settings.assume_role
    return MicrovmSandboxArgs(
        access=AwsAccess(
            region=settings.region,
            profile=settings.aws_profile,
            role_arn=role.role_arn if role else None,
            external_id=role.external_id if role else None,
        ),
        egress=egress_plan(profile, settings),
        control_plane_url=settings.control_plane_url.rstrip("/"),
        worker_artifact_uri=settings.worker_artifact.uri,
        worker_artifact_arn=settings.worker_artifact.object_arn,
        base_image_arn=settings.base_image(),
        webhook_secret=settings.webhook_secret,
        worker_credential_key=settings.worker_credential_key,
        worker_credential_key_max_age_days=settings.worker_credential_key_max_age_days,
        vpc_cidr=settings.vpc_cidr,
        availability_zones=settings.availability_zones,
        execution_role_policy=settings.execution_role_policy,
        max_duration_seconds=limits.max_lifetime_seconds,
        idle_timeout_seconds=limits.idle_timeout_seconds,
        exec_timeout_seconds=limits.exec_timeout_seconds,
        replay_window_seconds=settings.replay_window_seconds,
        ingress=settings.ingress,
        ingress_port=settings.ingress_port,
        launcher_concurrency=settings.launcher_concurrency or profile.pool.max_concurrent,
        launcher_layers=settings.launcher_layers,
        trusted_accounts=settings.trusted(),
        dns_firewall_mutation_protection=settings.dns_firewall_mutation_protection,
        log_retention_days=log_retention(profile.audit.log_retention_days),
        labels=context.labels(),
    )


class MicrovmTarget(TargetSpec[MicrovmSettings, MicrovmSandboxArgs]):
    """The ``aws-microvm`` target."""

    name: ClassVar[str] = TARGET
    sdks: ClassVar[Mapping[str, float]] = {"pulumi_aws": 0.55}
    accepts: ClassVar[EgressAcceptance | None] = EgressAcceptance(ipv6=False)
    settings_model = MicrovmSettings
    caps: ClassVar[tuple[Cap, ...]] = (
        Cap("limits.maxLifetimeSeconds", None, MAX_DURATION_SECONDS, MAX_DURATION_SOURCE),
        Cap("limits.idleTimeoutSeconds", MIN_IDLE_SECONDS, None, MIN_IDLE_SOURCE),
        Cap("audit.logRetentionDays", None, LOG_RETENTION_DAYS[-1], LOG_RETENTION_SOURCE),
    )

    def plan(
        self, profile: SandboxProfile, settings: MicrovmSettings, context: KitContext
    ) -> MicrovmSandboxArgs:
        """The ``MicrovmSandbox`` inputs in ``settings.region`` (see ``microvm_args``)."""
        return microvm_args(profile, settings, context)

    def enforcement(
        self, profile: SandboxProfile, settings: MicrovmSettings, plan: MicrovmSandboxArgs | None
    ) -> dict[str, Enforcement]:
        """Where each profile field is enforced on Lambda MicroVMs."""
        # Without a plan (refused), the allowed ports are not known.
        ports = f" {', '.join(map(str, plan['egress'].tcp_ports))}" if plan is not None else ""
        walls = (
            "RunMicrovm egressNetworkConnectors = the kit's VPC connector only (the launcher's "
            "role may pass no other); connector security "
            f"group (TCP{ports} and DNS to the VPC resolver); "
        )
        egress_where = {
            "deny": walls + "Network Firewall STRICT_ORDER, aws:drop_established, TLS SNI and "
            "HTTP Host pass rules for the control-plane hosts on their ports only; DNS Firewall "
            "blocks every other name",
            "allowlist": walls + "Network Firewall STRICT_ORDER, aws:drop_established, TLS SNI "
            "and HTTP Host pass rules per name on its port, IP pass rules for exactly IP:port; "
            "DNS Firewall allows the listed names only",
            "open": "connector security group allows all TCP; Network Firewall passes all TCP "
            "(still logs flows); DNS Firewall blocks nothing",
        }[profile.egress.mode]
        return {
            "egress.mode": Enforcement("platform", egress_where),
            "limits.vcpu": Enforcement(
                "none",
                "Lambda MicroVMs take no vCPU setting (lambda-microvms CreateMicrovmImage has "
                "resources.minimumMemoryInMiB only)",
            ),
            "limits.memoryMiB": Enforcement(
                "none",
                "CreateMicrovmImage resources.minimumMemoryInMiB is a floor, not a limit",
            ),
            "limits.execTimeoutSeconds": Enforcement(
                "runtime", "kit worker (EXEC_TIMEOUT_SECONDS via the launcher's run-hook payload)"
            ),
            "limits.maxLifetimeSeconds": Enforcement(
                "platform",
                "RunMicrovm maximumDurationInSeconds (launcher env MAX_DURATION_SECONDS)",
            ),
            "limits.idleTimeoutSeconds": Enforcement(
                "platform",
                "RunMicrovm idlePolicy.maxIdleDurationSeconds, autoResumeEnabled false, "
                "suspendedDurationSeconds 0 (launcher env IDLE_TIMEOUT_SECONDS)",
            ),
            "pool.ready": Enforcement(
                "none", "Lambda MicroVMs start per webhook from a snapshot; there is no warm pool"
            ),
            "pool.maxConcurrent": Enforcement(
                "none",
                "no per-image cap on running MicroVMs; the launcher's reserved concurrency "
                "bounds concurrent launches only. Use the account's MicroVM service quota",
            ),
            "audit.logRetentionDays": Enforcement(
                "platform",
                "CloudWatch log groups retentionInDays (flow, firewall, launcher, API access), "
                "rounded up to an allowed value",
            ),
        }

    def control_plane(self, settings: MicrovmSettings) -> tuple[EgressRule, ...]:
        """See ``control_plane_rules``."""
        return control_plane_rules(settings)

    def component(self, plan: MicrovmSandboxArgs) -> KitComponent:
        """The ``MicrovmSandbox`` component."""
        from sandboxkit.aws.microvm import MicrovmSandbox

        return MicrovmSandbox(self.name, plan)

    def deployer_policy(
        self,
        context: KitContext,
        settings: MicrovmSettings,
        resources: Sequence[ResourceView],
    ) -> DeployerPolicy:
        """The deployer's IAM policy document for the rendered resources (``aws.deployer``),
        scoped to the stack's region and launcher layers.

        Raises:
            MissingGrantError: for a rendered resource type ``aws.deployer`` has no actions for.
        """
        from sandboxkit.aws.deployer import deployer_policy

        try:
            document = deployer_policy(
                cloud_types(resources),
                region=settings.region,
                component=self.name,
                stack=context.stack,
                layers=settings.launcher_layers,
            )
        except LookupError as exc:
            raise MissingGrantError(str(exc)) from None
        return DeployerPolicy(
            self.name,
            document,
            "Attach it to the role or user that runs pulumi up and pulumi destroy "
            "(aws iam put-role-policy --policy-document file://<this output>).",
        )


SPEC = MicrovmTarget()
