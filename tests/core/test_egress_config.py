"""Egress refusals through the stack-config path: exit 2 naming the key, the entry and the fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from sandboxkit.config import ConfigSource, load_stack, read_stack_file
from sandboxkit.egress_contract import parse_rule
from sandboxkit.errors import ConfigError, Problem
from support import invoke_cli

KUBERNETES = {"context": "kind-test", "image": "example.com/sandbox:1"}
ENTRY = "a specific public host[:port] entry: "
PROJECT = Path(__file__).resolve().parents[2]
# The shipped dev stack's aws-microvm settings, secrets still sealed.
DEV = read_stack_file(PROJECT / "stacks" / "Pulumi.dev.yaml")


def problems(target: str, settings: dict[str, Any], profile: dict[str, Any]) -> list[Problem]:
    source = ConfigSource(
        values={"environment": "dev", "targets": [target], "profile": profile, target: settings},
        secret_paths=DEV.secret_paths,
    )
    with pytest.raises(ConfigError) as caught:
        load_stack(source, "test")
    return list(caught.value.problems)


def allow(*entries: str) -> dict[str, Any]:
    return {"egress": {"mode": "allowlist", "allow": ["pypi.org", *entries]}}


@pytest.mark.parametrize(
    "entry", ["[64:ff9b::a9fe:a9fe]:80", "*.s3.amazonaws.com", "169.254.169.254.nip.io"]
)
def test_a_refused_entry_names_its_index_value_reason_and_fix(entry: str) -> None:
    # The parser's message (pinned word for word in test_egress.py), under the entry's key.
    with pytest.raises(ValueError) as caught:
        parse_rule(entry)
    assert problems("kubernetes", KUBERNETES, allow(entry)) == [
        Problem("sandboxkit:profile.egress.allow[1]", entry, ENTRY + str(caught.value))
    ]


def test_every_refused_entry_is_reported_together() -> None:
    found = problems("kubernetes", KUBERNETES, allow("*.github.io", "[::ffff:140.82.112.3]"))
    assert [(p.key, p.value) for p in found] == [
        ("sandboxkit:profile.egress.allow[1]", "*.github.io"),
        ("sandboxkit:profile.egress.allow[2]", "[::ffff:140.82.112.3]"),
    ]
    assert found[1].expected.endswith("write the IPv4 address 140.82.112.3 instead")


@pytest.mark.parametrize(
    ("settings", "key", "value", "fragment"),
    [
        # Allowed even with egress deny, so it would open anyone's buckets: refused.
        (
            {"controlPlaneUrl": "https://storage.googleapis.com/upload"},
            "sandboxkit:aws-microvm.controlPlaneUrl",
            "https://storage.googleapis.com/upload",
            "storage.googleapis.com serves anyone's content by path",
        ),
        (
            {"controlPlaneUrl": "https://10-0-0-1.sslip.io/api"},
            "sandboxkit:aws-microvm.controlPlaneUrl",
            "https://10-0-0-1.sslip.io/api",
            "is a name of sslip.io, a wildcard-DNS service",
        ),
        (
            {"controlPlaneHosts": ["telemetry.example.com", "s3.eu-west-1.amazonaws.com"]},
            "sandboxkit:aws-microvm.controlPlaneHosts[1]",
            "s3.eu-west-1.amazonaws.com",
            "s3.eu-west-1.amazonaws.com serves anyone's content by path",
        ),
    ],
)
def test_control_plane_hosts_pass_the_same_refusals(
    settings: dict[str, Any], key: str, value: str, fragment: str
) -> None:
    found = problems("aws-microvm", {**DEV.values["aws-microvm"], **settings}, {})
    assert [(p.key, p.value) for p in found] == [(key, value)]
    assert fragment in found[0].expected


def test_the_cli_exits_2_without_a_traceback(tmp_path: Path, project_dir: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text((project_dir / "Pulumi.yaml").read_text())
    (tmp_path / "stacks").mkdir()
    config = {
        "sandboxkit:environment": "dev",
        "sandboxkit:targets": ["kubernetes"],
        "sandboxkit:profile": {"egress": {"mode": "allowlist", "allow": ["*.s3.amazonaws.com"]}},
        "sandboxkit:kubernetes": KUBERNETES,
    }
    (tmp_path / "stacks" / "Pulumi.bad.yaml").write_text(yaml.safe_dump({"config": config}))
    # In this process (an unexpected exception is raised again): preview's real process is
    # tests/core/test_progress.py's.
    result = invoke_cli("preview", "--stack", "bad", cwd=tmp_path)
    assert result.returncode == 2
    assert (
        "sandboxkit:profile.egress.allow[0]: got '*.s3.amazonaws.com'; expected a specific "
        "public host[:port] entry: *.s3.amazonaws.com covers names anyone can publish"
    ) in result.stderr
    assert "Traceback" not in result.stderr + result.stdout
