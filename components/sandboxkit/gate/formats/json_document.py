"""The JSON document of one result (``sandboxkit check --format json``)."""

from __future__ import annotations

from typing import Any

from sandboxkit.gate.results import CheckResult


def format_json(result: CheckResult) -> dict[str, Any]:
    """``{"stack", "environment", "violations", "accepted", "checkov", "lowered", "summary"}``.

    ``accepted`` lists the checkov findings the baseline accepts, each at the level it would
    fail at, with ``"accepted": true`` and the baseline entry's ``reason``;
    ``checkov`` is checkov's counts, or ``"skipped"`` when it did not run; ``lowered`` names
    the policies the pack config runs below the pack's own level.
    """
    return {
        "stack": result.stack,
        "environment": result.environment,
        "violations": [v.document() for v in result.violations],
        "accepted": [v.document() for v in result.accepted],
        "checkov": dict(result.checkov) if result.checkov is not None else "skipped",
        "lowered": list(result.lowered),
        "summary": result.summary(),
    }
