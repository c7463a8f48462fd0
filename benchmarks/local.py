"""The local target's start-to-exit time, against bare bubblewrap on the same host.

Usage (from the project root, as root, bubblewrap installed)::

    PYTHONPATH=components:tests .venv/bin/python benchmarks/local.py [--runs 200] [--batch 1000]

Prints p50 and p99 of ``/bin/true`` start to exit (``run_sandbox`` in this process: cgroups,
seccomp filter, bubblewrap, wait, usage read, cgroups removed) under ``deny`` and under an
allowlist (the gateway's namespace and thread up for each run), and of a bare ``bwrap
--unshare-all --ro-bind / / /bin/true``; then ``--batch`` deny sandboxes back to back, in
seconds. Goal on 2 cores: p50 under 25 ms with ``deny``, 1,000 runs under 30 s. For scale,
Cloud Run's published sandbox demo starts 1,000 sandboxes at about 500 ms each (the figure
issue #33 quotes; not measured here). Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time
from collections.abc import Callable

from sandboxkit.config import ConfigSource, load_stack
from sandboxkit.local.plan import LocalPlan
from sandboxkit.local.runner import run_sandbox


def plan_of(egress: dict[str, object]) -> LocalPlan:
    values = {"environment": "dev", "targets": ["local"], "profile": {"egress": egress}}
    plan: LocalPlan = load_stack(ConfigSource(values=values), "bench").plans["local"]
    return {**plan, "resolver": ("127.0.0.1", 53)}


def timed(action: Callable[[], object], runs: int) -> list[float]:
    found = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        found.append((time.perf_counter() - start) * 1000)
    return found


def report(name: str, samples: list[float]) -> None:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(len(ordered) * 0.99))]
    print(f"{name:<34} p50 {statistics.median(ordered):7.1f} ms   p99 {p99:7.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args()
    deny = plan_of({"mode": "deny"})
    allow = plan_of({"mode": "allowlist", "allow": ["pypi.org:443"]})
    bare = ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "/bin/true"]
    report("bare bwrap /bin/true", timed(lambda: subprocess.run(bare, check=True), args.runs))
    report("sandboxkit run, deny", timed(lambda: run_sandbox(deny, ["/bin/true"]), args.runs))
    report(
        "sandboxkit run, allowlist (gateway)",
        timed(lambda: run_sandbox(allow, ["/bin/true"]), args.runs),
    )
    start = time.perf_counter()
    for _ in range(args.batch):
        run_sandbox(deny, ["/bin/true"])
    print(f"{args.batch} deny sandboxes back to back: {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()
