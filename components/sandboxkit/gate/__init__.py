"""The policy gate: send a rendered stack to the sandbox-guard pack over Pulumi's analyzer protocol.

``run_check`` renders a stack offline (``render_stack``, exactly as ``sandboxkit preview``),
then makes the calls the Pulumi CLI makes to a policy pack: ``GetAnalyzerInfo``, ``Configure``
(schema defaults, then the per-environment file ``config/<environment>.json``), ``Analyze`` for
every resource and ``AnalyzeStack`` once. The pack answers either in-process (its servicer, the
default: fast) or as a real subprocess over gRPC (``pack_process``); the rules live only in the
pack. Results are source-agnostic ``Violation``s so other scanners join them before formatting
with ``format_text``, ``format_json`` or ``format_sarif``.

``check_stacks`` is the whole gate ``sandboxkit check`` runs: CrossGuard per stack, then checkov
once over every stack's exports (``checkov_bridge``), merged per stack with ``source: checkov``.
A checkov failure the baseline does not accept takes its level from
``policy-packs/checkov/levels.json`` (per environment, like the pack config; ``project`` for the
kit's own Dockerfiles and workflows, which are scanned only when asked: ``--all-stacks``).
Baseline-accepted failures are kept apart (``CheckResult.accepted``) with their reason.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sandboxkit.checkov_bridge.runner import scan_rendered
from sandboxkit.gate.analyzer import (
    Analyzer,
    InProcessAnalyzer,
    load_policies,
    pack_dir,
    pack_process,
)
from sandboxkit.gate.checkov_merge import (
    CHECKOV_LEVELS,
    checkov_levels,
    project_result,
    with_checkov,
)
from sandboxkit.gate.crossguard import check_rendered, run_check
from sandboxkit.gate.formats.json_document import format_json
from sandboxkit.gate.formats.text import format_text
from sandboxkit.gate.locations import target_lines
from sandboxkit.gate.pack_config import policy_config
from sandboxkit.gate.results import (
    PROJECT_SCOPE,
    SOURCE_CHECKOV,
    SOURCE_CROSSGUARD,
    CheckResult,
    RuleInfo,
    Violation,
    exit_code,
)
from sandboxkit.project import stack_file
from sandboxkit.render import RenderedStack

__all__ = [
    "CHECKOV_LEVELS",
    "PROJECT_SCOPE",
    "Analyzer",
    "CheckResult",
    "InProcessAnalyzer",
    "RuleInfo",
    "Violation",
    "check_rendered",
    "check_stacks",
    "checkov_levels",
    "exit_code",
    "format_json",
    "format_sarif",
    "format_text",
    "load_policies",
    "pack_dir",
    "pack_process",
    "policy_config",
    "run_check",
]

# GitHub code scanning ranks security alerts by this number (critical >= 9.0, high >= 7.0).
SECURITY_SEVERITY = {"critical": 9.5, "high": 8.0, "medium": 5.5, "low": 3.0, "unspecified": 5.0}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def check_stacks(
    rendered: Sequence[RenderedStack],
    project_dir: Path,
    *,
    pack_config: Path | None = None,
    checkov: bool = True,
    project_files: bool = False,
    analyzer: Analyzer | None = None,
) -> list[CheckResult]:
    """The whole gate on rendered stacks: CrossGuard per stack, then checkov once for all.

    Args:
        rendered: the stacks (``render_stack``, or a weakened copy in tests).
        project_dir: folder with Pulumi.yaml (pack, baseline, levels, Dockerfiles).
        pack_config: a pack config file instead of each environment's.
        checkov: run checkov (``False``: CrossGuard only, and the results say checkov did
            not run).
        project_files: also scan the kit's Dockerfiles and workflows, reported once as a
            last result with ``stack == "project"`` (``sandboxkit check --all-stacks``).
        analyzer: the pack to ask; by default its servicer in this process.

    Raises:
        ConfigError: bad pack config or checkov levels (the CLI exits 2).
        CheckovMissingError, CheckovFailedError, BaselineError, UnmappedTypeError: checkov
            cannot give a verdict (the CLI exits 2; it never skips silently).
    """
    analyzer = analyzer or InProcessAnalyzer(pack_dir(project_dir))
    results = [check_rendered(analyzer, r, project_dir, pack_config) for r in rendered]
    if not checkov:
        return results
    levels = checkov_levels(project_dir)
    report = scan_rendered(project_dir, rendered, include_project_files=project_files)
    merged = []
    for stack, result in zip(rendered, results, strict=True):
        path = stack_file(project_dir, stack.stack)
        text = path.read_text() if path.is_file() else ""
        merged.append(
            with_checkov(
                result,
                report.for_stack(stack.stack),
                levels[result.environment],
                target_lines(stack, text),
            )
        )
    if project_files:
        merged.append(project_result(report, levels[PROJECT_SCOPE]))
    return merged


def _sarif_rule(rule: RuleInfo) -> dict[str, Any]:
    return {
        "id": rule.id,
        "name": "".join(word.capitalize() for word in re.findall(r"[A-Za-z0-9]+", rule.title)),
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.description},
        "help": {"text": rule.remediation, "markdown": f"**Fix:** {rule.remediation}"},
        "defaultConfiguration": {"level": "error"},
        "properties": {
            "security-severity": str(SECURITY_SEVERITY[rule.severity]),
            "precision": "high",
            "tags": ["security", *rule.tags],
        },
    }


def _disabled(results: Sequence[CheckResult]) -> list[dict[str, Any]]:
    return [
        {"stack": r.stack, "count": len(r.disabled), "policies": list(r.disabled)}
        for r in results
        if r.stack != PROJECT_SCOPE
    ]


def format_sarif(results: Sequence[CheckResult]) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one run per source (the ``sandbox-guard`` pack, ``checkov`` when it
    ran), rules with metadata, locations in the stack file (or the project file to change).
    The ``sandbox-guard`` run's ``properties.disabledPolicies`` lists, per stack, the count and
    ids of the policies the pack config disabled."""
    runs = []
    # A source that ran gets its run even without results: code scanning closes fixed alerts.
    ran = {SOURCE_CROSSGUARD}
    if any(r.checkov is not None for r in results):
        ran.add(SOURCE_CHECKOV)
    sources = sorted({v.source for r in results for v in r.violations} | ran)
    for source in sources:
        rules = {
            rid: rule for r in results for rid, rule in r.rules.items() if rule.source == source
        }
        order = sorted(rules)
        findings = []
        for result in results:
            for v in (v for v in result.violations if v.source == source):
                findings.append(
                    {
                        "ruleId": v.policy,
                        **({"ruleIndex": order.index(v.policy)} if v.policy in rules else {}),
                        "level": "error" if v.mandatory else "warning",
                        "message": {"text": v.message},
                        "locations": [
                            {
                                "physicalLocation": {
                                    "artifactLocation": {
                                        "uri": v.file or result.stack_file,
                                        "uriBaseId": "%SRCROOT%",
                                    },
                                    "region": {"startLine": v.line or 1},
                                },
                                "logicalLocations": [
                                    {"fullyQualifiedName": v.urn, "kind": "resource"}
                                ],
                            }
                        ],
                        "properties": {
                            "stack": result.stack,
                            "severity": v.severity,
                            "enforcement": v.enforcement,
                            "source": v.source,
                        },
                    }
                )
        runs.append(
            {
                "tool": {
                    "driver": {
                        "name": "sandbox-guard" if source == SOURCE_CROSSGUARD else source,
                        "rules": [_sarif_rule(rules[rid]) for rid in order],
                    }
                },
                "results": findings,
                **(
                    {"properties": {"disabledPolicies": _disabled(results)}}
                    if source == SOURCE_CROSSGUARD
                    else {}
                ),
            }
        )
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": runs}
