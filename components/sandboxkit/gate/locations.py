"""Where in a stack file a finding is fixed: the 1-based line reports point at.

A finding points at the deepest key of the stack file it is about: the key whose value the
message quotes (an image reference), else a config key the message names
(``sandboxkit:profile.egress.mode``), else a setting of the finding's target the message names
(``workersDev``), else the profile key of the rule's area (``egress``, ...), else the
target's section (``sandboxkit:<target>``), else line 1. SARIF locations and the text report
use these lines.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

import yaml

from sandboxkit.checkov_bridge.mapping import setting_for
from sandboxkit.checkov_bridge.runner import CheckovFinding
from sandboxkit.config import NAMESPACE
from sandboxkit.render import RenderedStack

# Where in a stack file a violation of each area is fixed (first key found wins).
AREA_KEYS = {
    "net": ("egress",),
    "res": ("limits", "pool"),
    "log": ("audit",),
}
PROFILE = f"{NAMESPACE}:profile"
# Values this short ("true", "1", "dev") occur in messages by chance; longer ones are quoted.
_MIN_QUOTED = 6
_CONFIG_KEY = re.compile(rf"{NAMESPACE}:[A-Za-z0-9-]+(?:\.[A-Za-z0-9]+)*")
# A refusal of the stack file's reader names its line: "sandboxkit:x (<file> line 3)".
_NAMED_LINE = re.compile(r" line (\d+)\)?$")


@dataclass(frozen=True)
class KeyLine:
    """One key (or list item) of a stack file.

    Attributes:
        path: keys from the document's top (``("config", "sandboxkit:kubernetes", "image")``);
            a list item adds its index as text (``"[0]"``).
        line: 1-based line of the key (of the item, for list items).
        value: the scalar value's text; ``None`` for a mapping or list.
    """

    path: tuple[str, ...]
    line: int
    value: str | None


def _walk(node: yaml.Node, path: tuple[str, ...]) -> Iterator[KeyLine]:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            here = (*path, str(key.value))
            scalar = value.value if isinstance(value, yaml.ScalarNode) else None
            yield KeyLine(here, key.start_mark.line + 1, scalar)
            yield from _walk(value, here)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            here = (*path, f"[{index}]")
            scalar = item.value if isinstance(item, yaml.ScalarNode) else None
            yield KeyLine(here, item.start_mark.line + 1, scalar)
            yield from _walk(item, here)


def stack_keys(text: str) -> list[KeyLine]:
    """Every key and list item of a stack file, in document order (none for bad YAML)."""
    try:
        document = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return []
    return list(_walk(document, ())) if document is not None else []


def _deepest(found: list[KeyLine]) -> KeyLine | None:
    return max(found, key=lambda k: (len(k.path), -k.line), default=None)


def _quoted(key: KeyLine, message: str) -> str:
    """The text of ``key``'s value that ``message`` quotes ("" if none): the value, or for a
    ``host:port`` entry its host."""
    if key.value is None:
        return ""
    for text in (key.value, key.value.rsplit(":", 1)[0]):
        if len(text) >= _MIN_QUOTED and text in message:
            return text
    return ""


def _named_keys(message: str) -> set[tuple[str, ...]]:
    # "sandboxkit:profile.egress.mode" -> ("config", "sandboxkit:profile", "egress", "mode")
    named = set()
    for mention in _CONFIG_KEY.findall(message):
        section, *rest = mention.split(".")
        named.add(("config", section, *rest))
    return named


def rule_line(keys: Sequence[KeyLine], rule_id: str, target: str | None, message: str = "") -> int:
    """The line of the stack file where a violation of ``rule_id`` is fixed.

    Args:
        keys: the stack file's keys (``stack_keys``; none when the stack has no file).
        rule_id: ``SBX-<AREA>-NNN``; other ids have no area.
        target: the target whose resource is in violation, or ``None`` (stack-wide finding).
        message: the violation's message, which may quote a value or name a key.

    Returns:
        The line of the deepest key the finding is about (module docstring), else 1.
    """
    sections: list[tuple[str, ...]] = [("config", PROFILE)]
    if target:
        sections.insert(0, ("config", f"{NAMESPACE}:{target}"))
    own = [k for k in keys if any(k.path[: len(s)] == s and k.path != s for s in sections)]
    quoted = [k for k in own if _quoted(k, message)]
    named = _named_keys(message)
    mentioned = [k for k in keys if k.path in named]
    target_keys = [k for k in own if target and k.path[1] == f"{NAMESPACE}:{target}"]
    by_name = [
        k
        for k in target_keys
        if not k.path[-1].startswith("[") and re.search(rf"\b{re.escape(k.path[-1])}\b", message)
    ]
    if quoted:
        # The longest value quoted wins: an image over the project id inside its path.
        return max(quoted, key=lambda k: (len(_quoted(k, message)), len(k.path))).line
    for found in (mentioned, by_name):
        best = _deepest(found)
        if best is not None:
            return best.line
    area = rule_id.split("-")[1].lower() if rule_id.count("-") == 2 else ""
    fallback: list[tuple[str, ...]] = [
        ("config", PROFILE, section) for section in AREA_KEYS.get(area, ())
    ]
    fallback += [("config", PROFILE)] if area in AREA_KEYS else []
    fallback += sections[:1] if target else []
    lines = {k.path: k.line for k in keys}
    return next((lines[p] for p in fallback if p in lines), 1)


def problem_line(keys: Sequence[KeyLine], key: str) -> int:
    """The stack-file line of a config problem's ``key`` (``errors.Problem.key``): the line
    the reader named (``sandboxkit:environment (<file> line 3)``), else the deepest key the
    file writes on the way to it (``sandboxkit:profile.egres`` -> ``sandboxkit:profile``'s
    line when ``egres`` is not found), else 1."""
    named = _NAMED_LINE.search(key)
    if named:
        return int(named.group(1))
    section, _, rest = key.partition(".")
    path = ("config", section, *re.findall(r"\[\d+\]|[^.\[\]]+", rest))
    lines = {k.path: k.line for k in keys}
    return next((lines[path[:n]] for n in range(len(path), 1, -1) if path[:n] in lines), 1)


def setting_line(lines: Mapping[tuple[str, ...], int], target: str, setting: str) -> int | None:
    """The line of the deepest key the stack file writes on the way to ``setting``
    (``profile.audit.logRetentionDays`` under ``sandboxkit:profile``, else a key of
    ``sandboxkit:<target>``, ``runtimeClass.handler``): the setting itself, or the section
    above it when the stack leaves it at its default; ``None`` when neither is written.
    ``lines`` maps each key's path to its line (``stack_keys``)."""
    section, _, rest = setting.partition(".") if setting.startswith("profile.") else ("", "", "")
    path = (
        ("config", PROFILE, *rest.split("."))
        if section
        else ("config", f"{NAMESPACE}:{target}", *setting.split("."))
    )
    return next((lines[path[:n]] for n in range(len(path), 1, -1) if path[:n] in lines), None)


def checkov_lines(
    rendered: RenderedStack, stack_text: str, findings: list[CheckovFinding]
) -> dict[tuple[str, str], int]:
    """(URN, check id) -> the stack-file line a checkov finding on a resource points at: the
    setting its target's catalog names for the check (``setting_for``), else the target's
    section ``sandboxkit:<target>``."""
    lines_of_keys = {k.path: k.line for k in stack_keys(stack_text)}
    targets = {r.urn: rendered.target_of(r) for r in rendered.resources}
    lines = {}
    for finding in findings:
        target = targets.get(finding.urn)
        if target is None or finding.type is None:
            continue
        setting = setting_for(finding.type, finding.policy)
        line = setting_line(lines_of_keys, target, setting) if setting else None
        lines[(finding.urn, finding.policy)] = line or lines_of_keys.get(
            ("config", f"{NAMESPACE}:{target}"), 1
        )
    return lines
