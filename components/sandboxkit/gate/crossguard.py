"""Run the sandbox-guard pack over a rendered stack, making the calls the Pulumi CLI makes.

``check_rendered`` asks the pack what it holds (``GetAnalyzerInfo``), configures it
(``Configure``: schema defaults, then the pack config of the stack's environment), sends every
resource (``Analyze``) and the whole stack once (``AnalyzeStack``), and turns the diagnostics into
``Violation``s at the stack-file line of the fix (SBX-NET-008 gets the stack's egress
contracts as its config: ``pack_config.stack_pack_config``). ``run_check`` renders the stack first,
exactly as ``sandboxkit preview`` does. The rules live only in the pack.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime import proto

from sandboxkit.config import NAMESPACE
from sandboxkit.gate.analyzer import (
    ENFORCEMENT_NAMES,
    ENFORCEMENT_VALUES,
    SEVERITY_NAMES,
    Analyzer,
    InProcessAnalyzer,
    pack_dir,
)
from sandboxkit.gate.locations import rule_line, stack_keys
from sandboxkit.gate.pack_config import (
    environment_config_path,
    lowered_levels,
    policy_config,
    stack_pack_config,
)
from sandboxkit.gate.results import SOURCE_CROSSGUARD, CheckResult, RuleInfo, Violation
from sandboxkit.project import stack_file
from sandboxkit.render import RenderedStack, render_stack


def _struct(values: Mapping[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(dict(values))
    return struct


def configure(analyzer: Analyzer, config: Mapping[str, tuple[str, dict[str, Any]]]) -> None:
    """Send the reconciled config with ``Configure``.

    Args:
        analyzer: the pack to configure.
        config: policy name -> (level name, properties), as ``policy_config`` returns it.
    """
    request = proto.ConfigureAnalyzerRequest()
    for name, (level, properties) in config.items():
        request.policyConfig[name].CopyFrom(
            proto.PolicyConfig(
                enforcementLevel=ENFORCEMENT_VALUES[level], properties=_struct(properties)
            )
        )
    analyzer.Configure(request)


def analyze(analyzer: Analyzer, rendered: RenderedStack) -> list[Any]:
    """``Analyze`` every rendered resource, then ``AnalyzeStack`` once; return the diagnostics.

    Properties are the render's wire-form inputs, so secrets keep the engine's secret
    signature. Each diagnostic comes back with its URN set (``Analyze`` leaves it empty).
    """
    diagnostics: list[Any] = []
    stack_resources = []
    for resource in rendered.resources:
        # The fields Analyze and AnalyzeStack both send for a resource.
        fields: dict[str, Any] = {
            "type": resource.type,
            "properties": _struct(resource.inputs),
            "urn": resource.urn,
            "name": resource.name,
            "options": proto.AnalyzerResourceOptions(parent=resource.parent or ""),
        }
        response = analyzer.Analyze(proto.AnalyzeRequest(**fields))
        for diagnostic in response.diagnostics:
            if not diagnostic.urn:
                diagnostic.urn = resource.urn
            diagnostics.append(diagnostic)
        stack_resources.append(proto.AnalyzerResource(**fields, parent=resource.parent or ""))
    response = analyzer.AnalyzeStack(proto.AnalyzeStackRequest(resources=stack_resources))
    diagnostics.extend(response.diagnostics)
    return diagnostics


def rules_of(info: Any) -> dict[str, RuleInfo]:
    """``RuleInfo`` for every policy ``GetAnalyzerInfo`` lists, keyed by rule id.

    Args:
        info: the pack's ``AnalyzerInfo``; policy names are kebab-case ids (``sbx-net-001``).

    Returns:
        ``SBX-NET-001`` -> its ``RuleInfo`` (``source: crossguard``).
    """
    rules = {}
    for policy in info.policies:
        rule_id = policy.name.upper()
        title = policy.displayName.removeprefix(f"{rule_id}: ") or rule_id
        rules[rule_id] = RuleInfo(
            id=rule_id,
            title=title,
            description=policy.description,
            remediation=policy.remediation_steps,
            severity=SEVERITY_NAMES[policy.severity],
            tags=tuple(policy.tags),
            source=SOURCE_CROSSGUARD,
        )
    return rules


def _stack_urn(rendered: RenderedStack) -> str:
    stack = rendered.stack
    return f"urn:pulumi:{stack}::{NAMESPACE}::pulumi:pulumi:Stack::{NAMESPACE}-{stack}"


def violations_of(
    diagnostics: Iterable[Any], rendered: RenderedStack, stack_text: str
) -> list[Violation]:
    """Turn analyzer diagnostics into ``Violation``s with the stack-file line of the fix.

    Args:
        diagnostics: ``AnalyzeDiagnostic``s as ``analyze`` returns them; one without a URN is
            stack-wide and gets the stack's URN.
        rendered: the stack they are about (its resources name each finding's target).
        stack_text: the stack file's text (``""`` when the stack has no file).

    Returns:
        One ``Violation`` per diagnostic, in their order (``source: crossguard``).
    """
    by_urn = {r.urn: r for r in rendered.resources}
    keys = stack_keys(stack_text)
    found = []
    for diagnostic in diagnostics:
        rule_id = diagnostic.policyName.upper()
        message = diagnostic.message.removeprefix(f"{diagnostic.description}\n")
        urn = diagnostic.urn or _stack_urn(rendered)
        resource = by_urn.get(urn)
        target = rendered.target_of(resource) if resource is not None else None
        found.append(
            Violation(
                policy=rule_id,
                severity=SEVERITY_NAMES[diagnostic.severity],
                enforcement=ENFORCEMENT_NAMES[diagnostic.enforcementLevel],
                urn=urn,
                message=message,
                source=SOURCE_CROSSGUARD,
                line=rule_line(keys, rule_id, target, message),
            )
        )
    return found


def check_rendered(
    analyzer: Analyzer,
    rendered: RenderedStack,
    project_dir: Path,
    pack_config: Path | None = None,
) -> CheckResult:
    """Run the analyzer protocol over an already rendered stack (see ``run_check``).

    Args:
        analyzer: the pack to ask (``InProcessAnalyzer`` or a ``pack_process`` stub).
        rendered: the stack (``render_stack``, or a changed copy in tests).
        project_dir: folder with Pulumi.yaml (the pack and the stack file).
        pack_config: a pack config file instead of the environment's.

    Returns:
        The stack's ``CheckResult``: CrossGuard's violations, the pack's rules and the ids of
        the policies the pack config disabled; ``checkov`` is ``None`` (not run).

    Raises:
        ConfigError: a pack config file that is unreadable or names unknown policies, levels
            or properties the policy's schema rejects.
    """
    pack = pack_dir(project_dir)
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    environment = rendered.spec.environment
    own_path = environment_config_path(pack, environment)
    config_path = pack_config or own_path
    config = policy_config(info, stack_pack_config(rendered, config_path), str(config_path))
    reference = None
    if config_path != own_path and own_path.is_file():
        reference = policy_config(info, stack_pack_config(rendered, own_path), str(own_path))
    configure(analyzer, config)
    path = stack_file(project_dir, rendered.stack)
    text = path.read_text() if path.is_file() else ""
    violations = violations_of(analyze(analyzer, rendered), rendered, text)
    return CheckResult(
        stack=rendered.stack,
        environment=environment,
        stack_file=path.relative_to(project_dir).as_posix()
        if path.is_relative_to(project_dir)
        else str(path),
        violations=tuple(violations),
        rules=rules_of(info),
        disabled=tuple(
            sorted(n.upper() for n, (level, _) in config.items() if level == "disabled")
        ),
        lowered=lowered_levels(info, config, reference),
    )


def run_check(
    stack: str,
    project_dir: Path,
    analyzer: Analyzer | None = None,
    pack_config: Path | None = None,
) -> CheckResult:
    """Render ``stack`` offline and apply the sandbox-guard pack to it.

    Args:
        stack: stack name (``stacks/Pulumi.<stack>.yaml``).
        project_dir: folder with Pulumi.yaml.
        analyzer: the pack to ask; by default its servicer in this process.
        pack_config: a pack config file instead of ``config/<environment>.json``, where the
            environment is the stack's ``sandboxkit:environment``.

    Raises:
        ConfigError: bad stack config or bad pack config (the CLI exits 2).
    """
    rendered = render_stack(project_dir, stack)
    analyzer = analyzer or InProcessAnalyzer(pack_dir(project_dir))
    return check_rendered(analyzer, rendered, project_dir, pack_config)
