"""The whole gate ``sandboxkit check`` runs: CrossGuard per stack, then checkov once for all.

checkov runs once over every stack's exports (``checkov_bridge``) and its verdicts are merged
into each stack's CrossGuard result (``checkov_merge``); the kit's own Dockerfiles and
workflows are scanned only when asked (``--all-stacks``) and reported as one more result.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from sandboxkit.checkov_bridge.runner import scan_rendered
from sandboxkit.gate.analyzer import Analyzer, InProcessAnalyzer, pack_dir
from sandboxkit.gate.checkov_merge import checkov_levels, project_result, with_checkov
from sandboxkit.gate.crossguard import check_rendered
from sandboxkit.gate.locations import target_lines
from sandboxkit.gate.results import PROJECT_SCOPE, CheckResult
from sandboxkit.project import stack_file
from sandboxkit.render import RenderedStack


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
