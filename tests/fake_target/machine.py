"""``FlyMachine``: one Fly.io machine (type ``flyio:index/machine:Machine``)."""

from __future__ import annotations

from typing import Any

import pulumi

from fake_target.plan import FlyMachineArgs
from fake_target.type_tokens import MACHINE


class FlyMachine(pulumi.ComponentResource):
    """A machine per sandbox profile; child ``<name>-machine``."""

    def __init__(self, name: str, args: FlyMachineArgs) -> None:
        super().__init__("sandboxkit:index:FlyMachine", name, None)
        self.machine = pulumi.CustomResource(
            MACHINE.token,
            f"{name}-machine",
            {
                "app": args["app"],
                "config": {
                    "image": args["image"],
                    "guest": {"cpus": args["cpus"], "memoryMb": args["memory_mib"]},
                    "metadata": {**args["metadata"], **args["labels"]},
                },
                "machineId": None,
            },
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs(self.outputs())

    def outputs(self) -> dict[str, Any]:
        """Stack outputs: machineId."""
        # A CustomResource sets one output attribute per input key (``machineId`` here).
        return {"machineId": getattr(self.machine, "machineId")}  # noqa: B009
