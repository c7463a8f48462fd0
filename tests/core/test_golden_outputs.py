"""What the kit prints for the shipped stacks, byte for byte: ``preview --json``,
``preview --explain-egress`` (text and JSON) and CrossGuard's side of ``check`` (JSON and
SARIF, ``--no-checkov``) for dev, staging and prod, against ``golden/``.

A refactor that moves code (the rule catalogue, the ownership adapter, the contract's JSON
form) must leave these bytes alone. A deliberate change of the renders or of the gate's
findings rewrites them: run this module with ``SANDBOXKIT_UPDATE_GOLDEN=1`` set
(``SANDBOXKIT_UPDATE_GOLDEN=1 .venv/bin/python -m pytest tests/core/test_golden_outputs.py
-n 0``), read the diff, and say so in the commit message. checkov's side of the gate has its
own golden documents in tests/checkov/golden (one checkov run of every stack).

The commands run in this process (``support.invoke_cli``) at the width of an 80-column pipe;
each render comes from ``support.shipped_render`` (one per stack for the whole session),
handed to the command where it would have rendered the stack again.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sandboxkit import cli
from sandboxkit.gate import check as gate_check
from sandboxkit.render import RenderedStack
from support import assert_golden_text, invoke_cli, shipped_render

GOLDEN_DIR = Path(__file__).parent / "golden"
STACKS = ("dev", "staging", "prod")
# (golden file suffix, the command's arguments after --stack STACK)
OUTPUTS = (
    ("preview.json", ("preview", "--json")),
    ("explain-egress.txt", ("preview", "--explain-egress")),
    ("explain-egress.json", ("preview", "--explain-egress", "--json")),
    ("check.json", ("check", "--format", "json", "--no-checkov")),
    ("check.sarif", ("check", "--format", "sarif", "--no-checkov")),
)


@pytest.fixture
def shared_renders(project_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``preview`` and ``check`` take the session's render of each shipped stack."""

    def render_stacks(
        root: Path, names: list[str], *_: object, **__: object
    ) -> list[RenderedStack]:
        assert root == project_dir
        return [shipped_render(project_dir, name) for name in names]

    monkeypatch.setattr(cli, "render_stacks", render_stacks)
    monkeypatch.setattr(gate_check, "render_stacks", render_stacks)
    yield


@pytest.mark.usefixtures("shared_renders")
@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize(("suffix", "arguments"), OUTPUTS, ids=[o[0] for o in OUTPUTS])
def test_output_is_the_golden_file(
    project_dir: Path, stack: str, suffix: str, arguments: tuple[str, ...]
) -> None:
    command, *options = arguments
    result = invoke_cli(command, "--stack", stack, *options, cwd=project_dir, env={"COLUMNS": "80"})
    # check exits 0 on the shipped stacks: their findings are advisory at most.
    assert (result.returncode, result.stderr) == (0, "")
    assert_golden_text(GOLDEN_DIR / f"{stack}-{suffix}", result.stdout)
