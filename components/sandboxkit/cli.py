"""``sandboxkit`` command line: ``preview`` (offline render), ``check`` (the policy gate) and
``cloudflare-config`` (the wrangler config for the cloudflare target's containers)."""

from __future__ import annotations

import json
import sys
import textwrap
from collections import Counter
from collections.abc import Sequence
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer
from google.protobuf import empty_pb2
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from sandboxkit import gate
from sandboxkit.checkov_bridge.baseline import BaselineError
from sandboxkit.checkov_bridge.mapping import UnmappedTypeError
from sandboxkit.checkov_bridge.runner import (
    CheckovFailedError,
    CheckovMissingError,
    CheckovReport,
    scan_rendered,
)
from sandboxkit.config import load_stack_file
from sandboxkit.errors import ConfigError, Problem
from sandboxkit.explain import TargetEgress, explain_stack, explanation_document
from sandboxkit.profile import PROFILE_FIELDS
from sandboxkit.project import find_project_dir, list_stacks
from sandboxkit.render import RenderedStack, collector_off_until_exit, render_stack, to_display
from sandboxkit.targets import TARGET_MODULES, get_target

EXIT_FAILED = 1
EXIT_CONFIG = 2

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Hardened sandbox stacks for AI-agent code: offline preview and policy gate.",
)
StackOption = Annotated[
    str, typer.Option("--stack", "-s", help="Stack name (stacks/Pulumi.<stack>.yaml).")
]
ProjectOption = Annotated[
    Path | None,
    typer.Option("--project-dir", help="Folder with Pulumi.yaml (default: nearest above here)."),
]


@app.callback()
def _root() -> None:
    """Hardened sandbox stacks for AI-agent code: offline preview and policy gate."""


def _console() -> Console:
    # A terminal gets colour and tables at its width; piped output (CI logs, files) plain text
    # at $COLUMNS (rich's 80 when unset): no colour codes, no box drawing.
    if sys.stdout.isatty():
        return Console(highlight=False)
    return Console(highlight=False, no_color=True, color_system=None)


# Plain output: the long column goes under its row, indented, wrapped to the width.
_PLAIN_INDENT = "    "


def print_table(
    console: Console,
    columns: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    title: str = "",
    below: int = -1,
) -> None:
    """Print ``rows`` as a table that fits ``console.width``.

    On a terminal a rich table (cells may hold rich markup). Elsewhere plain text: a title
    line, then per row the short columns aligned on one line and column ``below`` (the long
    one) beneath it, indented and wrapped; no box drawing, markup removed.
    """
    if console.is_terminal:
        table = Table(title=title or None, show_lines=False)
        for column in columns:
            table.add_column(column)
        for row in rows:
            table.add_row(*row)
        console.print(table)
        return
    long_at = below % len(columns)
    plain = [[Text.from_markup(cell).plain for cell in row] for row in (columns, *rows)]
    short = [[cell for i, cell in enumerate(row) if i != long_at] for row in plain]
    widths = [max(len(row[i]) for row in short) for i in range(len(columns) - 1)]
    if title:
        console.print(title, markup=False)
    wrap_at = max(console.width - len(_PLAIN_INDENT), 20)
    for cells, row in zip(short, plain, strict=True):
        line = "  ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True))
        console.print(line.rstrip(), markup=False, soft_wrap=True)
        for part in textwrap.wrap(row[long_at], wrap_at) or [""]:
            console.print(f"{_PLAIN_INDENT}{part}".rstrip(), markup=False, soft_wrap=True)


def fail_config(exc: ConfigError) -> typer.Exit:
    """Print a config error to stderr (no traceback) and return the exit-2 signal."""
    console = Console(stderr=True, soft_wrap=True, highlight=False)
    console.print("[bold red]error:[/] invalid input")
    for problem in exc.problems:
        console.print(f"  {problem}", markup=False)
    return typer.Exit(EXIT_CONFIG)


