"""RES: every sandbox is bounded in CPU, memory, time and number.

The checks are the targets' (``HANDLERS`` in each target folder's ``guard.py``).
"""

from __future__ import annotations

from pulumi_policy import Severity

from ._common import ResourceRule, Rule, StackRule

SIZE_LIMITS = ResourceRule(
    Rule(
        id="SBX-RES-001",
        title="Every sandbox has CPU and memory limits within bounds",
        severity=Severity.HIGH,
        description="Checks that every sandbox container sets CPU and memory limits, no larger "
        "than the organisation's maximum per sandbox.",
        remediation="Set sandboxkit:profile.limits.vcpu and memoryMiB within the pack's "
        "maxVcpu and maxMemoryMiB and keep the kit's container limits.",
        properties={
            "maxVcpu": {"type": "number", "default": 8, "description": "vCPU per sandbox."},
            "maxMemoryMiB": {
                "type": "number",
                "default": 32768,
                "description": "MiB per sandbox.",
            },
        },
    )
)

TIME_LIMITS = ResourceRule(
    Rule(
        id="SBX-RES-002",
        title="Every sandbox has lifetime and timeout limits within caps",
        severity=Severity.HIGH,
        description="Checks that every sandbox has a hard lifetime (and, where the platform "
        "has one, an idle or request timeout) no longer than the organisation's maximum and "
        "the target's own cap.",
        remediation="Set sandboxkit:profile.limits.maxLifetimeSeconds (and idleTimeoutSeconds) "
        "within the pack's maxLifetimeSeconds and the target's cap.",
        properties={
            "maxLifetimeSeconds": {
                "type": "integer",
                "default": 28800,
                "description": "Longest a sandbox may live, seconds.",
            }
        },
    )
)

BOUNDED_POOLS = ResourceRule(
    Rule(
        id="SBX-RES-003",
        title="Sandbox pools are bounded",
        severity=Severity.MEDIUM,
        description="Checks that the number of sandboxes that can run at once, and the warm "
        "pool, have an upper bound no larger than the organisation's maximum.",
        remediation="Set sandboxkit:profile.pool.maxConcurrent and ready within the pack's "
        "maxConcurrentSandboxes and maxReadySandboxes.",
        properties={
            "maxConcurrentSandboxes": {
                "type": "integer",
                "default": 1000,
                "description": "Most sandboxes at once per pool.",
            },
            "maxReadySandboxes": {
                "type": "integer",
                "default": 100,
                "description": "Most warm sandboxes per pool.",
            },
        },
    )
)

QUOTA_ATTACHED = StackRule(
    Rule(
        id="SBX-RES-004",
        title="Every sandbox namespace has a pod quota",
        severity=Severity.MEDIUM,
        description="Checks that every namespace holding a SandboxTemplate has a ResourceQuota "
        "that bounds its pods, so claims cannot grow without limit.",
        remediation="Deploy the kit's ResourceQuota (pods = maxConcurrent + ready) in each "
        "sandbox namespace.",
    )
)

RULES = [SIZE_LIMITS, TIME_LIMITS, BOUNDED_POOLS, QUOTA_ATTACHED]
