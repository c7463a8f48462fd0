"""Locating the Pulumi project, its stack files and the organisation's stack environments.

``Pulumi.yaml`` and the kit's project file ``sandboxkit.yaml`` are read with ``stackfile``'s
reader, so a broken one exits 2 naming the file and the key like a broken stack file.
"""

from __future__ import annotations

import fnmatch
from pathlib import Path
from typing import Any

from sandboxkit.cloud_names import STACK_NAME_RULE, is_stack_name
from sandboxkit.errors import ConfigError, Problem
from sandboxkit.stackfile import NAMESPACE, read_yaml_file

PROJECT_FILE = "Pulumi.yaml"
KIT_PROJECT_FILE = "sandboxkit.yaml"
"""Beside Pulumi.yaml: the organisation's ``environments`` map (stack name pattern -> dev,
staging or prod), so the gate's strictness is never chosen by the stack file it judges."""
ENVIRONMENTS = ("dev", "staging", "prod")
UNMAPPED_ENVIRONMENT = "prod"
"""The environment of a stack no pattern of ``sandboxkit.yaml`` matches: the strictest."""


def find_project_dir(start: Path | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: the working folder) with Pulumi.yaml.

    Raises:
        ConfigError: when no folder up to the file-system root has one, the working folder is
            gone (removed while a shell was in it), or a folder on the way cannot be read.
    """
    try:
        here = (start or Path.cwd()).resolve()
    except FileNotFoundError:
        raise ConfigError(
            Problem(
                "--project-dir",
                "(the working folder)",
                "a working folder that exists (this one was removed): cd into the sandboxkit "
                "project, or pass --project-dir",
            )
        ) from None
    try:
        found = next((f for f in (here, *here.parents) if (f / PROJECT_FILE).is_file()), None)
    except OSError as error:
        raise ConfigError(
            Problem(
                "--project-dir",
                str(here),
                f"folders the kit may read up to the one with Pulumi.yaml ({error.strerror}): "
                "run inside the sandboxkit project, or pass --project-dir",
            )
        ) from None
    if found is not None:
        return found
    raise ConfigError(
        Problem(
            "--project-dir",
            str(here),
            "a folder with Pulumi.yaml at or above it: run inside the sandboxkit project, or "
            "pass --project-dir",
        )
    )


def project_root(given: Path | None) -> Path:
    """``--project-dir`` when given (it must hold Pulumi.yaml), else ``find_project_dir()``.

    Raises:
        ConfigError: naming ``--project-dir`` when it is missing, not a folder, no project, or
            a path the system refuses (too long, not readable).
    """
    if given is None:
        return find_project_dir()
    try:
        found = (given / PROJECT_FILE).is_file()
        state = (
            "a folder without Pulumi.yaml"
            if given.is_dir()
            else "a file, not a folder"
            if given.exists()
            else "no such folder"
        )
    except OSError as error:
        found, state = False, f"a path the system refuses: {error.strerror}"
    if not found:
        raise ConfigError(
            Problem("--project-dir", str(given), f"a folder with Pulumi.yaml (this is {state})")
        )
    return given


def _project_document(project_dir: Path) -> dict[str, Any]:
    path = project_dir / PROJECT_FILE
    document = read_yaml_file(path)
    if not isinstance(document, dict):
        raise ConfigError(Problem(str(path), document, "a mapping (name, runtime, ...)"))
    problems = []
    name = document.get("name")
    if not isinstance(name, str) or not name:
        problems.append(Problem(f"{path}: name", name, "the project's name as text"))
    folder = document.get("stackConfigDir", ".")
    if not isinstance(folder, str) or not folder:
        problems.append(
            Problem(f"{path}: stackConfigDir", folder, "a folder path (text) for stack files")
        )
    if problems:
        raise ConfigError(*problems)
    return document


def project_name(project_dir: Path) -> str:
    """Pulumi.yaml's ``name``: the namespace the engine gives a config key written bare.

    Raises:
        ConfigError: naming Pulumi.yaml and the key when it is unreadable or malformed.
    """
    return str(_project_document(project_dir)["name"])


def program_file(project_dir: Path) -> Path:
    """The program file Pulumi runs for the project: Pulumi.yaml ``main`` (default: the project
    folder), its ``__main__.py`` when it names a folder (Pulumi's Python language host runs a
    folder's ``__main__.py``, or the file ``main`` names).

    Raises:
        ConfigError: naming Pulumi.yaml's ``main`` when it is not text or names no Python file.
    """
    path = project_dir / PROJECT_FILE
    main = _project_document(project_dir).get("main", ".")
    if not isinstance(main, str) or not main:
        raise ConfigError(Problem(f"{path}: main", main, "the program's folder or file (text)"))
    entry = project_dir / main
    entry = entry / "__main__.py" if entry.is_dir() else entry
    if not entry.is_file() or entry.suffix != ".py":
        raise ConfigError(
            Problem(
                f"{path}: main",
                main,
                f"a folder with __main__.py or a .py file (no program at {entry})",
            )
        )
    return entry


def project_name_of(stack_file_path: Path) -> str:
    """``project_name`` of the nearest project above a stack file (``sandboxkit`` if none)."""
    try:
        root = find_project_dir(stack_file_path.resolve().parent)
    except ConfigError:
        return NAMESPACE
    return project_name(root)


def check_stack_name(stack: str) -> None:
    """Refuse a stack name the Pulumi CLI refuses (``cloud_names.STACK_NAME_RULE``).

    Raises:
        ConfigError: naming ``--stack``.
    """
    if not is_stack_name(stack):
        shown = stack if len(stack) <= 60 else f"{stack[:40]}... ({len(stack.encode())} bytes)"
        raise ConfigError(Problem("--stack", shown, f"a stack name: {STACK_NAME_RULE}"))


def stack_file(project_dir: Path, stack: str) -> Path:
    """The stack file: ``<project>/<stackConfigDir>/Pulumi.<stack>.yaml``.

    Raises:
        ConfigError: naming ``--stack`` for a name Pulumi refuses, or Pulumi.yaml's bad key.
    """
    check_stack_name(stack)
    folder = _project_document(project_dir).get("stackConfigDir", ".")
    return project_dir / folder / f"Pulumi.{stack}.yaml"


def existing_stack_file(project_dir: Path, stack: str) -> Path:
    """``stack_file``, which must be a file.

    Raises:
        ConfigError: naming ``--stack`` when the file is missing, or the path when it is not a
            file.
    """
    path = stack_file(project_dir, stack)
    if path.exists() and not path.is_file():
        raise ConfigError(
            Problem(str(path), "not a file", "the stack's file (Pulumi.<stack>.yaml)")
        )
    if not path.is_file():
        raise ConfigError(Problem("--stack", stack, f"a stack with a file at {path}"))
    return path


def list_stacks(project_dir: Path) -> list[str]:
    """Names of the stacks with a stack file, sorted.

    Raises:
        ConfigError: naming each path in the stack folder that looks like a stack file but is
            not one (a folder, or a name Pulumi refuses), so ``--all-stacks`` never skips or
            misreads it.
    """
    folder = stack_file(project_dir, "x").parent
    names: list[str] = []
    problems: list[Problem] = []
    for path in sorted(folder.glob("Pulumi.*.yaml")):
        name = path.name[len("Pulumi.") : -len(".yaml")]
        if not path.is_file():
            problems.append(Problem(str(path), "not a file", "only stack files named like one"))
        elif not is_stack_name(name):
            problems.append(Problem(str(path), name, f"a stack name: {STACK_NAME_RULE}"))
        else:
            names.append(name)
    if problems:
        raise ConfigError(*problems)
    return names


def stack_environment(project_dir: Path, stack: str) -> str | None:
    """The environment the organisation gives ``stack`` in ``sandboxkit.yaml``.

    ``environments`` maps stack name patterns (``fnmatch``: ``prod``, ``prod-*``, ``*``) to
    ``dev``, ``staging`` or ``prod``; the first pattern that matches wins. A stack no pattern
    matches is prod (``UNMAPPED_ENVIRONMENT``): the gate fails closed, so a new stack file
    cannot pick a weaker level by picking a new name.

    Returns:
        The environment, or ``None`` without the file (the stack file's
        ``sandboxkit:environment`` then stands alone).

    Raises:
        ConfigError: naming the file and the key when the map is malformed, or the file when
            a folder (or anything but a regular file) stands in its place.
    """
    path = project_dir / KIT_PROJECT_FILE
    if not path.is_file():
        if path.exists() or path.is_symlink():
            # A folder (or a dangling link) there is a mistake, never "no environments map":
            # read as absent, every stack's sandboxkit:environment would stand alone.
            raise ConfigError(
                Problem(
                    str(path),
                    "a folder" if path.is_dir() else "not a regular file",
                    "a YAML file with the environments map (stack name pattern: dev, staging "
                    f"or prod): move the folder away and write {KIT_PROJECT_FILE} in its place, "
                    "or remove it to let each stack file's sandboxkit:environment stand alone",
                )
            )
        return None
    document = read_yaml_file(path)
    environments = document.get("environments") if isinstance(document, dict) else None
    if not isinstance(environments, dict) or not all(
        value in ENVIRONMENTS for value in environments.values()
    ):
        raise ConfigError(
            Problem(
                f"{path}: environments",
                environments,
                f"a mapping of stack name patterns to {', '.join(ENVIRONMENTS)}",
            )
        )
    for pattern, environment in environments.items():
        if fnmatch.fnmatchcase(stack, pattern):
            return str(environment)
    return UNMAPPED_ENVIRONMENT
