"""What the gate finds, from any source: ``RuleInfo``, ``Violation`` and ``CheckResult``.

These are source-agnostic: the CrossGuard pack's diagnostics and checkov's verdicts both become
``Violation``s, so the formats (``sandboxkit.gate.formats``) print them the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

SOURCE_CROSSGUARD = "crossguard"
SOURCE_CHECKOV = "checkov"
# The scope of the kit's own files (Dockerfiles, workflows) in reports and in levels.json.
PROJECT_SCOPE = "project"


@dataclass(frozen=True)
class RuleInfo:
    """What a rule is, for reports (SARIF ``tool.driver.rules``).

    Attributes:
        id: ``SBX-NET-001`` (or a checkov id).
        title: short name.
        description: full description.
        remediation: the fix, one sentence.
        severity: ``low`` .. ``critical``.
        tags: free tags (area, framework).
        source: ``crossguard`` or ``checkov``.
    """

    id: str
    title: str
    description: str
    remediation: str
    severity: str
    tags: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class Violation:
    """One finding, from any source.

    Attributes:
        policy: rule id (``SBX-NET-001``).
        severity: ``low`` .. ``critical``.
        enforcement: ``mandatory`` or ``advisory``.
        urn: the resource's URN (the stack's for stack-wide findings).
        message: the violation sentence, which says the fix.
        source: ``crossguard`` or ``checkov``.
        line: 1-based line of ``file`` (else the stack file) where it is fixed, when known.
        file: the project file to change when it is not the stack file (a Dockerfile).
        reason: why the baseline accepts it (accepted findings only: their ``enforcement``
            is the level they would fail at, which they never do).
    """

    policy: str
    severity: str
    enforcement: str
    urn: str
    message: str
    source: str
    line: int | None = None
    file: str | None = None
    reason: str | None = None

    @property
    def mandatory(self) -> bool:
        """Whether this finding fails the gate: mandatory and not accepted by the baseline."""
        return self.enforcement == "mandatory" and not self.accepted

    @property
    def accepted(self) -> bool:
        """Whether the checkov baseline accepts this finding (it then never fails the gate)."""
        return self.reason is not None

    def document(self) -> dict[str, Any]:
        """The JSON shape: policy, severity, enforcement, urn, message, source; an accepted
        finding adds ``"accepted": true`` and the baseline entry's ``reason``."""
        return {
            "policy": self.policy,
            "severity": self.severity,
            "enforcement": self.enforcement,
            "urn": self.urn,
            "message": self.message,
            "source": self.source,
            **({"accepted": True, "reason": self.reason} if self.accepted else {}),
        }


@dataclass(frozen=True)
class CheckResult:
    """The gate's verdict on one stack (or on the kit's own files: ``PROJECT_SCOPE``).

    Attributes:
        stack: stack name, or ``project`` for the kit's Dockerfiles and workflows.
        environment: ``dev``, ``staging`` or ``prod`` (``project`` for the kit's files).
        stack_file: path of the stack file relative to the project (SARIF artifact).
        violations: findings in report order.
        rules: rule id -> ``RuleInfo`` for every rule that ran.
        accepted: findings the checkov baseline accepts (each with its ``reason``); they never
            fail the gate.
        checkov: checkov's counts (``passed``, ``failed``, ``accepted``), or ``None`` when
            checkov did not run (``--no-checkov``).
        disabled: ids of the pack's policies the pack config disabled (they did not run).
        lowered: ``"SBX-NET-001: mandatory -> advisory"`` for each policy the pack config runs
            below the pack's own level (``pack_config.lowered_levels``).
    """

    stack: str
    environment: str
    stack_file: str
    violations: tuple[Violation, ...]
    rules: Mapping[str, RuleInfo] = field(default_factory=dict)
    accepted: tuple[Violation, ...] = ()
    checkov: Mapping[str, int] | None = None
    disabled: tuple[str, ...] = ()
    lowered: tuple[str, ...] = ()

    def with_findings(
        self,
        violations: Iterable[Violation],
        rules: Iterable[RuleInfo],
        accepted: Iterable[Violation] = (),
    ) -> CheckResult:
        """This result plus findings from another source (e.g. checkov).

        Args:
            violations: findings to add after this result's own, in their order.
            rules: ``RuleInfo`` of the rules behind them; an id already present is replaced.
            accepted: baseline-accepted findings to add after this result's own.

        Returns:
            A new ``CheckResult`` (this one is frozen and stays as it is).
        """
        return replace(
            self,
            violations=(*self.violations, *violations),
            rules={**self.rules, **{r.id: r for r in rules}},
            accepted=(*self.accepted, *accepted),
        )

    @property
    def failed(self) -> bool:
        """Whether any finding is mandatory."""
        return any(v.mandatory for v in self.violations)

    def summary(self) -> dict[str, int]:
        """Counts: total, mandatory, advisory violations; accepted findings; disabled policies."""
        mandatory = sum(v.mandatory for v in self.violations)
        return {
            "total": len(self.violations),
            "mandatory": mandatory,
            "advisory": len(self.violations) - mandatory,
            "accepted": len(self.accepted),
            "disabled": len(self.disabled),
        }


@dataclass(frozen=True)
class BadFile:
    """A stack file the gate could not judge: its config is refused (the CLI exits 2).

    Attributes:
        stack: the stack's name.
        file: the stack file, relative to the project (SARIF artifact).
        problems: ``(line, problem)`` per refusal: the 1-based line of the stack file where it
            is fixed (``locations.problem_line``) and the problem's sentence.
    """

    stack: str
    file: str
    problems: tuple[tuple[int, str], ...]

    def document(self) -> dict[str, Any]:
        """The JSON shape: ``{stack, file, problems: [{line, problem}]}``."""
        return {
            "stack": self.stack,
            "file": self.file,
            "problems": [{"line": line, "problem": text} for line, text in self.problems],
        }


EXIT_BAD_FILE = 2
"""The gate's exit status when a stack file could not be judged (bad config)."""


def exit_code(results: Iterable[CheckResult], bad_files: Iterable[BadFile] = ()) -> int:
    """The gate's exit status: ``EXIT_BAD_FILE`` (2) when any stack file could not be judged,
    else 0 when no result has a mandatory finding, 1 when any has."""
    if any(True for _ in bad_files):
        return EXIT_BAD_FILE
    return 1 if any(r.failed for r in results) else 0
