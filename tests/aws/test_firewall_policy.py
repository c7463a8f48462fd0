"""``FirewallPolicyDocument``'s API calls, checked by botocore's Stubber against the service model.

Every expected call names its exact parameters; the Stubber also validates them (and the canned
responses) against botocore's ``network-firewall`` 2020-11-12 model, so a member the API does
not know, a missing required one or a wrong type fails here, offline.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pulumi.dynamic
import pytest
from botocore.exceptions import ClientError
from botocore.stub import Stubber
from stubbed_api import StubbedClient, stubbed_api

from model_stubber import ModelStubber
from sandboxkit.aws import dynamic_api
from sandboxkit.aws.dynamic_api import assume_role_params
from sandboxkit.aws.firewall_policy import (
    AwsAccess,
    FirewallPolicyDocument,
    FirewallPolicyProvider,
    kit_document,
    normalized,
)
from sandboxkit.aws.type_tokens import FIREWALL_POLICY_DOCUMENT
from sandboxkit.render import Recorder

REGION = "eu-west-1"
ARN = f"arn:aws:network-firewall:{REGION}:123456789012:firewall-policy/kit-fw-policy-0a1b2c3d"
GROUP = f"arn:aws:network-firewall:{REGION}:123456789012:stateful-rulegroup/kit-fw-rules"
TOKEN = "1b2c3d4e-5f60-4718-92a3-b4c5d6e7f809"
NEXT_TOKEN = "2c3d4e5f-6071-4829-a3b4-c5d6e7f8091a"
DNS_GROUP = "rslvr-frg-0123456789abcdef"
DOCUMENT = kit_document([(GROUP, 100)], DNS_GROUP, ["93.184.216.34/32"])
TAGS = {"sandboxkit-stack": "prod", "sandboxkit-target": "aws-microvm"}
ACCESS = AwsAccess(REGION).inputs()
INPUTS: dict[str, Any] = {
    "namePrefix": "kit-fw-policy",
    "firewallPolicy": DOCUMENT,
    "description": "sandboxkit egress",
    "tags": TAGS,
    "access": ACCESS,
}


def policy_response(name: str = "kit-fw-policy-0a1b2c3d") -> dict[str, Any]:
    return {
        "FirewallPolicyName": name,
        "FirewallPolicyArn": ARN,
        "FirewallPolicyId": "0a1b2c3d-0000-4000-8000-000000000000",
        "Description": "sandboxkit egress",
        "Tags": [{"Key": k, "Value": v} for k, v in sorted(TAGS.items())],
    }


def described(document: dict[str, Any], token: str = TOKEN) -> dict[str, Any]:
    return {
        "UpdateToken": token,
        "FirewallPolicyResponse": policy_response(),
        "FirewallPolicy": document,
    }


class StubbedProvider(StubbedClient, FirewallPolicyProvider):
    """The provider with a stubbed ``network-firewall`` client."""


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[StubbedProvider, Stubber]]:
    with stubbed_api(StubbedProvider, REGION, monkeypatch) as stubbed:
        yield stubbed


def expect_create(stubber: Stubber) -> None:
    """CreateFirewallPolicy of ``DOCUMENT`` named with the suffix ``0a1b2c3d``, tags by key."""
    stubber.add_response(
        "create_firewall_policy",
        {"UpdateToken": TOKEN, "FirewallPolicyResponse": policy_response()},
        {
            "FirewallPolicyName": "kit-fw-policy-0a1b2c3d",
            "FirewallPolicy": DOCUMENT,
            "Description": "sandboxkit egress",
            "Tags": [
                {"Key": "sandboxkit-stack", "Value": "prod"},
                {"Key": "sandboxkit-target", "Value": "aws-microvm"},
            ],
        },
    )


def test_kit_document_is_strict_drop_established_with_resolved_ip_validation() -> None:
    assert DOCUMENT == {
        "StatelessDefaultActions": ["aws:forward_to_sfe"],
        "StatelessFragmentDefaultActions": ["aws:forward_to_sfe"],
        "StatefulEngineOptions": {"RuleOrder": "STRICT_ORDER", "StreamExceptionPolicy": "DROP"},
        "StatefulDefaultActions": ["aws:drop_established", "aws:alert_established"],
        "StatefulRuleGroupReferences": [{"ResourceArn": GROUP, "Priority": 100}],
        "Route53ResolvedIPValidation": {
            "Action": "REJECT",
            "DNSFirewallRuleGroupId": DNS_GROUP,
            "DNSExpiryExceptionPolicy": "REJECT",
            "BypassDestinationValidationIPRanges": [{"AddressDefinition": "93.184.216.34/32"}],
        },
    }
    # No SourceIPRanges: omitted means the firewall's VPCs; [] would validate no source.
    assert "SourceIPRanges" not in DOCUMENT["Route53ResolvedIPValidation"]
    assert (
        "BypassDestinationValidationIPRanges"
        not in kit_document([(GROUP, 100)], DNS_GROUP)["Route53ResolvedIPValidation"]
    )
    assert "Route53ResolvedIPValidation" not in kit_document([(GROUP, 100)], None)
    with pytest.raises(ValueError, match="at most 100"):
        kit_document([], DNS_GROUP, [f"93.184.{i // 250}.{i % 250}/32" for i in range(101)])


def test_create_sends_the_whole_document_in_the_stacks_region(
    api: tuple[StubbedProvider, Stubber],
) -> None:
    provider, stubber = api
    expect_create(stubber)
    result = provider.create(dict(INPUTS))
    assert result.id == ARN
    assert result.outs == {
        **INPUTS,
        "arn": ARN,
        "firewallPolicyName": "kit-fw-policy-0a1b2c3d",
        "firewallPolicyId": "0a1b2c3d-0000-4000-8000-000000000000",
    }
    assert provider.regions == [REGION]


def test_read_returns_the_live_document_and_nothing_when_gone(
    api: tuple[StubbedProvider, Stubber],
) -> None:
    provider, stubber = api
    live = {k: v for k, v in DOCUMENT.items() if k != "Route53ResolvedIPValidation"}
    stubber.add_response("describe_firewall_policy", described(live), {"FirewallPolicyArn": ARN})
    stubber.add_client_error(
        "describe_firewall_policy",
        service_error_code="ResourceNotFoundException",
        expected_params={"FirewallPolicyArn": ARN},
    )
    result = provider.read(ARN, dict(INPUTS))
    assert result.id == ARN
    assert result.outs is not None
    assert result.outs["firewallPolicy"] == live
    assert result.outs["tags"] == TAGS
    gone = provider.read(ARN, dict(INPUTS))
    assert (gone.id, gone.outs) == (None, {})


def test_diff_is_quiet_when_the_live_document_matches(
    api: tuple[StubbedProvider, Stubber],
) -> None:
    provider, stubber = api
    # What the service adds on its own does not count: flow timeouts, an explicit
    # EnableTLSSessionHolding false, empty lists, references in another order.
    live = copy.deepcopy(DOCUMENT)
    live["StatefulEngineOptions"]["FlowTimeouts"] = {"TcpIdleTimeoutSeconds": 350}
    live["EnableTLSSessionHolding"] = False
    live["StatelessRuleGroupReferences"] = []
    stubber.add_response("describe_firewall_policy", described(live), {"FirewallPolicyArn": ARN})
    result = provider.diff(ARN, dict(INPUTS), dict(INPUTS))
    assert (result.changes, result.replaces) == (False, [])


@pytest.mark.parametrize(
    "drift",
    [
        pytest.param(lambda d: d.pop("Route53ResolvedIPValidation"), id="validation-dropped"),
        pytest.param(
            lambda d: d["Route53ResolvedIPValidation"].__setitem__("SourceIPRanges", []),
            id="validation-emptied",
        ),
        pytest.param(
            lambda d: d["Route53ResolvedIPValidation"].__setitem__("Action", "ALERT"),
            id="validation-alert-only",
        ),
        pytest.param(
            lambda d: d.__setitem__(
                "PolicyVariables", {"RuleVariables": {"HOME_NET": {"Definition": ["10.9.0.0/16"]}}}
            ),
            id="home-net-moved",
        ),
        pytest.param(
            lambda d: d["StatefulRuleGroupReferences"].append(
                {"ResourceArn": GROUP.replace("kit-fw-rules", "other"), "Priority": 50}
            ),
            id="extra-rule-group",
        ),
        pytest.param(
            lambda d: d.__setitem__("StatefulDefaultActions", ["aws:alert_established"]),
            id="default-drop-removed",
        ),
    ],
)
def test_diff_finds_every_live_drift(api: tuple[StubbedProvider, Stubber], drift: Any) -> None:
    provider, stubber = api
    live = copy.deepcopy(DOCUMENT)
    drift(live)
    stubber.add_response("describe_firewall_policy", described(live), {"FirewallPolicyArn": ARN})
    result = provider.diff(ARN, dict(INPUTS), dict(INPUTS))
    assert (result.changes, result.replaces) == (True, [])


def test_diff_updates_for_a_new_document_without_calling_the_api(
    api: tuple[StubbedProvider, Stubber],
) -> None:
    provider, _ = api
    news = {**INPUTS, "firewallPolicy": kit_document([(GROUP, 100)], DNS_GROUP)}
    result = provider.diff(ARN, dict(INPUTS), news)
    assert (result.changes, result.replaces) == (True, [])
    assert provider.regions == []


def test_diff_replaces_for_a_new_region_or_name(api: tuple[StubbedProvider, Stubber]) -> None:
    provider, _ = api
    moved = {**INPUTS, "access": AwsAccess("us-east-1").inputs()}
    renamed = {**INPUTS, "namePrefix": "other-fw-policy"}
    assert provider.diff(ARN, dict(INPUTS), moved).replaces == ["access"]
    assert provider.diff(ARN, dict(INPUTS), renamed).replaces == ["namePrefix"]


@pytest.mark.parametrize(
    "access",
    [
        AwsAccess(REGION, profile="deployer"),
        AwsAccess(REGION, role_arn="arn:aws:iam::123456789012:role/deployer"),
        AwsAccess(REGION, role_arn="arn:aws:iam::123456789012:role/d", external_id="x"),
    ],
)
def test_a_new_profile_or_role_updates_in_place(
    api: tuple[StubbedProvider, Stubber], access: AwsAccess
) -> None:
    # Was: "access" in the replace list, so a new awsProfile or assumeRole replaced the whole
    # policy (and, with it, the firewall's). Only the region fixes where the policy lives.
    provider, _ = api
    result = provider.diff(ARN, dict(INPUTS), {**INPUTS, "access": access.inputs()})
    assert (result.changes, result.replaces) == (True, [])
    assert provider.regions == []


def test_update_writes_with_the_current_token_then_the_tags(
    api: tuple[StubbedProvider, Stubber],
) -> None:
    provider, stubber = api
    olds = {**INPUTS, "tags": {**TAGS, "old": "x"}, "arn": ARN}
    news = {**INPUTS, "tags": {**TAGS, "sandboxkit-stack": "prod2"}}
    stale = {k: v for k, v in DOCUMENT.items() if k != "Route53ResolvedIPValidation"}
    stubber.add_response(
        "describe_firewall_policy", described(stale, NEXT_TOKEN), {"FirewallPolicyArn": ARN}
    )
    stubber.add_response(
        "update_firewall_policy",
        {"UpdateToken": TOKEN, "FirewallPolicyResponse": policy_response()},
        {
            "UpdateToken": NEXT_TOKEN,
            "FirewallPolicyArn": ARN,
            "FirewallPolicy": DOCUMENT,
            "Description": "sandboxkit egress",
        },
    )
    stubber.add_response("untag_resource", {}, {"ResourceArn": ARN, "TagKeys": ["old"]})
    stubber.add_response(
        "tag_resource",
        {},
        {"ResourceArn": ARN, "Tags": [{"Key": "sandboxkit-stack", "Value": "prod2"}]},
    )
    result = provider.update(ARN, olds, news)
    assert result.outs is not None
    assert result.outs["arn"] == ARN
    assert result.outs["firewallPolicy"] == DOCUMENT


def test_delete_tolerates_a_missing_policy_and_reports_a_policy_in_use(
    api: tuple[StubbedProvider, Stubber],
) -> None:
    provider, stubber = api
    stubber.add_response(
        "delete_firewall_policy",
        {"FirewallPolicyResponse": policy_response()},
        {"FirewallPolicyArn": ARN},
    )
    stubber.add_client_error(
        "delete_firewall_policy",
        service_error_code="ResourceNotFoundException",
        expected_params={"FirewallPolicyArn": ARN},
    )
    stubber.add_client_error(
        "delete_firewall_policy",
        service_error_code="InvalidOperationException",
        service_message="policy is in use by a firewall",
        expected_params={"FirewallPolicyArn": ARN},
    )
    provider.delete(ARN, dict(INPUTS))
    provider.delete(ARN, dict(INPUTS))
    with pytest.raises(ClientError, match="in use"):
        provider.delete(ARN, dict(INPUTS))


def test_normalized_keeps_an_empty_source_list_apart_from_none() -> None:
    base = {"Route53ResolvedIPValidation": {"Action": "DROP"}}
    empty = {"Route53ResolvedIPValidation": {"Action": "DROP", "SourceIPRanges": []}}
    no_bypass = {
        "Route53ResolvedIPValidation": {"Action": "DROP", "BypassDestinationValidationIPRanges": []}
    }
    assert normalized(base) != normalized(empty)
    assert normalized(base) == normalized(no_bypass)


def test_normalized_drops_empty_members_at_every_level() -> None:
    # Was: only top-level empty members were dropped, so a live document whose nested members
    # the service returns empty (PolicyVariables.RuleVariables {}, an empty Override in a
    # reference) looked drifted on every preview.
    live = copy.deepcopy(DOCUMENT)
    live["PolicyVariables"] = {"RuleVariables": {}}
    live["StatefulRuleGroupReferences"][0]["Override"] = {}
    live["StatefulEngineOptions"]["FlowTimeouts"] = {}
    live["TLSInspectionConfigurationArn"] = None
    assert normalized(live) == normalized(DOCUMENT)
    live["PolicyVariables"] = {"RuleVariables": {"HOME_NET": {"Definition": []}}}
    assert normalized(live) == normalized(DOCUMENT)
    live["PolicyVariables"] = {"RuleVariables": {"HOME_NET": {"Definition": ["10.0.0.0/8"]}}}
    assert normalized(live) != normalized(DOCUMENT)


def test_region_and_profile_come_from_the_inputs_not_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = tmp_path / "config"
    config.write_text("[profile kit]\nregion = ap-south-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_REGION", "us-west-2")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    client = FirewallPolicyProvider().client(AwsAccess(REGION, profile="kit"))
    assert client.meta.region_name == REGION
    session = dynamic_api.session(AwsAccess(REGION, profile="kit"))
    assert (session.profile_name, session.region_name) == ("kit", REGION)


def test_a_role_is_assumed_from_the_profile_identity(monkeypatch: pytest.MonkeyPatch) -> None:
    access = AwsAccess(
        REGION, role_arn="arn:aws:iam::123456789012:role/deployer", external_id="kit-ext"
    )
    sts = boto3.Session(
        aws_access_key_id="stub", aws_secret_access_key="stub", region_name=REGION
    ).client("sts")
    asked: list[tuple[str, str | None]] = []

    class BaseSession:
        def __init__(self, profile_name: str | None, region_name: str) -> None:
            asked.append((region_name, profile_name))

        def client(self, service: str, region_name: str) -> Any:
            assert (service, region_name) == ("sts", REGION)
            return sts

    monkeypatch.setattr(boto3, "Session", _sessions(BaseSession))
    with ModelStubber(sts) as stubber:
        stubber.add_response(
            "assume_role",
            {
                "Credentials": {
                    "AccessKeyId": "ASIAEXAMPLEEXAMPLE01",
                    "SecretAccessKey": "secret",
                    "SessionToken": "token",
                    "Expiration": "2026-12-01T00:00:00Z",
                }
            },
            {
                "RoleArn": "arn:aws:iam::123456789012:role/deployer",
                "RoleSessionName": "sandboxkit-deploy",
                "ExternalId": "kit-ext",
            },
        )
        assumed = dynamic_api.session(access)
    assert asked == [(REGION, None)]
    assert assumed.region_name == REGION
    assert assumed.get_credentials().access_key == "ASIAEXAMPLEEXAMPLE01"
    assert assume_role_params(AwsAccess(REGION, role_arn="arn:aws:iam::1:role/r")) == {
        "RoleArn": "arn:aws:iam::1:role/r",
        "RoleSessionName": "sandboxkit-deploy",
    }


def _sessions(base: type) -> Any:
    # boto3.Session(profile_name=..., region_name=...) is the base identity; the one built from
    # credentials is a real session.
    real = boto3.Session

    def make(**kwargs: Any) -> Any:
        if "aws_access_key_id" in kwargs:
            return real(**kwargs)
        return base(**kwargs)

    return make


def test_resource_registers_under_its_own_type_with_its_inputs(engine: Recorder) -> None:
    access = AwsAccess(REGION, profile="kit")

    def program() -> None:
        FirewallPolicyDocument(
            "kit-fw-policy", document=DOCUMENT, access=access, description="d", tags=TAGS
        )

    engine.run(program)
    (policy,) = [r for r in engine.resources if FIREWALL_POLICY_DOCUMENT.matches(r.type)]
    assert policy.name == "kit-fw-policy"
    assert policy.inputs["firewallPolicy"] == DOCUMENT
    assert policy.inputs["access"] == {"region": REGION, "profile": "kit"}
    assert policy.inputs["namePrefix"] == "kit-fw-policy"
    with pytest.raises(ValueError, match="letters, digits and hyphens"):
        FirewallPolicyDocument("bad_name", document={}, access=access, description="", tags={})
    # ResourceName is at most 128 characters, of which the provider's suffix takes 9.
    with pytest.raises(ValueError, match="at most 119 characters"):
        FirewallPolicyDocument("x" * 120, document={}, access=access, description="", tags={})
    assert isinstance(FirewallPolicyProvider(), pulumi.dynamic.ResourceProvider)


def test_numbers_the_engine_sends_as_doubles_reach_the_api_as_integers(
    api: tuple[StubbedProvider, Stubber],
) -> None:
    # Was: the document went to the API as the engine delivered it, Priority 100.0 (a
    # protobuf double), which botocore refuses for the integer Priority member.
    provider, stubber = api
    delivered = copy.deepcopy(DOCUMENT)
    delivered["StatefulRuleGroupReferences"][0]["Priority"] = 100.0
    expect_create(stubber)
    provider.create({**INPUTS, "firewallPolicy": delivered})
