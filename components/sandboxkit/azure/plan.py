"""What ``SessionPoolSandbox`` is built from, and the session pool's bounds.

Its inputs as the ``azure-sessions`` spec plans them, and the platform bounds both the spec
(config errors, exit 2) and the component (for direct use) check. No SDK and no settings here:
the component imports this module and nothing of the spec.
"""

from __future__ import annotations

from typing import TypedDict

from sandboxkit.errors import Problem
from sandboxkit.targets import Cap

TARGET = "azure-sessions"

# The built-in "Azure ContainerApps Session Executor" role: the only role the pool management
# endpoint accepts Entra tokens for (learn.microsoft.com/azure/container-apps/sessions
# #authentication). Its role definition id is the same in every tenant.
SESSION_EXECUTOR_ROLE_ID = "0fb8eba5-a2bb-4abe-b1c1-49dfad359bb0"

SESSIONS_DOC = "learn.microsoft.com/azure/container-apps/session-pool"
COOLDOWN_SOURCE = (
    f"{SESSIONS_DOC}: dynamicPoolConfiguration.lifecycleConfiguration.cooldownPeriodInSeconds "
    "must be between 300 and 3600"
)
ALLOCATION_SOURCE = (
    "learn.microsoft.com/azure/container-apps/containers#allocations: Consumption workload "
    "profile, vCPU 0.25 to 4 in steps of 0.25 with memory = 2 GiB per vCPU"
)
COOLDOWN_CAP = Cap("limits.idleTimeoutSeconds", 300, 3600, COOLDOWN_SOURCE)

# Custom container sizes: the Consumption workload profile's vCPU steps, 2 GiB per vCPU.
CPU_STEP = 0.25
MAX_CPU = 4.0
MIB_PER_VCPU = 2048

# Identity lifecycles that keep the pool's identity out of session code's reach.
SAFE_IDENTITY_LIFECYCLES = ("None", "Init")
DEFAULT_IDENTITY_LIFECYCLE = "None"


def check_allocation(vcpu: float, memory_mib: int) -> list[Problem]:
    """Problems with a custom container size, or none.

    Args:
        vcpu: vCPU per session.
        memory_mib: MiB per session.

    Returns:
        Problems naming ``limits.vcpu`` / ``limits.memoryMiB`` for sizes outside the
        Consumption workload profile's combinations (``ALLOCATION_SOURCE``).
    """
    problems = []
    steps = vcpu / CPU_STEP
    if not (steps.is_integer() and CPU_STEP <= vcpu <= MAX_CPU):
        problems.append(
            Problem(
                "sandboxkit:profile.limits.vcpu",
                vcpu,
                f"a multiple of {CPU_STEP} from {CPU_STEP} to {MAX_CPU:g} for target {TARGET} "
                f"with CustomContainer (source: {ALLOCATION_SOURCE})",
            )
        )
    elif memory_mib != round(vcpu * MIB_PER_VCPU):
        problems.append(
            Problem(
                "sandboxkit:profile.limits.memoryMiB",
                memory_mib,
                f"{round(vcpu * MIB_PER_VCPU)} (2 GiB per vCPU, for {vcpu:g} vCPU) for target "
                f"{TARGET} with CustomContainer (source: {ALLOCATION_SOURCE})",
            )
        )
    return problems


class SessionPoolSandboxArgs(TypedDict, total=False):
    """Inputs of ``SessionPoolSandbox``; ``spec.session_pool_args`` builds them from a stack."""

    subscription_id: str
    """Azure subscription (UUID) every resource is created in."""
    location: str
    """Azure region, e.g. ``westeurope``."""
    resource_group_name: str
    """Resource group of every resource."""
    create_resource_group: bool
    """Create the resource group, or use an existing one."""
    object_name: str
    """Base of the Azure names: ``<object_name>-logs``, ``-env``, ``-pool`` (at most 27)."""
    container_type: str
    """``PythonLTS`` or ``CustomContainer``."""
    image: str
    """Session image (``CustomContainer`` only)."""
    target_port: int
    """Port the custom container serves HTTP on (``CustomContainer`` only)."""
    vcpu: float
    """vCPU per session (``CustomContainer`` only)."""
    memory_mib: int
    """MiB per session (``CustomContainer`` only)."""
    cooldown_seconds: int
    """Idle seconds before a session is destroyed, 300 to 3600."""
    max_concurrent: int
    """Sessions allocated at once."""
    pool_ready: int
    """Warm sessions kept ready (``CustomContainer`` only)."""
    egress_enabled: bool
    """``EgressEnabled`` when true, else ``EgressDisabled``."""
    log_retention_days: int
    """Log Analytics workspace retention, days."""
    executors: list[tuple[str, str]]
    """``(principal id, principal type)`` pairs given the Session Executor role on the pool."""
    identity_resource_id: str
    """Optional user-assigned identity attached to the pool."""
    identity_lifecycle: str
    """``None`` or ``Init``: when session code may use the identity (never ``Main``/``All``)."""
    registry_server: str
    """Registry host the identity pulls the image from (``CustomContainer`` only)."""
    tags: dict[str, str]
    """The kit's tags, set on every taggable child."""
