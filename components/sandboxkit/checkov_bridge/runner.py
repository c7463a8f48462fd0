"""Running checkov (from its own venv, offline) on stack exports and the kit's own files.

checkov lives in its own venv because it pins ``packaging<24`` while pulumi needs
``packaging>=26``. It is found through ``$SANDBOXKIT_CHECKOV`` or at ``.venv-checkov/bin/checkov``
in the project; when it is missing the run fails with the install command, never skips.

One checkov process scans everything (startup dominates its cost): the exports of each stack
(frameworks terraform_plan, arm, kubernetes), the kit's Dockerfiles and GitHub workflows, with
the kit's own checks from ``policy-packs/checkov/checks``. Each result maps back to the URN of
the resource it came from (or to the project file), and the baseline marks accepted ones.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from sandboxkit.checkov_bridge.baseline import Accepted, load_baseline
from sandboxkit.checkov_bridge.exporters import StackExport, export_stack
from sandboxkit.checkov_bridge.process import CheckovProcess, locate_checkov
from sandboxkit.render import RenderedStack

STACK_FRAMEWORKS = ("terraform_plan", "arm", "kubernetes")
PROJECT_FRAMEWORKS = ("dockerfile", "github_actions")
KIT_CHECKS_DIR = Path("policy-packs/checkov/checks")
# The kit's own files checkov scans, relative to the project (globs).
PROJECT_FILES = ("images/*/Dockerfile", ".github/workflows/*.yml")
# checkov reports no severity offline (it comes from its hosted platform); a failed check the
# baseline does not accept blocks the gate, so it is reported as high and mandatory; one the
# baseline accepts is reported as advisory with the reason.
SEVERITY = "high"
SOURCE = "checkov"
# The verdicts of a JSON report read; a skipped check is one an inline ``checkov:skip``
# comment suppressed (the kit passes no --skip-check, and checkov reads no config file of the
# project: ``process.hermetic_environment``), and counts as failed (``CheckovFinding``).
CHECK_STATUSES = ("passed_checks", "failed_checks", "skipped_checks")


class CheckovFailedError(RuntimeError):
    """checkov ran but produced no parsable report (its stderr is in the message)."""


@dataclass(frozen=True)
class CheckovFinding:
    """One checkov verdict on one resource or file.

    ``violation()`` gives the source-agnostic shape the policy gate prints.

    Attributes:
        policy: the check id (``CKV_AWS_24``, ``CKV_SBX_1``).
        name: the check's "Ensure ..." name.
        passed: whether the check passed.
        urn: the resource's URN; for a project file, ``file:<path>``.
        type: the Pulumi type token (``None`` for project files).
        file: the scanned file (export file or project file, relative).
        resource: the id checkov reports, e.g. ``aws_lambda_function.fn`` or ``jobs(test)``.
        accepted: the baseline entry that accepts a failure, if any.
        framework: the checkov framework that ran the check (``kubernetes``, ``dockerfile``).
        line: 1-based first line in ``file`` for project files (export lines mean nothing).
        guideline: checkov's link for the check, when it reports one (offline, usually none).
        suppressed: the comment of an inline suppression (``# checkov:skip=<id>:<comment>`` in
            the scanned file) checkov honoured, or ``None``. The gate counts a suppressed check
            as failed: a file the pull request controls must not accept its own failure (the
            baseline, with its reason and code-owner review, is the one place to accept).
    """

    policy: str
    name: str
    passed: bool
    urn: str
    type: str | None
    file: str
    resource: str
    accepted: Accepted | None = None
    framework: str = ""
    line: int | None = None
    guideline: str | None = None
    suppressed: str | None = None

    @property
    def severity(self) -> str:
        """Severity reported for a failure (checkov gives none offline)."""
        return SEVERITY

    @property
    def message(self) -> str:
        """A sentence naming what failed where."""
        where = self.resource if self.type is None else f"{self.resource} in {self.file}"
        text = f"{self.name} (checkov {self.policy} failed on {where})."
        if self.suppressed is not None:
            text += (
                f" An inline checkov:skip comment ('{self.suppressed}') suppresses it in the "
                "file; the gate does not honour inline suppressions: fix it, or accept it in "
                "policy-packs/checkov/baseline.yaml with a reason."
            )
        if self.accepted is not None:
            text += f" Accepted by the baseline: {self.accepted.reason}"
        return text

    def violation(self, enforcement: str = "mandatory") -> dict[str, str]:
        """``{"policy", "severity", "enforcement", "urn", "message", "source"}``.

        Args:
            enforcement: the level of the failure (the gate passes the environment's), the
                same whether the baseline accepts it or not: an accepted finding shows the
                level it would fail at, and its acceptance is said apart (the gate's
                ``Violation.reason``; it never fails the gate).
        """
        return {
            "policy": self.policy,
            "severity": self.severity,
            "enforcement": enforcement,
            "urn": self.urn,
            "message": self.message,
            "source": SOURCE,
        }


@dataclass
class CheckovReport:
    """Every verdict of one checkov run, with the baseline applied.

    Attributes:
        findings: every verdict, passed and failed.
        exports: the stack exports scanned.
    """

    findings: list[CheckovFinding] = field(default_factory=list)
    exports: list[StackExport] = field(default_factory=list)

    @property
    def failures(self) -> list[CheckovFinding]:
        """Failed checks the baseline does not accept: these fail the gate."""
        return [f for f in self.findings if not f.passed and f.accepted is None]

    @property
    def accepted(self) -> list[CheckovFinding]:
        """Failed checks the baseline accepts (reported with the reason, not failing)."""
        return [f for f in self.findings if not f.passed and f.accepted is not None]

    def for_stack(self, stack: str) -> list[CheckovFinding]:
        """Verdicts on resources of ``stack``."""
        prefix = f"urn:pulumi:{stack}::"
        return [f for f in self.findings if f.urn.startswith(prefix)]

    def for_project_files(self) -> list[CheckovFinding]:
        """Verdicts on the kit's own files (Dockerfiles, workflows: ``file:`` URNs)."""
        return [f for f in self.findings if f.type is None]

    def coverage(self) -> dict[str, dict[str, Any]]:
        """Per exported Pulumi type: resources, and which checks evaluated them.

        Returns:
            ``{type: {"resources": n, "checks": [ids], "kit_checks": [ids]}}``; a type with no
            check has ``checks: []``.
        """
        resources: dict[str, set[str]] = defaultdict(set)
        for export in self.exports:
            for entry in export.resources:
                resources[entry.type].add(entry.urn)
        checks: dict[str, set[str]] = defaultdict(set)
        for finding in self.findings:
            if finding.type is not None:
                checks[finding.type].add(finding.policy)
        return {
            type_token: {
                "resources": len(urns),
                "checks": sorted(checks[type_token]),
                "kit_checks": sorted(c for c in checks[type_token] if c.startswith("CKV_SBX_")),
            }
            for type_token, urns in sorted(resources.items())
        }


def project_files(project_dir: Path) -> list[Path]:
    """The kit's own files checkov scans (Dockerfiles, workflows), sorted."""
    return sorted(p for pattern in PROJECT_FILES for p in project_dir.glob(pattern))


def checkov_command(
    executable: Path,
    files: Sequence[Path],
    frameworks: Iterable[str],
    external_checks_dir: Path | None = None,
) -> list[str]:
    """The command line of an offline checkov run with a JSON report on ``files`` (absolute
    paths: checkov runs in a folder of its own, ``process.CheckovProcess``)."""
    command = [os.path.abspath(executable), "--skip-download", "--compact", "-o", "json"]
    command += ["--framework"]
    command += list(frameworks)
    for path in files:
        command += ["-f", str(path.resolve())]
    if external_checks_dir is not None:
        command += ["--external-checks-dir", str(external_checks_dir.resolve())]
    return command


def checkov_reports(returncode: int, stdout: str, stderr: str) -> list[dict[str, Any]]:
    """checkov's JSON reports (one per framework) from a finished run's exit code and output.

    Raises:
        CheckovFailedError: when checkov exited with neither 0 nor 1 or printed no JSON.
    """
    # checkov exits 1 when a check fails: that is a result, not an error.
    try:
        reports = json.loads(stdout) if returncode in (0, 1) else None
    except json.JSONDecodeError:
        reports = None
    if reports is None:
        raise CheckovFailedError(
            f"checkov exited {returncode} without a JSON report: {stderr.strip()[-2000:]}"
        )
    # One framework gives one object; several give a list; nothing to scan gives a summary.
    if isinstance(reports, dict):
        reports = [reports] if "results" in reports else []
    return list(reports)


def run_checkov(
    executable: Path,
    files: Sequence[Path],
    frameworks: Iterable[str],
    external_checks_dir: Path | None = None,
) -> list[dict[str, Any]]:
    """Run checkov offline on ``files`` and return its JSON reports (one per framework).

    Raises:
        CheckovFailedError: when checkov exits with neither 0 nor 1 or prints no JSON.
    """
    with CheckovProcess(executable) as process:
        process.start(checkov_command(executable, files, frameworks, external_checks_dir))
        return checkov_reports(*process.wait())


def scan(
    project_dir: Path,
    exports: Sequence[StackExport],
    *,
    include_project_files: bool = True,
    executable: Path | None = None,
    baseline: Sequence[Accepted] | None = None,
) -> CheckovReport:
    """Export, run checkov once on every stack's exports (and the kit's files), map back.

    Args:
        project_dir: the project root (baseline, kit checks, Dockerfiles, workflows).
        exports: the stacks' exports.
        include_project_files: also scan the Dockerfiles and workflows.
        executable: checkov to run (default: ``locate_checkov``).
        baseline: accepted findings (default: the project's baseline file).

    Raises:
        CheckovMissingError: when checkov is not installed.
        CheckovFailedError: when it produced no report.
        BaselineError: for a malformed baseline.
    """
    with scan_started(
        project_dir,
        exports,
        include_project_files=include_project_files,
        executable=executable,
        baseline=baseline,
    ) as report:
        return report()


@contextlib.contextmanager
def scan_started(
    project_dir: Path,
    exports: Iterable[StackExport],
    *,
    include_project_files: bool = True,
    executable: Path | None = None,
    baseline: Sequence[Accepted] | None = None,
    process: CheckovProcess | None = None,
) -> Iterator[Callable[[], CheckovReport]]:
    """``scan``, split in two: checkov starts on entry; the yielded function waits for its
    report, so the caller works meanwhile (``sandboxkit check`` runs CrossGuard).

    Args:
        project_dir, include_project_files, executable, baseline: as for ``scan``.
        exports: the stacks' exports, produced on entry (a generator of ``export_stack``
            calls: what fails in them is deferred like the rest).
        process: a ``CheckovProcess`` already warmed for ``executable`` (default: a new one);
            its owner closes it.

    Yields:
        A function returning the ``CheckovReport``. Whatever failed while starting (an
        unmapped type, checkov missing, a malformed baseline) is raised by it, not on entry:
        work done meanwhile reports its own errors first, as when checkov ran after it.
        Leaving the block kills a checkov still running.
    """
    with contextlib.ExitStack() as cleanup:
        root = Path(
            cleanup.enter_context(tempfile.TemporaryDirectory(prefix="sandboxkit-checkov-"))
        )
        report = CheckovReport()
        owners: dict[tuple[str, str], tuple[str, str]] = {}
        failure: Exception | None = None
        running = False
        try:
            report.exports = list(exports)
            executable = executable or locate_checkov(project_dir)
            accepted = tuple(load_baseline(project_dir) if baseline is None else baseline)
            files: list[Path] = []
            for export in report.exports:
                export.write(root / export.stack)
                files += [root / export.stack / name for name in export.files]
                for entry in export.resources:
                    path = str((root / export.stack / entry.file).resolve())
                    owners[(path, entry.checkov_id)] = (entry.urn, entry.type)
            frameworks = list(STACK_FRAMEWORKS)
            if include_project_files:
                files += project_files(project_dir)
                frameworks += PROJECT_FRAMEWORKS
            if files:
                checks_dir = project_dir / KIT_CHECKS_DIR
                process = process or cleanup.enter_context(CheckovProcess(executable))
                process.start(
                    checkov_command(
                        executable, files, frameworks, checks_dir if checks_dir.is_dir() else None
                    )
                )
                running = True
        except Exception as exc:  # raised by the report, after the caller's own work
            failure = exc

        def finished() -> CheckovReport:
            if failure is not None:
                raise failure
            if not running:
                return report
            assert process is not None
            reports = checkov_reports(*process.wait())
            check_fully_read(reports, report.exports, root, project_dir)
            for framework_report in reports:
                results = framework_report.get("results", {})
                for status in CHECK_STATUSES:
                    for result in results.get(status, []):
                        report.findings.append(
                            _finding(
                                result,
                                status == "passed_checks",
                                framework_report.get("check_type", ""),
                                owners=owners,
                                root=root,
                                project_dir=project_dir,
                            )
                        )
            report.findings = [_apply_baseline(f, accepted) for f in report.findings]
            return report

        yield finished


def _shown(path: str, root: Path, project_dir: Path) -> str:
    # An export as <stack>/<file>; a project file relative to the project.
    resolved = Path(path).resolve()
    for base in (root.resolve(), project_dir.resolve()):
        if resolved.is_relative_to(base):
            return resolved.relative_to(base).as_posix()
    return path


def check_fully_read(
    reports: Sequence[dict[str, Any]],
    exports: Sequence[StackExport],
    root: Path,
    project_dir: Path,
) -> None:
    """Refuse a checkov run that did not read everything it was given.

    checkov 3.3.30 exits 0 with ``parsing_errors: 0`` and ``resource_count: 0`` on an export it
    cannot read (bridgecrewio/checkov #5248), and drops a Kubernetes document whose ``name``
    holds ``#``, ``{`` or ``}`` or is over 253 characters with a debug line only (its
    ``kubernetes/parser`` validator): a verdict on what it did read would pass what it did
    not. So every file in a report's ``results.parsing_errors`` is refused, and each
    framework's ``summary.resource_count`` must reach the number of resources the kit exported
    for it (written under ``root/<stack>/``).

    Raises:
        CheckovFailedError: naming each file checkov could not read (``<stack>/<file>`` for an
            export, the project path for a Dockerfile or workflow) and, for an export, how
            many of its resources it read and the ids it never reported on.
    """
    problems: list[str] = []
    by_type = {r.get("check_type", ""): r for r in reports}
    for framework_report in reports:
        for path in framework_report.get("results", {}).get("parsing_errors", []) or []:
            problems.append(f"{_shown(str(path), root, project_dir)}: checkov could not parse it")
    exported: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for export in exports:
        for entry in export.resources:
            path = str((root / export.stack / entry.file).resolve())
            exported[entry.framework].append((path, entry.checkov_id))
    for framework, entries in sorted(exported.items()):
        framework_report = by_type.get(framework, {})
        read = int(framework_report.get("summary", {}).get("resource_count", 0) or 0)
        if read >= len(entries):
            continue
        results = framework_report.get("results", {})
        seen = {
            (str(Path(result["file_abs_path"]).resolve()), result["resource"])
            for status in CHECK_STATUSES
            for result in results.get(status, [])
        }
        unseen: dict[str, list[str]] = defaultdict(list)
        for path, checkov_id in entries:
            if (path, checkov_id) not in seen:
                unseen[path].append(checkov_id)
        for path, ids in sorted(unseen.items()) or [(p, []) for p, _ in entries[:1]]:
            shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
            problems.append(
                f"{_shown(path, root, project_dir)} ({framework}): checkov read {read} of the "
                f"{len(entries)} {framework} resources exported"
                + (f"; never reported on {shown}" if shown else "")
            )
    if problems:
        raise CheckovFailedError(
            "checkov could not read every file it was given, so its verdict would pass what it "
            "did not read: " + "; ".join(dict.fromkeys(problems))
        )


def _finding(
    result: dict[str, Any],
    passed: bool,
    framework: str,
    *,
    owners: dict[tuple[str, str], tuple[str, str]],
    root: Path,
    project_dir: Path,
) -> CheckovFinding:
    path = Path(result["file_abs_path"]).resolve()
    owner = owners.get((str(path), result["resource"]))
    line: int | None = None
    if owner is not None:
        urn, type_token = owner
        file = str(path.relative_to(root.resolve()))
    elif path.is_relative_to(root.resolve()):
        raise CheckovFailedError(
            f"checkov reported on {result['resource']} in {path.name}, which the export did not "
            "record: the exporter and checkov disagree on its id"
        )
    else:
        type_token = None
        try:
            file = str(path.relative_to(project_dir.resolve()))
        except ValueError:
            file = str(path)
        urn = f"file:{file}"
        line = (result.get("file_line_range") or [None])[0]
    return CheckovFinding(
        policy=result["check_id"],
        name=result["check_name"],
        passed=passed,
        urn=urn,
        type=type_token,
        file=file,
        resource=result["resource"],
        framework=framework,
        line=line,
        guideline=result.get("guideline"),
        suppressed=_suppression(result),
    )


def _suppression(result: dict[str, Any]) -> str | None:
    """The comment of the inline suppression checkov honoured for a skipped ``result``
    (checkov 3.3.30 reports it as ``check_result.suppress_comment``)."""
    check = result.get("check_result") or {}
    if check.get("result") != "SKIPPED":
        return None
    return str(check.get("suppress_comment") or "no comment")


def _apply_baseline(finding: CheckovFinding, baseline: Sequence[Accepted]) -> CheckovFinding:
    if finding.passed:
        return finding
    for entry in baseline:
        if entry.matches(finding.policy, finding.type, finding.urn, finding.file, finding.resource):
            return replace(finding, accepted=entry)
    return finding


def scan_rendered(
    project_dir: Path, rendered: Sequence[RenderedStack], *, include_project_files: bool = True
) -> CheckovReport:
    """``scan`` on the exports of rendered stacks (what ``sandboxkit checkov`` runs)."""
    return scan(
        project_dir,
        [export_stack(r) for r in rendered],
        include_project_files=include_project_files,
    )
