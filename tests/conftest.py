"""Shared fixtures: the one place that installs Pulumi mocks (and restores settings after);
the hypothesis profiles; the collector's settings and the partial SDK packages for the
session; the renders of the shipped and example stacks that several test modules read."""

from __future__ import annotations

import gc
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from sandboxkit.cloudflare.decide import WorkerDecider
from sandboxkit.render import Recorder, RenderedStack, collector_paused, recording_engine
from sandboxkit.sdk_parts import import_partial_packages
from sandboxkit.targets import TARGET_MODULES
from support import freeze_new_imports, kit_program, shipped_render

PROJECT_DIR = Path(__file__).resolve().parent.parent
# The reference data (agent-sandbox CRDs, SARIF schema) sits beside the clone as ../shared; a
# runner that keeps it elsewhere names the folder in SANDBOXKIT_SHARED_DIR.
SHARED_DIR = Path(os.environ.get("SANDBOXKIT_SHARED_DIR") or PROJECT_DIR.parent / "shared")

# Hypothesis profiles, chosen with HYPOTHESIS_PROFILE or --hypothesis-profile. Each property
# test keeps the example count its issue asks for in its own @settings (500 per target for
# the egress properties, at least 1,000 for bad input): a profile never lowers them. "ci"
# (.ci/run) removes what makes a loaded 2-core runner flaky or stateful: per-example deadlines
# (a render under mocks can stall behind other work), the too-slow health check, and the
# example database (a runner starts from a clean clone; failures print their blob instead).
# "dev", the default, drops the deadline too: speed is measured in benchmarks/, never by a
# timed test, and a shared machine made a 200 ms deadline fail one example at random.
settings.register_profile(
    "ci",
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "dev")


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session: pytest.Session) -> Iterator[None]:
    """Collect with the cyclic collector paused, then freeze what collection left alive.

    Collection imports the kit and the test modules: module-level objects that live as long
    as the session. Frozen (``gc.freeze``), they are skipped by every later collection, which
    otherwise walks them all again each time (see ``sandboxkit.render.collector_paused``).
    The SDK packages whose ``__init__`` imports every module are installed first as the
    offline render installs them (``sandboxkit.sdk_parts``): a test module importing one
    resource module loads that module, not the whole SDK (pulumi_cloudflare alone was 1.6 s
    of each worker's collection).
    """
    import_partial_packages()
    with collector_paused():
        yield
    gc.freeze()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After each test, freeze what the modules it imported made, if it imported any (a
    target's cloud SDK at its first render: ``support.freeze_new_imports``)."""
    yield
    freeze_new_imports()


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
def renders(tmp_path_factory: pytest.TempPathFactory) -> list[RenderedStack]:
    """The shipped stacks (prod, staging, dev) and every docs/examples stack (as
    ``try-<example>`` in a scratch project), rendered once per session; read them, never edit
    them (the SDK-conformance and deployer-policy tests share them)."""
    root = tmp_path_factory.mktemp("examples")
    shutil.copy(PROJECT_DIR / "Pulumi.yaml", root / "Pulumi.yaml")
    kit_program(root)
    (root / "stacks").mkdir()
    for example in sorted((PROJECT_DIR / "docs" / "examples").glob("*.yaml")):
        shutil.copy(example, root / "stacks" / f"Pulumi.try-{example.stem}.yaml")
    shipped = [shipped_render(PROJECT_DIR, s) for s in ("prod", "staging", "dev")]
    return shipped + [shipped_render(root, f"try-{target}") for target in TARGET_MODULES]


@pytest.fixture(scope="session")
def worker_decider() -> Iterator[WorkerDecider]:
    """The Cloudflare Worker's own egress code (workerd on loopback), shared by the session:
    about 0.1 s to start."""
    with WorkerDecider() as decider:
        yield decider
