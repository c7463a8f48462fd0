"""What ``AgentSandbox`` is built from: its inputs, as the ``kubernetes`` spec plans them.

No SDK and no settings here: the component imports this module and nothing of the spec.
"""

from __future__ import annotations

from typing import TypedDict

from sandboxkit.egress import EgressRule


class AgentSandboxArgs(TypedDict, total=False):
    """Inputs of ``AgentSandbox``; ``spec.sandbox_args`` builds them from a profile and settings."""

    object_name: str
    """Name of the SandboxTemplate, SandboxWarmPool and policies (DNS-1123, at most 50)."""
    namespace: str
    """Namespace of the sandbox objects."""
    create_namespace: bool
    """Create the namespace, labelled for Pod Security ``restricted``."""
    image: str
    """Sandbox container image."""
    vcpu: float
    """CPU request and limit per sandbox, in vCPU."""
    memory_mib: int
    """Memory request and limit per sandbox, in MiB."""
    max_lifetime_seconds: int
    """Hard cap on a sandbox pod's life (``activeDeadlineSeconds``), seconds."""
    pool_ready: int
    """Warm sandboxes kept ready (SandboxWarmPool replicas)."""
    max_concurrent: int
    """Sandboxes that may run at once (bounds the ResourceQuota)."""
    egress_mode: str
    """``deny``, ``allowlist`` or ``open``."""
    egress_rules: tuple[EgressRule, ...]
    """Allowlist entries (``allowlist`` only)."""
    fqdn_policy: str
    """``none``, ``cilium`` or ``gke``: the FQDN policy flavour for allowlisted names."""
    runtime_class_name: str
    """RuntimeClass of sandbox pods."""
    runtime_handler: str
    """CRI handler when the RuntimeClass is created."""
    create_runtime_class: bool
    """Create the RuntimeClass, or reference an existing one."""
    entry_namespace: str
    """Namespace of the sandbox router: the only source of ingress."""
    entry_port: int
    """Sandbox port the router reaches."""
    run_as_user: int
    """Non-zero UID of the sandbox process."""
    labels: dict[str, str]
    """The kit's labels, set on every object."""
    kubeconfig_context: str
    """If set, a child Provider for this kubeconfig context is used for every object."""
    tolerations: list[dict[str, str]]
    """Tolerations of sandbox pods (e.g. a sandbox node pool's taint); none by default."""
    node_selector: dict[str, str]
    """Node labels sandbox pods must run on (e.g. a gVisor node pool's); none by default."""
