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

Region and credentials are inputs, never ambient (``dynamic_api.session``). Only a new name
prefix or region replaces the policy; a new profile or role is only who calls the API.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi.dynamic

from sandboxkit.aws.dynamic_api import (
    ApiProvider,
    NameRule,
    drop_empty,
    dynamic_inputs,
    replaced_inputs,
    unique_name,
    unless_missing,
    update_tags,
    whole_numbers,
)
from sandboxkit.aws.plan import AwsAccess

# Network Firewall resource names: ^[a-zA-Z0-9-]+$, 1 to 128 characters (shape ResourceName).
NAME_RULE = NameRule(
    "firewall policy", re.compile(r"^[A-Za-z0-9-]+$"), 128, "letters, digits and hyphens"
)
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
# Route53ResolvedIPValidation.SourceIPRanges: an empty list validates no source, an absent one
# the firewall's VPCs (API reference, Route53ResolvedIPValidation), so [] is kept.
_EMPTY_MEANS_SOMETHING = ("SourceIPRanges",)


def _tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": key, "Value": tags[key]} for key in sorted(tags)]


def normalized(document: Mapping[str, Any]) -> dict[str, Any]:
    """``document`` with what the service adds or omits made comparable.

    Empty members (``None``, ``[]``, ``{}``) are dropped at every level, and so is
    ``EnableTLSSessionHolding: false`` (absent means the same); ``StatefulEngineOptions`` keeps
    only ``RuleOrder`` and ``StreamExceptionPolicy``; rule group references are ordered by
    priority. ``Route53ResolvedIPValidation.SourceIPRanges`` keeps an empty list: an empty list
    validates no source, an absent one the firewall's VPCs (API reference,
    Route53ResolvedIPValidation).
    """
    result: dict[str, Any] = drop_empty(dict(document), keep=_EMPTY_MEANS_SOMETHING)
    if result.get("EnableTLSSessionHolding") is False:
        del result["EnableTLSSessionHolding"]
    options = result.get("StatefulEngineOptions")
    if isinstance(options, Mapping):
        kept = {k: options[k] for k in _ENGINE_OPTIONS if k in options}
        result["StatefulEngineOptions"] = kept
        if not kept:
            del result["StatefulEngineOptions"]
    for key in ("StatefulRuleGroupReferences", "StatelessRuleGroupReferences"):
        if key in result:
            result[key] = sorted(result[key], key=lambda reference: reference["Priority"])
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


class FirewallPolicyProvider(ApiProvider):
    """Create, read, diff, update and delete one firewall policy through the API.

    Inputs (camel case): ``namePrefix``, ``firewallPolicy`` (the document in the API's shape,
    ``FirewallPolicy``), ``description``, ``tags`` (map), ``access`` (``AwsAccess.inputs``).
    Outputs: the inputs plus ``arn``, ``firewallPolicyName``, ``firewallPolicyId``. The id is
    the policy's ARN.
    """

    service = "network-firewall"

    def _live(self, client: Any, arn: str) -> dict[str, Any]:
        return dict(client.describe_firewall_policy(FirewallPolicyArn=arn))

    @staticmethod
    def _outs(props: Mapping[str, Any], response: Mapping[str, Any]) -> dict[str, Any]:
        return {
            **props,
            "arn": response["FirewallPolicyArn"],
            "firewallPolicyName": response["FirewallPolicyName"],
            "firewallPolicyId": response["FirewallPolicyId"],
        }

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        """CreateFirewallPolicy named ``namePrefix`` plus a random suffix."""
        client = self.client_of(props)
        response = client.create_firewall_policy(
            FirewallPolicyName=unique_name(props["namePrefix"]),
            FirewallPolicy=whole_numbers(props["firewallPolicy"]),
            Description=props["description"],
            Tags=_tag_list(props["tags"]),
        )["FirewallPolicyResponse"]
        return pulumi.dynamic.CreateResult(
            response["FirewallPolicyArn"], self._outs(props, response)
        )

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        """DescribeFirewallPolicy: the live document, description and tags; no id when gone."""
        client = self.client_of(props)
        live = unless_missing(lambda: self._live(client, id_))
        if live is None:
            return pulumi.dynamic.ReadResult(None, {})
        response = live["FirewallPolicyResponse"]
        read = {
            **props,
            "firewallPolicy": live.get("FirewallPolicy", {}),
            "description": response.get("Description", ""),
            "tags": {tag["Key"]: tag["Value"] for tag in response.get("Tags", [])},
        }
        return pulumi.dynamic.ReadResult(id_, self._outs(read, response))

    def diff(
        self, id_: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.DiffResult:
        """Replace for a new name prefix (the name is fixed at creation) or region (a policy
        lives in one); update when the desired document, description, tags or access differ
        from the last applied ones or the live document differs from the desired one (one
        DescribeFirewallPolicy call)."""
        replaces = replaced_inputs(olds, news)
        if replaces:
            return pulumi.dynamic.DiffResult(changes=True, replaces=replaces)
        changed = any(olds.get(k) != news.get(k) for k in ("description", "tags", "access"))
        changed = changed or normalized(olds["firewallPolicy"]) != normalized(
            news["firewallPolicy"]
        )
        if not changed:
            live = self._live(self.client_of(news), id_)
            changed = normalized(live.get("FirewallPolicy", {})) != normalized(
                news["firewallPolicy"]
            )
        return pulumi.dynamic.DiffResult(changes=changed, replaces=[])

    def update(
        self, id_: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        """UpdateFirewallPolicy with the current UpdateToken, then the tag changes."""
        client = self.client_of(news)
        token = self._live(client, id_)["UpdateToken"]
        response = client.update_firewall_policy(
            UpdateToken=token,
            FirewallPolicyArn=id_,
            FirewallPolicy=whole_numbers(news["firewallPolicy"]),
            Description=news["description"],
        )["FirewallPolicyResponse"]
        update_tags(
            olds.get("tags") or {},
            news["tags"],
            lambda keys: client.untag_resource(ResourceArn=id_, TagKeys=keys),
            lambda tags: client.tag_resource(ResourceArn=id_, Tags=_tag_list(tags)),
        )
        return pulumi.dynamic.UpdateResult(self._outs(news, response))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        """DeleteFirewallPolicy; a policy already gone is not an error.

        Raises:
            botocore.exceptions.ClientError: for any other refusal (a policy still attached
                to a firewall, throttling ...).
        """
        client = self.client_of(props)
        unless_missing(lambda: client.delete_firewall_policy(FirewallPolicyArn=id_))


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
            ValueError: for a name longer than ``NAME_RULE.longest_prefix`` (119) or with
                characters outside ``[A-Za-z0-9-]`` (Network Firewall shape ResourceName).
        """
        inputs = dynamic_inputs(
            NAME_RULE,
            name,
            {"firewallPolicy": document, "description": description},
            access=access,
            tags=tags,
            outputs=("arn", "firewallPolicyName", "firewallPolicyId"),
        )
        super().__init__(FirewallPolicyProvider(), name, inputs, opts)
