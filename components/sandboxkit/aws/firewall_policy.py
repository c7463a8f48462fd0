"""``FirewallPolicyDocument``: the whole Network Firewall policy, resolved-IP validation included.

pulumi-aws 7.51 cannot set a firewall policy's ``Route53ResolvedIPValidation`` (its
``FirewallPolicyFirewallPolicyArgs`` has no such member), and ``aws.networkfirewall.FirewallPolicy``
writes the document whole, so an update of it would drop a member added beside it. This dynamic
resource owns the entire document through the Network Firewall API (botocore
``network-firewall`` 2020-11-12: CreateFirewallPolicy, DescribeFirewallPolicy,
UpdateFirewallPolicy with its ``UpdateToken``, DeleteFirewallPolicy, TagResource,
UntagResource). Its diff reads the live document and compares it with the desired one, so a
member that any writer removed or added (a ``SourceIPRanges: []`` that switches validation off,
``PolicyVariables`` that move ``HOME_NET``, a rule group reference) is put back by the next
``pulumi up``, and ``pulumi preview`` shows it.

Region and credentials are inputs, never ambient: ``access`` names the region and, optionally,
the shared-config ``profile`` and a role (``roleArn``, ``externalId``) to assume, the same values
the stack's ``aws.Provider`` takes; ``AWS_REGION``/``AWS_DEFAULT_REGION`` are not read.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pulumi
import pulumi.dynamic
from botocore.exceptions import ClientError

from sandboxkit.aws.plan import AwsAccess

if TYPE_CHECKING:
    import boto3

# The engine's type token: pulumi-python:dynamic/networkfirewall:FirewallPolicy.
RESOURCE_TYPE = "pulumi-python:dynamic/networkfirewall:FirewallPolicy"
# Network Firewall resource names: ^[a-zA-Z0-9-]+$, 1 to 128 characters (shape ResourceName);
# the provider appends "-" and 8 hex digits so a replacement can exist beside the old one.
_NAME_SUFFIX_CHARS = 9
MAX_NAME_PREFIX = 128 - _NAME_SUFFIX_CHARS
_NAME = re.compile(r"^[A-Za-z0-9-]+$")
ASSUME_ROLE_SESSION = "sandboxkit-firewall-policy"
# Members the kit writes under StatefulEngineOptions; FlowTimeouts is left at the service default.
_ENGINE_OPTIONS = ("RuleOrder", "StreamExceptionPolicy")
# Stateless engine: forward everything to the stateful rules, fragments included.
FORWARD_TO_STATEFUL = ("aws:forward_to_sfe",)
# Strict order; drop (and log) what no pass rule took once a flow is established, so the TCP
# handshake passes and the first data packet (ClientHello, HTTP request) meets the rules.
STATEFUL_DEFAULT_ACTIONS = ("aws:drop_established", "aws:alert_established")
# A connection broken midstream is dropped, not continued without context (the service default,
# written so the diff compares it).
STREAM_EXCEPTION_POLICY = "DROP"
# A destination the VPC resolver did not return, or whose resolution expired from the resolved-IP
# cache, gets a TCP reset: the client fails at once and resolves again instead of hanging.
RESOLVED_IP_ACTION = "REJECT"
DNS_EXPIRY_POLICY = "REJECT"
# Inputs whose change needs a new policy: the name is fixed at creation, and a policy lives in
# one region (and account).
_REPLACE_ON = ("namePrefix", "access")


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


def _tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": key, "Value": tags[key]} for key in sorted(tags)]


def normalized(document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` with what the service adds or omits made comparable.

    Empty members and ``EnableTLSSessionHolding: false`` are dropped (absent means the same);
    ``StatefulEngineOptions`` keeps only ``RuleOrder`` and ``StreamExceptionPolicy``; rule group
    references are ordered by priority. ``Route53ResolvedIPValidation.SourceIPRanges`` keeps an
    empty list: an empty list validates no source, an absent one the firewall's VPCs
    (API reference, Route53ResolvedIPValidation).
    """
    result: dict[str, Any] = {}
    for key, value in document.items():
        if value in (None, [], {}) or (key == "EnableTLSSessionHolding" and value is False):
            continue
        if key == "StatefulEngineOptions":
            result[key] = {k: value[k] for k in _ENGINE_OPTIONS if k in value}
        elif key in ("StatefulRuleGroupReferences", "StatelessRuleGroupReferences"):
            result[key] = sorted(value, key=lambda reference: reference["Priority"])
        elif key == "Route53ResolvedIPValidation":
            result[key] = {
                k: v
                for k, v in value.items()
                if v is not None and (v != [] or k == "SourceIPRanges")
            }
        else:
            result[key] = value
    return result