# checkov could not give a verdict: exit 2 naming why (never a silent skip).
CHECKOV_ERRORS = (CheckovMissingError, CheckovFailedError, BaselineError, UnmappedTypeError)


def fail_checkov(exc: Exception, hint: str = "") -> typer.Exit:
    """Print why checkov gave no verdict to stderr and return the exit-2 signal."""
    Console(stderr=True, soft_wrap=True, highlight=False).print(
        f"[bold red]error:[/] {exc}{hint}", markup=True
    )
    return typer.Exit(EXIT_CONFIG)


def load(stack: str, project_dir: Path | None, step: gate.Step = gate.no_steps) -> RenderedStack:
    """Render ``stack`` offline, telling ``step`` each target; ``typer.Exit(2)`` on bad config."""
    try:
        return render_stack(
            project_dir or find_project_dir(),
            stack,
            on_target=lambda target: step(f"rendering {stack}: {target}"),
        )
    except ConfigError as exc:
        raise fail_config(exc) from None


def enforcement_table(rendered: RenderedStack) -> list[dict[str, Any]]:
    """Rows ``{target, field, value, explicit, kind, where}`` of the enforcement map."""
    spec = rendered.spec
    explicit = spec.profile.explicit_fields()
    rows = []
    for target in spec.targets:
        for field in PROFILE_FIELDS:
            entry = spec.enforcement[target][field]
            rows.append(
                {
                    "target": target,
                    "field": field,
                    "value": spec.profile.value_of(field),
                    "explicit": field in explicit,
                    "kind": entry.kind,
                    "where": entry.where,
                }
            )
    return rows


def _print_text(rendered: RenderedStack, console: Console) -> None:
    console.print(f"[bold]Stack[/] {rendered.stack} ({rendered.spec.environment})")
    children: dict[str | None, list[Any]] = {}
    urns = {r.urn for r in rendered.resources}
    for resource in rendered.resources:
        parent = resource.parent if resource.parent in urns else None
        children.setdefault(parent, []).append(resource)
    head = f"resources ({len(rendered.resources)})"
    if not console.is_terminal:
        # Plain: two spaces per level instead of the tree's box-drawing guides.
        console.print(head, markup=False)

        def show(parent: str | None, depth: int) -> None:
            for resource in children.get(parent, []):
                line = f"{'  ' * depth}{resource.type}  {resource.name}"
                console.print(line, markup=False, soft_wrap=True)
                show(resource.urn, depth + 1)

        show(None, 1)
    else:
        tree = Tree(f"[bold]{head}[/]")

        def add(node: Tree, parent: str | None) -> None:
            for resource in children.get(parent, []):
                add(
                    node.add(f"{escape(resource.type)}  [cyan]{escape(resource.name)}[/]"),
                    resource.urn,
                )

        add(tree, None)
        console.print(tree)
    counts = Counter(rendered.target_of(r) for r in rendered.resources)
    for target in rendered.spec.targets:
        console.print(f"target {target}: {counts[target]} resources")
    rows = [
        (
            row["target"],
            row["field"],
            f"{row['value']}" + ("" if row["explicit"] else " (default)"),
            row["kind"],
            row["where"],
        )
        for row in enforcement_table(rendered)
    ]
    print_table(
        console, ("target", "field", "value", "enforced", "where"), rows, title="Enforcement map"
    )
    console.print("[bold]Outputs[/]")
    console.print_json(json.dumps(to_display(rendered.outputs)))
    if rendered.placeholders:
        console.print(
            "placeholders (the cloud computes these at deploy time; offline they are mock "
            "values derived from the stack's settings, not the real ones): "
            + ", ".join(rendered.placeholders),
            markup=False,
        )
    for warning in rendered.warnings:
        console.print(f"[yellow]warning:[/] {warning}")


