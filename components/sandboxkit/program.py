"""The Pulumi program: what ``pulumi up`` runs, and what the offline render runs under mocks.

A project's program (Pulumi.yaml ``main``: the kit's ``components/__main__.py``, or a fork's
own) calls ``run()`` to build one component per listed target, and may add resources and
transforms around them. The offline render (``sandboxkit.render``) runs that same program file
under its recording engine inside ``rendering``: ``main`` then takes the render's project
folder, progress callback and share of the targets, and gives back the validated stack.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Collection, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path

import pulumi

from sandboxkit.config import ConfigSource, StackSpec, load_stack
from sandboxkit.egress_contract import normalisation_notices
from sandboxkit.errors import ConfigError
from sandboxkit.profile import PROFILE_KEY
from sandboxkit.project import PROJECT_FILE, find_project_dir, stack_environment, stack_file
from sandboxkit.targets import get_target


@dataclass
class Rendering:
    """What the offline render asks of ``main`` while it runs a project's program.

    Attributes:
        project_dir: the project folder (the render's, not the engine's root).
        on_target: called with each target's name before its component is built.
        targets: build only these of the listed targets (``None``: all).
        spec: set by ``main`` to the validated stack; ``None`` when the program never
            called it.
    """

    project_dir: Path
    on_target: Callable[[str], None] | None = None
    targets: Collection[str] | None = None
    spec: StackSpec | None = None


_RENDERING: ContextVar[Rendering | None] = ContextVar("sandboxkit_rendering", default=None)


@contextlib.contextmanager
def rendering(state: Rendering) -> Iterator[Rendering]:
    """Inside the block, ``main`` (called by any program) takes ``state``'s project folder,
    callback and targets, records the validated stack in ``state.spec``, and ``run`` lets a
    ``ConfigError`` through to the render."""
    token = _RENDERING.set(state)
    try:
        yield state
    finally:
        _RENDERING.reset(token)


def run() -> None:
    """What a program's ``__main__.py`` calls: ``main()``; on bad config, the problems on
    stderr and exit code 2, no traceback (under the offline render the ``ConfigError`` itself
    propagates, so the ``sandboxkit`` command reports it)."""
    try:
        main()
    except ConfigError as exc:
        if _RENDERING.get() is not None:
            raise
        print(f"sandboxkit: invalid input\n{exc}", file=sys.stderr)
        sys.exit(2)


def main(
    project_dir: Path | None = None,
    on_target: Callable[[str], None] | None = None,
    targets: Collection[str] | None = None,
) -> StackSpec:
    """Read and validate the stack config, then create one component per listed target.

    Each target's outputs are exported as one stack output named after the target.

    Args:
        project_dir: the folder with Pulumi.yaml; by default the engine's project root, else the
            nearest one above the working folder.
        on_target: called with each target's name before its component is built (the CLI's
            progress line).
        targets: build only these of the listed targets (an offline render shared between
            processes: ``sandboxkit.parallel``); the whole stack is validated all the same.

    Under the offline render (``rendering``) the arguments not given come from the render.

    Returns:
        The validated ``StackSpec``.

    Raises:
        ConfigError: on any bad config, before a resource is registered.
    """
    state = _RENDERING.get()
    if state is not None:
        project_dir = project_dir or state.project_dir
        on_target = on_target or state.on_target
        targets = targets if targets is not None else state.targets
    engine_root = Path(pulumi.runtime.get_root_directory() or ".")
    root = project_dir or (
        engine_root if (engine_root / PROJECT_FILE).is_file() else find_project_dir()
    )
    stack = pulumi.get_stack()
    source = ConfigSource.from_runtime(stack_file(root, stack))
    spec = load_stack(source, stack, stack_environment(root, stack))
    egress = (source.values.get("profile") or {}).get("egress") or {}
    for notice in normalisation_notices(egress.get("allow"), f"{PROFILE_KEY}.egress.allow"):
        pulumi.log.warn(notice)
    if spec.profile.egress.mode == "open":
        pulumi.log.warn(
            "sandboxkit:profile.egress.mode is open: sandboxes can reach any public host; the "
            "policy gate reports this (mandatory in prod by default)"
        )
    for name in spec.targets:
        if targets is not None and name not in targets:
            continue
        if on_target is not None:
            on_target(name)
        target = get_target(name)
        for unseen in target.unseen(spec.settings[name]):
            pulumi.log.warn(unseen)
        deployment = target.build(spec.plans[name])
        pulumi.export(name, dict(deployment.outputs))
    if state is not None:
        state.spec = spec
    return spec
