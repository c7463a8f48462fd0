"""``preview --explain-egress`` on a terminal of 80 and 120 columns (issue 31 item 15): rich
squeezed the probe column to ``codeload.g…``, so an entry and its :8443 probe looked alike.
Every cell is printed whole, each line within the width, on a terminal and on a pipe."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text

from sandboxkit import cli
from sandboxkit.explain import TargetEgress, explain_stack
from sandboxkit.render import render_stack
from support import make_project

REPO = Path(__file__).resolve().parents[2]
ENTRY = "codeload.github.com:443"
OTHER_PORT = "codeload.github.com:8443"


@pytest.fixture(scope="module")
def explained(tmp_path_factory: pytest.TempPathFactory) -> list[TargetEgress]:
    """dev (kubernetes, aws-microvm, local) allowing codeload.github.com:443 besides PyPI."""
    text = (REPO / "stacks/Pulumi.dev.yaml").read_text()
    before = 'allow: ["pypi.org:443", "*.pythonhosted.org:443"]'
    assert before in text
    text = text.replace(before, f'allow: ["pypi.org:443", "*.pythonhosted.org:443", "{ENTRY}"]')
    root = make_project(tmp_path_factory.mktemp("wide"), {"dev": text})
    return explain_stack(render_stack(root, "dev"))


def printed(explained: list[TargetEgress], width: int, terminal: bool) -> list[str]:
    """What ``_print_egress`` prints on a console of ``width`` columns, colour codes removed."""
    out = io.StringIO()
    console = Console(file=out, width=width, force_terminal=terminal, highlight=False)
    cli._print_egress(explained, console)
    return Text.from_ansi(out.getvalue()).plain.splitlines()


@pytest.mark.parametrize("terminal", [True, False], ids=["terminal", "pipe"])
@pytest.mark.parametrize("width", [80, 120])
def test_probes_are_whole_and_lines_fit(
    explained: list[TargetEgress], width: int, terminal: bool
) -> None:
    lines = printed(explained, width, terminal)
    assert not [line for line in lines if "…" in line]
    assert [line for line in lines if len(line) > width] == []
    # The entry and its other-port probe each on a line of their own, whole, per target.
    targets = [t for t in explained if t.effective is not None]
    for host in (ENTRY, OTHER_PORT):
        holding = [line for line in lines if host in line.split()]
        assert len(holding) >= len(targets), (host, holding)
    assert not [line for line in lines if OTHER_PORT in line and f"{ENTRY} " in line]


@pytest.mark.parametrize("width", [80, 120])
def test_every_probe_row_keeps_its_protocol_and_verdicts(
    explained: list[TargetEgress], width: int
) -> None:
    # After each probe's own name come its protocol, kind and both verdicts, on the same line
    # or the next (the name alone on its line when the row does not fit the width).
    lines = printed(explained, width, terminal=True)
    at = 0
    for item in explained:
        for probe in item.probes:
            # The rows in probe order: the entry and its plain-TCP probe share a name.
            at = next(i for i in range(at, len(lines)) if str(probe) in lines[i].split())
            words = " ".join(lines[at : at + 2]).split()
            assert probe.protocol in words and probe.kind in words, (str(probe), words)
            at += 1


def test_a_table_that_fits_stays_a_rich_table() -> None:
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=True)
    cli.print_table(console, ("name", "verdict"), [("pypi.org:443", "[red]refused[/]")])
    text = Text.from_ansi(out.getvalue()).plain
    assert "┃ name         ┃ verdict ┃" in text and "│ pypi.org:443 │ refused │" in text
