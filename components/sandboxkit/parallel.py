"""Offline renders shared between this process and one forked child, on two CPUs or more.

A render's time is mostly importing the cloud SDKs its targets use (benchmarks/README.md:
``pulumi_cloudflare`` alone imports 779 modules), and each target imports its own
(``TargetSpec.sdks``). So ``render_stacks`` shares each stack's targets out between two
processes: targets that use a common SDK stay together (each SDK is imported once), and the
groups are balanced by the seconds each SDK takes to import (also ``TargetSpec.sdks``). A
forked child renders its share of every stack while this process renders the rest, then sends
its shares back (``RenderedShare``, pickled through a pipe) and ``render.joined`` puts each
stack together: the same ``RenderedStack`` a single render gives
(tests/core/test_parallel_render.py compares them).

Where a child cannot help or cannot run (one CPU, no ``os.fork`` or not Linux, a stack whose
targets share one SDK, SDKs this process imported already, a stack file that does not load)
the stacks are rendered here one by one, as ``render_stack`` does; if the child fails in any
way, or this process's share raises, everything is rendered again here one by one, so errors
and their order are a single render's.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import select
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from sandboxkit.config import ConfigSource, load_stack, stack_source
from sandboxkit.errors import ConfigError
from sandboxkit.project import stack_environment
from sandboxkit.render import RenderedShare, RenderedStack, joined, render_share, render_stack
from sandboxkit.targets import get_target

OnTarget = Callable[[str, str], None]

# A child that has not sent its shares this long after this process asked for them is taken as
# stuck: it is killed and its share rendered here (the render of prod takes about 2 s).
CHILD_TIMEOUT_SECONDS = 120.0


def shares(targets: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(this process's targets, the child's)``, each in ``targets``' order.

    Targets that use a common SDK (``TargetSpec.sdks``, linked through any chain) form one
    group. The first target's group stays here; the other groups, heaviest first (the sum of
    their SDKs' import seconds, ``TargetSpec.sdks``), each go to the share that weighs less so
    far. The child's share is empty when all targets form one group.

    Raises:
        KeyError: for a name that is not a registered target.
    """
    groups: list[tuple[set[str], list[str]]] = []  # (its SDKs, its targets)
    seconds: dict[str, float] = {}
    for target in targets:
        seconds.update(get_target(target).sdks)
        sdks = set(get_target(target).sdks)
        linked = [group for group in groups if group[0] & sdks]
        merged: tuple[set[str], list[str]] = (sdks, [target])
        for group in linked:
            groups.remove(group)
            merged = (merged[0] | group[0], group[1] + merged[1])
        groups.append(merged)
    if not groups:
        return (), ()

    def weight(group: tuple[set[str], list[str]]) -> float:
        return sum(seconds[sdk] for sdk in group[0])

    first = next(group for group in groups if targets[0] in group[1])
    members: tuple[set[str], set[str]] = (set(first[1]), set())
    weights = [weight(first), 0.0]
    for group in sorted((g for g in groups if g is not first), key=weight, reverse=True):
        side = 0 if weights[0] <= weights[1] else 1
        members[side].update(group[1])
        weights[side] += weight(group)
    ours, theirs = (tuple(t for t in targets if t in share) for share in members)
    return ours, theirs


def can_fork() -> bool:
    """Whether a forked child can render beside this process: Linux (``os.fork``; other
    systems start processes by spawning, which would import everything again) with at least
    two CPUs this process may run on."""
    return sys.platform == "linux" and len(os.sched_getaffinity(0)) >= 2


def unimported_sdks(targets: Sequence[str]) -> set[str]:
    """The SDK packages ``targets`` use that this process has not imported yet: a child
    helps only by importing those meanwhile (a process that rendered before, a test process,
    has them all, and a fork would only add its own cost)."""
    return {sdk for target in targets for sdk in get_target(target).sdks} - set(sys.modules)


@dataclass(frozen=True)
class _Stack:
    name: str
    source: ConfigSource
    ours: tuple[str, ...]
    theirs: tuple[str, ...]


def _planned(project_dir: Path, names: Sequence[str]) -> list[_Stack] | None:
    """Each stack's shares, or ``None`` when a stack file does not load (the one-by-one
    render then raises its error, in order)."""
    planned = []
    try:
        for name in names:
            source = stack_source(project_dir, name)
            spec = load_stack(source, name, stack_environment(project_dir, name))
            planned.append(_Stack(name, source, *shares(spec.targets)))
    except ConfigError:
        return None
    return planned


