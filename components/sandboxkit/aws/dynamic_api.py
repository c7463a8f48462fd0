"""What the kit's dynamic providers (``FirewallPolicyDocument``, ``MicrovmImage``) share: the
name rule of a resource named by a prefix plus a random suffix, the provider's client of one
service for an ``access`` input, the not-found test and the calls that tolerate it, the drift
normalisation of API documents, the replace rule and tag updates.

Region and credentials are inputs, never ambient: ``access`` names the region and, optionally,
the shared-config ``profile`` and a role (``roleArn``, ``externalId``) to assume, the same values
the stack's ``aws.Provider`` takes; ``AWS_REGION``/``AWS_DEFAULT_REGION`` are not read.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import pulumi.dynamic
from botocore.exceptions import ClientError

from sandboxkit.aws.plan import AwsAccess

if TYPE_CHECKING:
    import boto3

# The STS session name of every call the stack makes as the deployer (provider and dynamic
# resources alike), so CloudTrail shows them as one deployment.
ASSUME_ROLE_SESSION = "sandboxkit-deploy"
# The error code both services send for an id that names nothing (network-firewall and
# lambda-microvms models: ResourceNotFoundException).
NOT_FOUND = "ResourceNotFoundException"
# The provider appends "-" and 8 hex digits to a resource's name prefix, so a replacement can
# exist beside the old resource (both services' names are unique within the account).
NAME_SUFFIX_CHARS = 9

_T = TypeVar("_T")


@dataclass(frozen=True)
class NameRule:
    """The name rule of one service's resources, for a name prefix the provider suffixes.

    Attributes:
        what: the resource in words, as an error names it (``"firewall policy"``).
        pattern: the characters the service's name shape allows (its model's ``pattern``).
        max_length: the shape's longest name, characters (its model's ``max``).
        allowed: ``pattern`` in words, for the error.
    """

    what: str
    pattern: re.Pattern[str]
    max_length: int
    allowed: str

    @property
    def longest_prefix(self) -> int:
        """The longest name prefix, characters: ``max_length`` less the random suffix."""
        return self.max_length - NAME_SUFFIX_CHARS

    def check(self, prefix: str) -> None:
        """Refuse a prefix the service would refuse once suffixed.

        Raises:
            ValueError: for a prefix longer than ``longest_prefix`` or with characters outside
                ``pattern``; the message names the prefix, ``allowed`` and the limit.
        """
        if len(prefix) > self.longest_prefix or not self.pattern.fullmatch(prefix):
            raise ValueError(
                f"{self.what} name {prefix!r}: {self.allowed}, at most "
                f"{self.longest_prefix} characters"
            )


def unique_name(prefix: str) -> str:
    """``prefix``, ``-`` and 8 random hex digits (``NAME_SUFFIX_CHARS`` in all)."""
    return f"{prefix}-{secrets.token_hex(4)}"


def dynamic_inputs(
    rule: NameRule,
    name: str,
    members: Mapping[str, Any],
    *,
    access: AwsAccess,
    tags: Mapping[str, str],
    outputs: Sequence[str],
) -> dict[str, Any]:
    """A dynamic resource's inputs: ``namePrefix`` (``name``, checked by ``rule``), its own
    ``members``, ``tags``, ``access`` (``AwsAccess.inputs``) and each of ``outputs`` as
    ``None`` (so the engine knows the resource's output properties).

    Raises:
        ValueError: for a name ``rule`` refuses.
    """
    rule.check(name)
    return {
        "namePrefix": name,
        **members,
        "tags": dict(tags),
        "access": access.inputs(),
        **dict.fromkeys(outputs),
    }


def assume_role_params(access: AwsAccess) -> dict[str, str]:
    """STS ``AssumeRole`` parameters for ``access`` (which must name a role)."""
    assert access.role_arn is not None
    params = {"RoleArn": access.role_arn, "RoleSessionName": ASSUME_ROLE_SESSION}
    if access.external_id is not None:
        params["ExternalId"] = access.external_id
    return params


def session(access: AwsAccess) -> boto3.Session:
    """A boto3 session in ``access.region``: the profile's identity, then the role if one is set.

    Raises:
        botocore.exceptions.ProfileNotFound: for a profile missing from the shared config.
        botocore.exceptions.ClientError: when STS refuses the role.
    """
    # Imported here, by the provider at deploy time: boto3's import (about 0.3 s) would
    # otherwise come with every command that reads the aws catalog.
    import boto3

    base = boto3.Session(profile_name=access.profile, region_name=access.region)
    if access.role_arn is None:
        return base
    sts = base.client("sts", region_name=access.region)
    credentials = sts.assume_role(**assume_role_params(access))["Credentials"]
    return boto3.Session(
        aws_access_key_id=credentials["AccessKeyId"],
        aws_secret_access_key=credentials["SecretAccessKey"],
        aws_session_token=credentials["SessionToken"],
        region_name=access.region,
    )


def not_found(error: ClientError) -> bool:
    """The service says the resource does not exist."""
    return error.response.get("Error", {}).get("Code") == NOT_FOUND


def unless_missing(call: Callable[[], _T]) -> _T | None:
    """``call()``, or ``None`` when the service says the resource does not exist.

    Raises:
        botocore.exceptions.ClientError: for any other refusal.
    """
    try:
        return call()
    except ClientError as error:
        if not_found(error):
            return None
        raise


class ApiProvider(pulumi.dynamic.ResourceProvider):
    """A dynamic provider that calls one AWS service, as the identity its ``access`` input
    names (``session``).

    Attributes:
        service: the botocore service name (``network-firewall``, ``lambda-microvms``).
    """

    service: ClassVar[str]

    def client(self, access: AwsAccess) -> Any:
        """A ``service`` client for ``access`` (tests override this)."""
        return session(access).client(self.service, region_name=access.region)

    def client_of(self, props: Mapping[str, Any]) -> Any:
        """The client for the ``access`` member of a resource's inputs or outputs."""
        return self.client(AwsAccess.of(props["access"]))


def replaced_inputs(olds: Mapping[str, Any], news: Mapping[str, Any]) -> list[str]:
    """The inputs whose change needs a new resource: ``namePrefix`` (the name is fixed at
    creation) and ``access`` only when its region changes (a resource lives in one region,
    while the profile and role are only who calls the API)."""
    replaces = ["namePrefix"] if olds.get("namePrefix") != news.get("namePrefix") else []
    old, new = olds.get("access") or {}, news.get("access") or {}
    if old.get("region") != new.get("region"):
        replaces.append("access")
    return replaces


def drop_empty(value: Any, keep: Collection[str] = ()) -> Any:
    """``value`` with every ``None``, ``[]`` and ``{}`` member removed at every level (after
    its own members are), except members named in ``keep``, whose empty value means something
    else than absent (Network Firewall ``SourceIPRanges``)."""
    if isinstance(value, Mapping):
        result = {}
        for key, member in value.items():
            cleaned = drop_empty(member, keep)
            if cleaned in (None, [], {}) and key not in keep:
                continue
            result[key] = cleaned
        return result
    if isinstance(value, list | tuple):
        return [drop_empty(member, keep) for member in value]
    return value


def whole_numbers(value: Any) -> Any:
    """``value`` with every integral ``float`` at any level made an ``int``.

    A dynamic resource's inputs reach its provider through the engine's protobuf ``Struct``,
    whose numbers are doubles: a ``Priority: 100`` arrives as ``100.0``, which botocore's
    parameter validation refuses for an integer member (``Invalid type for parameter``).
    Neither API the kit's providers call takes a fractional number.
    """
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, Mapping):
        return {key: whole_numbers(member) for key, member in value.items()}
    if isinstance(value, list | tuple):
        return [whole_numbers(member) for member in value]
    return value


def update_tags(
    old: Mapping[str, str],
    new: Mapping[str, str],
    untag: Callable[[list[str]], object],
    tag: Callable[[dict[str, str]], object],
) -> None:
    """Call ``untag`` with the keys ``new`` drops (sorted), then ``tag`` with the keys it adds
    or changes; neither when there is nothing to send."""
    removed = sorted(set(old) - set(new))
    if removed:
        untag(removed)
    changed = {key: value for key, value in new.items() if old.get(key) != value}
    if changed:
        tag(changed)