def kit_document(
    rule_groups: Sequence[tuple[pulumi.Input[str], int]],
    dns_firewall_rule_group_id: pulumi.Input[str] | None,
    bypass: Sequence[str] = (),
) -> dict[str, Any]:
    """The kit's firewall policy document, in the API's shape (botocore shape FirewallPolicy).

    Args:
        rule_groups: ``(rule group ARN, priority)`` of each stateful rule group.
        dns_firewall_rule_group_id: the DNS Firewall rule group (``rslvr-frg-...``) associated
            with the sandboxes' VPC, whose resolutions validate destinations; ``None`` leaves
            resolved-IP validation out (egress ``open``: any address is allowed).
        bypass: destination CIDRs exempt from the policy-level check (the IP-literal entries,
            which no resolver returns), at most 100 (shape Route53ResolvedIPValidationAddresses,
            a list of ``{"AddressDefinition": cidr}``).

    Returns:
        ``StatelessDefaultActions``, ``StatelessFragmentDefaultActions`` (forward to the stateful
        engine), ``StatefulEngineOptions`` (``STRICT_ORDER``, stream exceptions ``DROP``),
        ``StatefulDefaultActions`` (``aws:drop_established``, ``aws:alert_established``),
        ``StatefulRuleGroupReferences`` and, unless disabled, ``Route53ResolvedIPValidation``
        (``REJECT`` for an unresolved or expired destination, no ``SourceIPRanges``: omitted means
        the firewall's own VPCs, where an empty list would validate nothing).

    Raises:
        ValueError: for more than 100 bypass ranges.
    """
    if len(bypass) > 100:
        raise ValueError(f"{len(bypass)} IP entries: resolved-IP validation exempts at most 100")
    document: dict[str, Any] = {
        "StatelessDefaultActions": list(FORWARD_TO_STATEFUL),
        "StatelessFragmentDefaultActions": list(FORWARD_TO_STATEFUL),
        "StatefulEngineOptions": {
            "RuleOrder": "STRICT_ORDER",
            "StreamExceptionPolicy": STREAM_EXCEPTION_POLICY,
        },
        "StatefulDefaultActions": list(STATEFUL_DEFAULT_ACTIONS),
        "StatefulRuleGroupReferences": [
            {"ResourceArn": arn, "Priority": priority} for arn, priority in rule_groups
        ],
    }
    if dns_firewall_rule_group_id is not None:
        validation: dict[str, Any] = {
            "Action": RESOLVED_IP_ACTION,
            "DNSFirewallRuleGroupId": dns_firewall_rule_group_id,
            "DNSExpiryExceptionPolicy": DNS_EXPIRY_POLICY,
        }
        if bypass:
            validation["BypassDestinationValidationIPRanges"] = [
                {"AddressDefinition": cidr} for cidr in bypass
            ]
        document["Route53ResolvedIPValidation"] = validation
    return document


