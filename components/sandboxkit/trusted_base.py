"""``sandboxkit check --base REF``: the gate of a trusted git revision on this tree's stacks.

A pull request's checkout holds every file the gate reads, so a gate that reads them from the
checkout lets the pull request lower it (``{"all": "advisory"}`` in the pack config, ``prod:
dev`` in ``sandboxkit.yaml``). With ``--base REF`` (the pull request's base) everything that
decides a verdict comes from REF: REF's tree is materialised in a temporary folder (``git
archive``), the files the gate judges are copied in from this tree (``JUDGED_GLOBS``: the stack
files, the Dockerfiles and workflows checkov scans) and REF's own kit runs the gate there, in a
child interpreter that imports REF's ``components/`` (``BASE_DRIVER``): REF's pack and its
config, checkov levels and baseline, ``sandboxkit.yaml`` and the code that renders and judges.

Every difference between REF and this tree under ``GATE_PATHS`` (tracked or not, ignored files
aside) is named in every format (``annotated``): a note in text, ``gate_changes`` in JSON, a
tool configuration notification in SARIF. The verdict stays REF's; what lets a change to the
gate merge is the code owners' review (``.github/CODEOWNERS``, docs/policy-gate.md).
"""

from __future__ import annotations

import contextlib
import filecmp
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sandboxkit
from sandboxkit.checkov_bridge.process import CHECKOV_ENV, DEFAULT_CHECKOV
from sandboxkit.cloudflare.decide import WORKER_DIR_ENV
from sandboxkit.errors import ConfigError, PrerequisiteError, Problem
from sandboxkit.gate.formats.sarif import SARIF_SCHEMA
from sandboxkit.project import stack_file

GATE_PATHS = (
    "Pulumi.yaml",
    "sandboxkit.yaml",
    "pyproject.toml",
    "components",
    "policy-packs",
    ".github",
    ".ci",
)
"""What decides a verdict (relative to the project): a difference here is named in the report."""
JUDGED_GLOBS = ("images/*/Dockerfile", ".github/workflows/*.yml")
"""Besides the stack files, what the gate judges (checkov's project files): this tree's."""
KIT_PACKAGE = Path("components") / "sandboxkit"
"""The kit's package in a project (Pulumi.yaml ``main: components/``)."""
WORKER = KIT_PACKAGE / "cloudflare" / "worker"
"""The Worker's npm package (its ``node_modules`` runs the egress decision code)."""
GATE_CHANGE_RULE = "SBX-GATE-CHANGED"
"""The SARIF notification id of a difference in a gate file."""

# Runs REF's kit: its components/ first on sys.path, and the running kit's folder off it, so
# nothing of this tree's kit is imported by REF's.
BASE_DRIVER = """
import runpy, sys
running_kit = sys.argv.pop(1)
sys.path[:] = [p for p in sys.path if p != running_kit]
sys.argv[0] = "sandboxkit"
runpy.run_module("sandboxkit", run_name="__main__", alter_sys=True)
"""

_STATUS = {"A": "added", "D": "deleted", "M": "modified", "T": "modified"}


@dataclass(frozen=True)
class GateChange:
    """One gate file that differs between the base and this tree.

    Attributes:
        path: relative to the project (``policy-packs/sandbox-guard/config/prod.json``).
        status: ``added``, ``deleted`` or ``modified`` (in this tree, against the base).
    """

    path: str
    status: str

    def __str__(self) -> str:
        return f"{self.path} ({self.status})"


@dataclass(frozen=True)
class BaseTree:
    """A materialised base revision.

    Attributes:
        ref: the revision as given (``main``, ``origin/main``, a commit).
        commit: its full commit id.
        project_dir: the project inside the materialised tree (this tree's stack files in it).
        changes: the gate files that differ from this tree, sorted by path.
    """

    ref: str
    commit: str
    project_dir: Path
    changes: tuple[GateChange, ...]


def _git(top: Path, *args: str, stdout: int | None = None) -> subprocess.CompletedProcess[bytes]:
    git = shutil.which("git")
    if git is None:
        raise PrerequisiteError("git is not installed: --base reads the base revision with git")
    return subprocess.run(
        [git, "-C", str(top), *args],
        stdout=stdout if stdout is not None else subprocess.PIPE,
        stderr=subprocess.PIPE,
        check=False,
    )


def _repository(project_dir: Path, ref: str) -> tuple[Path, Path, str]:
    """``(work-tree top, project path inside it, commit id of ref)``.

    Raises:
        ConfigError: naming ``--base`` when the project is in no git repository or ``ref``
            names no commit there.
    """
    found = _git(project_dir, "rev-parse", "--show-toplevel")
    if found.returncode != 0:
        raise ConfigError(
            Problem(
                "--base",
                ref,
                f"a revision of a git repository: {project_dir} is in none "
                f"({found.stderr.decode(errors='replace').strip()})",
            )
        )
    top = Path(found.stdout.decode().strip()).resolve()
    commit = _git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if commit.returncode != 0:
        raise ConfigError(
            Problem(
                "--base",
                ref,
                f"a commit of the repository at {top} (a branch, tag or commit id; in a shallow "
                "clone, fetch it first: git fetch --depth=1 origin <base>)",
            )
        )
    return top, project_dir.resolve().relative_to(top), commit.stdout.decode().strip()


