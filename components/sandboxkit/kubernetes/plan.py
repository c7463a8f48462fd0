"""What ``AgentSandbox`` is built from: its inputs, as the ``kubernetes`` spec plans them.

No SDK and no settings here: the component imports this module and nothing of the spec.
"""

from __future__ import annotations

from typing import Any, TypedDict

from sandboxkit.egress_contract import EgressRule


class ResolverArgs(TypedDict):
    """The kit's DNS resolver for sandbox pods (see ``sandboxkit.kubernetes.resolver``)."""

    image: str
    """Resolver image (``images/resolver``: Debian's dnsmasq)."""
    replicas: int
    """Resolver pods."""
    config: str
    """The dnsmasq configuration (``resolver_config``), mounted from a ConfigMap."""
    upstream: str
    """``kube-dns``, ``node-local-dns`` or ``metadata-server``: the one peer the resolver's
    NetworkPolicy lets it send to (UDP and TCP 53)."""
    upstream_address: str
    """The upstream's IP address (the kube-dns Service's, or the link-local resolver's)."""


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
    cilium_version: tuple[int, int]
    """The cluster's Cilium release (``fqdn_policy`` ``cilium``): what its patterns mean."""
    resolver: ResolverArgs
    """The kit's resolver sandbox pods send DNS to; absent: sandbox pods resolve nothing
    (nameserver 127.0.0.1, no DNS egress)."""
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


def container_walls() -> dict[str, Any]:
    """The securityContext of every container the kit runs (the sandbox's and the resolver's):
    no privilege or escalation, a read-only root, non-root, no capabilities, the runtime's
    default seccomp profile. A new dict per call: each container owns its copy."""
    return {
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
