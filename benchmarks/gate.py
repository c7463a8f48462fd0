"""Time the policy gate's parts on one shipped stack and on a large synthetic stack.

Usage (from the project root, checkov installed in .venv-checkov or $SANDBOXKIT_CHECKOV)::

    PYTHONPATH=components .venv/bin/python benchmarks/gate.py [--stack prod] [--pools 300]

Prints, per case: render, export, CrossGuard (the pack's analyzer, in process), checkov alone
on the exports, the whole gate, its ratio to checkov alone, and peak memory (this process; the
checkov child process). Not a test: it prints figures.

The synthetic stack is the kubernetes target's component rendered ``--pools`` times (one
sandbox pool each: namespace, runtime class, template, network policy, quota, warm pool).
"""

from __future__ import annotations

import argparse
import dataclasses
import resource
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sandboxkit.checkov_bridge.exporters import StackExport, export_resources
from sandboxkit.checkov_bridge.runner import STACK_FRAMEWORKS, locate_checkov, run_checkov
from sandboxkit.config import read_stack_file
from sandboxkit.gate import InProcessAnalyzer, check_rendered, pack_dir
from sandboxkit.kubernetes.agent_sandbox import AgentSandbox
from sandboxkit.kubernetes.spec import SPEC as KUBERNETES
from sandboxkit.kubernetes.spec import KubernetesSettings
from sandboxkit.profile import SandboxProfile
from sandboxkit.project import find_project_dir, stack_file
from sandboxkit.render import RenderedStack, recording_engine, render_stack
from sandboxkit.targets import KitContext


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def synthetic(project_dir: Path, pools: int, dev: RenderedStack) -> RenderedStack:
    """``pools`` kubernetes sandbox pools from the dev stack's settings, each its own component.

    The result reuses ``dev``, the rendered dev stack, for its validated spec (environment,
    targets), so CrossGuard judges it as a dev stack.
    """
    source = read_stack_file(stack_file(project_dir, "dev"))
    settings = KubernetesSettings.model_validate(source.values["kubernetes"])
    profile = SandboxProfile.model_validate(source.values.get("profile", {}))

    def program() -> None:
        for index in range(pools):
            context = KitContext(stack=f"bench{index}", environment="dev", target="kubernetes")
            args = KUBERNETES.plan(profile, settings, context)
            args["namespace"] = f"sandboxes-{index}"
            AgentSandbox(f"pool-{index}", args)

    with recording_engine("bench") as recorder:
        recorder.run(program)
    return dataclasses.replace(dev, stack="bench", resources=tuple(recorder.resources), outputs={})


def checkov_alone(export: StackExport) -> float:
    """Wall time of one checkov process on ``export`` (frameworks terraform_plan/arm/kubernetes)."""
    executable = locate_checkov(find_project_dir())
    with tempfile.TemporaryDirectory() as tmp:
        export.write(Path(tmp))
        files = [Path(tmp) / name for name in export.files]
        _, seconds = timed(lambda: run_checkov(executable, files, STACK_FRAMEWORKS))
    return seconds


def report(label: str, rendered: RenderedStack, render_seconds: float) -> None:
    resources = list(rendered.resources)
    project_dir = find_project_dir()
    analyzer = InProcessAnalyzer(pack_dir(project_dir))
    result, crossguard_seconds = timed(lambda: check_rendered(analyzer, rendered, project_dir))
    export, export_seconds = timed(lambda: export_resources(label, resources))
    checkov_seconds = checkov_alone(export)
    whole = render_seconds + crossguard_seconds + export_seconds + checkov_seconds
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    child = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"== {label}: {len(resources)} resources, {len(export.resources)} exported objects")
    print(f"  render      {render_seconds:8.2f} s")
    print(f"  export      {export_seconds:8.2f} s")
    print(f"  crossguard  {crossguard_seconds:8.2f} s  ({len(result.violations)} violations)")
    print(f"  checkov     {checkov_seconds:8.2f} s  (one process on the exports)")
    print(f"  whole gate  {whole:8.2f} s  = {whole / checkov_seconds:.2f} x checkov alone")
    print(f"  peak memory {own:8.0f} MiB here, {child:.0f} MiB checkov (largest child so far)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stack", default="prod")
    parser.add_argument("--pools", type=int, default=300)
    options = parser.parse_args()
    project_dir = find_project_dir()
    rendered, seconds = timed(lambda: render_stack(project_dir, options.stack))
    report(f"stack {options.stack}", rendered, seconds)
    dev = render_stack(project_dir, "dev")
    rendered, seconds = timed(lambda: synthetic(project_dir, options.pools, dev))
    report(f"synthetic {options.pools} pools", rendered, seconds)


if __name__ == "__main__":
    main()
