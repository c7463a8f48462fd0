"""Settings, plan and enforcement map of the ``flyio`` fake target."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import ClassVar

from pydantic import Field

from fake_target.plan import FlyMachineArgs
from sandboxkit.profile import SandboxProfile
from sandboxkit.targets import (
    EgressAcceptance,
    Enforcement,
    KitComponent,
    KitContext,
    TargetSettings,
    TargetSpec,
)


class FlySettings(TargetSettings):
    """``sandboxkit:flyio`` settings.

    Attributes:
        app: the Fly app.
        image: the machine image.
        metadata: machine metadata.
    """

    app: str
    image: str
    metadata: dict[str, str] = Field(default_factory=dict)


class FlyTarget(TargetSpec[FlySettings, FlyMachineArgs]):
    """The ``flyio`` target."""

    name: ClassVar[str] = "flyio"
    sdks: ClassVar[Mapping[str, float]] = {}  # plain pulumi components only
    accepts: ClassVar[EgressAcceptance | None] = None  # a Fly machine has no egress filter
    settings_model = FlySettings

    def plan(
        self, profile: SandboxProfile, settings: FlySettings, context: KitContext
    ) -> FlyMachineArgs:
        """The machine's inputs."""
        return FlyMachineArgs(
            app=settings.app,
            image=settings.image,
            cpus=math.ceil(profile.limits.vcpu),
            memory_mib=profile.limits.memory_mib,
            metadata=dict(settings.metadata),
            labels=context.labels(),
        )

    def enforcement(
        self, profile: SandboxProfile, settings: FlySettings, plan: FlyMachineArgs | None
    ) -> dict[str, Enforcement]:
        """Sizes on the machine; nothing else."""
        nowhere = Enforcement("none", "Fly Machines have no such setting")
        return {
            "egress.mode": Enforcement("none", "Fly Machines have no egress filter"),
            "limits.vcpu": Enforcement("platform", "config.guest.cpus (rounded up)"),
            "limits.memoryMiB": Enforcement("platform", "config.guest.memoryMb"),
            "limits.execTimeoutSeconds": nowhere,
            "limits.maxLifetimeSeconds": nowhere,
            "limits.idleTimeoutSeconds": nowhere,
            "pool.ready": nowhere,
            "pool.maxConcurrent": nowhere,
            "audit.logRetentionDays": nowhere,
        }

    def component(self, plan: FlyMachineArgs) -> KitComponent:
        """The ``FlyMachine`` component."""
        from fake_target.machine import FlyMachine

        return FlyMachine(self.name, plan)


SPEC = FlyTarget()
