"""The test suite as CI runs it, timed whole, beside a probe of how fast this machine's cores
are at that moment; ``--base REF`` also runs the suite of another commit, turn about.

Usage (from the project root, after ``bash .ci/run`` installed everything)::

    .venv/bin/python benchmarks/suite.py [--runs 1] [--base REF]

Each run is ``python -m pytest -q -n 2`` with the ``ci`` hypothesis profile (``.ci/run``'s
command), under GNU time (Debian package ``time``): wall and CPU seconds (user + system of the
whole tree: xdist workers, checkov, workerd) and the peak resident memory of the largest
process. Around each run the probe (a fixed pure-Python workload, the best of three) is timed
in CPU seconds: on a virtual machine whose host is busy, the same work takes up to twice as
long from one minute to the next, which no figure of the guest's own load shows, so a suite
figure is only comparable to another taken with a similar probe, or paired with ``--base``.

``--base`` checks REF out in a temporary git worktree, links this checkout's untracked
installs into it (``.venv``, ``.venv-checkov``, the Worker's ``node_modules``: the tests run
the entry points and checkov from the checkout), compiles its modules as ``.ci/run`` does,
runs both suites one after the other (REF first) ``--runs`` times, then removes the worktree.
Not a test: it prints figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path

from gate import Run, timed_process

PROJECT_DIR = Path(__file__).resolve().parent.parent
WORKER_MODULES = Path("components/sandboxkit/cloudflare/worker/node_modules")
UNTRACKED_INSTALLS = (Path(".venv"), Path(".venv-checkov"), WORKER_MODULES)


def probe() -> float:
    """CPU seconds of a fixed pure-Python workload (calls, dicts, strings, JSON), the best of
    three: the figures in benchmarks/README.md say what it was beside them."""
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        total = 0
        for index in range(200_000):
            tags = [str(index)] * 3
            record = {"name": f"pool-{index}", "ready": index % 7, "tags": tags}
            total += len(json.dumps(record)) + sum(len(tag) for tag in tags)
        best = min(best, time.process_time() - start)
    return best


def suite(checkout: Path) -> tuple[Run, str, list[str]]:
    """One whole pytest run in ``checkout``: its figures, pytest's last line (the counts) and
    its ``FAILED`` lines."""
    shared = os.environ.get("SANDBOXKIT_SHARED_DIR") or str(PROJECT_DIR.parent / "shared")
    env = {**os.environ, "HYPOTHESIS_PROFILE": "ci", "SANDBOXKIT_SHARED_DIR": shared}
    python = PROJECT_DIR / ".venv" / "bin" / "python"
    command = [str(python), "-m", "pytest", "-q", "-n", "2", "-p", "no:cacheprovider"]
    run, finished = timed_process(command, checkout, env)
    lines = finished.stdout.strip().splitlines() or [f"exit {finished.returncode}"]
    return run, lines[-1].strip("= "), [line for line in lines if line.startswith("FAILED ")]


def worktree(ref: str, folder: Path) -> Path:
    """``ref`` checked out in ``folder``, with this checkout's untracked installs linked in."""
    subprocess.run(
        ["git", "worktree", "add", "--detach", "--quiet", str(folder), ref],
        cwd=PROJECT_DIR,
        check=True,
    )
    for install in UNTRACKED_INSTALLS:
        if (PROJECT_DIR / install).exists() and not (folder / install).exists():
            (folder / install).symlink_to(PROJECT_DIR / install)
    # As .ci/run does for a checkout: with PYTHONDONTWRITEBYTECODE set, an uncompiled worktree
    # would compile the kit again in every process its suite starts.
    subprocess.run(
        [
            str(PROJECT_DIR / ".venv" / "bin" / "python"),
            *("-m", "compileall", "-q", "-j", "0"),
            *("-x", r"/node_modules/|/(test_[^/]*|conftest)\.py$"),
            *("components", "policy-packs", "tests"),
        ],
        cwd=folder,
        check=True,
    )
    return folder


def report(label: str, run: Run, counts: str, before: float, after: float) -> None:
    print(
        f"{label:<12} {run.wall:>7.1f} s {run.cpu:>7.1f} s {run.peak_mib:>6.0f} MiB "
        f"{before:>6.2f} s {after:>6.2f} s  {counts}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1, help="runs of each suite")
    parser.add_argument("--base", help="a git ref whose suite runs turn about with this one")
    options = parser.parse_args()
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
    print(f"{'suite':<12} {'wall':>9} {'CPU':>9} {'peak':>10} {'probe':>8} {'after':>8}  pytest")
    with tempfile.TemporaryDirectory() as tmp:
        checkouts = [("this", PROJECT_DIR)]
        if options.base:
            checkouts.insert(0, (options.base, worktree(options.base, Path(tmp) / "base")))
        try:
            for _ in range(options.runs):
                for label, checkout in checkouts:
                    before = probe()
                    run, counts, failed = suite(checkout)
                    report(label, run, counts, before, probe())
                    for line in failed:
                        print(f"  {line}")
        finally:
            if options.base:
                subprocess.run(
                    ["git", "worktree", "remove", "--force", str(checkouts[0][1])],
                    cwd=PROJECT_DIR,
                    check=False,
                )


if __name__ == "__main__":
    main()
