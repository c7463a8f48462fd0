"""What the ``local`` target's component and runner are built from (no SDK, no settings here).

The spec (``local/spec.py``) plans it from the profile and ``sandboxkit:local``; the component
(``local/component.py``) records its egress policy as a resource the gate reads; ``sandboxkit
run`` (``local/runner.py``) runs a command from the same plan, so what the gate judged is what
runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypedDict

from sandboxkit.egress_contract import EgressContract
from sandboxkit.local.isolation import Limits

TARGET = "local"


class LocalPlan(TypedDict):
    """The ``local`` target's plan.

    Attributes:
        contract: what the sandbox may reach (the profile's egress; ``local`` has no control
            plane of its own).
        limits: the sandbox's limits.
        resolver: ``(address, port)`` of the DNS server the gateway resolves through, or
            ``None`` for the host's (``spec.system_resolver``, read when a command runs).
        proxy_port: the gateway's loopback port inside the sandbox.
        environment: the command's whole environment (``PATH``, ``HOME``, ``LANG`` and the
            stack's ``sandboxkit:local.environment``); the proxy variables are added per run.
        audit_log: the audit log file, as text (``~`` expanded).
        retention_days: days of rotated audit logs kept (``profile.audit.logRetentionDays``).
        labels: the kit's labels for the component's resources.
    """

    contract: EgressContract
    limits: Limits
    resolver: tuple[str, int] | None
    proxy_port: int
    environment: Mapping[str, str]
    audit_log: str
    retention_days: int
    labels: Mapping[str, str]
