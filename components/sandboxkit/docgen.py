"""The generated parts of the docs and the pack: each target's settings table in
``docs/targets/<target>.md`` (from its settings model), the rule table of
``docs/policy-gate.md`` and the pack's ``config/<env>.json`` (from the rule catalogue).

A target doc is prose written by hand around one generated section::

    <!-- BEGIN SETTINGS -->
    | key | default | meaning |
    ...
    <!-- END SETTINGS -->

The rows come from ``get_target(name).settings_model``: one per field, keyed by its config
alias, in declaration order with ``unenforced`` (common to every target) last. A nested model
adds ``a.b`` rows under its own row (``a[].b`` for a list of models). The default column says
``(required)``, ``(required, secret)``, ``(unset)`` for an optional key without a value, or the
default as YAML writes it. The meaning is the field's ``Field(description=...)`` or its entry
in the ``Attributes:`` section (Google style, keyed by alias or attribute name) of the nearest
class docstring that has one. A field with neither is an error: no setting goes undocumented.

The rule table sits between ``<!-- BEGIN RULES -->`` and ``<!-- END RULES -->`` of
``docs/policy-gate.md``: one row per rule of ``sandboxkit.policy_rules.CATALOGUE`` with what
its handlers cover (``sandboxkit.kit_guard.coverage``), its thresholds and its levels. The
pack's ``config/<env>.json`` sets ``all`` to the level most rules have in that environment and
names each rule at another level.

Run ``python -m sandboxkit.docgen --write`` after changing a settings model or the catalogue;
``--check`` (and ``tests/core/test_docs.py``) fails while a file differs from what they give.
"""

from __future__ import annotations

import argparse
import inspect
import json
import re
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Union, get_args, get_origin

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from sandboxkit.kit_guard import coverage_text
from sandboxkit.policy_rules import CATALOGUE
from sandboxkit.project import ENVIRONMENTS, find_project_dir
from sandboxkit.targets import TARGET_MODULES, TargetSettings, get_target

BEGIN = "<!-- BEGIN SETTINGS -->"
END = "<!-- END SETTINGS -->"
TARGET_DOCS = Path("docs") / "targets"
HEADER = "| key | default | meaning |\n|---|---|---|"
# An entry of an ``Attributes:`` section: ``name: text`` one indent (4 spaces) below it.
_ENTRY = re.compile(r"^ {4}(\w+): ?(.*)$")


@dataclass(frozen=True)
class SettingRow:
    """One row of a settings table.

    Attributes:
        key: the config key below ``sandboxkit:<target>``, dotted for nested models.
        default: ``(required)``, ``(required, secret)``, ``(unset)`` or the YAML default.
        meaning: Markdown text, or ``None`` when the model documents nothing for the key.
    """

    key: str
    default: str
    meaning: str | None


def attribute_entries(docstring: str | None) -> dict[str, str]:
    """The ``Attributes:`` section of a Google-style docstring as ``{name: text}``.

    Continuation lines are joined with single spaces, and double-backquoted code becomes
    Markdown code. A docstring without the section gives ``{}``.
    """
    entries: dict[str, list[str]] = {}
    current: list[str] | None = None
    inside = False
    for line in inspect.cleandoc(docstring or "").splitlines():
        if line.strip() == "Attributes:":
            inside = True
        elif inside and line and not line.startswith(" "):
            break
        elif inside and (match := _ENTRY.match(line)):
            current = entries.setdefault(match.group(1), [match.group(2)])
        elif current is not None and line.strip():
            current.append(line.strip())
    return {
        name: re.sub(r"``([^`]+)``", r"`\1`", " ".join(parts)) for name, parts in entries.items()
    }


def _documented(model: type[BaseModel]) -> Iterator[tuple[type[BaseModel], dict[str, str]]]:
    """Each pydantic class of ``model``'s MRO with its attribute entries, nearest first."""
    for cls in model.__mro__:
        if isinstance(cls, type) and issubclass(cls, BaseModel) and cls is not BaseModel:
            yield cls, attribute_entries(cls.__dict__.get("__doc__"))


def _meaning(model: type[BaseModel], name: str, info: FieldInfo) -> str | None:
    if info.description:
        return info.description
    for _, entries in _documented(model):
        for key in (info.alias, name):
            if key and key in entries:
                return entries[key]
    return None


