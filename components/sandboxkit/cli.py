"""``sandboxkit`` command line: ``preview`` (offline render), ``check`` (the policy gate) and
``cloudflare-config`` (the wrangler config for the cloudflare target's containers)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import sys
import textwrap
import traceback
from collections import Counter
from collections.abc import Iterator, Sequence
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from rich.tree import Tree
from typer.core import TyperGroup, TyperOption

from sandboxkit import __version__
from sandboxkit.config import load_stack_file
from sandboxkit.errors import MISSING, ConfigError, PrerequisiteError, Problem
from sandboxkit.explain import TargetEgress, explain_stack, explanation_document
from sandboxkit.parallel import render_stacks
from sandboxkit.profile import PROFILE_FIELDS
from sandboxkit.progress import Step, no_steps, rendering, terminal_steps
from sandboxkit.project import list_stacks, project_root, stack_file
from sandboxkit.render import RenderedStack, collector_off_until_exit, render_stack, to_display
from sandboxkit.targets import TARGET_MODULES, KitContext, TargetSpec, get_target

if TYPE_CHECKING:
    from sandboxkit.checkov_bridge.runner import CheckovReport
    from sandboxkit.local.plan import LocalPlan
    from sandboxkit.local.runner import AuditLog

EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_OUTPUT = 74  # EX_IOERR (sysexits.h): stdout closed, full, or a pipe closed early
EXIT_CRASH = 70  # EX_SOFTWARE (sysexits.h): a bug in the kit, never a verdict on the stack
DEBUG_ENV = "SANDBOXKIT_DEBUG"
"""Set to 1 to print the traceback of an unexpected error (exit 70)."""

EXIT_CODES_HELP = (
    "Exit codes: 0 success; 1 a mandatory finding (check, checkov); 2 bad config, arguments or "
    "files (every bad key named), or a missing tool or package (the command to install it "
    f"named); {EXIT_CRASH} an unexpected error in the kit (one line; "
    f"{DEBUG_ENV}=1 prints the traceback); {EXIT_OUTPUT} the output could not be written "
    "(stdout closed or full, or a pipe closed early)."
)


def _refuse_repeated_stack(command_name: str, command: Any, given: Sequence[str]) -> None:
    """Exit 2 when ``given`` (the ``--stack`` values on the command line) holds more than one:
    click keeps the last of a single-value option silently (``check --stack a --stack b``
    judged ``b`` alone)."""
    if len(given) < 2:
        return
    times = "twice" if len(given) == 2 else f"{len(given)} times"
    every = any(param.name == "all_stacks" for param in command.params)
    raise fail_config(
        ConfigError(
            Problem(
                "--stack",
                list(given),
                f"one stack: given {times} ({', '.join(given)}); {command_name} takes one "
                f"stack{', or --all-stacks' if every else ''}",
            )
        )
    )


class _KitGroup(TyperGroup):
    """The root command group: a command whose ``--stack`` takes one value refuses it given
    more than once (``_refuse_repeated_stack``), so no stack given is ever ignored."""

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        # typer's own click (typer._click) types ctx and the command; Any keeps them private.
        name, command, rest = super().resolve_command(ctx, args)
        params = command.params if command is not None else []
        stack = next((p for p in params if p.name == "stack" and isinstance(p, TyperOption)), None)
        if command is None or name is None or stack is None or stack.multiple:
            return name, command, rest
        # The command's own parser, its --stack collecting every value instead of the last.
        context = command.context_class(command, info_name=name, parent=ctx)
        parser = command.make_parser(context)
        parser.add_option(obj=stack, opts=stack.opts, dest="stack", action="append")
        try:
            given = parser.parse_args(args=list(rest))[0].get("stack") or []
        except typer.TyperException:
            given = []  # the command's own parse reports it
        _refuse_repeated_stack(name, command, given)
        return name, command, rest


app = typer.Typer(
    cls=_KitGroup,
    add_completion=False,
    no_args_is_help=True,
    # Plain click help and errors: flags show as flags (no "<bool>"), nothing is read as markup
    # or emoji, and CI logs get plain text.
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    help="Hardened sandbox stacks for AI-agent code: offline preview and policy gate.\n\n"
    + EXIT_CODES_HELP,
)
StackOption = Annotated[
    str, typer.Option("--stack", "-s", help="Stack name (stacks/Pulumi.<stack>.yaml).")
]
ProjectOption = Annotated[
    Path | None,
    typer.Option("--project-dir", help="Folder with Pulumi.yaml (default: nearest above here)."),
]


def _print_version(value: bool) -> None:
    if value:
        sys.stdout.write(f"sandboxkit {__version__}\n")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", is_eager=True, callback=_print_version, help="Print the version."
        ),
    ] = False,
) -> None:
    """Hardened sandbox stacks for AI-agent code: offline preview and policy gate."""


def _console(*, stderr: bool = False) -> Console:
    """A console for the kit's output; ``stderr`` for messages beside it.

    A terminal gets colour and tables at its width; piped output (CI logs, files) plain text
    at $COLUMNS (rich's 80 when unset): no colour codes, no box drawing. User text (keys,
    values, names) is interpolated with ``escape`` where markup is used, and emoji codes are
    never replaced (``sandboxkit:fire`` stays as written).
    """
    if stderr:
        return Console(stderr=True, soft_wrap=True, highlight=False, emoji=False)
    if sys.stdout.isatty():
        return Console(highlight=False, emoji=False)
    return Console(highlight=False, emoji=False, no_color=True, color_system=None)


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
    """Print ``rows`` as a table that fits ``console.width``, never cutting a cell: a host
    name (``codeload.github.com:8443``) stays whole, so two probes never look alike.

    On a terminal a rich table (cells may hold rich markup) when it fits the width unsqueezed;
    otherwise, and on a pipe, rows as lines (``_row_lines``): the short columns aligned on
    one line and column ``below`` (the long one) beneath it, indented and wrapped; when the
    short columns do not fit one line, the first (the probe, the resource) on its own line
    and the others under it. Colour on a terminal only; no box drawing in lines.
    """
    if console.is_terminal:
        table = Table(title=title or None, show_lines=False)
        for column in columns:
            table.add_column(column, overflow="fold")
        for row in rows:
            table.add_row(*row)
        # Its width with no line to fit: rich would squeeze (and fold) a wider one.
        natural = console.measure(table, options=console.options.update_width(10**6))
        if natural.maximum <= console.width:
            console.print(table)
            return
    if title:
        console.print(title, markup=False)
    for line in _row_lines(columns, rows, below % len(columns), console.width):
        console.print(line, soft_wrap=True)


def _row_lines(
    columns: Sequence[str], rows: Sequence[Sequence[str]], long_at: int, width: int
) -> Iterator[Text]:
    """The lines of ``print_table`` without a table (its docstring), the header first: rich
    ``Text`` keeping each short cell's markup as style, aligned by plain length; the long
    column plain, wrapped to ``width``."""
    table = [[Text.from_markup(cell) for cell in row] for row in (columns, *rows)]
    short = [[cell for i, cell in enumerate(row) if i != long_at] for row in table]
    widths = [max(len(row[i].plain) for row in short) for i in range(len(short[0]))]
    one_line = sum(widths) + 2 * (len(widths) - 1) <= width
    wrap_at = max(width - len(_PLAIN_INDENT), 20)
    for row, cells in zip(table, short, strict=True):
        if one_line:
            yield _aligned(cells, widths, "")
        else:
            # The first column whole on its own line: a name is never cut to fit the others.
            yield cells[0]
            if len(cells) > 1:
                yield _aligned(cells[1:], widths[1:], _PLAIN_INDENT)
        for part in textwrap.wrap(row[long_at].plain, wrap_at) or [""]:
            yield Text(f"{_PLAIN_INDENT}{part}".rstrip())


def _aligned(cells: Sequence[Text], widths: Sequence[int], indent: str) -> Text:
    line = Text(indent)
    for cell, width in zip(cells, widths, strict=True):
        line.append_text(cell)
        line.append(" " * (width - len(cell.plain) + 2))
    line.rstrip()
    return line


def fail_config(exc: ConfigError) -> typer.Exit:
    """Print a config error to stderr (no traceback) and return the exit-2 signal."""
    console = _console(stderr=True)
    console.print("[bold red]error:[/] invalid input")
    for problem in exc.problems:
        console.print(f"  {problem}", markup=False)
    return typer.Exit(EXIT_CONFIG)


def checkov_errors() -> tuple[type[Exception], ...]:
    """What says checkov could not give a verdict (exit 2 naming why, never a silent skip).

    Imported when called, in an ``except`` being matched: the commands that never run checkov
    (``preview``) do not import the checkov bridge or the gate (about 0.3 s).
    """
    from sandboxkit.checkov_bridge.baseline import BaselineError
    from sandboxkit.checkov_bridge.mapping import UnmappedTypeError
    from sandboxkit.checkov_bridge.process import CheckovMissingError
    from sandboxkit.checkov_bridge.runner import CheckovFailedError

    return (CheckovMissingError, CheckovFailedError, BaselineError, UnmappedTypeError)


def fail_checkov(exc: Exception, hint: str = "") -> typer.Exit:
    """Print why checkov gave no verdict to stderr and return the exit-2 signal."""
    _console(stderr=True).print(f"[bold red]error:[/] {escape(f'{exc}{hint}')}")
    return typer.Exit(EXIT_CONFIG)


def load(stack: str, project_dir: Path | None, step: Step = no_steps) -> RenderedStack:
    """Render ``stack`` offline, telling ``step`` each target; ``typer.Exit(2)`` on bad config."""
    try:
        [rendered] = render_stacks(project_root(project_dir), [stack], rendering(step))
        return rendered
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
    console.print(f"[bold]Stack[/] {escape(rendered.stack)} ({rendered.spec.environment})")
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
        tuple(
            map(
                escape,
                (
                    row["target"],
                    row["field"],
                    f"{row['value']}" + ("" if row["explicit"] else " (default)"),
                    row["kind"],
                    row["where"],
                ),
            )
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
        console.print(f"[yellow]warning:[/] {escape(warning)}")


def _print_egress(explained: list[TargetEgress], console: Console) -> None:
    for item in explained:
        contract = item.contract
        head = f"[bold]Egress of {item.target}[/]: mode {contract.mode}"
        if contract.control_plane:
            head += f"; control plane {escape(', '.join(map(str, contract.control_plane)))}"
        console.print(head)
        if item.refusal:
            console.print(f"  [red]cannot verify: {escape(item.refusal)}[/]")
            continue
        if item.effective is None:
            console.print("  [red]no egress reader: this target's egress is not explained[/]")
            continue
        rows = []
        for probe in item.probes:
            verdict = item.effective.admits(probe.host, probe.port, probe.protocol)
            contract_says = contract.admits(probe.host, probe.port, probe.protocol)
            mark = "" if verdict.admitted == contract_says else " [red]<- differs[/]"
            rows.append(
                (
                    escape(str(probe)),
                    probe.protocol,
                    probe.kind,
                    ("admitted" if verdict else "refused") + mark,
                    "admitted" if contract_says else "refused",
                    escape("; ".join(verdict.enforced)),
                    escape(", ".join(sorted({g.basis for g in verdict.grants}))),
                )
            )
        columns = ("probe", "protocol", "kind", "target", "contract", "how", "basis")
        print_table(console, columns, rows, below=5)
        for line in (*map(str, item.differences), *map(str, item.findings)):
            console.print(f"  [red]{escape(line)}[/]")
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
    with terminal_steps(not as_json) as step:
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
    """The JSON document of ``sandboxkit checkov --json``: an accepted finding at the level it
    would fail at, with ``"accepted": true`` and the baseline entry's ``reason``."""
    from sandboxkit.gate.results import Violation

    return {
        "stacks": stacks,
        "violations": [f.violation() for f in report.failures],
        "accepted": [
            Violation(**f.violation(), line=None, file=None, reason=f.accepted.reason).document()
            for f in report.accepted
            if f.accepted is not None
        ],
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
        console.print(f"[bold]{escape(urn)}[/]")
        for finding in findings:
            console.print(f"  [red]FAILED[/] {escape(finding.policy)}  {escape(finding.message)}")
    for finding in report.accepted:
        assert finding.accepted is not None
        console.print(
            "[yellow]accepted[/] "
            + escape(f"{finding.policy} on {finding.resource}: {finding.accepted.reason}")
        )
    rows = [
        (
            escape(type_token),
            str(row["resources"]),
            str(len(row["checks"])),
            escape(", ".join(row["kit_checks"])),
        )
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
    try:
        root = project_root(project_dir)
        names = list_stacks(root) if all_stacks else list(stack or [])
        if not names:
            raise ConfigError(Problem("--stack", MISSING, "a stack name or --all-stacks"))
    except ConfigError as exc:
        raise fail_config(exc) from None
    rendered = [load(name, root) for name in names]
    from sandboxkit.checkov_bridge.runner import scan_rendered

    try:
        report = scan_rendered(root, rendered, include_project_files=project_files)
    except checkov_errors() as exc:
        raise fail_checkov(exc) from None
    if as_json:
        sys.stdout.write(json.dumps(checkov_document(report, names), indent=2) + "\n")
    else:
        _print_checkov(report, _console())
    if report.failures:
        raise typer.Exit(EXIT_FAILED)


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
        CheckFormat,
        typer.Option("--format", case_sensitive=False, help="text, json or sarif (SARIF 2.1.0)."),
    ] = CheckFormat.TEXT,
    pack_config: PackConfigOption = None,
    no_checkov: Annotated[
        bool,
        typer.Option("--no-checkov", help="Skip checkov (CrossGuard only); the output says so."),
    ] = False,
    base: Annotated[
        str | None,
        typer.Option(
            "--base",
            help="A git revision (the pull request's base) whose gate judges this tree's stack "
            "files: its pack, pack config, checkov levels and baseline, sandboxkit.yaml and kit "
            "code; each gate file this tree changes is named in the output.",
        ),
    ] = None,
    project_dir: ProjectOption = None,
) -> None:
    """Apply the sandbox-guard pack and checkov to STACK offline; exit 1 on a mandatory finding.

    checkov failures the baseline does not accept take their level from
    policy-packs/checkov/levels.json (mandatory in prod). Exit 2 on bad config, or when checkov
    is missing or fails (it is never skipped silently: pass --no-checkov to skip it).
    """
    from sandboxkit import gate

    try:
        root = project_root(project_dir)
        if all_stacks == (stack is not None):
            raise ConfigError(Problem("--stack/--all-stacks", stack, "exactly one of the two"))
        if base is not None:
            _check_from_base(
                root,
                base,
                stack=stack,
                output=output,
                pack_config=pack_config,
                no_checkov=no_checkov,
            )
        with terminal_steps(output is CheckFormat.TEXT) as step:
            if stack is not None:
                bad_files: list[gate.BadFile] = []
                results = gate.check_stack_files(
                    [stack], root, pack_config=pack_config, checkov=not no_checkov, step=step
                )
            else:
                # Every stack is judged: a bad file is named and the others still run.
                results, bad_files = gate.check_each_stack_file(
                    list_stacks(root),
                    root,
                    pack_config=pack_config,
                    checkov=not no_checkov,
                    project_files=True,
                    step=step,
                )
    except ConfigError as exc:
        raise fail_config(exc) from None
    except gate.MissingToolsError as exc:
        raise fail_checkov(exc) from None
    except checkov_errors() as exc:
        raise fail_checkov(exc, "; or pass --no-checkov to skip checkov explicitly") from None
    if output is CheckFormat.JSON:
        documents = [gate.format_json(r) for r in results]
        if stack is not None:
            document: dict[str, Any] = documents[0]
        else:
            # A stack's environment is dev, staging or prod: never the project scope.
            project = [d for d in documents if d["environment"] == gate.PROJECT_SCOPE]
            stacks = [d for d in documents if d["environment"] != gate.PROJECT_SCOPE]
            document = {
                "stacks": stacks,
                **({"project": project[0]} if project else {}),
                "bad_files": [bad.document() for bad in bad_files],
            }
        sys.stdout.write(json.dumps(document, indent=2) + "\n")
    elif output is CheckFormat.SARIF:
        sys.stdout.write(json.dumps(gate.format_sarif(results, bad_files), indent=2) + "\n")
    else:
        sys.stdout.write(gate.format_text(results, bad_files))
    for bad in bad_files:
        _console(stderr=True).print(
            f"[bold red]error:[/] stack {escape(bad.stack)} not judged: {escape(bad.file)} "
            f"has {len(bad.problems)} refused key(s) (listed in the report)"
        )
    raise typer.Exit(gate.exit_code(results, bad_files))


