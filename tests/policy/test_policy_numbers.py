"""Numbers in violation messages print as people write them.

Pack config reaches the policies through the analyzer protocol as protobuf numbers, which are
doubles: a threshold of 1000 arrives as ``1000.0``. Every message goes through the pack's one
number formatter (``sandboxkit.guard.number``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import support as testing
from sandboxkit import gate
from sandboxkit.guard import number, numbers

PROJECT = Path(__file__).resolve().parents[2]
# An integral number printed as a float ("30.0"), not part of an address or a CIDR.
FLOAT = re.compile(r"(?<![\d.])\d+\.0(?![\d./])")


@pytest.fixture(scope="module")
def analyzer() -> gate.InProcessAnalyzer:
    return gate.InProcessAnalyzer(gate.pack_dir(PROJECT))


def prod_values(*targets: str) -> dict[str, Any]:
    """The prod stack's values narrowed to ``targets``."""
    values = testing.stack_values(PROJECT, "prod")
    for dropped in set(values["targets"]) - set(targets):
        del values[dropped]
    values["targets"] = list(targets)
    return values


def messages(
    analyzer: gate.InProcessAnalyzer, values: dict[str, Any], pack_config: Path | None = None
) -> set[tuple[str, str]]:
    rendered = testing.render_values(PROJECT, "prod", values)
    result = gate.check_rendered(analyzer, rendered, PROJECT, pack_config)
    return {(v.policy, v.message) for v in result.violations}


@pytest.mark.parametrize(
    ("value", "text"),
    [(1000.0, "1000"), (1000, "1000"), (0.5, "0.5"), (1e6, "1000000"), (-1.0, "-1"), ("x", "x")],
)
def test_number_prints_integral_values_without_a_fraction(value: Any, text: str) -> None:
    assert number(value) == text


def test_numbers_joins_a_list() -> None:
    assert numbers([443.0, 80.0, 53.0]) == "443, 80, 53"


def test_default_thresholds_print_as_integers(analyzer: gate.InProcessAnalyzer) -> None:
    values = prod_values("kubernetes")
    values["profile"]["limits"]["maxLifetimeSeconds"] = 36000
    values["profile"]["pool"] = {"ready": 2, "maxConcurrent": 1500}
    found = messages(analyzer, values)
    assert (
        "SBX-RES-002",
        "SandboxTemplate kubernetes-template sets activeDeadlineSeconds to 36000 s, above the "
        "maximum of 28800 s; lower sandboxkit:profile.limits.maxLifetimeSeconds.",
    ) in found
    assert (
        "SBX-RES-003",
        "ResourceQuota kubernetes-quota sets spec.hard.pods to 1502, above the maximum of 1000; "
        "lower sandboxkit:profile.pool.maxConcurrent.",
    ) in found


def test_retention_minimum_and_ports_print_as_integers(analyzer: gate.InProcessAnalyzer) -> None:
    values = prod_values("aws-microvm")
    values["profile"]["audit"] = {"logRetentionDays": 7}
    # An IP entry on port 25: the ports beyond allowedPorts are listed (egress open names the
    # mode instead, issue 31 item 14).
    values["profile"]["egress"] = {"mode": "allowlist", "allow": ["140.82.112.3:25"]}
    found = messages(analyzer, values)
    assert (
        "SBX-LOG-001",
        "Log group aws-microvm-launcher-logs keeps logs 7 days, fewer than 30; raise "
        "sandboxkit:profile.audit.logRetentionDays.",
    ) in found
    assert any(
        policy == "SBX-NET-001" and "beyond ports 443, 80, 53;" in message
        for policy, message in found
    ), found
    assert not [m for _, m in found if FLOAT.search(m)]


def test_fractional_thresholds_from_the_pack_config_keep_their_fraction(
    analyzer: gate.InProcessAnalyzer, tmp_path: Path
) -> None:
    config = tmp_path / "prod.json"
    config.write_text(json.dumps({"all": "advisory", "sbx-res-001": {"maxVcpu": 0.5}}))
    found = messages(analyzer, prod_values("kubernetes"), config)
    assert (
        "SBX-RES-001",
        "SandboxTemplate kubernetes-template container sandbox allows 1 vCPU, above the maximum "
        "of 0.5; lower sandboxkit:profile.limits.vcpu.",
    ) in found