def _print_egress(explained: list[TargetEgress], console: Console) -> None:
    for item in explained:
        contract = item.contract
        head = f"[bold]Egress of {item.target}[/]: mode {contract.mode}"
        if contract.control_plane:
            head += f"; control plane {', '.join(map(str, contract.control_plane))}"
        console.print(head)
        if item.effective is None:
            console.print("  [red]no egress reader: this target's egress is not explained[/]")
            continue
        rows = []
        for probe in item.probes:
            verdict = item.effective.admits(probe.host, probe.port)
            contract_says = contract.admits(probe.host, probe.port)
            mark = "" if verdict.admitted == contract_says else " [red]<- differs[/]"
            rows.append(
                (
                    escape(str(probe)),
                    probe.kind,
                    ("admitted" if verdict else "refused") + mark,
                    "admitted" if contract_says else "refused",
                    escape("; ".join(verdict.enforced)),
                    ", ".join(sorted({g.basis for g in verdict.grants})),
                )
            )
        columns = ("probe", "kind", "target", "contract", "how", "basis")
        print_table(console, columns, rows, below=4)
        for line in (*map(str, item.differences), *map(str, item.findings)):
            console.print(f"  [red]{line}[/]")
        if item.matches_contract:
            console.print("  no difference from the contract")


@app.command()
def preview(
    stack: StackOption,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
    explain_egress: Annotated[
        bool,
        typer.Option(
            "--explain-egress",
            help="Instead of the resources: each target's effective egress, read from its "
            "rendered resources, against the egress contract.",
        ),
    ] = False,
    project_dir: ProjectOption = None,
) -> None:
    """Render STACK offline: every resource `pulumi up` would create, and the enforcement map."""
    with gate.terminal_steps(not as_json) as step:
        rendered = load(stack, project_dir, step)
        if explain_egress:
            step("reading each target's egress")
            explained = explain_stack(rendered)
    if explain_egress:
        if as_json:
            document = {"stack": rendered.stack, "egress": explanation_document(explained)}
            sys.stdout.write(json.dumps(document, indent=2) + "\n")
        else:
            _print_egress(explained, _console())
        return
    if as_json:
        document = rendered.display()
        document["enforcement"] = enforcement_table(rendered)
        document["warnings"] = list(rendered.warnings)
        document["placeholders"] = list(rendered.placeholders)
        sys.stdout.write(json.dumps(document, indent=2, sort_keys=False) + "\n")
        return
    _print_text(rendered, _console())


def checkov_document(report: CheckovReport, stacks: list[str]) -> dict[str, Any]:
    """The JSON document of ``sandboxkit checkov --json``."""
    return {
        "stacks": stacks,
        "violations": [f.violation() for f in report.failures],
        "accepted": [f.violation() for f in report.accepted],
        "coverage": report.coverage(),
        "summary": {
            "passed": sum(f.passed for f in report.findings),
            "failed": len(report.failures),
            "accepted": len(report.accepted),
        },
    }


def _print_checkov(report: CheckovReport, console: Console) -> None:
    by_urn: dict[str, list[Any]] = {}
    for finding in report.failures:
        by_urn.setdefault(finding.urn, []).append(finding)
    for urn, findings in by_urn.items():
        console.print(f"[bold]{urn}[/]", markup=True)
        for finding in findings:
            console.print(f"  [red]FAILED[/] {finding.policy}  {finding.message}")
    for finding in report.accepted:
        assert finding.accepted is not None
        console.print(
            f"[yellow]accepted[/] {finding.policy} on {finding.resource}: {finding.accepted.reason}"
        )
    rows = [
        (type_token, str(row["resources"]), str(len(row["checks"])), ", ".join(row["kit_checks"]))
        for type_token, row in report.coverage().items()
    ]
    print_table(
        console,
        ("type", "resources", "checks", "kit checks"),
        rows,
        title="checkov coverage per exported type",
    )
    passed = sum(f.passed for f in report.findings)
    console.print(
        f"checkov: {passed} passed, {len(report.failures)} failed, "
        f"{len(report.accepted)} accepted by the baseline"
    )


