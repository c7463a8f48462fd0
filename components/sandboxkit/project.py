"""Locating the Pulumi project and its stack files."""

from __future__ import annotations

from pathlib import Path

import yaml

from sandboxkit.errors import ConfigError, Problem

PROJECT_FILE = "Pulumi.yaml"


def find_project_dir(start: Path | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: the working folder) with Pulumi.yaml.

    Raises:
        ConfigError: when no folder up to the file-system root has one.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / PROJECT_FILE).is_file():
            return folder
    raise ConfigError(
        Problem(
            "--project-dir",
            str(here),
            "a folder with Pulumi.yaml at or above it: run inside the sandboxkit project, or "
            "pass --project-dir",
        )
    )


def stack_file(project_dir: Path, stack: str) -> Path:
    """The stack file: ``<project>/<stackConfigDir>/Pulumi.<stack>.yaml``."""
    document = yaml.safe_load((project_dir / PROJECT_FILE).read_text()) or {}
    return project_dir / document.get("stackConfigDir", ".") / f"Pulumi.{stack}.yaml"


def existing_stack_file(project_dir: Path, stack: str) -> Path:
    """``stack_file``, which must exist.

    Raises:
        ConfigError: naming ``--stack`` when the file is missing.
    """
    path = stack_file(project_dir, stack)
    if not path.is_file():
        raise ConfigError(Problem("--stack", stack, f"a stack with a file at {path}"))
    return path


def list_stacks(project_dir: Path) -> list[str]:
    """Names of the stacks with a stack file, sorted."""
    folder = stack_file(project_dir, "x").parent
    return sorted(p.name[len("Pulumi.") : -len(".yaml")] for p in folder.glob("Pulumi.*.yaml"))
