"""The kit's DNS resolver on the cluster: ConfigMap, Deployment, Service and NetworkPolicy.

``AgentSandbox`` creates these in the sandbox namespace when sandbox pods need DNS (see
``sandboxkit.kubernetes.resolver`` for the configuration and why dnsmasq). Sandbox pods name the
Service's cluster IP as their only nameserver (``dnsPolicy: None``); the resolver's own
NetworkPolicy admits DNS from sandbox pods in and DNS to one upstream out, UDP and TCP 53 only.
"""

from __future__ import annotations

import hashlib
from pathlib import PurePosixPath
from typing import Any, Final

import pulumi
import pulumi_kubernetes as k8s

from sandboxkit.boundary import RESOLVER_POD_LABEL, SANDBOX_POD_LABEL
from sandboxkit.kubernetes.plan import ResolverArgs, container_walls
from sandboxkit.kubernetes.resolver import (
    CONFIG_PATH,
    DNS_PORT,
    KUBE_DNS_NAMESPACE,
    KUBE_DNS_POD_LABELS,
    resolver_args,
)

# The resolver's user: the "nonroot" UID of the kit's images (images/resolver).
RESOLVER_USER: Final = 65532
# dnsmasq answering a few sandboxes uses a few MiB; the limits (vCPU, MiB per resolver pod)
# bound a flood from a sandbox and count in the namespace's ResourceQuota.
RESOLVER_LIMIT_VCPU: Final = 0.2
RESOLVER_LIMIT_MIB: Final = 64
RESOLVER_REQUESTS: Final = {"cpu": "50m", "memory": "32Mi"}
RESOLVER_LIMITS: Final = {
    "cpu": f"{round(RESOLVER_LIMIT_VCPU * 1000)}m",
    "memory": f"{RESOLVER_LIMIT_MIB}Mi",
}
# Port 53 for a non-root process: a namespaced sysctl Kubernetes lists as safe
# (kubernetes.io/docs/tasks/administer-cluster/sysctl-cluster, "Safe and unsafe sysctls"), which
# Pod Security baseline and restricted allow.
UNPRIVILEGED_PORT_SYSCTL: Final = {
    "name": "net.ipv4.ip_unprivileged_port_start",
    "value": str(DNS_PORT),
}
# Annotation carrying the configuration's digest, so a new configuration rolls the pods.
CONFIG_DIGEST_ANNOTATION: Final = "sandboxkit/config-sha256"


def dns_ports() -> list[dict[str, Any]]:
    """UDP and TCP 53, as NetworkPolicy ``ports`` write them."""
    return [{"protocol": "UDP", "port": DNS_PORT}, {"protocol": "TCP", "port": DNS_PORT}]


def resolver_selector(object_name: str) -> dict[str, Any]:
    """The label selector of the resolver pods of ``object_name``."""
    return {"matchLabels": {RESOLVER_POD_LABEL: object_name}}


def upstream_peer(resolver: ResolverArgs) -> dict[str, Any]:
    """The NetworkPolicy peer of the resolver's upstream: kube-dns's pods by label, or the
    link-local resolver's ``/32`` (a pod selector never matches a node-local address)."""
    if resolver["upstream"] == "kube-dns":
        return {
            "namespaceSelector": {
                "matchLabels": {"kubernetes.io/metadata.name": KUBE_DNS_NAMESPACE}
            },
            "podSelector": {"matchLabels": dict(KUBE_DNS_POD_LABELS)},
        }
    return {"ipBlock": {"cidr": f"{resolver['upstream_address']}/32"}}


def resolver_policy_spec(object_name: str, resolver: ResolverArgs) -> dict[str, Any]:
    """The resolver pods' NetworkPolicy: DNS in from sandbox pods, DNS out to the upstream."""
    return {
        "podSelector": resolver_selector(object_name),
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [
            {
                "from": [{"podSelector": {"matchLabels": {SANDBOX_POD_LABEL: object_name}}}],
                "ports": dns_ports(),
            }
        ],
        "egress": [{"to": [upstream_peer(resolver)], "ports": dns_ports()}],
    }


