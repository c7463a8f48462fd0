"""The policy gate: send a rendered stack to the sandbox-guard pack over Pulumi's analyzer protocol.

``run_check`` renders a stack offline (``render_stack``, exactly as ``sandboxkit preview``),
then makes the calls the Pulumi CLI makes to a policy pack: ``GetAnalyzerInfo``, ``Configure``
(schema defaults, then the per-environment file ``config/<environment>.json``), ``Analyze`` for
every resource and ``AnalyzeStack`` once. The pack answers either in-process (its servicer, the
default: fast) or as a real subprocess over gRPC (``pack_process``); the rules live only in the
pack. Results are source-agnostic ``Violation``s so other scanners (checkov) can join them
before formatting with ``format_text``, ``format_json`` or ``format_sarif``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import selectors
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import jsonschema
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime import proto
from pulumi.runtime.proto import analyzer_pb2_grpc

from sandboxkit.config import NAMESPACE
from sandboxkit.errors import ConfigError, Problem
from sandboxkit.project import stack_file
from sandboxkit.render import RenderedStack, render_stack

PACK_DIR = Path("policy-packs") / "sandbox-guard"
SOURCE_CROSSGUARD = "crossguard"
ENFORCEMENT_NAMES = {
    proto.ADVISORY: "advisory",
    proto.MANDATORY: "mandatory",
    proto.REMEDIATE: "remediate",
    proto.DISABLED: "disabled",
}
ENFORCEMENT_VALUES = {name: value for value, name in ENFORCEMENT_NAMES.items()}
SEVERITY_NAMES = {
    proto.POLICY_SEVERITY_UNSPECIFIED: "unspecified",
    proto.POLICY_SEVERITY_LOW: "low",
    proto.POLICY_SEVERITY_MEDIUM: "medium",
    proto.POLICY_SEVERITY_HIGH: "high",
    proto.POLICY_SEVERITY_CRITICAL: "critical",
}
# GitHub code scanning ranks security alerts by this number (critical >= 9.0, high >= 7.0).
SECURITY_SEVERITY = {"critical": 9.5, "high": 8.0, "medium": 5.5, "low": 3.0, "unspecified": 5.0}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
# Where in a stack file a violation of each area is fixed (first key found wins).
AREA_KEYS = {
    "net": ("egress", "sandboxkit:profile"),
    "res": ("limits", "pool", "sandboxkit:profile"),
    "log": ("audit", "sandboxkit:profile"),
}
PACK_START_TIMEOUT_SECONDS = 60
PACK_PROCESS_VERSION = "0.0.1"


class Analyzer(Protocol):
    """The four analyzer calls the gate makes; a gRPC stub and ``InProcessAnalyzer`` both fit."""

    def GetAnalyzerInfo(self, request: Any) -> Any: ...  # noqa: N802 - gRPC method names
    def Configure(self, request: Any) -> Any: ...  # noqa: N802
    def Analyze(self, request: Any) -> Any: ...  # noqa: N802
    def AnalyzeStack(self, request: Any) -> Any: ...  # noqa: N802


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
        line: 1-based line of the stack file where it is fixed, when known.
    """

    policy: str
    severity: str
    enforcement: str
    urn: str
    message: str
    source: str
    line: int | None = None

    @property
    def mandatory(self) -> bool:
        """Whether this finding fails the gate."""
        return self.enforcement == "mandatory"

    def document(self) -> dict[str, Any]:
        """The JSON shape: policy, severity, enforcement, urn, message, source."""
        return {
            "policy": self.policy,
            "severity": self.severity,
            "enforcement": self.enforcement,
            "urn": self.urn,
            "message": self.message,
            "source": self.source,
        }


@dataclass(frozen=True)
class CheckResult:
    """The gate's verdict on one stack.

    Attributes:
        stack: stack name.
        environment: ``dev``, ``staging`` or ``prod``.
        stack_file: path of the stack file relative to the project (SARIF artifact).
        violations: findings in report order.
        rules: rule id -> ``RuleInfo`` for every rule that ran.
    """

    stack: str
    environment: str
    stack_file: str
    violations: tuple[Violation, ...]
    rules: Mapping[str, RuleInfo] = field(default_factory=dict)

    def with_findings(
        self, violations: Iterable[Violation], rules: Iterable[RuleInfo]
    ) -> CheckResult:
        """This result plus findings from another source (e.g. checkov)."""
        return replace(
            self,
            violations=(*self.violations, *violations),
            rules={**self.rules, **{r.id: r for r in rules}},
        )

    @property
    def failed(self) -> bool:
        """Whether any finding is mandatory."""
        return any(v.mandatory for v in self.violations)

    def summary(self) -> dict[str, int]:
        """Counts: total, mandatory, advisory."""
        mandatory = sum(v.mandatory for v in self.violations)
        return {
            "total": len(self.violations),
            "mandatory": mandatory,
            "advisory": len(self.violations) - mandatory,
        }


