"""Links on a target's egress path through secrets and to ids the render does not create.

A reader follows a link (a security group id, a subnet id, a firewall policy) to the resource it
names. Through a Pulumi secret whose value the render knows, the link is followed exactly as
through plain text, by ``sandboxkit check`` and by ``preview --explain-egress`` alike; through
the offline render's stand-in for a secret it cannot decrypt, and to an id no rendered resource
has (an existing resource, as a real ``pulumi preview`` sees every resource the stack does not
create), the reader cannot see what lies there: the target is "cannot verify", mandatory in
prod, and the message names the link, the value and why.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

import support as testing
from sandboxkit import cli, gate
from sandboxkit.explain import explain_target, explanation_document
from sandboxkit.render import RenderedStack, secret_wrap
from sandboxkit.secrets import UNKNOWN_SECRET

PROJECT = Path(__file__).resolve().parents[2]
CONNECTOR = "aws-microvm-connector"
GROUPS = ("configuration", "vpcEgressConfiguration", "securityGroupIds")
SUBNETS = ("configuration", "vpcEgressConfiguration", "subnetIds")
PROD_CONFIG = gate.environment_config_path(gate.pack_dir(PROJECT), "prod")


@pytest.fixture(scope="module")
def analyzer() -> gate.InProcessAnalyzer:
    return gate.InProcessAnalyzer(gate.pack_dir(PROJECT))


@pytest.fixture(scope="module")
def prod() -> RenderedStack:
    return testing.shipped_render(PROJECT, "prod")


def _new_findings(
    analyzer: gate.InProcessAnalyzer, before: RenderedStack, after: RenderedStack
) -> list[tuple[str, str, str]]:
    """``(policy, resource name, level)`` of each finding ``after`` has and ``before`` has not,
    with prod's pack config."""
    known = {
        (v.policy, v.urn, v.message)
        for v in gate.check_rendered(analyzer, before, PROJECT, PROD_CONFIG).violations
    }
    return [
        (v.policy, v.urn.rsplit("::", 1)[-1], v.message)
        for v in gate.check_rendered(analyzer, after, PROJECT, PROD_CONFIG).violations
        if (v.policy, v.urn, v.message) not in known
    ]


def test_a_link_through_a_known_secret_is_followed(
    analyzer: gate.InProcessAnalyzer, prod: RenderedStack
) -> None:
    (group,) = testing.named(prod.resources, CONNECTOR).inputs["configuration"][
        "vpcEgressConfiguration"
    ]["securityGroupIds"]
    hidden = testing.with_input(prod, CONNECTOR, GROUPS, [secret_wrap(group)])
    assert _new_findings(analyzer, prod, hidden) == []
    explained, plain = explain_target(hidden, "aws-microvm"), explain_target(prod, "aws-microvm")
    assert (explained.refusal, explained.effective) == ("", plain.effective)
    assert explained.matches_contract


def test_a_link_through_a_secret_the_render_cannot_read_cannot_be_verified(
    analyzer: gate.InProcessAnalyzer, prod: RenderedStack
) -> None:
    hidden = testing.with_input(prod, CONNECTOR, GROUPS, [secret_wrap(UNKNOWN_SECRET)])
    refusal = (
        f"aws:lambda/coreNetworkConnector:CoreNetworkConnector {CONNECTOR} securityGroupIds "
        f"names '{UNKNOWN_SECRET}', which no rendered aws:ec2/securityGroup:SecurityGroup is: a "
        "Pulumi secret the offline render cannot read, so the reader cannot follow the path there"
    )
    explained = explain_target(hidden, "aws-microvm")
    assert explained.refusal == refusal
    (document,) = explanation_document([explained])
    assert (document["read"], document["cannotVerify"], document["probes"][0].keys()) == (
        False,
        refusal,
        {"probe", "protocol", "kind", "origin"},
    )
    console = Console(record=True, width=400)
    cli._print_egress([explained], console)
    assert f"cannot verify: {refusal}" in console.export_text()
    found = _new_findings(analyzer, prod, hidden)
    assert {(policy, name) for policy, name, _ in found} == {
        ("SBX-NET-006", "aws-microvm"),
        ("SBX-NET-008", "aws-microvm"),
    }
    assert all(
        refusal in message and "give that input as plain config" in message
        for _, _, message in found
    )


@pytest.mark.parametrize(
    ("path", "existing", "kind"),
    [
        (GROUPS, "sg-0abc1234567890def", "aws:ec2/securityGroup:SecurityGroup"),
        (SUBNETS, "subnet-0abc1234567890def", "aws:ec2/subnet:Subnet"),
    ],
    ids=["security group", "subnet"],
)
def test_an_id_the_render_does_not_create_cannot_be_verified_and_fails_prod(
    analyzer: gate.InProcessAnalyzer,
    prod: RenderedStack,
    path: tuple[str, ...],
    existing: str,
    kind: str,
) -> None:
    elsewhere = testing.with_input(prod, CONNECTOR, path, [existing])
    why = (
        f"names '{existing}', which no rendered {kind} is: the id of a resource the stack does "
        "not create (an existing one, looked up or written in), whose rules the render does not "
        "hold, so the reader cannot follow the path there"
    )
    assert why in explain_target(elsewhere, "aws-microvm").refusal
    result = gate.check_rendered(analyzer, elsewhere, PROJECT, PROD_CONFIG)
    found = [v for v in result.violations if v.policy == "SBX-NET-008" and why in v.message]
    assert [v.message.startswith("Cannot verify SBX-NET-008 on aws-microvm") for v in found] == [
        True
    ]
    assert [v.enforcement for v in found] == ["mandatory"]
    assert result.failed
