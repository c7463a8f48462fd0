"""Cloud Run sizing: slots per instance, instance counts, and the exit-2 errors at the edges."""

from __future__ import annotations

import pytest

from sandboxkit.gcp.cloudrun.spec import (
    MAX_REQUEST_CONCURRENCY,
    InstanceSizing,
    Size,
    sandbox_slots,
    size_instances,
)

LARGEST = Size(8, 32768)
LAUNCHER = Size(1, 1024)


def test_exact_fit_fills_every_slot() -> None:
    # 7 spare vCPU and 28672 spare MiB hold exactly 7 sandboxes of 1 vCPU and 4096 MiB.
    assert sandbox_slots(LARGEST, Size(1, 4096), Size(1, 4096)) == 7
    assert sandbox_slots(Size(4, 16384), Size(1, 1024), Size(1.5, 7680)) == 2


def test_one_more_mib_or_millicpu_on_an_exact_fit_loses_a_slot() -> None:
    assert sandbox_slots(LARGEST, Size(1, 4096), Size(1, 4097)) == 6
    assert sandbox_slots(LARGEST, Size(1, 4096), Size(1.001, 4096)) == 6


def test_one_short_loses_a_slot() -> None:
    # 31744 MiB spare holds exactly 4 of 7936 MiB; one MiB more per sandbox fits only 3.
    assert sandbox_slots(LARGEST, LAUNCHER, Size(1, 7936)) == 4
    assert sandbox_slots(LARGEST, LAUNCHER, Size(1, 7937)) == 3
    # CPU the binding side: 7 spare vCPU hold 2 of 3.5, none more of 3.51.
    assert sandbox_slots(LARGEST, LAUNCHER, Size(3.5, 1024)) == 2
    assert sandbox_slots(LARGEST, LAUNCHER, Size(3.51, 1024)) == 1


def test_the_smaller_of_cpu_and_memory_wins() -> None:
    assert sandbox_slots(LARGEST, LAUNCHER, Size(0.5, 8192)) == 3  # memory: 31744 / 8192
    assert sandbox_slots(LARGEST, LAUNCHER, Size(2, 512)) == 3  # CPU: 7 / 2


def test_the_largest_instance_holds_one_sandbox_of_everything_but_the_reserve() -> None:
    assert sandbox_slots(LARGEST, LAUNCHER, Size(7, 31744)) == 1
    assert sandbox_slots(LARGEST, LAUNCHER, Size(7.001, 31744)) == 0
    assert sandbox_slots(LARGEST, LAUNCHER, Size(7, 31745)) == 0


def test_decimal_vcpu_does_not_round_down_by_float_error() -> None:
    # In floats (2 - 1.4) / 0.2 is 2.9999999999999996; exact decimals give 3.
    assert sandbox_slots(Size(2, 8192), Size(1.4, 512), Size(0.2, 256)) == 3


def test_slots_are_capped_at_cloud_runs_request_concurrency() -> None:
    assert sandbox_slots(LARGEST, LAUNCHER, Size(0.001, 1)) == MAX_REQUEST_CONCURRENCY


def test_instance_counts_round_up() -> None:
    sizing = size_instances(LARGEST, LAUNCHER, Size(1, 2048), ready=2, max_concurrent=50)
    assert sizing == InstanceSizing(slots=7, min_instances=1, max_instances=8)
    exact = size_instances(LARGEST, LAUNCHER, Size(1, 2048), ready=7, max_concurrent=49)
    assert exact == InstanceSizing(slots=7, min_instances=1, max_instances=7)
    over = size_instances(LARGEST, LAUNCHER, Size(1, 2048), ready=8, max_concurrent=50)
    assert (over.min_instances, over.max_instances) == (2, 8)
    cold = size_instances(LARGEST, LAUNCHER, Size(1, 2048), ready=0, max_concurrent=1)
    assert (cold.min_instances, cold.max_instances) == (0, 1)


def test_no_slot_is_an_error() -> None:
    with pytest.raises(ValueError, match="exceeds the instance"):
        size_instances(Size(2, 4096), LAUNCHER, Size(1.5, 1024), ready=0, max_concurrent=1)
