"""What a long command is doing, shown on an interactive terminal only.

``sandboxkit preview`` and ``check`` report each phase as it starts (rendering a target,
CrossGuard, checkov) to a ``Step``. ``terminal_steps`` shows them as rich's status line on
stderr, and only when stderr is a terminal and the output is meant for people: with ``--json``
or ``--format json|sarif``, or when stderr is not a terminal (CI logs, pipes, files), the steps
go nowhere and every byte written stays as it was.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from rich.console import Console

Step = Callable[[str], None]
"""Called with a short phrase saying what starts now (``rendering prod: cloudflare``)."""


def no_steps(_: str) -> None:
    """A ``Step`` that shows nothing."""


@contextlib.contextmanager
def terminal_steps(show: bool, console: Console | None = None) -> Iterator[Step]:
    """A ``Step`` that shows each phase on ``console``'s status line while the block runs.

    Args:
        show: ``False`` for machine-readable output: nothing is shown.
        console: where to show it; default stderr. Nothing is shown unless it is a terminal
            (rich's ``Console.is_terminal``; ``force_terminal`` makes one in tests).

    Yields:
        The ``Step``; the status line is cleared when the block ends.
    """
    console = console or Console(stderr=True)
    if not (show and console.is_terminal):
        yield no_steps
        return
    with console.status("starting") as status:

        def step(text: str) -> None:
            status.update(text)

        yield step
