"""Shared fixtures: the one place that installs Pulumi mocks (and restores settings after)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from sandboxkit.cloudflare.decide import WorkerDecider
from sandboxkit.render import Recorder, recording_engine

# Hypothesis profiles: "dev" (the default) keeps a local run quick; "ci" (HYPOTHESIS_PROFILE=ci,
# set by .ci/run) runs the bad-input property tests on at least 1,000 examples each. Tests that
# set max_examples themselves keep their own.
settings.register_profile("dev", max_examples=100)
settings.register_profile("ci", max_examples=1000)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

PROJECT_DIR = Path(__file__).resolve().parent.parent
# The reference data (agent-sandbox CRDs, SARIF schema) sits beside the clone as ../shared; a
# runner that keeps it elsewhere names the folder in SANDBOXKIT_SHARED_DIR.
SHARED_DIR = Path(os.environ.get("SANDBOXKIT_SHARED_DIR") or PROJECT_DIR.parent / "shared")


@pytest.fixture
def engine() -> Iterator[Recorder]:
    """Recording mocks (``preview=False``) for stack ``test``; run components with ``.run``."""
    with recording_engine("test") as recorder:
        yield recorder


@pytest.fixture
def project_dir() -> Path:
    """The repository root (holds Pulumi.yaml and stacks/)."""
    return PROJECT_DIR


@pytest.fixture
def shared_dir() -> Path:
    """``../shared`` beside the project root: reference CRDs and the SARIF schema."""
    if not SHARED_DIR.is_dir():
        pytest.fail(
            f"reference data missing: {SHARED_DIR} (put shared/ beside the clone, or set "
            "SANDBOXKIT_SHARED_DIR)"
        )
    return SHARED_DIR


@pytest.fixture(scope="session")
def worker_decider() -> Iterator[WorkerDecider]:
    """The Cloudflare Worker's own egress code (decide.mjs: node and workerd on loopback),
    shared by the session: about 2 s to start."""
    with WorkerDecider() as decider:
        yield decider
