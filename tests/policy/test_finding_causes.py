"""Every finding names its cause and its fix (issue 31 item 14): for each row of the mutation
table (one bad input per policy, ``test_mutations.ROWS``), each new finding of a row that
weakens the stack through its config names the setting the row changed (``sandboxkit:<section>
.<key>``, e.g. ``sandboxkit:profile.egress.mode`` for ``egress.mode: open``); one that edits a
rendered input names the input and says what to set it to. Before, aws-microvm with
``egress.mode: open`` got "validate destinations against the DNS Firewall rule group's VPC
answers" (SBX-NET-003) and "add the port to allowedPorts" for ports 0-65535 (SBX-NET-001)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from test_mutations import PROD_CONFIG, PROJECT, ROWS, Row, _baseline, _values, render

import support as testing
from sandboxkit import gate

# The imperative a fix starts with, after the cause ("...; set X to Y.").
FIX_VERBS = (
    "set", "remove", "add", "use", "deploy", "keep", "list", "pin", "grant", "assign", "lower",
    "raise", "move", "label", "replace", "drop", "give", "send", "forward", "route", "deny",
    "allow", "scope", "bind", "pass", "attach", "include", "omit", "write", "run", "name",
    "accept", "check", "let", "leave", "widen", "narrow", "restore", "create", "make", "match",
)  # fmt: skip


@pytest.fixture(scope="module")
def analyzer() -> testing.RememberingAnalyzer:
    """The pack in this process, as the mutation table asks it."""
    return testing.RememberingAnalyzer(gate.InProcessAnalyzer(gate.pack_dir(PROJECT)))


def changed_keys(before: Any, after: Any, path: str = "") -> Iterator[str]:
    """The dotted paths (``profile.egress.mode``) where ``after`` differs from ``before``."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            yield from changed_keys(before.get(key), after.get(key), f"{path}.{key}".strip("."))
    elif before != after:
        yield path


def new_findings(row: Row, analyzer: gate.Analyzer) -> tuple[list[gate.Violation], list[str]]:
    rendered, baseline = _baseline(analyzer, row.stack, row.targets)
    changed: list[str] = []
    if row.config is not None:
        values = _values(row.stack, row.targets)
        original = _values(row.stack, row.targets)
        row.config(values)
        changed = list(changed_keys(original, values))
        rendered = render(row.stack, values)
    if row.inputs is not None:
        rendered = row.inputs(rendered)
    mutated = gate.check_rendered(analyzer, rendered, PROJECT, PROD_CONFIG)
    before = {(v.policy, v.urn) for v in baseline.violations}
    return [v for v in mutated.violations if (v.policy, v.urn) not in before], changed


def names_a_fix(message: str) -> bool:
    """Whether a clause after the first (after "; ", ": " or ". ") starts with a fix verb."""
    clauses = [c.strip() for s in message.split(". ") for p in s.split(";") for c in p.split(": ")]
    return any(c.split(" ", 1)[0].lower() in FIX_VERBS for c in clauses[1:] if c)


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_each_finding_names_its_cause_and_its_fix(row: Row, analyzer: gate.Analyzer) -> None:
    found, changed = new_findings(row, analyzer)
    assert found
    for violation in found:
        assert names_a_fix(violation.message), (violation.policy, violation.message)
        if row.config is not None and row.inputs is None:
            # The setting the row wrote, down to its section's key (profile.egress, a target's
            # image): what the user changes back.
            settings = {".".join(k.split(".")[:2]) for k in changed}
            assert any(f"sandboxkit:{s}" in violation.message for s in settings), (
                violation.policy,
                settings,
                violation.message,
            )


def test_open_egress_on_aws_names_the_mode_not_a_port_or_a_firewall_default(
    analyzer: gate.Analyzer,
) -> None:
    [row] = [r for r in ROWS if r.id == "egress-open"]
    found, _ = new_findings(row, analyzer)
    aws = {v.policy: v.message for v in found if "aws-microvm" in v.urn}
    assert "allowedPorts" in aws["SBX-NET-001"] and "never every port" in aws["SBX-NET-001"]
    assert "add the port" not in aws["SBX-NET-001"]
    assert aws["SBX-NET-001"].endswith(
        "admits egress on every port, which the kit renders for sandboxkit:profile.egress.mode "
        "open only; set sandboxkit:profile.egress.mode to deny or allowlist, or restore the "
        "kit's rule with its ports (sbx-net-001's allowedPorts lists single ports, never every "
        "port)."
    )
    assert aws["SBX-NET-003"].endswith(
        "the kit leaves it out only for sandboxkit:profile.egress.mode open: set the mode to "
        "deny or allowlist, and the kit's policy validates destinations against the DNS "
        "Firewall rule group's VPC answers."
    )
