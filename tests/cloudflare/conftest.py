"""Fixtures of the cloudflare tests: one running copy of the Worker's own egress code."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sandboxkit.cloudflare.decide import WorkerDecider


@pytest.fixture(scope="session")
def worker_decider() -> Iterator[WorkerDecider]:
    """``decide.mjs`` (node + workerd on loopback), shared by the session: about 2 s to start."""
    with WorkerDecider() as decider:
        yield decider