def render_stacks(
    project_dir: Path, names: Sequence[str], on_target: OnTarget | None = None
) -> list[RenderedStack]:
    """``render_stack`` for each of ``names``, in order, with a forked child rendering a share
    of each stack's targets meanwhile where that helps (module docstring).

    Args:
        project_dir: folder with Pulumi.yaml.
        names: stack names.
        on_target: called with ``(stack, target)`` as each target's render starts (the
            child's targets when the child starts).

    Raises:
        ConfigError: as ``render_stack``, for the first stack that does not load.
    """
    planned = _planned(project_dir, names) if can_fork() else None
    if planned is not None and any(unimported_sdks(stack.theirs) for stack in planned):
        rendered = _shared_out(project_dir, planned, on_target)
        if rendered is not None:
            return rendered
    return [render_stack(project_dir, name, _for_stack(on_target, name)) for name in names]


def render_each(
    project_dir: Path, names: Sequence[str], on_target: OnTarget | None = None
) -> tuple[list[RenderedStack], dict[str, ConfigError]]:
    """``render_stacks`` of every stack that loads, and each one's refusal apart, so one bad
    stack file neither stops nor hides the others (``sandboxkit check --all-stacks``).

    Returns:
        ``(the rendered stacks in names' order, stack name -> its ConfigError)``.
    """
    refused: dict[str, ConfigError] = {}
    loading = []
    for name in names:
        try:
            load_stack(stack_source(project_dir, name), name, stack_environment(project_dir, name))
        except ConfigError as exc:
            refused[name] = exc
        else:
            loading.append(name)
    try:
        return render_stacks(project_dir, loading, on_target), refused
    except ConfigError:
        pass  # a component refused what the config allowed: one by one, each error kept
    rendered = []
    for name in loading:
        try:
            rendered.append(render_stack(project_dir, name, _for_stack(on_target, name)))
        except ConfigError as exc:
            refused[name] = exc
    return rendered, {name: refused[name] for name in names if name in refused}


def _for_stack(on_target: OnTarget | None, stack: str) -> Callable[[str], None] | None:
    if on_target is None:
        return None
    return lambda target: on_target(stack, target)


def _shared_out(
    project_dir: Path, planned: list[_Stack], on_target: OnTarget | None
) -> list[RenderedStack] | None:
    """Each stack joined from this process's share and the child's; ``None`` when either
    side failed."""
    forked = [stack for stack in planned if stack.theirs]

    def childs_work() -> list[RenderedShare]:
        return [render_share(project_dir, s.name, s.source, s.theirs)[1] for s in forked]

    with _child(childs_work) as theirs:
        if on_target is not None:
            for stack in forked:
                for target in stack.theirs:
                    on_target(stack.name, target)
        try:
            ours = [
                render_share(
                    project_dir,
                    stack.name,
                    stack.source,
                    stack.ours,
                    _for_stack(on_target, stack.name),
                )
                for stack in planned
            ]
        except Exception:  # rendered again one by one, which raises it in order
            return None
        received = theirs()
    if received is None:
        return None
    by_name = {stack.name: share for stack, share in zip(forked, received, strict=True)}
    return [
        joined(stack.name, spec, [share, *([by_name[stack.name]] if stack.theirs else [])])
        for stack, (spec, share) in zip(planned, ours, strict=True)
    ]


def _read_until(fd: int, deadline: float) -> bytes | None:
    """The next chunk from ``fd`` (``b""`` at its end), or ``None`` past ``deadline``
    (``time.monotonic`` seconds)."""
    ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
    return os.read(fd, 1 << 20) if ready else None


@contextlib.contextmanager
def _child(
    work: Callable[[], list[RenderedShare]],
) -> Iterator[Callable[[], list[RenderedShare] | None]]:
    """Fork a child running ``work``; yield a function waiting for its result: ``None`` when
    it failed, or sent nothing within ``CHILD_TIMEOUT_SECONDS``. A child still running when
    the block ends is killed."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into the caller's code
        status = 1
        try:
            os.close(read)
            # The event loop and its executor threads are the parent's (threads do not survive
            # a fork): the child's render gets its own.
            asyncio.set_event_loop(asyncio.new_event_loop())
            payload = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(write, "wb") as out:
                out.write(payload)
            status = 0
        finally:
            os._exit(status)  # no atexit handlers, no flushing of the parent's buffers
    os.close(write)
    reaped = False

    def result() -> list[RenderedShare] | None:
        nonlocal reaped
        deadline = time.monotonic() + CHILD_TIMEOUT_SECONDS
        chunks = []
        while chunk := _read_until(read, deadline):
            chunks.append(chunk)
        if chunk is None:
            return None  # stuck: killed when the block ends
        payload = b"".join(chunks)
        _, status = os.waitpid(pid, 0)
        reaped = True
        if status != 0:
            return None
        received = pickle.loads(payload)  # our own child's output
        assert isinstance(received, list)
        return received

    try:
        yield result
    finally:
        if not reaped:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(read)
