"""What a long command is doing, shown on an interactive terminal only.

``sandboxkit preview`` and ``check`` report each phase as it starts (rendering a target,
CrossGuard, checkov) to a ``Step``. ``terminal_steps`` shows them on stderr, one line per step
under rich's status line (a spinner on the current step), and only when stderr is an
interactive terminal and the output is meant for people: with ``--json`` or ``--format
json|sarif``, or when stderr is not a terminal (CI logs, pipes, files), the steps go nowhere
and every byte written stays as it was.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from rich.console import Console

Step = Callable[[str], None]
"""Called with a short phrase saying what starts now (``rendering prod: cloudflare``)."""


def no_steps(_: str) -> None:
    """A ``Step`` that shows nothing."""


def rendering(step: Step) -> Callable[[str, str], None]:
    """The ``on_target`` of ``parallel.render_stacks`` telling ``step`` each ``(stack,
    target)`` render that starts: ``rendering prod: cloudflare``."""
    return lambda stack, target: step(f"rendering {stack}: {target}")


def stderr_console() -> Console:
    """Where the steps go: stderr, as rich detects it (``TTY_INTERACTIVE=0`` turns it off)."""
    return Console(stderr=True)


@contextlib.contextmanager
def terminal_steps(show: bool, console: Console | None = None) -> Iterator[Step]:
    """A ``Step`` that shows each phase on ``console``'s status line while the block runs.

    Args:
        show: ``False`` for machine-readable output: nothing is shown.
        console: where to show it; default ``stderr_console()``. Nothing is shown unless it
            is an interactive terminal (rich's ``Console.is_interactive``; a console made with
            ``force_terminal`` and ``force_interactive`` is one, for tests).

    Yields:
        The ``Step``; the status line is cleared when the block ends, the step lines stay.
    """
    console = console or stderr_console()
    if not (show and console.is_interactive):
        yield no_steps
        return
    with console.status("starting") as status:

        def step(text: str) -> None:
            # A line per step stays above the status line: what ran, and in which order.
            console.print(text, style="dim", markup=False, highlight=False)
            status.update(text)

        yield step
