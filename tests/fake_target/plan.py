"""What ``FlyMachine`` is built from (no SDK, no settings)."""

from __future__ import annotations

from typing import TypedDict


class FlyMachineArgs(TypedDict):
    """Inputs of ``FlyMachine``."""

    app: str
    """Fly app the machine belongs to."""
    image: str
    """Machine image."""
    cpus: int
    """Shared vCPUs of the machine."""
    memory_mib: int
    """Memory of the machine, MiB."""
    metadata: dict[str, str]
    """Machine metadata, as given."""
    labels: dict[str, str]
    """The kit's labels."""
