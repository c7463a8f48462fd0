"""``AgentSandbox``: the kubernetes-sigs/agent-sandbox objects (API v1beta1), hardened.

Prerequisite: the agent-sandbox controller and its CRDs are installed in the cluster (GKE's
Agent Sandbox add-on installs them). See docs/targets/kubernetes.md.
"""

from __future__ import annotations

import re
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from sandboxkit.boundary import (
    NON_PUBLIC_IPV4,
    NON_PUBLIC_IPV6,
    RESOLVER_POD_LABEL,
    SANDBOX_POD_LABEL,
)
from sandboxkit.kubernetes.cilium import VERSION_ANNOTATION, name_egress
from sandboxkit.kubernetes.dns import (
    RESOLVER_LIMIT_MIB,
    RESOLVER_LIMIT_VCPU,
    deploy_resolver,
    dns_ports,
    resolver_selector,
)
from sandboxkit.kubernetes.plan import AgentSandboxArgs, container_walls

API_VERSION = "extensions.agents.x-k8s.io/v1beta1"
# Writable scratch space: the root filesystem is read-only.
SCRATCH_SIZE = "1Gi"
# The nameserver of sandbox pods that need no DNS: nothing answers there, so a lookup fails at
# once and no query leaves the pod.
NO_DNS_NAMESERVER = "127.0.0.1"
_DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def cpu_quantity(vcpu: float) -> str:
    """A Kubernetes CPU quantity: ``1`` for 1 vCPU, ``500m`` for 0.5 vCPU."""
    return str(int(vcpu)) if float(vcpu).is_integer() else f"{round(vcpu * 1000)}m"


def _port(port: int) -> dict[str, Any]:
    return {"protocol": "TCP", "port": port}


