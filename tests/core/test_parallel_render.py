"""Renders shared between this process and a forked child (``sandboxkit.parallel``) are the
renders a single process gives: the same resources, outputs, warnings in the same order,
placeholders and spec, and the same errors."""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import grimp
import pytest
import yaml

from sandboxkit import parallel
from sandboxkit.errors import ConfigError
from sandboxkit.parallel import render_stacks, shares
from sandboxkit.project import list_stacks, stack_file
from sandboxkit.render import RenderedShare, RenderedStack, render_stack
from sandboxkit.targets import TARGET_MODULES, get_target
from support import make_project

PROJECT = Path(__file__).resolve().parents[2]
PROD = ("kubernetes", "aws-microvm", "gcp-cloudrun", "gcp-gke", "azure-sessions", "cloudflare")

pytestmark = pytest.mark.skipif(not parallel.can_fork(), reason="needs Linux and two CPUs")


def same(one: RenderedStack, other: RenderedStack) -> None:
    assert one.display() == other.display()
    assert one.warnings == other.warnings
    assert one.placeholders == other.placeholders
    assert one.spec == other.spec
    assert one.resources == other.resources


@pytest.fixture
def child_pids(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Callable[[], list[int]]:
    """Record the pid of each process that runs the child's work; returns a reader. The
    SDKs count as not imported yet (this test process imported them all)."""
    monkeypatch.setattr(parallel, "unimported_sdks", set)
    real = parallel._child
    record = tmp_path / "child-pids"

    @contextlib.contextmanager
    def recording(work: Callable[[], list[RenderedShare]]) -> Iterator[object]:
        def recorded() -> list[RenderedShare]:
            with record.open("a") as out:
                out.write(f"{os.getpid()}\n")
            return work()

        with real(recorded) as result:
            yield result

    monkeypatch.setattr(parallel, "_child", recording)
    return lambda: [int(line) for line in record.read_text().split()] if record.exists() else []


# --- how targets are shared out -------------------------------------------------------------


def test_targets_sharing_an_sdk_stay_together_and_the_heaviest_groups_are_balanced() -> None:
    # gcp-gke links pulumi_gcp and pulumi_kubernetes: kubernetes, gcp-cloudrun and gcp-gke
    # (0.75) stay here with the first target; aws-microvm (0.55) goes to the child, then
    # azure-sessions (0.15) to the lighter child (0.55 against 0.75), and cloudflare (no SDK:
    # 0) to the lighter child again (0.7).
    assert shares(PROD) == (
        ("kubernetes", "gcp-cloudrun", "gcp-gke"),
        ("aws-microvm", "azure-sessions", "cloudflare"),
    )
    assert shares(("kubernetes", "aws-microvm")) == (("kubernetes",), ("aws-microvm",))
    # cloudflare first (no SDK, 0) stays here; kubernetes (0.2) joins it (both shares weigh 0,
    # the tie stays here), azure-sessions (0.15) goes to the lighter child.
    assert shares(("cloudflare", "azure-sessions", "kubernetes")) == (
        ("cloudflare", "kubernetes"),
        ("azure-sessions",),
    )


def test_one_sdk_group_is_rendered_here_alone() -> None:
    assert shares(("gcp-cloudrun", "kubernetes", "gcp-gke")) == (
        ("gcp-cloudrun", "kubernetes", "gcp-gke"),
        (),
    )
    assert shares(("azure-sessions",)) == (("azure-sessions",), ())
    assert shares(()) == ((), ())


def test_an_unknown_target_name_is_a_key_error() -> None:
    with pytest.raises(KeyError):
        shares(("kubernetes", "openstack"))


def test_a_child_is_forked_only_for_sdks_not_imported_yet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    render_stack(PROJECT, "dev")  # this process has kubernetes's and aws-microvm's SDKs now
    assert parallel.unimported_sdks(("aws-microvm", "kubernetes")) == set()
    monkeypatch.delitem(sys.modules, "pulumi_gcp", raising=False)
    monkeypatch.delitem(sys.modules, "pulumi_azure_native", raising=False)
    # cloudflare imports no SDK (its component registers the kit's WranglerScript only).
    assert parallel.unimported_sdks(("aws-microvm", "cloudflare", "azure-sessions")) == {
        "pulumi_azure_native"
    }
    assert parallel.unimported_sdks(("gcp-cloudrun", "azure-sessions")) == {
        "pulumi_gcp",
        "pulumi_azure_native",
    }


def test_a_process_with_the_sdks_imported_renders_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    render_stack(PROJECT, "dev")  # this process has kubernetes's and aws-microvm's SDKs now
    monkeypatch.setattr(parallel, "_child", lambda work: pytest.fail("forked"))
    [rendered] = render_stacks(PROJECT, ["dev"])
    same(rendered, render_stack(PROJECT, "dev"))


def test_each_target_declares_the_sdks_its_component_imports() -> None:
    graph = grimp.build_graph("sandboxkit", include_external_packages=True, cache_dir=None)
    for name, module in TARGET_MODULES.items():
        imported = {m for m in graph.find_upstream_modules(module) if m.startswith("pulumi_")}
        assert set(get_target(name).sdks) == imported, name


def test_targets_sharing_an_sdk_weigh_it_the_same() -> None:
    seconds: dict[str, set[float]] = {}
    for name in TARGET_MODULES:
        for sdk, weight in get_target(name).sdks.items():
            seconds.setdefault(sdk, set()).add(weight)
    assert {sdk: len(weights) for sdk, weights in seconds.items()} == dict.fromkeys(seconds, 1)
    assert all(weight > 0 for weights in seconds.values() for weight in weights)
    # gcp-gke renders with the SDKs of gcp-cloudrun and kubernetes.
    assert get_target("gcp-gke").sdks == {
        **get_target("gcp-cloudrun").sdks,
        **get_target("kubernetes").sdks,
    }


# --- the same render --------------------------------------------------------------------------


def test_the_shipped_stacks_render_the_same_shared_out(
    child_pids: Callable[[], list[int]],
) -> None:
    names = list_stacks(PROJECT)
    shared = render_stacks(PROJECT, names)
    assert [r.stack for r in shared] == names
    # One child rendered a share of every stack (each has targets of two SDK groups).
    [pid] = child_pids()
    assert pid != os.getpid()
    for rendered in shared:
        same(rendered, render_stack(PROJECT, rendered.stack))


def test_warnings_come_in_the_stacks_order_whoever_rendered_them(
    tmp_path: Path, child_pids: Callable[[], list[int]]
) -> None:
    # aws-microvm's warning is attached to its component, so it is logged only when that URN
    # resolves: after kubernetes's, which is logged while kubernetes is built. Both renders put
    # the program's own first, then aws-microvm's, then kubernetes's (the stack's order).
    document = yaml.safe_load(stack_file(PROJECT, "dev").read_text())
    config = document["config"]
    config["sandboxkit:targets"] = ["aws-microvm", "kubernetes"]
    config["sandboxkit:profile"]["egress"] = {"mode": "open"}
    config["sandboxkit:aws-microvm"]["executionRolePolicy"] = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}],
    }
    config["sandboxkit:kubernetes"]["runtimeClass"] = {"name": "gvisor", "create": False}
    project = make_project(tmp_path, {"dev": yaml.safe_dump(document)})
    [shared] = render_stacks(project, ["dev"])
    assert len(child_pids()) == 1
    single = render_stack(project, "dev")
    same(shared, single)
    starts = (
        "sandboxkit:profile.egress.mode is open: ",
        "aws-microvm: a MicroVM execution role is configured; ",
        "sandboxkit:kubernetes.runtimeClass.create is false: ",
    )
    assert [w[: len(start)] for w, start in zip(shared.warnings, starts, strict=True)] == list(
        starts
    )