@app.command()
def checkov(
    stack: Annotated[
        list[str] | None,
        typer.Option("--stack", "-s", help="Stack name (repeatable); see --all-stacks."),
    ] = None,
    all_stacks: Annotated[
        bool, typer.Option("--all-stacks", help="Every stack in stacks/.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")] = False,
    project_files: Annotated[
        bool,
        typer.Option(
            "--project-files/--no-project-files",
            help="Also scan the kit's Dockerfiles and GitHub workflows.",
        ),
    ] = True,
    project_dir: ProjectOption = None,
) -> None:
    """Run checkov (its own venv, offline) on STACK's Terraform/ARM/Kubernetes exports.

    Exit 0 when every failed check is accepted by policy-packs/checkov/baseline.yaml, 1 when
    any is not, 2 on bad config or when checkov is missing or fails.
    """
    root = project_dir or _project_dir()
    names = list_stacks(root) if all_stacks else list(stack or [])
    if not names:
        raise fail_config(ConfigError(Problem("--stack", None, "a stack name or --all-stacks")))
    rendered = [load(name, root) for name in names]
    try:
        report = scan_rendered(root, rendered, include_project_files=project_files)
    except CHECKOV_ERRORS as exc:
        raise fail_checkov(exc) from None
    if as_json:
        sys.stdout.write(json.dumps(checkov_document(report, names), indent=2) + "\n")
    else:
        _print_checkov(report, _console())
    if report.failures:
        raise typer.Exit(EXIT_FAILED)


def _project_dir() -> Path:
    try:
        return find_project_dir()
    except ConfigError as exc:
        raise fail_config(exc) from None


class CheckFormat(StrEnum):
    """Output formats of ``sandboxkit check``."""

    TEXT = "text"
    JSON = "json"
    SARIF = "sarif"


PackConfigOption = Annotated[
    Path | None,
    typer.Option(
        "--policy-pack-config",
        help="Pack config file (default: the pack's config/<environment>.json).",
    ),
]


@app.command()
def check(
    *,
    stack: Annotated[
        str | None, typer.Option("--stack", "-s", help="Stack name (stacks/Pulumi.<stack>.yaml).")
    ] = None,
    all_stacks: Annotated[
        bool,
        typer.Option(
            "--all-stacks",
            help="Check every stack file, and (once) the kit's Dockerfiles and workflows.",
        ),
    ] = False,
    output: Annotated[
        CheckFormat, typer.Option("--format", help="text, json or sarif (SARIF 2.1.0).")
    ] = CheckFormat.TEXT,
    pack_config: PackConfigOption = None,
    no_checkov: Annotated[
        bool,
        typer.Option("--no-checkov", help="Skip checkov (CrossGuard only); the output says so."),
    ] = False,
    project_dir: ProjectOption = None,
) -> None:
    """Apply the sandbox-guard pack and checkov to STACK offline; exit 1 on a mandatory finding.

    checkov failures the baseline does not accept take their level from
    policy-packs/checkov/levels.json (mandatory in prod). Exit 2 on bad config, or when checkov
    is missing or fails (it is never skipped silently: pass --no-checkov to skip it).
    """
    try:
        root = project_dir or find_project_dir()
        if all_stacks == (stack is not None):
            raise ConfigError(Problem("--stack/--all-stacks", stack, "exactly one of the two"))
        names = list_stacks(root) if all_stacks else [stack]
        with gate.terminal_steps(output is CheckFormat.TEXT) as step:
            results = gate.check_stack_files(
                [name for name in names if name is not None],
                root,
                pack_config=pack_config,
                checkov=not no_checkov,
                project_files=all_stacks,
                step=step,
            )
    except ConfigError as exc:
        raise fail_config(exc) from None
    except CHECKOV_ERRORS as exc:
        raise fail_checkov(exc, "; or pass --no-checkov to skip checkov explicitly") from None
    if output is CheckFormat.JSON:
        documents = [gate.format_json(r) for r in results]
        if stack is not None:
            document: dict[str, Any] = documents[0]
        else:
            # A stack's environment is dev, staging or prod: never the project scope.
            project = [d for d in documents if d["environment"] == gate.PROJECT_SCOPE]
            stacks = [d for d in documents if d["environment"] != gate.PROJECT_SCOPE]
            document = {"stacks": stacks, **({"project": project[0]} if project else {})}
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    elif output is CheckFormat.SARIF:
        sys.stdout.write(json.dumps(gate.format_sarif(results), indent=2) + "\n")
    else:
        sys.stdout.write(gate.format_text(results))
    raise typer.Exit(gate.exit_code(results))