class AgentSandbox(pulumi.ComponentResource):
    """Namespace, RuntimeClass, SandboxTemplate, NetworkPolicy (+ Cilium policy), the kit's DNS
    resolver, ResourceQuota and SandboxWarmPool for one sandbox profile.

    Sandbox DNS: with a ``resolver`` the pods' only nameserver is the resolver's Service
    (``dnsPolicy: None``) and their only DNS peer the resolver pods; without one, nameserver
    ``127.0.0.1`` and no DNS egress at all. Never kube-dns, which recurses for any name.

    Children (``<name>`` is the component name):
        ``<name>-provider`` (if ``kubeconfig_context``), ``<name>-namespace`` (if created),
        ``<name>-runtime-class`` (if created), the resolver's ``<name>-resolver-config``,
        ``<name>-resolver``, ``<name>-resolver-service`` and ``<name>-resolver-policy`` (if
        ``resolver``; see ``dns.deploy_resolver``), ``<name>-template``,
        ``<name>-network-policy``, ``<name>-fqdn-policy`` (a CiliumNetworkPolicy: allowlist
        names with ``fqdn_policy: cilium``), ``<name>-quota``, ``<name>-warm-pool``.

    Raises:
        ValueError: for an object name that is not DNS-1123, a non-positive limit, a pool with
            ``pool_ready`` above ``max_concurrent``, allowlist names with ``fqdn_policy``
            ``none`` (a NetworkPolicy matches addresses only) or ``gke`` (GKE FQDNNetworkPolicy
            does not learn from the kit's resolver) or without a ``resolver``, or names with
            ``cilium`` and no ``cilium_version``.
    """

    namespace: pulumi.Output[str]
    sandbox_template_name: pulumi.Output[str]
    warm_pool_name: pulumi.Output[str]
    network_policy_name: pulumi.Output[str]

    def __init__(
        self, name: str, args: AgentSandboxArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("sandboxkit:index:AgentSandbox", name, None, opts)
        object_name = args["object_name"]
        if not _DNS1123.match(object_name) or len(object_name) > 50:
            raise ValueError(f"object_name {object_name!r}: a DNS-1123 label of 50 or fewer")
        for key in ("vcpu", "memory_mib", "max_lifetime_seconds", "max_concurrent", "run_as_user"):
            if not args[key] > 0:
                raise ValueError(f"{key} {args[key]!r}: greater than zero")
        if not 0 <= args["pool_ready"] <= args["max_concurrent"]:
            raise ValueError(f"pool_ready {args['pool_ready']}: from 0 to max_concurrent")
        names = [r for r in args["egress_rules"] if r.kind != "ip"]
        if args["egress_mode"] == "allowlist" and names:
            if args["fqdn_policy"] != "cilium":
                raise ValueError("allowlist names need fqdn_policy cilium (gke and none: IP only)")
            if "resolver" not in args or "cilium_version" not in args:
                raise ValueError("allowlist names need a resolver and a cilium_version")
        if args["egress_mode"] == "open" and "resolver" not in args:
            raise ValueError("egress_mode open needs a resolver for sandbox DNS")

        self._args = args
        self._labels = dict(args["labels"])
        self._pod_labels = {**self._labels, SANDBOX_POD_LABEL: object_name}
        child = pulumi.ResourceOptions(parent=self)
        if "kubeconfig_context" in args:
            provider = k8s.Provider(
                f"{name}-provider", context=args["kubeconfig_context"], opts=child
            )
            child = pulumi.ResourceOptions(parent=self, provider=provider)

        namespace: pulumi.Input[str] = args["namespace"]
        if args["create_namespace"]:
            created = k8s.core.v1.Namespace(
                f"{name}-namespace",
                metadata={
                    "name": args["namespace"],
                    "labels": {
                        **self._labels,
                        "pod-security.kubernetes.io/enforce": "restricted",
                        "pod-security.kubernetes.io/enforce-version": "latest",
                    },
                },
                opts=child,
            )
            namespace = created.metadata.apply(lambda m: m["name"] if m else args["namespace"])
        depends = child

        if args["create_runtime_class"]:
            k8s.node.v1.RuntimeClass(
                f"{name}-runtime-class",
                metadata={"name": args["runtime_class_name"], "labels": self._labels},
                handler=args["runtime_handler"],
                opts=depends,
            )

        nameserver: pulumi.Input[str] = NO_DNS_NAMESERVER
        if "resolver" in args:
            nameserver = deploy_resolver(
                name,
                object_name,
                namespace,
                resolver=args["resolver"],
                labels=self._labels,
                opts=depends,
            )
        template = k8s.apiextensions.CustomResource(
            f"{name}-template",
            api_version=API_VERSION,
            kind="SandboxTemplate",
            metadata=self._meta(object_name, namespace),
            spec=self._template_spec(nameserver),
            opts=depends,
        )
        network_policy = k8s.networking.v1.NetworkPolicy(
            f"{name}-network-policy",
            metadata=self._meta(f"{object_name}-egress", namespace),
            spec=self._network_policy_spec(),
            opts=depends,
        )
        if args["egress_mode"] == "allowlist" and names:
            self._cilium_policy(name, object_name, namespace, depends)
        sandboxes = args["max_concurrent"] + args["pool_ready"]
        # The resolver's pods share the namespace and its quota.
        resolvers = args["resolver"]["replicas"] if "resolver" in args else 0
        memory_mib = args["memory_mib"] * sandboxes + RESOLVER_LIMIT_MIB * resolvers
        k8s.core.v1.ResourceQuota(
            f"{name}-quota",
            metadata=self._meta(f"{object_name}-quota", namespace),
            spec=k8s.core.v1.ResourceQuotaSpecArgs(
                hard={
                    "pods": str(sandboxes + resolvers),
                    "limits.cpu": cpu_quantity(
                        args["vcpu"] * sandboxes + RESOLVER_LIMIT_VCPU * resolvers
                    ),
                    "limits.memory": f"{memory_mib}Mi",
                }
            ),
            opts=depends,
        )
        warm_pool = k8s.apiextensions.CustomResource(
            f"{name}-warm-pool",
            api_version=API_VERSION,
            kind="SandboxWarmPool",
            metadata=self._meta(object_name, namespace),
            spec={
                "replicas": args["pool_ready"],
                "sandboxTemplateRef": {"name": object_name},
            },
            opts=pulumi.ResourceOptions.merge(
                depends, pulumi.ResourceOptions(depends_on=[template, network_policy])
            ),
        )
        self.namespace = pulumi.Output.from_input(namespace)
        self.sandbox_template_name = pulumi.Output.from_input(object_name)
        # Names are fixed inputs; deriving them from the URNs makes the outputs wait for the
        # objects to exist.
        self.warm_pool_name = warm_pool.urn.apply(lambda _: object_name)
        self.network_policy_name = network_policy.urn.apply(lambda _: f"{object_name}-egress")
        self.register_outputs(self.outputs())

    def outputs(self) -> dict[str, pulumi.Output[str]]:
        """Stack outputs: namespace, sandboxTemplateName, warmPoolName, networkPolicyName."""
        return {
            "namespace": self.namespace,
            "sandboxTemplateName": self.sandbox_template_name,
            "warmPoolName": self.warm_pool_name,
            "networkPolicyName": self.network_policy_name,
        }

    def _meta(self, object_name: str, namespace: pulumi.Input[str]) -> k8s.meta.v1.ObjectMetaArgs:
        return k8s.meta.v1.ObjectMetaArgs(
            name=object_name, namespace=namespace, labels=self._labels
        )

    def _template_spec(self, nameserver: pulumi.Input[str]) -> dict[str, Any]:
        args = self._args
        resources = {"cpu": cpu_quantity(args["vcpu"]), "memory": f"{args['memory_mib']}Mi"}
        return {
            # The controller's managed policy admits the public internet and network policies
            # add up, so it must be off for the kit's deny to hold.
            "networkPolicyManagement": "Unmanaged",
            "envVarsInjectionPolicy": "Disallowed",
            "volumeClaimTemplatesPolicy": "Disallowed",
            "podTemplate": {
                "metadata": {"labels": self._pod_labels},
                "spec": {
                    "runtimeClassName": args["runtime_class_name"],
                    "automountServiceAccountToken": False,
                    "enableServiceLinks": False,
                    "hostNetwork": False,
                    "hostPID": False,
                    "hostIPC": False,
                    "activeDeadlineSeconds": args["max_lifetime_seconds"],
                    "restartPolicy": "Never",
                    # Only the kit's resolver (or nothing): never the node's or kube-dns.
                    "dnsPolicy": "None",
                    "dnsConfig": {"nameservers": [nameserver]},
                    **({"tolerations": args["tolerations"]} if args.get("tolerations") else {}),
                    **(
                        {"nodeSelector": args["node_selector"]} if args.get("node_selector") else {}
                    ),
                    "securityContext": {
                        "runAsNonRoot": True,
                        "runAsUser": args["run_as_user"],
                        "runAsGroup": args["run_as_user"],
                        "fsGroup": args["run_as_user"],
                        "seccompProfile": {"type": "RuntimeDefault"},
                    },
                    "containers": [
                        {
                            "name": "sandbox",
                            "image": args["image"],
                            "ports": [{"containerPort": args["entry_port"], "protocol": "TCP"}],
                            "resources": {"requests": resources, "limits": resources},
                            "securityContext": container_walls(),
                            "volumeMounts": [{"name": "scratch", "mountPath": "/tmp"}],
                        }
                    ],
                    "volumes": [{"name": "scratch", "emptyDir": {"sizeLimit": SCRATCH_SIZE}}],
                },
            },
        }

    # Specs are written in the API's camelCase, as the engine, the API server and the CRD schemas
    # see them; the SDK's TypedDicts spell keys in snake_case, hence Any.
    def _network_policy_spec(self) -> Any:
        args = self._args
        ingress = [
            {
                "from": [
                    {
                        "namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": args["entry_namespace"]}
                        }
                    }
                ],
                "ports": [_port(args["entry_port"])],
            }
        ]
        egress: list[dict[str, Any]] = []
        if args["egress_mode"] == "open":
            egress = [
                # L4 only: no Cilium DNS rule exists in open mode for it to void.
                {
                    "to": [{"podSelector": resolver_selector(args["object_name"])}],
                    "ports": dns_ports(),
                },
                {
                    "to": [
                        {"ipBlock": {"cidr": "0.0.0.0/0", "except": list(NON_PUBLIC_IPV4)}},
                        {"ipBlock": {"cidr": "::/0", "except": list(NON_PUBLIC_IPV6)}},
                    ],
                    # Every TCP port (a port left out matches all, NetworkPolicyPort), never
                    # UDP: no contract admits UDP (QUIC falls back to TCP).
                    "ports": [{"protocol": "TCP"}],
                },
            ]
        elif args["egress_mode"] == "allowlist":
            # DNS for names goes through the Cilium policy's L7 rule: an L4 rule on port 53 to
            # the same pods here would void it (Cilium docs, Layer 7 policies).
            egress = [
                {"to": [{"ipBlock": {"cidr": rule.cidr}}], "ports": [_port(rule.port)]}
                for rule in args["egress_rules"]
                if rule.kind == "ip"
            ]
        return {
            "podSelector": {"matchLabels": {SANDBOX_POD_LABEL: args["object_name"]}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": ingress,
            "egress": egress,
        }

    def _cilium_policy(
        self,
        name: str,
        object_name: str,
        namespace: pulumi.Input[str],
        opts: pulumi.ResourceOptions,
    ) -> None:
        resolver = {
            "matchLabels": {
                "k8s:io.kubernetes.pod.namespace": namespace,
                f"k8s:{RESOLVER_POD_LABEL}": object_name,
            }
        }
        major, minor = self._args["cilium_version"]
        k8s.apiextensions.CustomResource(
            f"{name}-fqdn-policy",
            api_version="cilium.io/v2",
            kind="CiliumNetworkPolicy",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=f"{object_name}-fqdn",
                namespace=namespace,
                labels=self._labels,
                annotations={VERSION_ANNOTATION: f"{major}.{minor}"},
            ),
            spec={
                "endpointSelector": {"matchLabels": {SANDBOX_POD_LABEL: object_name}},
                "egress": name_egress(
                    self._args["egress_rules"], self._args["cilium_version"], resolver
                ),
            },
            opts=opts,
        )