def _check_from_base(
    root: Path,
    ref: str,
    *,
    stack: str | None,
    output: CheckFormat,
    pack_config: Path | None,
    no_checkov: bool,
) -> NoReturn:
    """``check --base REF``: REF's gate on this tree's judged files (``trusted_base``), its
    report with every gate change named, its exit code.

    Raises:
        ConfigError: naming ``--base`` or ``--policy-pack-config`` (the base's pack config
            decides), and what ``trusted_base.materialised`` raises.
        typer.Exit: the base gate's exit code (2 when it gave no report to annotate).
    """
    from sandboxkit import trusted_base

    if pack_config is not None:
        raise ConfigError(
            Problem(
                "--policy-pack-config",
                str(pack_config),
                "no file with --base: the base's config/<environment>.json decides",
            )
        )
    arguments = [
        *(["--stack", stack] if stack is not None else ["--all-stacks"]),
        "--format",
        output.value,
        *(["--no-checkov"] if no_checkov else []),
    ]
    with trusted_base.materialised(root, ref) as tree:
        done = trusted_base.run_base_gate(tree, arguments, trusted_base.checkov_for(root))
        # The base's messages name its copy of this tree's files: name this tree's instead.
        said, report = (
            text.replace(str(tree.project_dir), str(root)) for text in (done.stderr, done.stdout)
        )
    sys.stderr.write(said)
    annotated = trusted_base.annotated(report, output.value, tree)
    if annotated is None:
        annotated = trusted_base.annotated(
            trusted_base.no_report(output.value, said), output.value, tree
        )
        assert annotated is not None
        sys.stdout.write(annotated)
        raise typer.Exit(done.returncode or EXIT_CONFIG)
    sys.stdout.write(annotated)
    raise typer.Exit(done.returncode)


