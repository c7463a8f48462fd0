"""The text report ``sandboxkit check`` prints by default: findings by stack and resource."""

from __future__ import annotations

from collections.abc import Sequence

from sandboxkit.gate.results import PROJECT_SCOPE, BadFile, CheckResult, Violation


def _heading(result: CheckResult) -> str:
    if result.stack == PROJECT_SCOPE:
        return "Project files (Dockerfiles, GitHub workflows)"
    return f"Stack {result.stack} ({result.environment})"


def _checkov_line(result: CheckResult) -> str:
    if result.checkov is None:
        return "  checkov: skipped (--no-checkov)"
    counts = result.checkov
    # The pointer to the reasons only when there are reasons to read.
    reasons = " (reasons: --format json)" if counts["accepted"] else ""
    return (
        f"  checkov: {counts['passed']} passed, {counts['failed']} failed, "
        f"{counts['accepted']} accepted by the baseline{reasons}"
    )


def format_text(results: Sequence[CheckResult], bad_files: Sequence[BadFile] = ()) -> str:
    """Findings grouped by stack and resource: id, severity, enforcement, source, message.

    Returns:
        Lines ending in a newline: per bad stack file its path and each problem with its
        line (``NOT JUDGED``), then per result a heading with the counts, the disabled
        policies, each resource's findings, checkov's counts (or that it was skipped) and
        ``passed`` or ``FAILED: mandatory violations``.
    """
    out: list[str] = []
    for bad in bad_files:
        out.append(f"Stack {bad.stack} ({bad.file}): NOT JUDGED, its config is refused")
        out += [f"  {bad.file}:{line}: {problem}" for line, problem in bad.problems]
    for result in results:
        counts = result.summary()
        out.append(
            f"{_heading(result)}: {counts['total']} violation(s), "
            f"{counts['mandatory']} mandatory, {counts['advisory']} advisory"
        )
        if result.disabled:
            # A disabled policy finds nothing: say so, or a silenced gate reads as a clean one.
            out.append(
                f"  disabled by the pack config ({len(result.disabled)}): "
                f"{', '.join(result.disabled)}"
            )
        if result.lowered:
            # Below the pack's or the environment's level ("all": "advisory"): say so.
            out.append(
                f"  note: the pack config lowers {len(result.lowered)} policies below the level "
                f"the pack or the environment's config gives them: {'; '.join(result.lowered)}"
            )
        by_urn: dict[str, list[Violation]] = {}
        for violation in result.violations:
            by_urn.setdefault(violation.urn, []).append(violation)
        for urn, found in by_urn.items():
            out.append(f"  {urn}")
            for v in found:
                level = f"{v.severity}, {v.enforcement}, {v.source}"
                out.append(f"    {v.policy} [{level}] {v.message}")
        out.append(_checkov_line(result))
        out.append("  FAILED: mandatory violations" if result.failed else "  passed")
    return "\n".join(out) + "\n"
