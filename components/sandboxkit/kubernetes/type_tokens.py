"""The Kubernetes objects the kubernetes target (and gcp-gke, which builds the same objects)
creates or reads (pulumi-kubernetes v4), each stated once.

A pulumi-kubernetes token names the API group and version (``kubernetes:apps/v1:Deployment``);
the catalog, the policy handlers, the stack checks and the egress reader match rendered
resources through ``TypeToken.matches``, which leaves the version out, so an object of another
API version of the same group and kind (``agents.x-k8s.io/v1alpha1`` or ``v1beta1``) is the same
kind to all of them. Groups: the agent-sandbox CRDs (kubernetes-sigs/agent-sandbox: ``Sandbox``
in ``agents.x-k8s.io``; ``SandboxTemplate`` and ``SandboxWarmPool`` in
``extensions.agents.x-k8s.io``), Cilium's CRDs (``cilium.io``), GKE's FQDNNetworkPolicy
(``networking.gke.io``) and the built-in groups.
"""

from __future__ import annotations

from sandboxkit.type_tokens import TypeToken

NAMESPACE = TypeToken("kubernetes:core/v1:Namespace")
RESOURCE_QUOTA = TypeToken("kubernetes:core/v1:ResourceQuota")
CONFIG_MAP = TypeToken("kubernetes:core/v1:ConfigMap")
SERVICE = TypeToken("kubernetes:core/v1:Service")
SECRET = TypeToken("kubernetes:core/v1:Secret")
DEPLOYMENT = TypeToken("kubernetes:apps/v1:Deployment")
RUNTIME_CLASS = TypeToken("kubernetes:node.k8s.io/v1:RuntimeClass")
NETWORK_POLICY = TypeToken("kubernetes:networking.k8s.io/v1:NetworkPolicy")
CILIUM_POLICY = TypeToken("kubernetes:cilium.io/v2:CiliumNetworkPolicy")
CLUSTERWIDE_POLICY = TypeToken("kubernetes:cilium.io/v2:CiliumClusterwideNetworkPolicy")
GKE_FQDN_POLICY = TypeToken("kubernetes:networking.gke.io/v1alpha1:FQDNNetworkPolicy")
SANDBOX = TypeToken("kubernetes:agents.x-k8s.io/v1alpha1:Sandbox")
SANDBOX_TEMPLATE = TypeToken("kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate")
WARM_POOL = TypeToken("kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxWarmPool")
ROLE = TypeToken("kubernetes:rbac.authorization.k8s.io/v1:Role")
CLUSTER_ROLE = TypeToken("kubernetes:rbac.authorization.k8s.io/v1:ClusterRole")
ROLE_BINDING = TypeToken("kubernetes:rbac.authorization.k8s.io/v1:RoleBinding")
CLUSTER_ROLE_BINDING = TypeToken("kubernetes:rbac.authorization.k8s.io/v1:ClusterRoleBinding")
PROVIDER = TypeToken("pulumi:providers:kubernetes")
# pulumi-kubernetes 4's YAML components (pulumi_kubernetes.yaml.v2): the provider builds their
# objects at deployment, so a render holds only the components' inputs. Their v1 namesakes
# (``kubernetes:yaml:ConfigGroup``, the same kind to ``matches``) register no inputs and every
# object in the program, so the reader finds nothing to expand in them.
CONFIG_GROUP = TypeToken("kubernetes:yaml/v2:ConfigGroup")
CONFIG_FILE = TypeToken("kubernetes:yaml/v2:ConfigFile")

# Kinds whose pod template is a sandbox's pod.
SANDBOX_POD_KINDS = (SANDBOX_TEMPLATE, SANDBOX)
ROLES = (ROLE, CLUSTER_ROLE)
ROLE_BINDINGS = (ROLE_BINDING, CLUSTER_ROLE_BINDING)