def _inputs(root: Path, *read: Path) -> list[Path]:
    """The files a writing command reads, which ``--out`` must never replace: Pulumi.yaml,
    sandboxkit.yaml, every stack file, the policy packs, and ``read`` (a pack config file)."""
    found = [root / "Pulumi.yaml", root / "Pulumi.yml", root / "sandboxkit.yaml", *read]
    found += [stack_file(root, name) for name in list_stacks(root)]
    packs = root / "policy-packs"
    found += [p for p in packs.rglob("*") if p.is_file()] if packs.is_dir() else []
    return found


def _refuse_inputs(out: Path, inputs: Sequence[Path]) -> None:
    """Raise ``ConfigError`` naming ``--out`` when it is one of ``inputs`` (``_inputs``: a
    stack file, Pulumi.yaml, a pack config), by path or as the same file."""
    target = out.resolve()
    for path in inputs:
        if target == path.resolve() or (out.exists() and path.exists() and out.samefile(path)):
            raise ConfigError(
                Problem(
                    "--out",
                    str(out),
                    f"a path that is none of the files the command reads (this is {path}): "
                    "write the config to a new file",
                )
            )


def _write_out(out: Path, document: Any) -> None:
    """Write ``document`` as JSON to ``--out``, in a folder that exists.

    Raises:
        ConfigError: naming ``--out`` when its folder does not exist, or it cannot be written
            (a folder, a path under a file, no permission).
    """
    if not out.parent.is_dir():
        raise ConfigError(
            Problem("--out", str(out), f"a file in a folder that exists (create {out.parent})")
        )
    try:
        out.write_text(json.dumps(document, indent=2) + "\n")
    except OSError as exc:
        raise ConfigError(
            Problem("--out", str(out), f"a file path that can be written ({exc.strerror})")
        ) from None


