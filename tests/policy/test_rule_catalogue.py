"""The rule catalogue is the one home of each policy: the pack's policies, their descriptions,
the rule table of ``docs/policy-gate.md`` and the pack's per-environment config all come from
``sandboxkit.policy_rules.CATALOGUE`` and the handlers' ``covers``, and drift is found."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from pack_calls import PACK, POLICIES
from pulumi_policy import Severity, StackValidationPolicy

from sandboxkit import docgen, kit_guard
from sandboxkit.guard import Handler
from sandboxkit.policy_rules import (
    CATALOGUE,
    DEFAULT_LEVELS,
    DIGEST_PINNED,
    SIZE_LIMITS,
    Level,
    PolicyRule,
    Scope,
    rule_of,
)
from sandboxkit.policy_rules import Severity as RuleSeverity

ROOT = Path(__file__).resolve().parents[2]


def test_the_pack_is_one_policy_per_rule_in_catalogue_order() -> None:
    assert [p.name for p in PACK.ALL_POLICIES] == [r.policy_name for r in CATALOGUE]
    for rule in CATALOGUE:
        policy = POLICIES[rule.policy_name]
        assert policy.display_name == f"{rule.id}: {rule.name}"
        assert policy.remediation_steps == rule.remediation
        assert policy.severity == Severity[rule.severity.name]
        assert isinstance(policy, StackValidationPolicy) == (rule.scope is Scope.STACK)
        schema = policy.config_schema.properties if policy.config_schema else {}
        assert schema == {key: dict(spec) for key, spec in rule.config_schema.items()}
        assert rule_of(rule.id) is rule


def test_each_description_ends_with_what_each_targets_handlers_cover() -> None:
    egress = POLICIES["sbx-net-004"].description
    assert egress == (
        "Checks that the Route 53 Resolver DNS Firewall in front of sandboxes blocks queries "
        "when it cannot evaluate them (firewallFailOpen DISABLED). Checked on aws-microvm: "
        "Route 53 Resolver DNS Firewall config: firewallFailOpen DISABLED."
    )
    shared = POLICIES["sbx-k8s-004"].description
    assert shared.endswith(
        " Checked on kubernetes, gcp-gke: sandbox pods: a gVisor or Kata runtime class. "
        "gcp-gke: GKE node pools: GKE Sandbox (gVisor)."
    )
    for handler in kit_guard.declared_handlers():
        assert handler.covers in POLICIES[handler.rule.policy_name].description


def test_a_changed_covers_text_makes_the_rule_table_stale(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    doc = ROOT / docgen.RULES_DOC
    assert doc not in docgen.generate(ROOT).stale
    first = kit_guard.HANDLERS[0]
    changed = dataclasses.replace(first, covers="every input but the secret stores")
    monkeypatch.setattr(kit_guard, "HANDLERS", (changed, *kit_guard.HANDLERS[1:]))
    report = docgen.generate(ROOT)
    assert report.stale == [doc]
    row = next(r for r in report.documents[doc].splitlines() if r.startswith("| `SBX-SEC-002`"))
    assert "| every target: every input but the secret stores. |" in row


def test_the_rule_table_has_a_row_per_rule_with_thresholds_and_levels() -> None:
    table = docgen.rules_table().splitlines()
    assert len(table) == 2 + len(CATALOGUE)
    assert table[2].startswith("| `SBX-NET-001` | critical | resource | **Sandbox egress is not")
    assert table[2].endswith(
        " | `allowedPorts` (`[443, 80, 53]`) | advisory / advisory / mandatory |"
    )


def test_the_pack_configs_follow_each_rules_levels(monkeypatch: pytest.MonkeyPatch) -> None:
    for environment in ("dev", "staging", "prod"):
        shipped = ROOT / docgen.PACK_CONFIG / f"{environment}.json"
        assert shipped.read_text() == docgen.pack_config(environment)
    assert json.loads(docgen.pack_config("prod")) == {"all": "mandatory"}
    strict = dataclasses.replace(DIGEST_PINNED, levels={**DEFAULT_LEVELS, "dev": Level.MANDATORY})
    catalogue = tuple(strict if rule is DIGEST_PINNED else rule for rule in CATALOGUE)
    monkeypatch.setattr(docgen, "CATALOGUE", catalogue)
    assert docgen.pack_config("dev") == '{\n  "all": "advisory",\n  "sbx-sec-003": "mandatory"\n}\n'
    assert docgen.pack_config("staging") == '{\n  "all": "advisory"\n}\n'


def test_a_rule_without_a_default_or_a_level_per_environment_is_refused() -> None:
    with pytest.raises(ValueError, match=r"SBX-RES-901: every config property needs a default"):
        PolicyRule(
            "SBX-RES-901",
            "Example",
            RuleSeverity.LOW,
            Scope.RESOURCE,
            "Checks nothing.",
            "None.",
            config_schema={"limit": {"type": "integer"}},
        )
    with pytest.raises(ValueError, match=r"a level for each of dev, staging, prod"):
        dataclasses.replace(SIZE_LIMITS, levels={"prod": Level.MANDATORY})


def test_a_handler_names_a_rule_object_never_its_id() -> None:
    with pytest.raises(TypeError) as refused:
        Handler("SBX-RES-001", ("flyio:index/machine:Machine",), lambda p, c: (), "machines")  # type: ignore[arg-type]
    assert str(refused.value) == (
        "Handler names 'SBX-RES-001': name the catalogue's rule object "
        "(sandboxkit.policy_rules), not its id"
    )