def gate_changes(top: Path, prefix: Path, commit: str) -> tuple[GateChange, ...]:
    """The files under ``GATE_PATHS`` that differ between ``commit`` and the work tree at
    ``top`` (``git diff --name-status``, and untracked files that are not ignored), with paths
    relative to the project at ``top / prefix``; sorted by path."""
    paths = [str(prefix / p) for p in GATE_PATHS]
    diff = _git(top, "diff", "--no-renames", "--name-status", "-z", commit, "--", *paths)
    untracked = _git(top, "ls-files", "--others", "--exclude-standard", "-z", "--", *paths)
    for done in (diff, untracked):
        if done.returncode != 0:
            raise PrerequisiteError(
                f"git could not compare {commit} with {top}: "
                f"{done.stderr.decode(errors='replace').strip()}"
            )
    fields = diff.stdout.decode(errors="surrogateescape").split("\0")
    found = {
        path: _STATUS.get(status[:1], "modified")
        for status, path in zip(fields[0::2], fields[1::2], strict=False)
        if path
    }
    for path in untracked.stdout.decode(errors="surrogateescape").split("\0"):
        if path:
            found[path] = "added"
    return tuple(
        GateChange(Path(path).relative_to(prefix).as_posix(), status)
        for path, status in sorted(found.items())
    )


def _extract(top: Path, commit: str, into: Path) -> None:
    with subprocess.Popen(
        [shutil.which("git") or "git", "-C", str(top), "archive", "--format=tar", commit],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as archive:
        assert archive.stdout is not None
        with tarfile.open(fileobj=archive.stdout, mode="r|") as tar:
            tar.extractall(into, filter="data")
    if archive.returncode != 0:
        raise PrerequisiteError(f"git archive {commit} failed in {top} (exit {archive.returncode})")


def _judged(project_dir: Path) -> list[Path]:
    """The files of ``project_dir`` the gate judges: stack files, then ``JUDGED_GLOBS``."""
    stacks = stack_file(project_dir, "x").parent
    return [
        *sorted(stacks.glob("Pulumi.*.yaml")),
        *sorted(p for pattern in JUDGED_GLOBS for p in project_dir.glob(pattern)),
    ]


def _take_judged(tree: Path, base: Path) -> None:
    """Replace ``base``'s judged files with ``tree``'s (stack files go to ``base``'s stack
    folder, wherever ``tree`` keeps them)."""
    for path in _judged(base):
        path.unlink()
    tree_stacks = stack_file(tree, "x").parent
    base_stacks = stack_file(base, "x").parent
    for path in _judged(tree):
        if path.parent == tree_stacks:
            target = base_stacks / path.name
        else:
            target = base / path.relative_to(tree)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)


def _worker_packages(base: Path) -> None:
    """Give the base's Worker its npm packages: this kit's ``node_modules`` when both lock
    files are the same (``npm ci`` would install the same), else ``npm ci`` in the base.

    Raises:
        PrerequisiteError: npm missing or failing where the base needs its own install.
    """
    folder = base / WORKER
    lock = folder / "package-lock.json"
    if not lock.is_file():
        return
    ours = Path(sandboxkit.__file__).resolve().parent / WORKER.relative_to(KIT_PACKAGE)
    if (ours / "node_modules").is_dir() and filecmp.cmp(
        ours / "package-lock.json", lock, shallow=False
    ):
        (folder / "node_modules").symlink_to(ours / "node_modules", target_is_directory=True)
        return
    npm = shutil.which("npm")
    done = (
        subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=folder,
            capture_output=True,
            check=False,
        )
        if npm is not None
        else None
    )
    if done is None or done.returncode != 0:
        said = done.stderr.decode(errors="replace").strip()[-300:] if done else "npm not found"
        raise PrerequisiteError(
            "the base's Worker has other npm dependencies than this tree's, and `npm ci` could "
            f"not install them in {folder}: {said}"
        )


@contextlib.contextmanager
def materialised(project_dir: Path, ref: str) -> Iterator[BaseTree]:
    """REF's tree in a temporary folder with this tree's judged files in it, removed when
    the block ends.

    Raises:
        ConfigError: naming ``--base`` (no repository, no such commit), or Pulumi.yaml's bad
            key in either tree.
        PrerequisiteError: git missing or failing; the base's Worker packages not installable.
    """
    top, prefix, commit = _repository(project_dir, ref)
    changes = gate_changes(top, prefix, commit)
    with tempfile.TemporaryDirectory(prefix="sandboxkit-base-") as folder:
        _extract(top, commit, Path(folder))
        base = Path(folder) / prefix
        if not (base / "Pulumi.yaml").is_file():
            raise ConfigError(
                Problem("--base", ref, f"a revision with the project ({prefix}/Pulumi.yaml)")
            )
        _take_judged(project_dir, base)
        _worker_packages(base)
        yield BaseTree(ref, commit, base, changes)