def pack_dir(project_dir: Path) -> Path:
    """The sandbox-guard pack folder of a project."""
    return project_dir / PACK_DIR


def load_policies(pack: Path) -> ModuleType:
    """Import the pack's ``policies`` package under a private name (never plain ``policies``)."""
    init = pack / "policies" / "__init__.py"
    spec = importlib.util.spec_from_file_location(
        "sandboxkit_pack_policies", init, submodule_search_locations=[str(init.parent)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


class InProcessAnalyzer:
    """The pack's own analyzer servicer, called in this process exactly as over gRPC."""

    def __init__(self, pack: Path) -> None:
        from pulumi_policy.policy import _PolicyAnalyzerServicer

        policies = load_policies(pack)
        self._servicer = _PolicyAnalyzerServicer(
            policies.PACK_NAME,
            # What PolicyPack reports too; the CLI shows PulumiPolicy.yaml's version instead.
            PACK_PROCESS_VERSION,
            policies.ALL_POLICIES,
            policies.DEFAULT_ENFORCEMENT,
        )

    def GetAnalyzerInfo(self, request: Any) -> Any:  # noqa: N802
        """Forward to the servicer."""
        return self._servicer.GetAnalyzerInfo(request, None)

    def Configure(self, request: Any) -> Any:  # noqa: N802
        """Forward to the servicer."""
        return self._servicer.Configure(request, None)

    def Analyze(self, request: Any) -> Any:  # noqa: N802
        """Forward to the servicer."""
        return self._servicer.Analyze(request, None)

    def AnalyzeStack(self, request: Any) -> Any:  # noqa: N802
        """Forward to the servicer."""
        return self._servicer.AnalyzeStack(request, None)


@contextlib.contextmanager
def pack_process(
    pack: Path,
    stack: str = "check",
    python: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    """Start the pack as the Pulumi CLI does and yield a gRPC stub; kill the process after.

    The CLI runs ``python -u -m pulumi.policy <engine address> <pack folder>`` with
    ``PULUMI_PROJECT``, ``PULUMI_STACK``, ``PULUMI_DRY_RUN`` and ``PULUMI_CONFIG`` set; the pack
    prints its port on stdout and serves on 127.0.0.1.

    Raises:
        RuntimeError: when the pack exits or prints no port within 60 s (its stderr attached).
    """
    import grpc

    environment = {
        **os.environ,
        "PULUMI_PROJECT": NAMESPACE,
        "PULUMI_STACK": stack,
        "PULUMI_DRY_RUN": "true",
        "PULUMI_CONFIG": "{}",
        **(env or {}),
    }
    command = [python or sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:0", str(pack)]
    process = subprocess.Popen(
        command,
        cwd=pack,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        selector = selectors.DefaultSelector()
        selector.register(process.stdout, selectors.EVENT_READ)
        ready = selector.select(timeout=PACK_START_TIMEOUT_SECONDS)
        line = process.stdout.readline().decode().strip() if ready else ""
        if not line.isdigit():
            process.kill()
            raise RuntimeError(
                f"policy pack printed no port ({line!r}): {process.stderr.read().decode()}"
            )
        channel = grpc.insecure_channel(f"127.0.0.1:{line}")
        grpc.channel_ready_future(channel).result(timeout=PACK_START_TIMEOUT_SECONDS)
        try:
            yield analyzer_pb2_grpc.AnalyzerStub(channel)
        finally:
            channel.close()
    finally:
        process.kill()
        process.wait()


def read_pack_config(path: Path) -> dict[str, Any]:
    """A pack config file (the file ``pulumi preview --policy-pack-config`` takes).

    Raises:
        ConfigError: when the file is missing or not a JSON object.
    """
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(
            Problem(str(path), "unreadable", f"a JSON object of policy levels ({exc})")
        ) from None
    if not isinstance(document, dict):
        raise ConfigError(Problem(str(path), document, "a JSON object of policy levels"))
    return document


def policy_config(
    info: Any, document: Mapping[str, Any], origin: str
) -> dict[str, tuple[str, dict[str, Any]]]:
    """Reconcile a pack config file the way the Pulumi CLI does before ``Configure``.

    Each policy starts at the level the pack reports and its schema defaults; ``all`` sets every
    level; a policy's own entry (a level, or an object with ``enforcementLevel`` and properties)
    wins. Properties are validated against the policy's schema.

    Returns:
        policy name -> (level name, properties).

    Raises:
        ConfigError: for an unknown policy name or level, or properties the schema rejects.
    """
    policies = {p.name: p for p in info.policies}
    result: dict[str, tuple[str, dict[str, Any]]] = {}
    schemas: dict[str, dict[str, Any]] = {}
    for name, policy in policies.items():
        schema = json_format.MessageToDict(policy.configSchema)
        properties = schema.get("properties", {})
        schemas[name] = {"type": "object", **schema}
        defaults = {k: v["default"] for k, v in properties.items() if "default" in v}
        result[name] = (ENFORCEMENT_NAMES[policy.enforcementLevel], defaults)
    problems: list[Problem] = []

    def level_of(key: str, value: Any) -> str | None:
        if value in ENFORCEMENT_VALUES:
            return str(value)
        problems.append(Problem(f"{origin}: {key}", value, "advisory, mandatory or disabled"))
        return None

    if "all" in document:
        level = level_of("all", document["all"])
        if level is not None:
            result = {name: (level, props) for name, (_, props) in result.items()}
    for key, value in document.items():
        if key == "all":
            continue
        if key not in policies:
            problems.append(Problem(f"{origin}: {key}", value, "a policy of the pack or 'all'"))
            continue
        level, props = result[key]
        if isinstance(value, dict):
            overrides = {k: v for k, v in value.items() if k != "enforcementLevel"}
            props = {**props, **overrides}
            if "enforcementLevel" in value:
                level = level_of(key, value["enforcementLevel"]) or level
        else:
            level = level_of(key, value) or level
        try:
            jsonschema.validate(props, schemas[key])
        except jsonschema.ValidationError as exc:
            problems.append(Problem(f"{origin}: {key}", props, exc.message))
        result[key] = (level, props)
    if problems:
        raise ConfigError(*problems)
    return result


def _struct(values: Mapping[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(dict(values))
    return struct


def configure(analyzer: Analyzer, config: Mapping[str, tuple[str, dict[str, Any]]]) -> None:
    """Send the reconciled config with ``Configure``."""
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
        options = proto.AnalyzerResourceOptions(parent=resource.parent or "")
        properties = _struct(resource.inputs)
        response = analyzer.Analyze(
            proto.AnalyzeRequest(
                type=resource.type,
                properties=properties,
                urn=resource.urn,
                name=resource.name,
                options=options,
            )
        )
        for diagnostic in response.diagnostics:
            if not diagnostic.urn:
                diagnostic.urn = resource.urn
            diagnostics.append(diagnostic)
        stack_resources.append(
            proto.AnalyzerResource(
                type=resource.type,
                properties=properties,
                urn=resource.urn,
                name=resource.name,
                options=options,
                parent=resource.parent or "",
            )
        )
    response = analyzer.AnalyzeStack(proto.AnalyzeStackRequest(resources=stack_resources))
    diagnostics.extend(response.diagnostics)
    return diagnostics


def rules_of(info: Any) -> dict[str, RuleInfo]:
    """``RuleInfo`` for every policy ``GetAnalyzerInfo`` lists, keyed by rule id."""
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


def find_line(text: str, keys: Sequence[str]) -> int:
    """1-based line of the first of ``keys`` written as a YAML key in ``text``, else 1."""
    lines = text.splitlines()
    for key in keys:
        for number, line in enumerate(lines, start=1):
            if line.strip().startswith(f"{key}:"):
                return number
    return 1


def violations_of(
    diagnostics: Iterable[Any], rendered: RenderedStack, stack_text: str
) -> list[Violation]:
    """Turn analyzer diagnostics into ``Violation``s with the stack-file line of the fix."""
    by_urn = {r.urn: r for r in rendered.resources}
    found = []
    for diagnostic in diagnostics:
        rule_id = diagnostic.policyName.upper()
        message = diagnostic.message.removeprefix(f"{diagnostic.description}\n")
        urn = diagnostic.urn or _stack_urn(rendered)
        resource = by_urn.get(urn)
        target = rendered.target_of(resource) if resource is not None else None
        area = rule_id.split("-")[1].lower() if rule_id.count("-") == 2 else ""
        keys = (*AREA_KEYS.get(area, ()), *((f"{NAMESPACE}:{target}",) if target else ()))
        found.append(
            Violation(
                policy=rule_id,
                severity=SEVERITY_NAMES[diagnostic.severity],
                enforcement=ENFORCEMENT_NAMES[diagnostic.enforcementLevel],
                urn=urn,
                message=message,
                source=SOURCE_CROSSGUARD,
                line=find_line(stack_text, keys),
            )
        )
    return found


def check_rendered(
    analyzer: Analyzer,
    rendered: RenderedStack,
    project_dir: Path,
    pack_config: Path | None = None,
) -> CheckResult:
    """Run the analyzer protocol over an already rendered stack (see ``run_check``)."""
    pack = pack_dir(project_dir)
    info = analyzer.GetAnalyzerInfo(empty_pb2.Empty())
    environment = rendered.spec.environment
    config_path = pack_config or pack / "config" / f"{environment}.json"
    configure(analyzer, policy_config(info, read_pack_config(config_path), str(config_path)))
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


def exit_code(results: Iterable[CheckResult]) -> int:
    """0 when no mandatory finding, 1 when any."""
    return 1 if any(r.failed for r in results) else 0


def format_text(results: Sequence[CheckResult]) -> str:
    """Findings grouped by stack and resource: id, severity, enforcement, message."""
    out: list[str] = []
    for result in results:
        counts = result.summary()
        out.append(
            f"Stack {result.stack} ({result.environment}): {counts['total']} violation(s), "
            f"{counts['mandatory']} mandatory, {counts['advisory']} advisory"
        )
        by_urn: dict[str, list[Violation]] = {}
        for violation in result.violations:
            by_urn.setdefault(violation.urn, []).append(violation)
        for urn, found in by_urn.items():
            out.append(f"  {urn}")
            for v in found:
                out.append(f"    {v.policy} [{v.severity}, {v.enforcement}] {v.message}")
        out.append("  FAILED: mandatory violations" if result.failed else "  passed")
    return "\n".join(out) + "\n"


def format_json(result: CheckResult) -> dict[str, Any]:
    """``{"stack", "environment", "violations": [...], "summary"}``."""
    return {
        "stack": result.stack,
        "environment": result.environment,
        "violations": [v.document() for v in result.violations],
        "summary": result.summary(),
    }


def _sarif_rule(rule: RuleInfo) -> dict[str, Any]:
    return {
        "id": rule.id,
        "name": "".join(word.capitalize() for word in re.findall(r"[A-Za-z0-9]+", rule.title)),
        "shortDescription": {"text": rule.title},
        "fullDescription": {"text": rule.description},
        "help": {"text": rule.remediation, "markdown": f"**Fix:** {rule.remediation}"},
        "defaultConfiguration": {"level": "error"},
        "properties": {
            "security-severity": str(SECURITY_SEVERITY[rule.severity]),
            "precision": "high",
            "tags": ["security", *rule.tags],
        },
    }


def format_sarif(results: Sequence[CheckResult]) -> dict[str, Any]:
    """A SARIF 2.1.0 log: one run per source, rules with metadata, stack-file locations."""
    runs = []
    sources = sorted({v.source for r in results for v in r.violations} | {SOURCE_CROSSGUARD})
    for source in sources:
        rules = {
            rid: rule for r in results for rid, rule in r.rules.items() if rule.source == source
        }
        order = sorted(rules)
        findings = []
        for result in results:
            for v in (v for v in result.violations if v.source == source):
                findings.append(
                    {
                        "ruleId": v.policy,
                        **({"ruleIndex": order.index(v.policy)} if v.policy in rules else {}),
                        "level": "error" if v.mandatory else "warning",
                        "message": {"text": v.message},
                        "locations": [
                            {
                                "physicalLocation": {
                                    "artifactLocation": {
                                        "uri": result.stack_file,
                                        "uriBaseId": "%SRCROOT%",
                                    },
                                    "region": {"startLine": v.line or 1},
                                },
                                "logicalLocations": [
                                    {"fullyQualifiedName": v.urn, "kind": "resource"}
                                ],
                            }
                        ],
                        "properties": {
                            "stack": result.stack,
                            "severity": v.severity,
                            "enforcement": v.enforcement,
                            "source": v.source,
                        },
                    }
                )
        runs.append(
            {
                "tool": {
                    "driver": {
                        "name": "sandbox-guard" if source == SOURCE_CROSSGUARD else source,
                        "rules": [_sarif_rule(rules[rid]) for rid in order],
                    }
                },
                "results": findings,
            }
        )
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": runs}
