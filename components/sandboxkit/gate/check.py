"""The whole gate ``sandboxkit check`` runs: CrossGuard per stack, checkov once for all.

checkov runs once over every stack's exports (``checkov_bridge``) and its verdicts are merged
into each stack's CrossGuard result (``checkov_merge``); the kit's own Dockerfiles and
workflows are scanned only when asked (``--all-stacks``) and reported as one more result.

Each stack is rendered once, and that render feeds both CrossGuard and the exports. checkov's
process does not wait for the gate: ``check_stack_files`` starts its interpreter (and its
imports, most of its time) before rendering, and ``check_stacks`` hands it the exports before
CrossGuard runs, so the two scan side by side (benchmarks/README.md). Errors keep their order:
CrossGuard's are raised before anything checkov could not do.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

from sandboxkit.checkov_bridge.exporters import export_stack
from sandboxkit.checkov_bridge.process import (
    CheckovMissingError,
    CheckovProcess,
    locate_checkov,
    missing_checkov,
    take_prestarted,
)
from sandboxkit.checkov_bridge.runner import scan_started
from sandboxkit.config import stack_source
from sandboxkit.errors import ConfigError, PrerequisiteError
from sandboxkit.gate.analyzer import Analyzer, InProcessAnalyzer, pack_dir
from sandboxkit.gate.checkov_merge import checkov_levels, project_result, with_checkov
from sandboxkit.gate.crossguard import check_rendered
from sandboxkit.gate.locations import checkov_lines, problem_line, stack_keys
from sandboxkit.gate.results import PROJECT_SCOPE, BadFile, CheckResult
from sandboxkit.parallel import render_each, render_stacks
from sandboxkit.progress import Step, no_steps, rendering
from sandboxkit.project import stack_file
from sandboxkit.render import RenderedStack
from sandboxkit.targets import TARGET_MODULES, get_target


class MissingToolsError(PrerequisiteError):
    """Every tool the gate runs that this machine lacks, named in one message with the one
    command that installs them all (``preflight``)."""


def preflight(project_dir: Path, names: Sequence[str], *, checkov: bool) -> None:
    """Before anything renders: every tool the gate needs for ``names`` that is missing, at
    once. checkov (unless ``checkov`` is false) and each listed target's own
    (``TargetSpec.missing_tools``: workerd and the Worker's package for ``cloudflare``).
    A stack file that does not load lists nothing here; its render reports it.

    Raises:
        MissingToolsError: naming each missing tool and where it was looked for, then one
            command (the tools' install commands joined by ``&&``, run from the project
            folder) that installs them all; with checkov among them, that ``--no-checkov``
            skips it explicitly.
    """
    checkov_tool = missing_checkov(project_dir) if checkov else None
    missing = [checkov_tool] if checkov_tool else []
    listed: dict[str, None] = {}
    for name in names:
        try:
            targets = stack_source(project_dir, name).values.get("targets")
        except ConfigError:
            continue
        if isinstance(targets, list):
            listed |= dict.fromkeys(t for t in targets if t in TARGET_MODULES)
    missing += [tool for target in listed for tool in get_target(target).missing_tools()]
    if not missing:
        return
    skip = "; or pass --no-checkov to skip checkov explicitly" if checkov_tool else ""
    raise MissingToolsError(
        f"missing what the gate runs: {'; '.join(tool.what for tool in missing)}. Install "
        f"{'it' if len(missing) == 1 else 'them all'} from {project_dir} with: "
        f"{' && '.join(dict.fromkeys(tool.install for tool in missing))}{skip}"
    )


@contextlib.contextmanager
def warm_checkov(project_dir: Path) -> Iterator[CheckovProcess | None]:
    """A checkov process importing itself (``CheckovProcess.warm``): the one ``sandboxkit
    check``'s console script started before its imports (``process.take_prestarted``), else one
    started now; ``None`` when checkov is missing (the scan reports that in its turn). Killed
    when the block ends."""
    try:
        executable = locate_checkov(project_dir)
    except CheckovMissingError:
        yield None
        return
    with take_prestarted(executable) or CheckovProcess(executable) as process:
        yield process.warm()


def check_stack_files(
    names: Sequence[str],
    project_dir: Path,
    *,
    pack_config: Path | None = None,
    checkov: bool = True,
    project_files: bool = False,
    step: Step = no_steps,
) -> list[CheckResult]:
    """``sandboxkit check``: render each named stack once, then ``check_stacks``.

    checkov's interpreter starts before the first render (``warm_checkov``); the stacks are
    rendered by ``parallel.render_stacks`` (a forked child renders a share of their targets).

    Args:
        names: stack names (``stacks/Pulumi.<name>.yaml``), in the order results come back.
        project_dir, pack_config, checkov, project_files: as for ``check_stacks``.
        step: told what starts (each target's render, CrossGuard, checkov).

    Raises:
        MissingToolsError: before anything renders, naming every tool missing (``preflight``).
        ConfigError: bad stack config (before any CrossGuard or checkov verdict), and what
            ``check_stacks`` raises.
    """
    preflight(project_dir, names, checkov=checkov)
    with contextlib.ExitStack() as cleanup:
        process = cleanup.enter_context(warm_checkov(project_dir)) if checkov else None
        rendered = render_stacks(project_dir, names, on_target=rendering(step))
        return check_stacks(
            rendered,
            project_dir,
            pack_config=pack_config,
            checkov=checkov,
            project_files=project_files,
            checkov_process=process,
            step=step,
        )


def check_each_stack_file(
    names: Sequence[str],
    project_dir: Path,
    *,
    pack_config: Path | None = None,
    checkov: bool = True,
    project_files: bool = False,
    step: Step = no_steps,
) -> tuple[list[CheckResult], list[BadFile]]:
    """``check_stack_files`` where a bad stack file stops only itself (``--all-stacks``): the
    stacks that load are judged, and each refused file is returned with its problems.

    Returns:
        ``(results of the stacks that loaded, then the project's when asked; bad files in
        names' order)``.

    Raises:
        MissingToolsError: as ``check_stack_files``; what ``check_stacks`` raises (the pack's
            config, checkov).
    """
    preflight(project_dir, names, checkov=checkov)
    with contextlib.ExitStack() as cleanup:
        process = cleanup.enter_context(warm_checkov(project_dir)) if checkov else None
        rendered, refused = render_each(project_dir, names, on_target=rendering(step))
        results = check_stacks(
            rendered,
            project_dir,
            pack_config=pack_config,
            checkov=checkov,
            project_files=project_files,
            checkov_process=process,
            step=step,
        )
    return results, [_bad_file(project_dir, name, error) for name, error in refused.items()]


def _bad_file(project_dir: Path, stack: str, error: ConfigError) -> BadFile:
    path = stack_file(project_dir, stack)
    try:
        keys = stack_keys(path.read_text(errors="replace"))
        file = path.relative_to(project_dir).as_posix()
    except (OSError, ValueError):
        keys, file = [], str(path)
    return BadFile(stack, file, tuple((problem_line(keys, p.key), str(p)) for p in error.problems))


def check_stacks(
    rendered: Sequence[RenderedStack],
    project_dir: Path,
    *,
    pack_config: Path | None = None,
    checkov: bool = True,
    project_files: bool = False,
    analyzer: Analyzer | None = None,
    checkov_process: CheckovProcess | None = None,
    step: Step = no_steps,
) -> list[CheckResult]:
    """The whole gate on rendered stacks: checkov once for all, CrossGuard per stack meanwhile.

    Args:
        rendered: the stacks (``render_stack``, or a weakened copy in tests).
        project_dir: folder with Pulumi.yaml (pack, baseline, levels, Dockerfiles).
        pack_config: a pack config file instead of each environment's.
        checkov: run checkov (``False``: CrossGuard only, and the results say checkov did
            not run).
        project_files: also scan the kit's Dockerfiles and workflows, reported once as a
            last result with ``stack == "project"`` (``sandboxkit check --all-stacks``).
        analyzer: the pack to ask; by default its servicer in this process.
        checkov_process: a warmed checkov (``warm_checkov``) to run the scan in.
        step: told what starts (CrossGuard per stack, then the wait for checkov).

    Raises:
        ConfigError: bad pack config or checkov levels (the CLI exits 2).
        CheckovMissingError, CheckovFailedError, BaselineError, UnmappedTypeError: checkov
            cannot give a verdict (the CLI exits 2; it never skips silently).
    """
    analyzer = analyzer or InProcessAnalyzer(pack_dir(project_dir))

    def crossguard() -> list[CheckResult]:
        results = []
        for stack in rendered:
            step(f"CrossGuard: {stack.stack} ({len(stack.resources)} resources)")
            results.append(check_rendered(analyzer, stack, project_dir, pack_config))
        return results

    if not checkov:
        return crossguard()
    with scan_started(
        project_dir,
        (export_stack(r) for r in rendered),
        include_project_files=project_files,
        process=checkov_process,
    ) as checkov_report:
        results = crossguard()
        levels = checkov_levels(project_dir)
        step("checkov: waiting for its report")
        report = checkov_report()
    merged = []
    for stack, result in zip(rendered, results, strict=True):
        path = stack_file(project_dir, stack.stack)
        text = path.read_text() if path.is_file() else ""
        findings = report.for_stack(stack.stack)
        merged.append(
            with_checkov(
                result, findings, levels[result.environment], checkov_lines(stack, text, findings)
            )
        )
    if project_files:
        merged.append(project_result(report, levels[PROJECT_SCOPE]))
    return merged
