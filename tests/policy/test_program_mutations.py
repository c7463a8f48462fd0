"""A project's own program around the components, judged as ``pulumi preview`` passes it.

Each row is a program in a scratch project of another name (Pulumi.yaml ``main: program/``)
that builds the kit's components through ``sandboxkit.program.run`` and changes the path a
packet or a query takes, by a stack transformation of a component's child or by a resource of
its own outside every component. ``sandboxkit check`` (in process, without checkov: these rows
are about the render and the readers) must exit 1 on each, or 2 naming what it cannot read;
the program that changes nothing passes.
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from sandboxkit.render import render_stack
from support import Ran, invoke_cli, make_project

PROJECT = Path(__file__).resolve().parents[2]
EXAMPLE = PROJECT / "docs" / "examples" / "aws-microvm.yaml"

PROGRAM = '''\
import pulumi
from sandboxkit.program import run


def transform(type_token, name, change):
    """Change the props of resource ``name`` of ``type_token`` as the engine registers it."""

    def apply(args):
        if args.type_ != type_token or args.name != name:
            return None
        props = dict(args.props)
        change(props)
        return pulumi.ResourceTransformationResult(props, args.opts)

    pulumi.runtime.register_stack_transformation(apply)


{body}

run()
'''


def program_project(root: Path, body: str, stack: str, environment: str = "prod") -> Path:
    """A project named ``acme-sandboxes`` whose program is ``PROGRAM`` around ``body``, with
    the aws-microvm example as stack ``t`` in ``environment``, and the kit's policy packs."""
    (root / "Pulumi.yaml").write_text(
        "name: acme-sandboxes\nruntime: python\nmain: program/\nstackConfigDir: stacks\n"
    )
    (root / "program").mkdir()
    (root / "program" / "__main__.py").write_text(PROGRAM.format(body=textwrap.dedent(body)))
    (root / "stacks").mkdir()
    document = yaml.safe_load(stack)
    document["config"]["sandboxkit:environment"] = environment
    (root / "stacks" / "Pulumi.t.yaml").write_text(yaml.safe_dump(document))
    (root / "policy-packs").symlink_to(PROJECT / "policy-packs")
    return root


def check(root: Path) -> Ran:
    return invoke_cli("check", "--stack", "t", "--no-checkov", "--format", "json", cwd=root)


def findings(ran: Ran) -> list[tuple[str, str]]:
    """``(rule id, message)`` of each finding ``check --format json`` printed."""
    document = json.loads(ran.stdout)
    return [(v["policy"], v["message"]) for v in document["violations"]]


@dataclass(frozen=True)
class Row:
    """One door: the program ``body``, the exit code, and a text each named finding holds."""

    door: str
    body: str
    policy: str
    says: str
    code: int = 1


NOTHING = Row("nothing", "", "", "", code=0)

AWS_ROWS = (
    Row(
        "policy default action emptied by a transform",
        """
        def no_drop(props):
            document = dict(props["firewallPolicy"])
            document["StatefulDefaultActions"] = []
            props["firewallPolicy"] = document

        transform(
            "pulumi-python:dynamic/networkfirewall:FirewallPolicy", "aws-microvm-fw-policy", no_drop
        )
        """,
        "SBX-NET-008",
        "admitted by 0.0.0.0/0 on 443, address",
    ),
)


def test_the_programs_own_project_renders_the_kits_resources(tmp_path: Path) -> None:
    own = render_stack(program_project(tmp_path, "", EXAMPLE.read_text(), "dev"), "t")
    (tmp_path / "kit").mkdir()
    kit = render_stack(make_project(tmp_path / "kit", {"t": EXAMPLE.read_text()}), "t")
    assert own.resources[0].urn.startswith("urn:pulumi:t::acme-sandboxes::")
    assert [(r.type, r.name, r.inputs) for r in own.resources] == [
        (r.type, r.name, r.inputs) for r in kit.resources
    ]


def test_a_resource_the_program_adds_is_rendered_beside_the_components(tmp_path: Path) -> None:
    body = """
    from pulumi_aws.ec2.security_group_rule import SecurityGroupRule
    SecurityGroupRule(
        "acme-extra", type="egress", protocol="tcp", from_port=22, to_port=22,
        cidr_blocks=["0.0.0.0/0"], security_group_id="sg-acme",
    )
    pulumi.export("acme", "yes")
    """
    rendered = render_stack(program_project(tmp_path, body, EXAMPLE.read_text()), "t")
    added = [r for r in rendered.resources if r.name == "acme-extra"]
    assert [(r.type, r.parent, r.inputs["fromPort"]) for r in added] == [
        (
            "aws:ec2/securityGroupRule:SecurityGroupRule",
            "urn:pulumi:t::acme-sandboxes::pulumi:pulumi:Stack::acme-sandboxes-t",
            22.0,
        )
    ]
    assert rendered.outputs["acme"] == "yes"
    assert list(rendered.outputs) == ["aws-microvm", "acme"]


@pytest.mark.parametrize("row", [NOTHING, *AWS_ROWS], ids=lambda row: row.door)
def test_each_door_a_program_opens_fails_the_gate(row: Row, tmp_path: Path) -> None:
    ran = check(program_project(tmp_path, row.body, EXAMPLE.read_text()))
    assert ran.returncode == row.code, ran.stdout + ran.stderr
    if row.code == 1:
        assert any(
            policy == row.policy and row.says in message for policy, message in findings(ran)
        ), findings(ran)
    if row.code == 0:
        assert findings(ran) == []
