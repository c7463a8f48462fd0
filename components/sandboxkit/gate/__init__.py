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

from collections.abc import Sequence
from pathlib import Path

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
from sandboxkit.gate.formats.sarif import format_sarif
from sandboxkit.gate.formats.text import format_text
from sandboxkit.gate.locations import target_lines
from sandboxkit.gate.pack_config import policy_config
from sandboxkit.gate.results import (
    PROJECT_SCOPE,
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