def _nested(annotation: Any) -> tuple[type[BaseModel], str] | None:
    """The model a field holds (directly, optionally or as a tuple) and the key suffix."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _nested(get_args(annotation)[0])
    if origin in (Union, types.UnionType):
        options = [arg for arg in get_args(annotation) if arg is not type(None)]
        return _nested(options[0]) if len(options) == 1 else None
    if origin is tuple:
        inner = _nested(get_args(annotation)[0])
        return (inner[0], "[]") if inner else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, ""
    return None


def _plain(value: Any) -> Any:
    """A default as YAML data: models by alias, tuples as lists."""
    if isinstance(value, BaseModel):
        return _plain(value.model_dump(by_alias=True))
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    return value


def _default(info: FieldInfo) -> str:
    secret = isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get("secret")
    if info.is_required():
        return "(required, secret)" if secret else "(required)"
    value = info.get_default(call_default_factory=True)
    if value is None:
        return "(unset)"
    text = yaml.safe_dump(_plain(value), default_flow_style=True, sort_keys=False, width=10**6)
    return f"`{text.removesuffix('...' + chr(10)).strip()}`"


def setting_rows(model: type[BaseModel], prefix: str = "") -> list[SettingRow]:
    """Every row of ``model``'s table, nested models expanded below their own row."""
    fields = sorted(
        model.model_fields.items(),
        key=lambda item: item[0] in TargetSettings.model_fields,
    )
    rows: list[SettingRow] = []
    for name, info in fields:
        key = f"{prefix}{info.alias or name}"
        rows.append(SettingRow(key, _default(info), _meaning(model, name, info)))
        nested = _nested(info.annotation)
        if nested:
            rows.extend(setting_rows(nested[0], f"{key}{nested[1]}."))
    return rows


def stale_entries(model: type[BaseModel]) -> list[str]:
    """Attribute entries of ``model``'s classes (nested models too) naming no field."""
    stale: list[str] = []
    for cls, entries in _documented(model):
        known = {key for name, info in cls.model_fields.items() for key in (name, info.alias)}
        stale += [f"{cls.__name__}.{name}" for name in entries if name not in known]
    for info in model.model_fields.values():
        nested = _nested(info.annotation)
        if nested:
            stale += stale_entries(nested[0])
    return sorted(set(stale))


def settings_table(rows: list[SettingRow]) -> str:
    """The Markdown table of ``rows`` (``|`` in a meaning escaped)."""
    body = [
        f"| `{row.key}` | {row.default} | {(row.meaning or '').replace('|', chr(92) + '|')} |"
        for row in rows
    ]
    return "\n".join([HEADER, *body])


def with_table(document: str, table: str, path: Path, begin: str = BEGIN, end: str = END) -> str:
    """``document`` with the text between its ``begin`` and ``end`` markers replaced by
    ``table``.

    Raises:
        ValueError: when the markers are missing, repeated or out of order (naming ``path``).
    """
    if document.count(begin) != 1 or document.count(end) != 1:
        raise ValueError(f"{path}: needs one {begin} and one {end} line")
    head, _, rest = document.partition(begin)
    _, found, tail = rest.partition(end)
    if not found:
        raise ValueError(f"{path}: {end} comes before {begin}")
    return f"{head}{begin}\n{table}\n{end}{tail}"


# --- The rule table and the pack's per-environment config -----------------------------------------

RULES_DOC = Path("docs") / "policy-gate.md"
RULES_BEGIN = "<!-- BEGIN RULES -->"
RULES_END = "<!-- END RULES -->"
RULES_HEADER = (
    "| id (CrossGuard name in lower case) | severity | scope | rule | checked on | "
    "thresholds (default) | dev / staging / prod |\n|---|---|---|---|---|---|---|"
)
PACK_CONFIG = Path("policy-packs") / "sandbox-guard" / "config"


def _cell(text: str) -> str:
    """Text for a table cell: ``|`` escaped, double backquotes as Markdown code."""
    return re.sub(r"``([^`]+)``", r"`\1`", text).replace("|", chr(92) + "|")


def rules_table() -> str:
    """The Markdown table of the catalogue's rules (``sandboxkit.policy_rules.CATALOGUE``), in
    catalogue order: what each rule's handlers cover (``kit_guard.coverage_text``), its config
    properties with their defaults, and its default level per environment."""
    body = []
    for rule in CATALOGUE:
        thresholds = ", ".join(
            f"`{key}` (`{json.dumps(spec['default'])}`)" for key, spec in rule.config_schema.items()
        )
        levels = " / ".join(rule.levels[environment] for environment in ENVIRONMENTS)
        body.append(
            f"| `{rule.id}` | {rule.severity} | {rule.scope} | "
            f"**{_cell(rule.name)}**: {_cell(rule.description)} | "
            f"{_cell(coverage_text(rule, '<br>'))} | {thresholds} | {levels} |"
        )
    return "\n".join([RULES_HEADER, *body])