def _missing(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") == "ResourceNotFoundException"


class FirewallPolicyProvider(pulumi.dynamic.ResourceProvider):
    """Create, read, diff, update and delete one firewall policy through the API.

    Inputs (camel case): ``namePrefix``, ``firewallPolicy`` (the document in the API's shape,
    ``FirewallPolicy``), ``description``, ``tags`` (map), ``access`` (``AwsAccess.inputs``).
    Outputs: the inputs plus ``arn``, ``firewallPolicyName``, ``firewallPolicyId``. The id is
    the policy's ARN.
    """

    def client(self, access: AwsAccess) -> Any:
        """A ``network-firewall`` client for ``access`` (tests override this)."""
        return session(access).client("network-firewall", region_name=access.region)

    def _live(self, client: Any, arn: str) -> dict[str, Any]:
        return dict(client.describe_firewall_policy(FirewallPolicyArn=arn))

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        """CreateFirewallPolicy named ``namePrefix`` plus a random suffix."""
        name = f"{props['namePrefix']}-{secrets.token_hex(4)}"
        client = self.client(AwsAccess.of(props["access"]))
        response = client.create_firewall_policy(
            FirewallPolicyName=name,
            FirewallPolicy=props["firewallPolicy"],
            Description=props["description"],
            Tags=_tag_list(props["tags"]),
        )["FirewallPolicyResponse"]
        outs = {
            **props,
            "arn": response["FirewallPolicyArn"],
            "firewallPolicyName": response["FirewallPolicyName"],
            "firewallPolicyId": response["FirewallPolicyId"],
        }
        return pulumi.dynamic.CreateResult(response["FirewallPolicyArn"], outs)

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        """DescribeFirewallPolicy: the live document, description and tags; no id when gone."""
        client = self.client(AwsAccess.of(props["access"]))
        try:
            live = self._live(client, id_)
        except ClientError as error:
            if _missing(error):
                return pulumi.dynamic.ReadResult(None, {})
            raise
        response = live["FirewallPolicyResponse"]
        outs = {
            **props,
            "firewallPolicy": live.get("FirewallPolicy", {}),
            "description": response.get("Description", ""),
            "tags": {tag["Key"]: tag["Value"] for tag in response.get("Tags", [])},
            "arn": response["FirewallPolicyArn"],
            "firewallPolicyName": response["FirewallPolicyName"],
            "firewallPolicyId": response["FirewallPolicyId"],
        }
        return pulumi.dynamic.ReadResult(id_, outs)

    def diff(
        self, id_: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.DiffResult:
        """Replace for a new name prefix or access; update when the desired document,
        description or tags differ from the last applied ones or the live document differs
        from the desired one (one DescribeFirewallPolicy call)."""
        replaces = [key for key in _REPLACE_ON if olds.get(key) != news.get(key)]
        if replaces:
            return pulumi.dynamic.DiffResult(changes=True, replaces=replaces)
        changed = any(olds.get(k) != news.get(k) for k in ("description", "tags"))
        changed = changed or normalized(olds["firewallPolicy"]) != normalized(
            news["firewallPolicy"]
        )
        if not changed:
            live = self._live(self.client(AwsAccess.of(news["access"])), id_)
            changed = normalized(live.get("FirewallPolicy", {})) != normalized(
                news["firewallPolicy"]
            )
        return pulumi.dynamic.DiffResult(changes=changed, replaces=[])

    def update(
        self, id_: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        """UpdateFirewallPolicy with the current UpdateToken, then the tag changes."""
        client = self.client(AwsAccess.of(news["access"]))
        token = self._live(client, id_)["UpdateToken"]
        response = client.update_firewall_policy(
            UpdateToken=token,
            FirewallPolicyArn=id_,
            FirewallPolicy=news["firewallPolicy"],
            Description=news["description"],
        )["FirewallPolicyResponse"]
        old_tags: Mapping[str, str] = olds.get("tags") or {}
        new_tags: Mapping[str, str] = news["tags"]
        removed = sorted(set(old_tags) - set(new_tags))
        if removed:
            client.untag_resource(ResourceArn=id_, TagKeys=removed)
        changed = {k: v for k, v in new_tags.items() if old_tags.get(k) != v}
        if changed:
            client.tag_resource(ResourceArn=id_, Tags=_tag_list(changed))
        outs = {
            **news,
            "arn": response["FirewallPolicyArn"],
            "firewallPolicyName": response["FirewallPolicyName"],
            "firewallPolicyId": response["FirewallPolicyId"],
        }
        return pulumi.dynamic.UpdateResult(outs)

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        """DeleteFirewallPolicy; a policy already gone is not an error.

        Raises:
            botocore.exceptions.ClientError: for any other refusal (a policy still attached
                to a firewall, throttling ...).
        """
        client = self.client(AwsAccess.of(props["access"]))
        try:
            client.delete_firewall_policy(FirewallPolicyArn=id_)
        except ClientError as error:
            if not _missing(error):
                raise


class FirewallPolicyDocument(
    pulumi.dynamic.Resource, module="networkfirewall", name="FirewallPolicy"
):
    """A Network Firewall policy whose whole document the kit writes (see module docstring).

    Outputs: ``arn`` (the policy ARN, for ``aws.networkfirewall.Firewall.firewall_policy_arn``),
    ``firewall_policy_name``.
    """

    arn: pulumi.Output[str]
    firewall_policy_name: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        document: pulumi.Input[Mapping[str, Any]],
        access: AwsAccess,
        description: str,
        tags: Mapping[str, str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """Register the policy ``name`` (also its name prefix).

        Raises:
            ValueError: for a name longer than ``MAX_NAME_PREFIX`` or with characters outside
                ``[A-Za-z0-9-]`` (Network Firewall shape ResourceName).
        """
        if len(name) > MAX_NAME_PREFIX or not _NAME.fullmatch(name):
            raise ValueError(
                f"firewall policy name {name!r}: letters, digits and hyphens, at most "
                f"{MAX_NAME_PREFIX} characters"
            )
        super().__init__(
            FirewallPolicyProvider(),
            name,
            {
                "namePrefix": name,
                "firewallPolicy": document,
                "description": description,
                "tags": dict(tags),
                "access": access.inputs(),
                "arn": None,
                "firewallPolicyName": None,
                "firewallPolicyId": None,
            },
            opts,
        )
