"""Where in a stack file a finding is fixed: the 1-based line reports point at.

A violation of an area (``SBX-NET-...``) is fixed under the profile key of that area
(``egress``, ...); a finding on one target's resource under that target's settings
(``sandboxkit:<target>``). SARIF locations and the text report use these lines.
"""

from __future__ import annotations

from collections.abc import Sequence

from sandboxkit.config import NAMESPACE
from sandboxkit.render import RenderedStack

# Where in a stack file a violation of each area is fixed (first key found wins).
AREA_KEYS = {
    "net": ("egress", "sandboxkit:profile"),
    "res": ("limits", "pool", "sandboxkit:profile"),
    "log": ("audit", "sandboxkit:profile"),
}


def find_line(text: str, keys: Sequence[str]) -> int:
    """1-based line of the first of ``keys`` written as a YAML key in ``text``, else 1."""
    lines = text.splitlines()
    for key in keys:
        for number, line in enumerate(lines, start=1):
            if line.strip().startswith(f"{key}:"):
                return number
    return 1


def rule_line(stack_text: str, rule_id: str, target: str | None) -> int:
    """The line of ``stack_text`` where a violation of ``rule_id`` is fixed.

    Args:
        stack_text: the stack file's text (``""`` when the stack has no file).
        rule_id: ``SBX-<AREA>-NNN``; other ids have no area.
        target: the target whose resource is in violation, or ``None`` (stack-wide finding).

    Returns:
        The line of the area's key, else of ``sandboxkit:<target>``, else 1.
    """
    area = rule_id.split("-")[1].lower() if rule_id.count("-") == 2 else ""
    keys = (*AREA_KEYS.get(area, ()), *((f"{NAMESPACE}:{target}",) if target else ()))
    return find_line(stack_text, keys)


def target_lines(rendered: RenderedStack, stack_text: str) -> dict[str, int]:
    """URN -> the line of ``sandboxkit:<target>`` in the stack file (where a target is fixed)."""
    lines = {}
    for resource in rendered.resources:
        target = rendered.target_of(resource)
        if target is not None:
            lines[resource.urn] = find_line(stack_text, (f"{NAMESPACE}:{target}",))
    return lines