def pack_config(environment: str) -> str:
    """The pack config file of ``environment`` (``config/<env>.json``) as the catalogue's
    default levels give it: ``all`` at the level most rules have there, then each rule at
    another level by its CrossGuard name."""
    levels = [rule.levels[environment] for rule in CATALOGUE]
    common = max(dict.fromkeys(levels), key=levels.count)
    config = {"all": str(common)}
    config |= {
        rule.policy_name: str(rule.levels[environment])
        for rule in CATALOGUE
        if rule.levels[environment] != common
    }
    return json.dumps(config, indent=2) + "\n"


def stub(target: str) -> str:
    """A new target doc: a title and the generated section, for the prose to go around."""
    return f"# Target `{target}`\n\n## Settings (`sandboxkit:{target}.*`)\n\n{BEGIN}\n{END}\n"


@dataclass(frozen=True)
class Report:
    """What ``generate`` found.

    Attributes:
        documents: generated file path (a target doc, ``docs/policy-gate.md``, a pack config)
            -> its text as the models and the catalogue give it.
        stale: paths whose text on disk differs (or that do not exist yet).
        problems: sentences naming what a person must fix (an undocumented setting, a
            docstring entry naming no field, a doc for no registered target, bad markers).
    """

    documents: dict[Path, str]
    stale: list[Path]
    problems: list[str]


def generate(root: Path) -> Report:
    """Every generated file under ``root``, regenerated in memory: each registered target's
    doc under ``TARGET_DOCS``, ``RULES_DOC`` and the pack's config per environment."""
    documents: dict[Path, str] = {}
    problems: list[str] = []
    for target in TARGET_MODULES:
        model = get_target(target).settings_model
        rows = setting_rows(model)
        problems += [
            f"sandboxkit:{target}.{row.key} has no description: add it to the Attributes: "
            f"section of {model.__name__}'s docstring (or the class that declares it)"
            for row in rows
            if row.meaning is None
        ]
        problems += [
            f"{target}: docstring entry {entry} names no setting" for entry in stale_entries(model)
        ]
        path = root / TARGET_DOCS / f"{target}.md"
        current = path.read_text() if path.is_file() else stub(target)
        try:
            documents[path] = with_table(current, settings_table(rows), path)
        except ValueError as exc:
            problems.append(str(exc))
    # A root without the rule doc or the pack (a test's project) gets neither generated.
    rules_doc = root / RULES_DOC
    if rules_doc.is_file():
        try:
            documents[rules_doc] = with_table(
                rules_doc.read_text(), rules_table(), rules_doc, RULES_BEGIN, RULES_END
            )
        except ValueError as exc:
            problems.append(str(exc))
    if (root / PACK_CONFIG).is_dir():
        for environment in ENVIRONMENTS:
            documents[root / PACK_CONFIG / f"{environment}.json"] = pack_config(environment)
    folder = root / TARGET_DOCS
    registered = {root / TARGET_DOCS / f"{target}.md" for target in TARGET_MODULES}
    problems += [
        f"{path}: no registered target named {path.stem} (sandboxkit.targets.TARGET_MODULES)"
        for path in sorted(folder.glob("*.md") if folder.is_dir() else [])
        if path not in registered
    ]
    stale = [
        path for path, text in documents.items() if not path.is_file() or path.read_text() != text
    ]
    return Report(documents, stale, problems)


def main(argv: list[str] | None = None) -> int:
    """``python -m sandboxkit.docgen (--write | --check) [--root DIR]``.

    Returns:
        0 when the docs match the models (``--check``) or were written (``--write``); 1 when a
        doc is out of date (``--check``) or a problem stops generation (both modes; nothing is
        written then).
    """
    parser = argparse.ArgumentParser(prog="python -m sandboxkit.docgen", description=__doc__)
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the generated sections")
    mode.add_argument("--check", action="store_true", help="exit 1 when a doc is out of date")
    parser.add_argument(
        "--root", type=Path, help="the repository root (default: nearest Pulumi.yaml)"
    )
    args = parser.parse_args(argv)
    root = args.root or find_project_dir()
    report = generate(root)
    for problem in report.problems:
        print(f"docgen: {problem}", file=sys.stderr)
    if report.problems:
        return 1
    if args.check:
        for path in report.stale:
            print(f"docgen: {path} is out of date: run python -m sandboxkit.docgen --write")
        return 1 if report.stale else 0
    for path in report.stale:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(report.documents[path])
        print(f"docgen: wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
