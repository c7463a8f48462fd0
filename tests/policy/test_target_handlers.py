"""The targets' policy handlers reach the pack.

Each target folder declares its checks in ``guard.py`` (``HANDLERS``), each naming a rule of the
catalogue (``sandboxkit.policy_rules``); the pack's policy for a rule runs the handlers of the
kit and of every registered target that name it. A handler the pack never calls, or a rule no
handler checks, would be a policy that checks nothing: these tests find it.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest
from pack_calls import OPTIONS, PACK, POLICIES, resource_reports, stack_reports
from pulumi_policy import (
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from fake_target import guard as fake_guard
from sandboxkit import kit_guard, targets
from sandboxkit.guard import CheckContext, Handler, StackHandler, StackResource
from sandboxkit.policy_rules import CATALOGUE, EGRESS_ATTACHED, SIZE_LIMITS
from sandboxkit.type_tokens import EVERY_TYPE, TypeToken

COMMON = importlib.import_module(f"{PACK.__name__}._common")


def reports(policy: str, resource_type: str, props: Mapping[str, Any]) -> list[str]:
    """What the pack's resource policy ``policy`` reports on one resource named ``box``."""
    return resource_reports(policy, resource_type, props, "box")


@pytest.fixture
def recollect(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The pack collects the handlers once per registry; collect them again around a test that
    changes what a guard module declares (cleared before ``monkeypatch`` undoes the change)."""
    COMMON._declared.cache_clear()
    yield
    COMMON._declared.cache_clear()


def concrete(token: TypeToken) -> str:
    """A rendered type ``token`` matches (``EVERY_TYPE``: some type of no target)."""
    return "example:index/thing:Thing" if token == EVERY_TYPE else token.token


def _describe(handler: Handler | StackHandler) -> str:
    kinds = " ".join(map(str, handler.types)) if isinstance(handler, Handler) else "stack"
    return f"{handler.policy} {kinds} ({handler.check.__module__}.{handler.check.__name__})"


def unreached(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The registered targets' handlers whose check the pack never calls, described.

    Every handler's check is swapped for a spy in its guard module; then each pack policy a
    handler names runs on a resource of each of the handler's types (a stack handler: on a
    stack). A check not called names an id the pack lacks, a policy of the other kind, or
    types its rule does not pick.
    """
    reached: set[tuple[int, str | None]] = set()
    spies: dict[int, Handler | StackHandler] = {}

    def spy(handler: Handler | StackHandler) -> Handler | StackHandler:
        def check(props: Mapping[str, Any], ctx: CheckContext) -> Sequence[str]:
            reached.add((id(handler), ctx.resource_type))
            return ()

        def stack_check(
            resources: Sequence[StackResource], ctx: CheckContext
        ) -> Sequence[tuple[str, str | None]]:
            reached.add((id(handler), None))
            return ()

        if id(handler) not in spies:
            spies[id(handler)] = (
                dataclasses.replace(handler, check=check)
                if isinstance(handler, Handler)
                else dataclasses.replace(handler, check=stack_check)
            )
        return spies[id(handler)]

    handlers = kit_guard.declared_handlers()
    monkeypatch.setattr(kit_guard, "HANDLERS", tuple(spy(h) for h in kit_guard.HANDLERS))
    for module in targets.TARGET_MODULES.values():
        guard = importlib.import_module(f"{module.rpartition('.')[0]}.guard")
        monkeypatch.setattr(guard, "HANDLERS", tuple(spy(h) for h in guard.HANDLERS))
    COMMON._declared.cache_clear()
    expected: list[tuple[Handler | StackHandler, str | None]] = []
    for handler in handlers:
        policy = POLICIES.get(handler.policy.lower())
        if isinstance(handler, StackHandler):
            expected.append((handler, None))
            if isinstance(policy, StackValidationPolicy):
                policy.validate(StackValidationArgs([]), lambda *_: None)
            continue
        for token in handler.types:
            expected.append((handler, concrete(token)))
            if isinstance(policy, ResourceValidationPolicy):
                args = ResourceValidationArgs(concrete(token), {}, "urn::r", "r", OPTIONS, None)
                policy.validate(args, lambda *_: None)
    return [_describe(h) for h, kind in expected if (id(h), kind) not in reached]


def test_every_handler_runs_under_its_policy_and_every_rule_has_one(
    monkeypatch: pytest.MonkeyPatch, recollect: None
) -> None:
    declared = kit_guard.declared_handlers()
    # The kit's own: SBX-SEC-002 scans every input of every type, SBX-NET-006 and SBX-NET-008
    # read the stack through every target's egress reader.
    assert [h.policy for h in kit_guard.HANDLERS] == ["SBX-SEC-002", "SBX-NET-006", "SBX-NET-008"]
    assert {h.rule for h in declared} == set(CATALOGUE)
    assert [p.upper() for p in POLICIES] == [rule.id for rule in CATALOGUE]
    assert unreached(monkeypatch) == []


def test_a_handler_the_pack_does_not_call_is_found(
    monkeypatch: pytest.MonkeyPatch, recollect: None
) -> None:
    monkeypatch.setitem(targets.TARGET_MODULES, "flyio", "fake_target.spec")
    # A rule object the catalogue does not hold (a copy): no policy of the pack runs it.
    stray = dataclasses.replace(SIZE_LIMITS, id="SBX-RES-901")
    unlisted = dataclasses.replace(fake_guard.HANDLERS[0], rule=stray)
    monkeypatch.setattr(fake_guard, "HANDLERS", (*fake_guard.HANDLERS, unlisted))
    assert unreached(monkeypatch) == [
        "SBX-RES-901 flyio:index/machine:Machine (fake_target.guard._guest_size)"
    ]


def test_a_handler_for_a_policy_of_the_other_kind_is_refused() -> None:
    with pytest.raises(ValueError) as resource:
        Handler(EGRESS_ATTACHED, (fake_guard.MACHINE,), fake_guard.HANDLERS[0].check, "machines")
    assert str(resource.value) == (
        "Handler for SBX-NET-005, a stack policy: its check would never run; declare a StackHandler"
    )
    with pytest.raises(ValueError) as stack:
        StackHandler(SIZE_LIMITS, fake_guard.HANDLERS[1].check, "each machine")
    assert str(stack.value) == (
        "StackHandler for SBX-RES-001, a resource policy: its check would never run; declare "
        "a Handler"
    )


def test_a_registered_target_folder_is_checked_by_the_packs_rules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    big = {"config": {"guest": {"cpus": 64, "memoryMb": 2048}}}
    assert reports("sbx-res-001", fake_guard.MACHINE.token, big) == []
    assert stack_reports("sbx-net-005", [(fake_guard.MACHINE.token, big)]) == []

    monkeypatch.setitem(targets.TARGET_MODULES, "flyio", "fake_target.spec")
    assert reports("sbx-res-001", fake_guard.MACHINE.token, big) == [
        "Fly machine box allows 64 vCPU, above the maximum of 8; lower "
        "sandboxkit:profile.limits.vcpu."
    ]
    assert reports("sbx-res-001", fake_guard.MACHINE.token, {"config": {}}) == [
        "Fly machine box sets no CPU limit; set one from sandboxkit:profile.limits.vcpu.",
        "Fly machine box sets no memory limit; set one from sandboxkit:profile.limits.memoryMiB.",
    ]
    fitting = {"config": {"guest": {"cpus": 2, "memoryMb": 2048}}}
    assert reports("sbx-res-001", fake_guard.MACHINE.token, fitting) == []
    assert reports("sbx-res-001", "flyio:index/volume:Volume", big) == []
    assert stack_reports("sbx-net-005", [(fake_guard.MACHINE.token, fitting)]) == [
        (
            "Fly machine r0 has no egress control (Fly Machines have no egress filter); run "
            "sandboxes that need egress rules on a target that filters egress.",
            f"urn::{fake_guard.MACHINE.token}::r0",
        )
    ]
    assert stack_reports("sbx-net-005", [("flyio:index/volume:Volume", {})]) == []


def test_gcp_targets_share_their_common_handlers_once() -> None:
    from sandboxkit.gcp import guard as gcp_guard
    from sandboxkit.gcp.cloudrun import guard as cloudrun_guard
    from sandboxkit.gcp.gke import guard as gke_guard
    from sandboxkit.kubernetes import guard as kubernetes_guard

    shared = set(map(id, gcp_guard.HANDLERS))
    assert shared <= set(map(id, cloudrun_guard.HANDLERS))
    assert shared | set(map(id, kubernetes_guard.HANDLERS)) <= set(map(id, gke_guard.HANDLERS))
    declared = [id(h) for h in kit_guard.declared_handlers()]
    assert len(declared) == len(set(declared))
    assert shared <= set(declared)
