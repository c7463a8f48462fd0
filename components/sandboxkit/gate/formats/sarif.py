"""A SARIF 2.1.0 log of the results (``sandboxkit check --format sarif``), for code scanning.

``$schema`` is SchemaStore's copy of the OASIS SARIF 2.1.0 schema (``SARIF_SCHEMA``). Each rule
carries ``properties.security-severity`` and the ``security`` tag, which GitHub code scanning
needs to rank an alert as a security finding (docs.github.com, "SARIF support for code
scanning", reportingDescriptor object).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sandboxkit.gate.results import (
    PROJECT_SCOPE,
    SOURCE_CHECKOV,
    SOURCE_CROSSGUARD,
    BadFile,
    CheckResult,
    RuleInfo,
    Violation,
)

# GitHub code scanning ranks security alerts by this number (critical >= 9.0, high >= 7.0).
SECURITY_SEVERITY = {"critical": 9.5, "high": 8.0, "medium": 5.5, "low": 3.0, "unspecified": 5.0}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
BAD_FILE_RULE = "SBX-CONFIG"
"""The notification id of a stack file whose config is refused (not judged, exit 2)."""


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


def _suppressions(finding: Violation) -> dict[str, Any]:
    """SARIF's place for a finding the checkov baseline accepts (SARIF 2.1.0 section 3.27.23,
    ``result.suppressions``; section 3.35: ``kind`` external, as the baseline file lies outside
    the scanned code, ``status`` accepted, the entry's reason as ``justification``): code
    scanning shows it as suppressed, not as an open alert."""
    if not finding.accepted:
        return {}
    suppression = {"kind": "external", "status": "accepted", "justification": finding.reason}
    return {"suppressions": [suppression]}


def _disabled(results: Sequence[CheckResult]) -> list[dict[str, Any]]:
    return [
        {"stack": r.stack, "count": len(r.disabled), "policies": list(r.disabled)}
        for r in results
        if r.stack != PROJECT_SCOPE
    ]


def _invocation(bad_files: Sequence[BadFile]) -> dict[str, Any]:
    """The run's invocation: unsuccessful with one error notification per problem of a bad
    stack file (its path and line), which the gate did not judge."""
    notifications = [
        {
            "descriptor": {"id": BAD_FILE_RULE},
            "level": "error",
            "message": {"text": f"stack {bad.stack} not judged: {problem}"},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": bad.file, "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": line},
                    }
                }
            ],
        }
        for bad in bad_files
        for line, problem in bad.problems
    ]
    return {
        "executionSuccessful": not notifications,
        **({"toolExecutionNotifications": notifications} if notifications else {}),
    }


def format_sarif(
    results: Sequence[CheckResult], bad_files: Sequence[BadFile] = ()
) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one run per source (the ``sandbox-guard`` pack, ``checkov`` when it
    ran), rules with metadata, locations in the stack file (or the project file to change);
    findings the checkov baseline accepts at their own level with a suppression
    (``_suppressions``).
    The ``sandbox-guard`` run's ``properties.disabledPolicies`` lists, per stack, the count and
    ids of the policies the pack config disabled, and its invocation names each bad stack
    file (``_invocation``; every run's invocation says whether all files were judged)."""
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
            found = (*result.violations, *result.accepted)
            for v in (v for v in found if v.source == source):
                findings.append(
                    {
                        "ruleId": v.policy,
                        **({"ruleIndex": order.index(v.policy)} if v.policy in rules else {}),
                        # An accepted finding keeps its level; its suppression says it passes.
                        "level": "error" if v.enforcement == "mandatory" else "warning",
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
                        **_suppressions(v),
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
                "invocations": [
                    _invocation(bad_files if source == SOURCE_CROSSGUARD else ())
                    | ({"executionSuccessful": False} if bad_files else {})
                ],
                **(
                    {"properties": {"disabledPolicies": _disabled(results)}}
                    if source == SOURCE_CROSSGUARD
                    else {}
                ),
            }
        )
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": runs}
