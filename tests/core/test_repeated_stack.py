"""A repeated ``--stack`` on a command that takes one stack (newcomer finding F7): exit 2 naming
every stack given, never the last one judged alone (``check --stack t-ret1 --stack t-open``
passed on t-open while t-ret1 alone fails)."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer

from sandboxkit.cli import app
from support import invoke_cli

PROJECT = Path(__file__).resolve().parents[2]
GROUP = typer.main.get_command(app)
# Every command whose --stack takes one value (checkov's is repeatable: it judges each).
ONE_STACK = sorted(
    name
    for name, command in GROUP.commands.items()  # type: ignore[attr-defined]
    if any(p.name == "stack" and not p.multiple for p in command.params)
)


def test_the_single_stack_commands_are_found() -> None:
    assert "check" in ONE_STACK and "preview" in ONE_STACK and "checkov" not in ONE_STACK


@pytest.mark.parametrize("command", ONE_STACK)
def test_a_repeated_stack_exits_2_naming_both(command: str) -> None:
    ran = invoke_cli(command, "--stack", "dev", "-s", "prod", cwd=PROJECT)
    every = ", or --all-stacks" if command == "check" else ""
    assert (ran.returncode, ran.stdout) == (2, "")
    assert ran.stderr == (
        "error: invalid input\n"
        f"  --stack: got [dev, prod]; expected one stack: given twice (dev, prod); {command} "
        f"takes one stack{every}\n"
    )


def test_three_stacks_in_any_spelling_are_all_named() -> None:
    ran = invoke_cli("check", "--stack=dev", "--stack", "prod", "-sdev", cwd=PROJECT)
    assert ran.returncode == 2
    assert "given 3 times (dev, prod, dev); check takes one stack, or --all-stacks" in ran.stderr


def test_stack_after_the_option_separator_is_an_argument_not_a_second_stack() -> None:
    # run passes everything after -- to the sandboxed command, --stack included; preview takes
    # no arguments, so its own parser refuses them.
    ran = invoke_cli("preview", "--stack", "dev", "--", "--stack", "prod", cwd=PROJECT)
    assert ran.returncode == 2
    assert "given twice" not in ran.stderr
    assert "Got unexpected extra argument(s) (--stack prod)" in ran.stderr