def resolver_pod_spec(config_map: str, resolver: ResolverArgs) -> dict[str, Any]:
    """The resolver pod: non-root, read-only, no token, listening on its own address only."""
    config = PurePosixPath(CONFIG_PATH)
    probe = {"tcpSocket": {"port": DNS_PORT}, "periodSeconds": 10, "timeoutSeconds": 2}
    return {
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RESOLVER_USER,
            "runAsGroup": RESOLVER_USER,
            "seccompProfile": {"type": "RuntimeDefault"},
            "sysctls": [dict(UNPRIVILEGED_PORT_SYSCTL)],
        },
        "containers": [
            {
                "name": "dnsmasq",
                "image": resolver["image"],
                "imagePullPolicy": "Always",
                "args": resolver_args("$(POD_IP)"),
                "env": [
                    {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
                ],
                "ports": [
                    {"name": "dns", "containerPort": DNS_PORT, "protocol": "UDP"},
                    {"name": "dns-tcp", "containerPort": DNS_PORT, "protocol": "TCP"},
                ],
                "resources": {"requests": dict(RESOLVER_REQUESTS), "limits": dict(RESOLVER_LIMITS)},
                "readinessProbe": probe,
                "livenessProbe": {**probe, "failureThreshold": 3},
                "securityContext": container_walls(),
                "volumeMounts": [
                    {"name": "config", "mountPath": str(config.parent), "readOnly": True}
                ],
            }
        ],
        "volumes": [
            {
                "name": "config",
                "configMap": {
                    "name": config_map,
                    "items": [{"key": config.name, "path": config.name}],
                },
            }
        ],
    }


def deploy_resolver(
    name: str,
    object_name: str,
    namespace: pulumi.Input[str],
    *,
    resolver: ResolverArgs,
    labels: dict[str, str],
    opts: pulumi.ResourceOptions,
) -> pulumi.Output[str]:
    """Create ``<name>-resolver-config`` (ConfigMap), ``<name>-resolver`` (Deployment),
    ``<name>-resolver-service`` (Service) and ``<name>-resolver-policy`` (NetworkPolicy), all
    named ``<object_name>-resolver`` in ``namespace``.

    Returns:
        The Service's cluster IP, the nameserver sandbox pods use.
    """
    object_labels = {**labels, RESOLVER_POD_LABEL: object_name}
    resolver_name = f"{object_name}-resolver"

    def meta() -> Any:
        return {"name": resolver_name, "namespace": namespace, "labels": labels}

    k8s.core.v1.ConfigMap(
        f"{name}-resolver-config",
        metadata=meta(),
        data={PurePosixPath(CONFIG_PATH).name: resolver["config"]},
        opts=opts,
    )
    digest = hashlib.sha256(resolver["config"].encode()).hexdigest()
    # Specs in the API's camelCase, as the engine and the API server see them; the SDK's
    # TypedDicts spell keys in snake_case, hence Any.
    deployment_spec: Any = {
        "replicas": resolver["replicas"],
        "selector": resolver_selector(object_name),
        "template": {
            "metadata": {
                "labels": object_labels,
                "annotations": {CONFIG_DIGEST_ANNOTATION: digest},
            },
            "spec": resolver_pod_spec(resolver_name, resolver),
        },
    }
    k8s.apps.v1.Deployment(f"{name}-resolver", metadata=meta(), spec=deployment_spec, opts=opts)
    service_spec: Any = {
        "type": "ClusterIP",
        "selector": {RESOLVER_POD_LABEL: object_name},
        "ports": [
            {"name": "dns", "port": DNS_PORT, "targetPort": DNS_PORT, "protocol": "UDP"},
            {"name": "dns-tcp", "port": DNS_PORT, "targetPort": DNS_PORT, "protocol": "TCP"},
        ],
    }
    service = k8s.core.v1.Service(
        f"{name}-resolver-service", metadata=meta(), spec=service_spec, opts=opts
    )
    policy_spec: Any = resolver_policy_spec(object_name, resolver)
    k8s.networking.v1.NetworkPolicy(
        f"{name}-resolver-policy", metadata=meta(), spec=policy_spec, opts=opts
    )
    return service.spec.apply(lambda spec: str(spec.cluster_ip))
