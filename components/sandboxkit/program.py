"""The Pulumi program: what ``pulumi up`` runs, and what the offline render runs under mocks."""

from __future__ import annotations

from collections.abc import Callable, Collection
from pathlib import Path

import pulumi

from sandboxkit.config import ConfigSource, StackSpec, load_stack
from sandboxkit.egress_contract import normalisation_notices
from sandboxkit.profile import PROFILE_KEY
from sandboxkit.project import PROJECT_FILE, find_project_dir, stack_environment, stack_file
from sandboxkit.targets import get_target


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

    Returns:
        The validated ``StackSpec``.

    Raises:
        ConfigError: on any bad config, before a resource is registered.
    """
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
    return spec
