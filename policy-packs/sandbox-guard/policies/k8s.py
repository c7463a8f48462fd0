"""K8S: sandbox pods on Kubernetes keep the walls the kit builds.

The checks are the targets' (``HANDLERS`` in each target folder's ``guard.py``).
"""

from __future__ import annotations

from pulumi_policy import Severity

from sandboxkit.guard_checks import ACCEPTED_REFERENCES

from ._common import ResourceRule, Rule, StackRule

READ_ONLY_ROOT = ResourceRule(
    Rule(
        id="SBX-K8S-001",
        title="Sandbox containers have a read-only root filesystem",
        severity=Severity.HIGH,
        description="Checks that every sandbox container mounts its root filesystem "
        "read-only, so code cannot persist changes to the image.",
        remediation="Set securityContext.readOnlyRootFilesystem: true and give the sandbox an "
        "emptyDir for scratch space.",
    )
)

NO_CAPABILITIES = ResourceRule(
    Rule(
        id="SBX-K8S-002",
        title="Sandbox containers drop all capabilities",
        severity=Severity.HIGH,
        description="Checks that every sandbox container drops ALL Linux capabilities and adds "
        "none back.",
        remediation="Set securityContext.capabilities to drop [ALL] with no add list.",
    )
)

NON_ROOT = ResourceRule(
    Rule(
        id="SBX-K8S-003",
        title="Sandbox containers run unprivileged as non-root",
        severity=Severity.HIGH,
        description="Checks that sandbox containers run as a non-root user, are not "
        "privileged and cannot escalate privileges.",
        remediation="Set runAsNonRoot: true with a non-zero runAsUser, privileged: false and "
        "allowPrivilegeEscalation: false.",
    )
)

SANDBOXED_RUNTIME = ResourceRule(
    Rule(
        id="SBX-K8S-004",
        title="Sandbox pods run under a sandboxed runtime",
        severity=Severity.HIGH,
        description="Checks that sandbox pods name a sandboxed RuntimeClass (gVisor or Kata) "
        "and that GKE node pools for them run gVisor.",
        remediation="Set runtimeClassName to a gVisor or Kata runtime class "
        "(sandboxkit:kubernetes.runtimeClass) and sandbox_config GVISOR on the node pool.",
        properties={
            "allowedRuntimeClasses": {
                "type": "array",
                "items": {"type": "string"},
                "default": ["gvisor", "kata", "kata-qemu", "kata-clh", "kata-fc"],
                "description": "RuntimeClass names that provide a sandbox.",
            }
        },
    )
)

HOST_ISOLATION = ResourceRule(
    Rule(
        id="SBX-K8S-005",
        title="Sandbox pods share nothing with the host",
        severity=Severity.HIGH,
        description="Prohibits host network, PID and IPC namespaces, host ports and hostPath "
        "volumes in sandbox pods.",
        remediation="Set hostNetwork, hostPID and hostIPC to false and use emptyDir volumes only.",
    )
)

SECCOMP = ResourceRule(
    Rule(
        id="SBX-K8S-006",
        title="Sandbox pods use a seccomp profile",
        severity=Severity.MEDIUM,
        description="Checks that sandbox pods run with the RuntimeDefault (or a Localhost) "
        "seccomp profile.",
        remediation="Set securityContext.seccompProfile.type to RuntimeDefault on the pod.",
    )
)

RESTRICTED_NAMESPACE = ResourceRule(
    Rule(
        id="SBX-K8S-007",
        title="Sandbox namespaces enforce Pod Security restricted",
        severity=Severity.MEDIUM,
        description="Checks that namespaces the kit creates enforce the Pod Security "
        "Standard restricted, so no pod there can drop the walls.",
        remediation="Label the namespace pod-security.kubernetes.io/enforce: restricted.",
    )
)

CLAIMS_LOCKED = ResourceRule(
    Rule(
        id="SBX-K8S-008",
        title="Sandbox claims cannot inject environment or volumes",
        severity=Severity.MEDIUM,
        description="Checks that SandboxTemplates disallow environment variables and volume "
        "claim templates supplied by claims, so a caller cannot change what a sandbox sees.",
        remediation="Set envVarsInjectionPolicy and volumeClaimTemplatesPolicy to Disallowed.",
    )
)

OUTSIDE_THE_STACK = StackRule(
    Rule(
        id="SBX-K8S-009",
        title="What the sandboxes run on but the stack does not create is accepted on purpose",
        severity=Severity.HIGH,
        description="Checks that every object the sandboxes depend on but the stack does not "
        "create (a referenced RuntimeClass, whose handler decides the sandbox; an existing GKE "
        "cluster, whose settings decide network policy, private nodes and workload identity; "
        "an existing namespace, whose Pod Security label and other NetworkPolicies decide "
        "what its pods may do) is one the organisation accepts on purpose: the gate cannot "
        "see its settings, so it reports 'cannot verify' for it.",
        remediation="Let the kit create the object (runtimeClass.create: true, "
        "createNamespace: true, no existingCluster), or check it yourself and list it in "
        "acceptedExternalReferences.",
        properties={
            ACCEPTED_REFERENCES: {
                "type": "array",
                "items": {
                    "type": "string",
                    "pattern": "^((RuntimeClass|Namespace)/[a-z0-9]([-a-z0-9]*[a-z0-9])?"
                    "|projects/[^/]+/locations/[^/]+/clusters/[^/]+)$",
                },
                "default": [],
                "description": "Objects outside the stack the organisation has checked and "
                "accepts: RuntimeClass/<name> for a RuntimeClass the kubernetes target "
                "references, Namespace/<name> for an existing namespace sandboxes run in "
                "(createNamespace: false), projects/<project>/locations/<region>/clusters/"
                "<name> for a gcp-gke existingCluster.",
            }
        },
    )
)

RULES = [
    READ_ONLY_ROOT,
    NO_CAPABILITIES,
    NON_ROOT,
    SANDBOXED_RUNTIME,
    HOST_ISOLATION,
    SECCOMP,
    RESTRICTED_NAMESPACE,
    CLAIMS_LOCKED,
    OUTSIDE_THE_STACK,
]