def test_progress_names_every_target_of_every_stack_once() -> None:
    told: list[tuple[str, str]] = []
    render_stacks(PROJECT, ["dev", "prod"], on_target=lambda s, t: told.append((s, t)))
    assert sorted(told) == sorted(
        [
            ("dev", "kubernetes"),
            ("dev", "aws-microvm"),
            ("dev", "local"),
            *(("prod", t) for t in (*PROD, "local")),
        ]
    )


# --- failures are a single render's ---------------------------------------------------------


def child_first_does(monkeypatch: pytest.MonkeyPatch, action: Callable[[], object]) -> None:
    """The child (any process but this one) runs ``action`` before each share it renders."""
    parent = os.getpid()
    real = parallel.render_share

    def render_share(*args: object, **kwargs: object) -> object:
        if os.getpid() != parent:
            action()
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(parallel, "render_share", render_share)


def test_a_failing_child_leaves_the_render_to_this_process(
    monkeypatch: pytest.MonkeyPatch, child_pids: Callable[[], list[int]]
) -> None:
    def fail() -> None:
        raise RuntimeError("the child's render failed")

    child_first_does(monkeypatch, fail)
    [shared] = render_stacks(PROJECT, ["prod"])
    assert len(child_pids()) == 1
    same(shared, render_stack(PROJECT, "prod"))


def test_a_failing_share_here_raises_what_a_single_render_raises(
    monkeypatch: pytest.MonkeyPatch, child_pids: Callable[[], list[int]]
) -> None:
    parent = os.getpid()
    ours = shares(PROD)[0][-1]
    real = get_target(ours).build

    def failing_here(plan: object) -> object:
        if os.getpid() == parent:
            raise RuntimeError(f"{ours} cannot be built")
        return real(plan)

    monkeypatch.setattr(get_target(ours), "build", failing_here)
    with pytest.raises(RuntimeError, match=f"{ours} cannot be built"):
        render_stacks(PROJECT, ["prod"])
    assert len(child_pids()) == 1


def test_a_stuck_child_is_killed_and_its_share_rendered_here(
    monkeypatch: pytest.MonkeyPatch, child_pids: Callable[[], list[int]]
) -> None:
    child_first_does(monkeypatch, lambda: time.sleep(600))
    monkeypatch.setattr(parallel, "CHILD_TIMEOUT_SECONDS", 0.5)
    started = time.monotonic()
    [shared] = render_stacks(PROJECT, ["prod"])
    assert time.monotonic() - started < 60
    [pid] = child_pids()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # killed and reaped
    same(shared, render_stack(PROJECT, "prod"))


def test_the_first_stack_that_does_not_load_raises_its_own_error(tmp_path: Path) -> None:
    good = stack_file(PROJECT, "dev").read_text()
    bad = good.replace("vcpu: 1", "vcpu: lots")
    project = make_project(tmp_path, {"a": good, "b": bad, "c": "config: [\n"})
    with pytest.raises(ConfigError) as shared:
        render_stacks(project, ["a", "b", "c"])
    with pytest.raises(ConfigError) as single:
        render_stack(project, "b")
    assert shared.value.problems == single.value.problems
    assert "vcpu" in str(shared.value.problems[0])


def test_without_a_second_cpu_nothing_is_forked(
    monkeypatch: pytest.MonkeyPatch, child_pids: Callable[[], list[int]]
) -> None:
    monkeypatch.setattr(parallel, "can_fork", lambda: False)
    [rendered] = render_stacks(PROJECT, ["prod"])
    assert child_pids() == []
    same(rendered, render_stack(PROJECT, "prod"))
