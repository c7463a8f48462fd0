"""The policy gate against checkov alone, whole processes side by side, on prod and on a large
synthetic stack; ``--parts`` also times the gate's parts inside one process.

Usage (from the project root, checkov installed in .venv-checkov or $SANDBOXKIT_CHECKOV)::

    PYTHONPATH=components .venv/bin/python benchmarks/gate.py [--stack prod] [--pools 300]
        [--runs 3] [--parts]

Per case, the median of ``--runs`` pairs run one after the other: the whole ``sandboxkit check
--stack prod --format json`` process (for the synthetic stack, a process doing what ``check``
does: render, checkov warmed meanwhile, CrossGuard beside checkov's scan), and one checkov
process on the same exports (frameworks terraform_plan, arm, kubernetes). Each is timed wall
and CPU (user + system, its child processes included: checkov under the gate, workerd for the
cloudflare reader) with its peak memory (the largest process of the tree). Also the whole
``sandboxkit preview --json`` processes the issue budgets. Not a test: it prints figures.

The synthetic stack is the kubernetes target's component rendered ``--pools`` times (one
sandbox pool each: namespace, runtime class, template, network policy, quota, warm pool).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from sandboxkit.checkov_bridge.exporters import StackExport, export_stack
from sandboxkit.checkov_bridge.process import locate_checkov
from sandboxkit.checkov_bridge.runner import STACK_FRAMEWORKS, checkov_command
from sandboxkit.config import load_stack_file
from sandboxkit.gate import InProcessAnalyzer, check_rendered, check_stacks, pack_dir
from sandboxkit.gate.check import warm_checkov
from sandboxkit.kubernetes.agent_sandbox import AgentSandbox
from sandboxkit.kubernetes.spec import SPEC as KUBERNETES
from sandboxkit.kubernetes.spec import KubernetesSettings
from sandboxkit.profile import SandboxProfile
from sandboxkit.project import find_project_dir
from sandboxkit.render import RenderedStack, recording_engine, render_stack
from sandboxkit.targets import KitContext

SYNTHETIC_FLAG = "--gate-on-synthetic"
# GNU time (Debian package ``time``; .ci/run installs it): CPU of the process and its
# waited-for children, and the peak resident set of the largest of them.
TIME = "/usr/bin/time"


@dataclasses.dataclass(frozen=True)
class Run:
    """One whole process: wall and CPU seconds (children included), peak RSS in MiB."""

    wall: float
    cpu: float
    peak_mib: float


def timed_process(
    command: Sequence[str], cwd: Path, env: Mapping[str, str]
) -> tuple[Run, subprocess.CompletedProcess[str]]:
    """Run ``command`` to its end under ``/usr/bin/time`` (Debian's ``time``: a small parent,
    so the peak is the tree's own, not inherited from this process's memory at fork): its
    figures, and the finished process with its output (text) and exit code, not judged."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as report:
        finished = subprocess.run(
            [TIME, "-o", report.name, "-f", "%e %U %S %M", *command],
            cwd=cwd,
            env=dict(env),
            capture_output=True,
            text=True,
            check=False,
        )
        wall, user, system, peak_kib = report.read().split()[-4:]
    return Run(float(wall), float(user) + float(system), int(peak_kib) / 1024), finished


def whole_process(command: Sequence[str], cwd: Path) -> Run:
    """``timed_process`` with the kit on ``PYTHONPATH``; only the figures (the gate exits 1
    on findings)."""
    env = {**os.environ, "PYTHONPATH": str(cwd / "components")}
    return timed_process(command, cwd, env)[0]


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def synthetic(project_dir: Path, pools: int) -> RenderedStack:
    """``pools`` kubernetes sandbox pools from the dev stack's settings, each its own component.

    The dev stack's validated spec (environment, targets) goes with it, so CrossGuard judges it
    as a dev stack.
    """
    spec = load_stack_file(project_dir, "dev")
    settings = spec.settings["kubernetes"]
    assert isinstance(settings, KubernetesSettings)
    profile: SandboxProfile = spec.profile

    def program() -> None:
        for index in range(pools):
            context = KitContext(stack=f"bench{index}", environment="dev", target="kubernetes")
            args = KUBERNETES.plan(profile, settings, context)
            args["namespace"] = f"sandboxes-{index}"
            AgentSandbox(f"pool-{index}", args)

    with recording_engine("bench") as recorder:
        recorder.run(program)
    return RenderedStack(
        stack="bench",
        spec=spec,
        resources=tuple(sorted(recorder.resources, key=lambda r: r.urn)),
        outputs={},
        warnings=(),
    )