def _needs_external_config(target: str) -> bool:
    """Whether ``target``'s spec writes config outside Pulumi (overrides ``external_config``)."""
    return type(get_target(target)).external_config is not TargetSpec.external_config


def _write_external_config(stack: str, target: str, out: Path, project_dir: Path | None) -> None:
    try:
        root = project_root(project_dir)
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
                Problem(
                    "--target",
                    target,
                    "a target that needs config outside Pulumi: "
                    + ", ".join(n for n in TARGET_MODULES if _needs_external_config(n)),
                )
            )
        _refuse_inputs(out, _inputs(root))
        if out.suffix not in found.suffixes:
            raise ConfigError(
                Problem("--out", str(out), f"a file ending in {' or '.join(found.suffixes)}")
            )
        _write_out(out, found.document)
    except ConfigError as exc:
        raise fail_config(exc) from None
    sys.stdout.write(f"wrote {out}; apply it with: {found.apply.format(out=out)}\n")


OutOption = Annotated[
    Path,
    typer.Option(
        "--out",
        "-o",
        help="Where to write the config, as JSON: a .json file (wrangler also reads .jsonc) in "
        "a folder that exists, never a file the command reads.",
    ),
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
    try:
        from google.protobuf import empty_pb2

        from sandboxkit import gate

        root = project_root(project_dir)
        rendered = render_stack(root, stack)
        pack = gate.pack_dir(root)
        path = pack_config or gate.environment_config_path(pack, rendered.spec.environment)
        document = gate.stack_pack_config(rendered, path)
        info = gate.InProcessAnalyzer(pack).GetAnalyzerInfo(empty_pb2.Empty())
        gate.policy_config(info, document, str(path))
        _refuse_inputs(out, _inputs(root, path))
        if out.suffix != ".json":
            raise ConfigError(
                Problem(
                    "--out",
                    str(out),
                    "a file ending in .json (the pack config is JSON, as pulumi preview "
                    f"--policy-pack-config reads it): e.g. {out.with_suffix('.json')}",
                )
            )
        _write_out(out, document)
    except ConfigError as exc:
        raise fail_config(exc) from None
    sys.stdout.write(
        f"wrote {out}; use it with: pulumi preview --stack {stack} "
        f"--policy-pack {pack.relative_to(root)} --policy-pack-config {out}\n"
    )


@app.command("deployer-policy")
def deployer_policy(
    stack: StackOption,
    target: Annotated[str, typer.Option("--target", help="The target whose needs to print.")],
    project_dir: ProjectOption = None,
) -> None:
    """Print what the identity running `pulumi up` / `pulumi destroy` for TARGET of STACK needs,
    as JSON in the cloud's own shape (IAM policy, GCP roles and APIs, Azure role assignments,
    Cloudflare token permission groups, Kubernetes ClusterRole), derived from STACK's render;
    how to apply it goes to stderr. Exit 2 on bad stack config or a target STACK does not
    list."""
    try:
        if target not in TARGET_MODULES:
            raise ConfigError(Problem("--target", target, f"one of {', '.join(TARGET_MODULES)}"))
        rendered = render_stack(project_root(project_dir), stack)
        if target not in rendered.spec.targets:
            raise ConfigError(
                Problem(
                    "sandboxkit:targets",
                    list(rendered.spec.targets),
                    f"a list including {target} (its deployer policy is derived from its render)",
                )
            )
        context = KitContext(stack, rendered.spec.environment, target)
        found = get_target(target).deployer_policy(
            context, rendered.spec.settings[target], rendered.target_views(target)
        )
        if found is None:
            raise ConfigError(
                Problem("--target", target, "a target that declares its deployer policy")
            )
    except ConfigError as exc:
        raise fail_config(exc) from None
    sys.stdout.write(json.dumps(found.document, indent=2) + "\n")
    _console(stderr=True).print(found.apply, markup=False)


class OutputError(Exception):
    """stdout could not take the output (closed, full, or a pipe closed early)."""


class _GuardedStdout:
    """``sys.stdout`` for the commands: a failed write or flush raises ``OutputError`` (not an
    ``OSError``, which click would turn into exit 1, the gate's failure code).

    Text goes to the file descriptor with ``os.write`` until every byte is taken: CPython's
    buffered writer, handed one write larger than a pipe holds, reported nothing when the
    reader left after the first part (``preview --json | head -c 10`` exited 0 with the
    output cut). A stream without a descriptor (a test runner's) is written as it is.
    """

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        if self._stream is None:
            raise OutputError(errno.EBADF, "stdout is closed")
        try:
            descriptor = self._stream.fileno()
        except (AttributeError, OSError, ValueError):
            descriptor = None
        try:
            if descriptor is None:
                return int(self._stream.write(text))
            self._stream.flush()
            data = memoryview(text.encode(self._stream.encoding, self._stream.errors))
            while data:
                data = data[os.write(descriptor, data) :]
        except OSError as exc:
            raise OutputError(exc.errno, exc.strerror) from None
        return len(text)

    def flush(self) -> None:
        if self._stream is None:
            return
        try:
            self._stream.flush()
        except OSError as exc:
            raise OutputError(exc.errno, exc.strerror) from None

    def isatty(self) -> bool:
        return self._stream is not None and bool(self._stream.isatty())

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _say(line: str) -> None:
    # stderr may be closed too: then the exit code alone speaks.
    if sys.stderr is not None:
        try:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except OSError:
            pass


def _silence_stdout() -> None:
    # What is still buffered must not fail again at interpreter exit (Python's SIGPIPE note).
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
    except OSError:
        pass


def main() -> None:
    """Console-script entry point: the commands' exit codes, and two of its own.

    Exit ``EXIT_OUTPUT`` (74) when stdout cannot take the output (quietly for a pipe closed
    early), ``EXIT_CONFIG`` (2) with its one line when a ``PrerequisiteError`` (node, the
    Worker's npm packages) stops a command, ``EXIT_CRASH`` (70) with a one-line message on
    any unexpected error, so a crash is never read as the gate's exit 1; ``SANDBOXKIT_DEBUG=1``
    adds the traceback.
    """
    collector_off_until_exit()
    real_stdout = sys.stdout
    sys.stdout = _GuardedStdout(real_stdout)
    code: int | str | None = 0
    try:
        try:
            app()
        except SystemExit as exc:
            code = exc.code
        sys.stdout.flush()
    except OutputError as exc:
        if exc.args[0] != errno.EPIPE:
            _say(f"sandboxkit: could not write the output: {exc.args[1]}")
        code = EXIT_OUTPUT
        _silence_stdout()
    except PrerequisiteError as exc:
        # Not a crash: the machine lacks what the kit runs; the message says how to install it.
        _say(f"sandboxkit: error: {exc}")
        code = EXIT_CONFIG
    except Exception as exc:
        if os.environ.get(DEBUG_ENV):
            traceback.print_exc()
        first = str(exc).splitlines()[0] if str(exc) else ""
        _say(
            f"sandboxkit: internal error (exit {EXIT_CRASH}, not a verdict on the stack): "
            f"{type(exc).__name__}: {first[:300]}; set {DEBUG_ENV}=1 for the traceback"
        )
        code = EXIT_CRASH
    finally:
        sys.stdout = real_stdout
    sys.exit(code)


def _local_plan(stack: str, project_dir: Path | None) -> LocalPlan:
    """The ``local`` plan of ``stack`` (``sandboxkit run`` and ``verify``).

    Raises:
        ConfigError: bad stack config, or a stack that does not list ``local``.
    """
    spec = load_stack_file(project_root(project_dir), stack)
    if "local" not in spec.targets:
        raise ConfigError(
            Problem(
                "sandboxkit:targets",
                list(spec.targets),
                "a list including local (sandboxkit run and verify run the local target's sandbox)",
            )
        )
    plan: LocalPlan = spec.plans["local"]
    return plan


@contextlib.contextmanager
def _local_audit(plan: LocalPlan) -> Iterator[AuditLog]:
    """The plan's audit log, open while a ``local`` sandbox runs; a host that cannot enforce a
    limit (``HostError``) exits 2 with its reason."""
    from sandboxkit.local.isolation import HostError
    from sandboxkit.local.runner import AuditLog
    from sandboxkit.local.spec import audit_path

    try:
        audit = AuditLog(audit_path(plan), plan["retention_days"])
    except ConfigError as exc:
        raise fail_config(exc) from None
    try:
        yield audit
    except HostError as exc:
        _say(f"sandboxkit: error: {exc}")
        raise typer.Exit(EXIT_CONFIG) from None
    finally:
        audit.close()


@app.command(context_settings={"allow_interspersed_args": False})
def run(
    stack: StackOption,
    command: Annotated[
        list[str], typer.Argument(help="The command and its arguments, after --.", metavar="CMD")
    ],
    workdir: Annotated[
        Path | None,
        typer.Option(
            "--workdir", help="A folder whose contents are copied into the sandbox's workdir."
        ),
    ] = None,
    project_dir: ProjectOption = None,
) -> None:
    """Run CMD in a local sandbox under STACK's profile (the stack lists the local target);
    exit with CMD's code (126/127 as a shell gives them, 137 when a limit killed it)."""
    from sandboxkit.local.runner import run_sandbox

    try:
        plan = _local_plan(stack, project_dir)
        if workdir is not None and not workdir.is_dir():
            raise ConfigError(Problem("--workdir", str(workdir), "an existing folder"))
    except ConfigError as exc:
        raise fail_config(exc) from None
    with _local_audit(plan) as audit:
        seed = None if workdir is None else workdir.resolve()
        result = run_sandbox(plan, command, seed=seed, audit=audit, stack=stack)
    for limit in result.limits_hit:
        _say(f"sandboxkit: the sandbox hit {limit}")
    raise typer.Exit(result.exit_code)


@app.command()
def verify(
    stack: StackOption,
    target: Annotated[str, typer.Option("--target", help="The target to verify (local).")],
    uplink_netns: Annotated[
        Path | None,
        typer.Option(
            "--uplink-netns",
            help="Dial from this network namespace (/run/netns/NAME), e.g. a test's fake internet.",
        ),
    ] = None,
    project_dir: ProjectOption = None,
) -> None:
    """Try --explain-egress's probes from inside a real sandbox of STACK and print each
    observed answer beside the contract's; exit 1 on any difference (local target only)."""
    from sandboxkit.local.network import NamespaceSockets
    from sandboxkit.local.verify import print_observations
    from sandboxkit.local.verify import verify as verify_plan

    try:
        if target != "local":
            raise ConfigError(
                Problem("--target", target, "local (the one target whose sandbox runs here)")
            )
        plan = _local_plan(stack, project_dir)
        netns = None if uplink_netns is None else os.open(uplink_netns, os.O_RDONLY)
    except ConfigError as exc:
        raise fail_config(exc) from None
    except OSError as exc:
        raise fail_config(
            ConfigError(
                Problem(
                    "--uplink-netns", str(uplink_netns), f"a network namespace ({exc.strerror})"
                )
            )
        ) from None
    sockets = None if netns is None else NamespaceSockets(netns)
    try:
        with _local_audit(plan) as audit:
            observations = verify_plan(plan, audit=audit, sockets=sockets, stack=stack)
    finally:
        if sockets is not None:
            sockets.close()
    print_observations(observations)
    raise typer.Exit(1 if any(o.differs for o in observations) else 0)