def run_base_gate(
    base: BaseTree, arguments: Sequence[str], checkov: Path
) -> subprocess.CompletedProcess[str]:
    """Run ``sandboxkit check ARGUMENTS --project-dir <base>`` with the base's kit.

    Args:
        base: the materialised base.
        arguments: ``check``'s arguments without ``--base`` and ``--project-dir``.
        checkov: the checkov executable (this tree's ``.venv-checkov``: a tool, not a rule).

    Returns:
        The finished child: its exit code is the gate's, stdout its report, stderr its
        messages (both text).
    """
    kit = str(Path(sandboxkit.__file__).resolve().parent.parent)
    env = {k: v for k, v in os.environ.items() if k != WORKER_DIR_ENV}
    env["PYTHONPATH"] = str(base.project_dir / KIT_PACKAGE.parent)
    env[CHECKOV_ENV] = str(checkov)
    return subprocess.run(
        [
            sys.executable,
            "-c",
            BASE_DRIVER,
            kit,
            "check",
            *arguments,
            "--project-dir",
            str(base.project_dir),
        ],
        cwd=base.project_dir,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def checkov_for(project_dir: Path) -> Path:
    """The checkov executable the base's gate runs: ``$SANDBOXKIT_CHECKOV``, else this
    project's ``.venv-checkov``."""
    configured = os.environ.get(CHECKOV_ENV)
    return Path(configured) if configured else (project_dir / DEFAULT_CHECKOV).absolute()


def change_note(base: BaseTree) -> str:
    """One sentence naming every gate change, for the text report and SARIF."""
    return (
        f"this tree changes {len(base.changes)} gate file(s) against the base {base.ref} "
        f"({base.commit[:12]}): {', '.join(map(str, base.changes))}; the verdict is the base's "
        "gate, and the change needs the code owners' review (.github/CODEOWNERS)"
    )


def _artifact(path: str) -> dict[str, str]:
    return {"uri": path, "uriBaseId": "%SRCROOT%"}


def _notifications(base: BaseTree) -> list[dict[str, Any]]:
    return [
        {
            "descriptor": {"id": GATE_CHANGE_RULE},
            "level": "warning",
            "message": {
                "text": f"{change.path} is {change.status} against the base {base.ref} "
                f"({base.commit[:12]}): the verdict is the base's gate; the change needs the "
                "code owners' review"
            },
            "locations": [{"physicalLocation": {"artifactLocation": _artifact(change.path)}}],
        }
        for change in base.changes
    ]


def no_report(output: str, said: str) -> str:
    """What stands for the report when the base's gate gave none it could read: an empty JSON
    document, or a SARIF log whose invocation failed with ``said`` (its stderr) as the
    notification; ``said`` for text (it is on stderr already: nothing more)."""
    if output == "json":
        return json.dumps({"error": said.strip() or "the base's gate gave no report"})
    if output == "sarif":
        notification = {"level": "error", "message": {"text": said.strip() or "no report"}}
        run = {
            "tool": {"driver": {"name": "sandbox-guard", "rules": []}},
            "results": [],
            "invocations": [
                {"executionSuccessful": False, "toolExecutionNotifications": [notification]}
            ],
        }
        return json.dumps({"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]})
    return ""


def annotated(report: str, output: str, base: BaseTree) -> str | None:
    """The base's report with the gate changes and the base named in it.

    Args:
        report: the base gate's stdout.
        output: its format: ``text``, ``json`` or ``sarif``.
        base: the base, with ``changes``.

    Returns:
        text: the report plus a ``base:`` line and, with changes, a ``note:`` line; json: the
        document plus ``base`` (ref and commit) and ``gate_changes`` (``[{path, status}]``);
        sarif: each run's invocation gets ``toolConfigurationNotifications`` (one per change,
        id ``SBX-GATE-CHANGED``) and the base in its properties. ``None`` when a json or sarif
        report cannot be read (the base's gate gave none).
    """
    about = {"ref": base.ref, "commit": base.commit}
    if output == "text":
        lines = [f"base: the gate of {base.ref} ({base.commit[:12]})"]
        if base.changes:
            lines.append(f"note: {change_note(base)}")
        return report + "\n".join(lines) + "\n"
    try:
        document = json.loads(report)
    except json.JSONDecodeError:
        return None
    if not isinstance(document, dict):
        return None
    changes = [{"path": c.path, "status": c.status} for c in base.changes]
    if output == "json":
        document["base"] = about
        document["gate_changes"] = changes
        return json.dumps(document, indent=2) + "\n"
    for run in document.get("runs", []):
        invocations = run.setdefault("invocations", [])
        if not invocations:
            invocations.append({"executionSuccessful": True})
        for invocation in invocations:
            invocation.setdefault("toolConfigurationNotifications", []).extend(_notifications(base))
            invocation.setdefault("properties", {})["base"] = {**about, "gateChanges": changes}
    return json.dumps(document, indent=2) + "\n"