def gate_on_synthetic(pools: int) -> None:
    """The child process of the synthetic case: what ``sandboxkit check`` does, on it."""
    project_dir = find_project_dir()
    with warm_checkov(project_dir) as process:
        check_stacks([synthetic(project_dir, pools)], project_dir, checkov_process=process)


def checkov_alone_command(export: StackExport, folder: Path) -> list[str]:
    """One checkov process on ``export`` written into ``folder``."""
    export.write(folder)
    files = [folder / name for name in export.files]
    return checkov_command(locate_checkov(find_project_dir()), files, STACK_FRAMEWORKS)


def median(runs: list[Run]) -> Run:
    return Run(
        statistics.median(r.wall for r in runs),
        statistics.median(r.cpu for r in runs),
        max(r.peak_mib for r in runs),
    )


def side_by_side(label: str, gate: Sequence[str], rendered: RenderedStack, runs: int) -> None:
    project_dir = find_project_dir()
    export = export_stack(rendered)
    with tempfile.TemporaryDirectory() as tmp:
        checkov = checkov_alone_command(export, Path(tmp))
        gate_runs, checkov_runs = [], []
        for _ in range(runs):
            gate_runs.append(whole_process(gate, project_dir))
            checkov_runs.append(whole_process(checkov, project_dir))
    ours, theirs = median(gate_runs), median(checkov_runs)
    print(
        f"{label:<22} {len(rendered.resources):>6} {ours.wall:>7.2f} s {theirs.wall:>7.2f} s "
        f"{ours.wall / theirs.wall:>6.2f}x {ours.cpu:>7.2f} s {theirs.cpu:>7.2f} s "
        f"{ours.peak_mib:>6.0f} MiB {theirs.peak_mib:>6.0f} MiB"
    )


def parts(label: str, rendered: RenderedStack, render_seconds: float) -> None:
    """The gate's parts inside this process (render, export, CrossGuard)."""
    project_dir = find_project_dir()
    analyzer = InProcessAnalyzer(pack_dir(project_dir))
    result, crossguard_seconds = timed(lambda: check_rendered(analyzer, rendered, project_dir))
    export, export_seconds = timed(lambda: export_stack(rendered))
    print(f"== {label}: {len(rendered.resources)} resources, {len(export.resources)} exported")
    print(f"  render      {render_seconds:8.2f} s")
    print(f"  export      {export_seconds:8.2f} s")
    print(f"  crossguard  {crossguard_seconds:8.2f} s  ({len(result.violations)} violations)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="prod")
    parser.add_argument("--pools", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3, help="pairs per case (median)")
    parser.add_argument("--parts", action="store_true", help="also time the parts in-process")
    parser.add_argument(SYNTHETIC_FLAG, type=int, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.gate_on_synthetic is not None:
        gate_on_synthetic(options.gate_on_synthetic)
        return
    project_dir = find_project_dir()
    python = sys.executable
    load = os.getloadavg()[0]
    print(f"{os.cpu_count()} CPUs, load average {load:.2f}; medians of {options.runs} runs")
    for stack in dict.fromkeys([options.stack, "dev"]):
        run = median(
            [
                whole_process(
                    [python, "-m", "sandboxkit", "preview", "--stack", stack, "--json"],
                    project_dir,
                )
                for _ in range(options.runs)
            ]
        )
        print(
            f"preview --stack {stack} --json: {run.wall:.2f} s wall, {run.cpu:.2f} s CPU, "
            f"{run.peak_mib:.0f} MiB"
        )
    print(
        f"{'case':<22} {'res':>6} {'gate':>9} {'checkov':>9} {'ratio':>7} {'gate CPU':>9} "
        f"{'ckv CPU':>9} {'gate peak':>10} {'ckv peak':>10}"
    )
    rendered, seconds = timed(lambda: render_stack(project_dir, options.stack))
    check = [python, "-m", "sandboxkit", "check", "--stack", options.stack, "--format", "json"]
    side_by_side(f"stack {options.stack}", check, rendered, options.runs)
    big, big_seconds = timed(lambda: synthetic(project_dir, options.pools))
    child = [python, str(Path(__file__).resolve()), SYNTHETIC_FLAG, str(options.pools)]
    side_by_side(f"synthetic {options.pools} pools", child, big, options.runs)
    if options.parts:
        parts(f"stack {options.stack}", rendered, seconds)
        parts(f"synthetic {options.pools} pools", big, big_seconds)


if __name__ == "__main__":
    main()
