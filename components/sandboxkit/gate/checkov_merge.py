"""checkov's verdicts merged into the gate's results, at the level each scope asks.

A checkov failure the baseline does not accept becomes a ``Violation`` (``source: checkov``) at
the level ``policy-packs/checkov/levels.json`` gives the stack's environment (``project`` for the
kit's own Dockerfiles and workflows). Failures the baseline accepts are kept apart
(``CheckResult.accepted``) with the baseline's reason and never fail the gate.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

from sandboxkit.checkov_bridge.baseline import BASELINE_PATH
from sandboxkit.checkov_bridge.runner import CheckovFinding, CheckovReport
from sandboxkit.config import ENVIRONMENTS
from sandboxkit.errors import ConfigError, Problem
from sandboxkit.gate.results import (
    PROJECT_SCOPE,
    SOURCE_CHECKOV,
    CheckResult,
    RuleInfo,
    Violation,
)

# Levels of checkov failures the baseline does not accept, per environment (and "project").
# A file of its own rather than a key in the pack config: `pulumi preview --policy-pack-config`
# reads the pack config too, and the gate refuses names that are not the pack's policies there.
CHECKOV_LEVELS = Path("policy-packs") / "checkov" / "levels.json"
CHECKOV_LEVEL_NAMES = ("advisory", "mandatory")


def checkov_levels(project_dir: Path) -> dict[str, str]:
    """Levels of checkov failures the baseline does not accept (``levels.json``).

    Returns:
        ``{"dev": ..., "staging": ..., "prod": ..., "project": ...}``, each ``advisory`` or
        ``mandatory``.

    Raises:
        ConfigError: a missing or unreadable file, a missing scope or an unknown level.
    """
    path = project_dir / CHECKOV_LEVELS
    origin = CHECKOV_LEVELS.as_posix()
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(
            Problem(origin, "unreadable", f"a JSON object of checkov levels ({exc})")
        ) from None
    if not isinstance(document, dict):
        raise ConfigError(Problem(origin, document, "a JSON object of checkov levels"))
    scopes = (*ENVIRONMENTS, PROJECT_SCOPE)
    problems = [
        Problem(f"{origin}: {scope}", document.get(scope), " or ".join(CHECKOV_LEVEL_NAMES))
        for scope in scopes
        if document.get(scope) not in CHECKOV_LEVEL_NAMES
    ]
    problems += [
        Problem(f"{origin}: {key}", document[key], f"one of {', '.join(scopes)}")
        for key in document
        if key not in scopes
    ]
    if problems:
        raise ConfigError(*problems)
    return {scope: document[scope] for scope in scopes}


def checkov_rule(finding: CheckovFinding) -> RuleInfo:
    """``RuleInfo`` for a checkov check (checkov gives no severity or description offline).

    Returns:
        The check's id, name and guideline, the severity the finding carries, and a
        remediation that names the baseline file (``source: checkov``).
    """
    remediation = (
        f"Change the resource so that it passes: {finding.name.rstrip('.')}; where the finding "
        f"follows from a deliberate choice, accept it in {BASELINE_PATH.as_posix()} with the "
        "reason instead."
    )
    if finding.guideline:
        remediation += f" Guideline: {finding.guideline}"
    return RuleInfo(
        id=finding.policy,
        title=finding.name,
        description=f"{finding.name} (checkov {finding.framework or 'check'} {finding.policy}).",
        remediation=remediation,
        severity=finding.severity,
        tags=tuple(t for t in (SOURCE_CHECKOV, finding.framework) if t),
        source=SOURCE_CHECKOV,
    )


def _checkov_violation(finding: CheckovFinding, level: str, line: int | None) -> Violation:
    return Violation(
        **finding.violation(level),
        line=line,
        file=finding.file if finding.type is None else None,
        reason=finding.accepted.reason if finding.accepted is not None else None,
    )


def with_checkov(
    result: CheckResult,
    findings: Sequence[CheckovFinding],
    level: str,
    lines: Mapping[tuple[str, str], int] | None = None,
) -> CheckResult:
    """``result`` plus checkov's verdicts on it: failures as violations at ``level``.

    Args:
        result: the CrossGuard result of the stack (or an empty project result).
        findings: checkov's verdicts on the stack's resources (or the project's files).
        level: ``mandatory`` or ``advisory``, for failures the baseline does not accept.
        lines: (URN, check id) -> the stack-file line of the setting that decides the check,
            else of the resource's target section (``locations.checkov_lines``); project
            files carry checkov's own line.

    Returns:
        ``result`` with the failures the baseline does not accept as violations, the accepted
        ones under ``accepted`` (with their reason), the failed checks' rules and
        ``checkov`` set to ``{"passed", "failed", "accepted"}`` counts.
    """
    # checkov's own order changes between runs (its graph checks): sorted, the output is stable.
    failed = sorted(
        (f for f in findings if not f.passed), key=lambda f: (f.urn, f.policy, f.file, f.resource)
    )
    violations: list[Violation] = []
    accepted: list[Violation] = []
    for finding in failed:
        line = (
            finding.line
            if finding.type is None
            else (lines or {}).get((finding.urn, finding.policy))
        )
        violation = _checkov_violation(finding, level, line)
        (violations if finding.accepted is None else accepted).append(violation)
    counts = {
        "passed": sum(f.passed for f in findings),
        "failed": len(violations),
        "accepted": len(accepted),
    }
    merged = result.with_findings(violations, [checkov_rule(f) for f in failed], accepted)
    return replace(merged, checkov=counts)


def project_result(report: CheckovReport, level: str) -> CheckResult:
    """checkov's verdicts on the kit's own Dockerfiles and workflows, as one result.

    Args:
        report: checkov's report of a scan that included the project files.
        level: ``mandatory`` or ``advisory``, for failures the baseline does not accept.

    Returns:
        A ``CheckResult`` with ``stack`` and ``environment`` ``project`` and no stack file;
        each finding names the file to change and checkov's line in it.
    """
    empty = CheckResult(
        stack=PROJECT_SCOPE, environment=PROJECT_SCOPE, stack_file="", violations=()
    )
    return with_checkov(empty, report.for_project_files(), level)
