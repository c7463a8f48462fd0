"""What the ``local`` target needs on the host that runs ``pulumi up`` and ``sandboxkit run``:
the Debian packages, the privileges the sandbox's cgroups and the egress gateway's network
namespace take, and the folders written, derived from the rendered ``EgressGatewayPolicy``.

- packages: ``bubblewrap`` (the sandbox, ``isolation.bwrap_argv``) and ``libseccomp2`` (the
  seccomp filter, loaded by ``pyseccomp``);
- cgroups (``isolation.CgroupLimits``): a child of the memory, cpu and pids controllers per
  sandbox, for ``limits.memoryMiB``, ``limits.vcpu`` and ``sandboxkit:local.maxProcesses``:
  root on cgroup v1 (``/sys/fs/cgroup/<controller>``), or a cgroup v2 subtree delegated to the
  user with those controllers (cgroups(7), "Delegation");
- the egress gateway, for an ``allowlist`` or ``open`` stack (``network.SandboxNetwork``):
  ``CAP_SYS_ADMIN`` for ``unshare(CLONE_NEWNET)`` and ``setns(2)``, ``CAP_NET_ADMIN`` to bring
  the namespace's loopback up (``SIOCSIFFLAGS``; namespaces(7), netdevice(7)); a ``deny``
  stack uses bubblewrap's own network namespace and needs neither;
- writes: the folder of ``policyFile`` (``pulumi up`` writes the gateway's policy there,
  ``pulumi destroy`` removes it) and of ``auditLog`` (``sandboxkit run`` appends and rotates
  it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any

from sandboxkit.deployer import DeployerPolicy, granted
from sandboxkit.effective_egress import ResourceView
from sandboxkit.local.type_tokens import EGRESS_GATEWAY_POLICY
from sandboxkit.type_tokens import TypeToken, of_type

DEBIAN_PACKAGES = ("bubblewrap", "libseccomp2")
CGROUP_CONTROLLERS = ("cpu", "memory", "pids")
GATEWAY_CAPABILITIES = ("CAP_NET_ADMIN", "CAP_SYS_ADMIN")

# What each rendered type needs written on the host (``deployer.granted`` refuses a type
# missing here).
GRANTS: dict[TypeToken, str] = {
    EGRESS_GATEWAY_POLICY: "policyFile: written by pulumi up, removed by pulumi destroy",
}


def _gateway_runs(view: ResourceView) -> bool:
    return view.props.get("mode") != "deny"


def local_policy(target: str, resources: Sequence[ResourceView]) -> DeployerPolicy:
    """The host's needs for ``resources`` (the module docstring), as a JSON document:
    ``debianPackages``, ``cgroups`` (``controllers`` and how to get them), ``capabilities``
    (those the egress gateway takes; empty for ``deny``), ``writablePaths`` (folder -> what
    is written there, sorted) and ``runAs``.

    Raises:
        MissingGrantError: for a resource type ``GRANTS`` lacks.
    """
    granted(target, GRANTS, resources)
    policies = of_type(resources, EGRESS_GATEWAY_POLICY)
    writes: dict[str, list[str]] = {}
    for view in policies:
        for key, what in (
            ("policyFile", "the egress gateway's policy (pulumi up, pulumi destroy)"),
            ("auditLog", "the audit log and its rotated files (sandboxkit run)"),
        ):
            path = PurePosixPath(str(view.props[key]))
            writes.setdefault(str(path.parent), []).append(f"{path.name}: {what}")
    gateway = any(_gateway_runs(view) for view in policies)
    document: dict[str, Any] = {
        "debianPackages": list(DEBIAN_PACKAGES),
        "cgroups": {
            "controllers": list(CGROUP_CONTROLLERS),
            "v1": "root: a child folder under /sys/fs/cgroup/<controller> per sandbox",
            "v2": "a subtree delegated to the deploying user with these controllers enabled",
        },
        "capabilities": list(GATEWAY_CAPABILITIES) if gateway else [],
        "writablePaths": [
            {"path": folder, "files": sorted(files)} for folder, files in sorted(writes.items())
        ],
        "runAs": "root, or a user with the cgroup v2 delegation"
        + (" and the capabilities above" if gateway else ""),
    }
    return DeployerPolicy(
        target,
        document,
        "install the packages (bash .ci/install-debian "
        + " ".join(DEBIAN_PACKAGES)
        + "), then run pulumi up and sandboxkit run as root on this host (or as a user given "
        "the cgroup delegation"
        + (", CAP_SYS_ADMIN and CAP_NET_ADMIN" if gateway else "")
        + ") who can write the writablePaths folders",
    )