def _write_external_config(stack: str, target: str, out: Path, project_dir: Path | None) -> None:
    root = project_dir or find_project_dir()
    try:
        if target not in TARGET_MODULES:
            raise ConfigError(Problem("--target", target, f"one of {', '.join(TARGET_MODULES)}"))
        spec = load_stack_file(root, stack)
        if target not in spec.targets:
            raise ConfigError(
                Problem(
                    "sandboxkit:targets",
                    list(spec.targets),
                    f"a list including {target} (its external config is written from it)",
                )
            )
        found = get_target(target).external_config(
            spec.profile, spec.settings[target], spec.plans[target], out
        )
        if found is None:
            raise ConfigError(
                Problem("--target", target, "a target that needs config outside Pulumi")
            )
        if out.suffix not in found.suffixes:
            raise ConfigError(
                Problem("--out", str(out), f"a file ending in {' or '.join(found.suffixes)}")
            )
    except ConfigError as exc:
        raise fail_config(exc) from None
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(found.document, indent=2) + "\n")
    sys.stdout.write(f"wrote {out}; apply it with: {found.apply.format(out=out)}\n")


OutOption = Annotated[
    Path,
    typer.Option("--out", "-o", help="Where to write the config (its suffix picks the format)."),
]


@app.command("external-config")
def external_config(
    stack: StackOption,
    target: Annotated[str, typer.Option("--target", help="The target whose config to write.")],
    out: OutOption,
    project_dir: ProjectOption = None,
) -> None:
    """Write what TARGET needs applied outside Pulumi for STACK (e.g. cloudflare's wrangler
    config for the container application), validated as the Pulumi program validates it."""
    _write_external_config(stack, target, out, project_dir)


@app.command("cloudflare-config")
def cloudflare_config(
    stack: StackOption, out: OutOption, project_dir: ProjectOption = None
) -> None:
    """Write STACK's wrangler config for the cloudflare container application (not deployed);
    the same as ``external-config --target cloudflare``."""
    _write_external_config(stack, "cloudflare", out, project_dir)


@app.command("pack-config")
def pack_config_command(
    stack: StackOption,
    out: OutOption,
    pack_config: PackConfigOption = None,
    project_dir: ProjectOption = None,
) -> None:
    """Write STACK's pack config for ``pulumi preview --policy-pack-config``: the environment's
    config/<environment>.json (or --policy-pack-config) with SBX-NET-008's egress contracts taken
    from the stack, so the Pulumi CLI runs the pack as ``sandboxkit check`` does. Exit 2 on bad
    stack config or a pack config the pack's schemas reject."""
    root = project_dir or find_project_dir()
    try:
        rendered = render_stack(root, stack)
        pack = gate.pack_dir(root)
        path = pack_config or gate.environment_config_path(pack, rendered.spec.environment)
        document = gate.stack_pack_config(rendered, path)
        info = gate.InProcessAnalyzer(pack).GetAnalyzerInfo(empty_pb2.Empty())
        gate.policy_config(info, document, str(path))
    except ConfigError as exc:
        raise fail_config(exc) from None
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=2) + "\n")
    sys.stdout.write(
        f"wrote {out}; use it with: pulumi preview --stack {stack} "
        f"--policy-pack {pack.relative_to(root)} --policy-pack-config {out}\n"
    )


def main() -> None:
    """Console-script entry point (a process that renders once and exits)."""
    collector_off_until_exit()
    app()
