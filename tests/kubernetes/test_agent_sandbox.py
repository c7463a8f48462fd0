"""The kubernetes target: exact children, hardened inputs, and CRD-valid agent-sandbox objects."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from sandboxkit.egress_contract import parse_rule
from sandboxkit.kubernetes.agent_sandbox import AgentSandbox, cpu_quantity
from sandboxkit.kubernetes.catalog import MOCK_CLUSTER_IP
from sandboxkit.kubernetes.plan import AgentSandboxArgs, ResolverArgs
from sandboxkit.kubernetes.resolver import resolver_config
from sandboxkit.render import Recorder
from support import named, of_type

TEMPLATE = "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate"
WARM_POOL = "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxWarmPool"
LABELS = {
    "managed-by": "sandboxkit",
    "sandboxkit-stack": "test",
    "sandboxkit-environment": "dev",
    "sandboxkit-target": "kubernetes",
}


def args(**changes: Any) -> AgentSandboxArgs:
    base = AgentSandboxArgs(
        object_name="sandboxkit-test",
        namespace="agent-sandboxes",
        create_namespace=True,
        image="example.com/sandbox:1",
        vcpu=0.5,
        memory_mib=1024,
        max_lifetime_seconds=1800,
        pool_ready=2,
        max_concurrent=10,
        egress_mode="deny",
        egress_rules=(),
        fqdn_policy="none",
        runtime_class_name="gvisor",
        runtime_handler="runsc",
        create_runtime_class=True,
        entry_namespace="agent-sandbox-router",
        entry_port=8888,
        run_as_user=65532,
        labels=LABELS,
        kubeconfig_context="kind-test",
    )
    base.update(changes)  # type: ignore[typeddict-item]
    return base


DNS_PORTS = [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
# Every container the kit runs (the sandbox's, the resolver's) keeps these walls.
CONTAINER_WALLS = {
    "allowPrivilegeEscalation": False,
    "privileged": False,
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}
RESOLVER_CHILDREN = [
    ("kubernetes:core/v1:ConfigMap", "kubernetes-resolver-config"),
    ("kubernetes:apps/v1:Deployment", "kubernetes-resolver"),
    ("kubernetes:core/v1:Service", "kubernetes-resolver-service"),
    ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "kubernetes-resolver-policy"),
]


def resolver(
    mode: str = "open", upstream: str = "kube-dns", address: str = "10.96.0.10"
) -> ResolverArgs:
    rules = ALLOW if mode == "allowlist" else ()
    return ResolverArgs(
        image="example.com/resolver@sha256:" + "a" * 64,
        replicas=2,
        config=resolver_config(mode, rules, [address]),  # type: ignore[arg-type]
        upstream=upstream,
        upstream_address=address,
    )


def build(engine: Recorder, **changes: Any) -> list[Any]:
    engine.run(lambda: AgentSandbox("kubernetes", args(**changes)))
    return engine.resources


def test_children_are_exactly_the_documented_set(engine: Recorder) -> None:
    resources = build(engine)
    assert sorted((r.type, r.name) for r in resources) == sorted(
        [
            ("sandboxkit:index:AgentSandbox", "kubernetes"),
            ("pulumi:providers:kubernetes", "kubernetes-provider"),
            ("kubernetes:core/v1:Namespace", "kubernetes-namespace"),
            ("kubernetes:node.k8s.io/v1:RuntimeClass", "kubernetes-runtime-class"),
            (TEMPLATE, "kubernetes-template"),
            ("kubernetes:networking.k8s.io/v1:NetworkPolicy", "kubernetes-network-policy"),
            ("kubernetes:core/v1:ResourceQuota", "kubernetes-quota"),
            (WARM_POOL, "kubernetes-warm-pool"),
        ]
    )
    component = named(resources, "kubernetes")
    assert all(r.parent == component.urn for r in resources if r is not component)
    provider = named(resources, "kubernetes-provider")
    assert provider.inputs["context"] == "kind-test"


def test_every_object_carries_the_kit_labels(engine: Recorder) -> None:
    for resource in build(engine):
        if resource.custom is False or resource.type.startswith("pulumi:providers:"):
            continue
        labels = resource.inputs["metadata"]["labels"]
        assert labels.items() >= LABELS.items(), resource.name


def test_namespace_enforces_pod_security_restricted(engine: Recorder) -> None:
    namespace = named(build(engine), "kubernetes-namespace")
    labels = namespace.inputs["metadata"]["labels"]
    assert labels["pod-security.kubernetes.io/enforce"] == "restricted"
    assert namespace.inputs["metadata"]["name"] == "agent-sandboxes"


def test_template_pod_is_hardened(engine: Recorder) -> None:
    spec = named(build(engine), "kubernetes-template").inputs["spec"]
    assert spec["networkPolicyManagement"] == "Unmanaged"
    assert spec["envVarsInjectionPolicy"] == "Disallowed"
    pod = spec["podTemplate"]["spec"]
    assert pod["runtimeClassName"] == "gvisor"
    assert pod["automountServiceAccountToken"] is False
    assert pod["activeDeadlineSeconds"] == 1800
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "fsGroup": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    [container] = pod["containers"]
    assert container["securityContext"] == CONTAINER_WALLS
    assert container["resources"] == {
        "requests": {"cpu": "500m", "memory": "1024Mi"},
        "limits": {"cpu": "500m", "memory": "1024Mi"},
    }
    assert spec["podTemplate"]["metadata"]["labels"]["sandboxkit-sandbox"] == "sandboxkit-test"


def test_deny_admits_no_egress_and_ingress_only_from_the_router(engine: Recorder) -> None:
    policy = named(build(engine), "kubernetes-network-policy").inputs["spec"]
    assert policy == {
        "podSelector": {"matchLabels": {"sandboxkit-sandbox": "sandboxkit-test"}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [
            {
                "from": [
                    {
                        "namespaceSelector": {
                            "matchLabels": {"kubernetes.io/metadata.name": "agent-sandbox-router"}
                        }
                    }
                ],
                "ports": [{"protocol": "TCP", "port": 8888}],
            }
        ],
        "egress": [],
    }


def test_open_admits_public_addresses_and_dns_to_the_resolver_only(engine: Recorder) -> None:
    resources = build(engine, egress_mode="open", resolver=resolver())
    egress = named(resources, "kubernetes-network-policy").inputs["spec"]["egress"]
    assert egress[0] == {
        "to": [{"podSelector": {"matchLabels": {"sandboxkit-resolver": "sandboxkit-test"}}}],
        "ports": DNS_PORTS,
    }
    v4 = egress[1]["to"][0]["ipBlock"]
    assert v4["cidr"] == "0.0.0.0/0"
    assert {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"} <= set(v4["except"])
    v6 = egress[1]["to"][1]["ipBlock"]
    assert v6["cidr"] == "::/0" and "fe80::/10" in v6["except"]
    assert len(egress) == 2


def _dns(resources: list[Any]) -> tuple[str, dict[str, Any]]:
    pod = named(resources, "kubernetes-template").inputs["spec"]["podTemplate"]["spec"]
    return pod["dnsPolicy"], pod["dnsConfig"]


def test_sandboxes_without_a_resolver_have_no_nameserver_but_loopback(engine: Recorder) -> None:
    """Never the node's resolver or kube-dns, which recurses for any name."""
    resources = build(engine)
    assert _dns(resources) == ("None", {"nameservers": ["127.0.0.1"]})
    assert not [r for r in resources if "resolver" in r.name]


def test_sandboxes_with_a_resolver_name_its_service_only(engine: Recorder) -> None:
    resources = build(engine, egress_mode="open", resolver=resolver())
    assert _dns(resources) == ("None", {"nameservers": [MOCK_CLUSTER_IP]})
    service = named(resources, "kubernetes-resolver-service").inputs
    assert service["spec"] == {
        "type": "ClusterIP",
        "selector": {"sandboxkit-resolver": "sandboxkit-test"},
        "ports": [
            {"name": "dns", "port": 53, "targetPort": 53, "protocol": "UDP"},
            {"name": "dns-tcp", "port": 53, "targetPort": 53, "protocol": "TCP"},
        ],
    }
    assert service["metadata"]["name"] == "sandboxkit-test-resolver"


def test_the_resolver_runs_the_generated_config_unprivileged(engine: Recorder) -> None:
    planned = resolver()
    resources = build(engine, egress_mode="open", resolver=planned)
    config = named(resources, "kubernetes-resolver-config").inputs
    assert config["data"] == {"dnsmasq.conf": planned["config"]}
    deployment = named(resources, "kubernetes-resolver").inputs["spec"]
    assert deployment["replicas"] == 2
    template = deployment["template"]
    assert template["metadata"]["labels"]["sandboxkit-resolver"] == "sandboxkit-test"
    assert len(template["metadata"]["annotations"]["sandboxkit/config-sha256"]) == 64
    pod = template["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"] == {
        "runAsNonRoot": True,
        "runAsUser": 65532,
        "runAsGroup": 65532,
        "seccompProfile": {"type": "RuntimeDefault"},
        "sysctls": [{"name": "net.ipv4.ip_unprivileged_port_start", "value": "53"}],
    }
    assert "runtimeClassName" not in pod and "tolerations" not in pod
    [container] = pod["containers"]
    assert container["image"] == planned["image"]
    assert container["args"] == [
        "--keep-in-foreground",
        "--conf-file=/etc/sandboxkit/dnsmasq.conf",
        "--listen-address=$(POD_IP)",
        "--bind-interfaces",
        "--port=53",
        "--pid-file=",
        "--log-facility=-",
    ]
    assert container["env"] == [
        {"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
    ]
    assert container["securityContext"] == CONTAINER_WALLS
    assert container["resources"] == {
        "requests": {"cpu": "50m", "memory": "32Mi"},
        "limits": {"cpu": "200m", "memory": "64Mi"},
    }
    assert container["volumeMounts"] == [
        {"name": "config", "mountPath": "/etc/sandboxkit", "readOnly": True}
    ]
    assert pod["volumes"] == [
        {
            "name": "config",
            "configMap": {
                "name": "sandboxkit-test-resolver",
                "items": [{"key": "dnsmasq.conf", "path": "dnsmasq.conf"}],
            },
        }
    ]


@pytest.mark.parametrize(
    ("upstream", "address", "peer"),
    [
        (
            "kube-dns",
            "10.96.0.10",
            {
                "namespaceSelector": {
                    "matchLabels": {"kubernetes.io/metadata.name": "kube-system"}
                },
                "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
            },
        ),
        # Link-local resolvers are no pods: only their /32, and only port 53.
        ("node-local-dns", "169.254.20.10", {"ipBlock": {"cidr": "169.254.20.10/32"}}),
        ("metadata-server", "169.254.169.254", {"ipBlock": {"cidr": "169.254.169.254/32"}}),
    ],
)
def test_the_resolver_talks_to_sandboxes_and_its_upstream_on_port_53_only(
    engine: Recorder, upstream: str, address: str, peer: dict[str, Any]
) -> None:
    resources = build(engine, egress_mode="open", resolver=resolver("open", upstream, address))
    assert named(resources, "kubernetes-resolver-policy").inputs["spec"] == {
        "podSelector": {"matchLabels": {"sandboxkit-resolver": "sandboxkit-test"}},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [
            {
                "from": [
                    {"podSelector": {"matchLabels": {"sandboxkit-sandbox": "sandboxkit-test"}}}
                ],
                "ports": DNS_PORTS,
            }
        ],
        "egress": [{"to": [peer], "ports": DNS_PORTS}],
    }


ALLOW = tuple(
    sorted(
        parse_rule(e) for e in ("pypi.org", "*.pythonhosted.org", "140.82.112.3:53", "x.io:8443")
    )
)


CILIUM = {"fqdn_policy": "cilium", "cilium_version": (1, 19)}


def test_allowlist_with_cilium_sends_dns_through_the_proxy_and_matches_names_at_l7(
    engine: Recorder,
) -> None:
    resources = build(
        engine,
        egress_mode="allowlist",
        egress_rules=ALLOW,
        resolver=resolver("allowlist"),
        **CILIUM,
    )
    assert sorted((r.type, r.name) for r in resources if "resolver" in r.name) == sorted(
        RESOLVER_CHILDREN
    )
    policy = named(resources, "kubernetes-network-policy").inputs["spec"]
    # IP entries only: an L4 rule on port 53 here would void the Cilium DNS rule.
    assert policy["egress"] == [
        {
            "to": [{"ipBlock": {"cidr": "140.82.112.3/32"}}],
            "ports": [{"protocol": "TCP", "port": 53}],
        }
    ]
    fqdn = named(resources, "kubernetes-fqdn-policy")
    assert fqdn.type == "kubernetes:cilium.io/v2:CiliumNetworkPolicy"
    # The release the patterns mean what they say on: the egress reader reads it back.
    assert fqdn.inputs["metadata"]["annotations"] == {"sandboxkit/cilium-version": "1.19"}
    assert fqdn.inputs["spec"] == {
        "endpointSelector": {"matchLabels": {"sandboxkit-sandbox": "sandboxkit-test"}},
        "egress": [
            {
                "toEndpoints": [
                    {
                        "matchLabels": {
                            "k8s:io.kubernetes.pod.namespace": "agent-sandboxes",
                            "k8s:sandboxkit-resolver": "sandboxkit-test",
                        }
                    }
                ],
                "toPorts": [
                    {
                        "ports": [
                            {"port": "53", "protocol": "UDP"},
                            {"port": "53", "protocol": "TCP"},
                        ],
                        "rules": {
                            "dns": [
                                {"matchName": "pypi.org"},
                                {"matchName": "x.io"},
                                {"matchPattern": "**.pythonhosted.org"},
                            ]
                        },
                    }
                ],
            },
            {
                "toFQDNs": [{"matchName": "pypi.org"}, {"matchPattern": "**.pythonhosted.org"}],
                "toPorts": [
                    {
                        "ports": [{"port": "443", "protocol": "TCP"}],
                        "serverNames": ["**.pythonhosted.org", "pypi.org"],
                    }
                ],
            },
            {
                "toFQDNs": [{"matchName": "x.io"}],
                "toPorts": [
                    {"ports": [{"port": "8443", "protocol": "TCP"}], "serverNames": ["x.io"]}
                ],
            },
        ],
    }


def test_plain_http_names_are_matched_by_host_header(engine: Recorder) -> None:
    rules = tuple(sorted(parse_rule(e) for e in ("deb.debian.org:80", "*.example.com:80")))
    resources = build(
        engine, egress_mode="allowlist", egress_rules=rules, resolver=resolver(), **CILIUM
    )
    [_, http] = named(resources, "kubernetes-fqdn-policy").inputs["spec"]["egress"]
    assert http["toPorts"] == [
        {
            "ports": [{"port": "80", "protocol": "TCP"}],
            "rules": {
                "http": [
                    {"host": r"^([-a-z0-9_]+\.)+example\.com(:80)?$"},
                    {"host": r"^deb\.debian\.org(:80)?$"},
                ]
            },
        }
    ]


def test_allowlist_of_ip_entries_needs_no_dns(engine: Recorder) -> None:
    rules = (parse_rule("140.82.112.3:443"),)
    resources = build(engine, egress_mode="allowlist", egress_rules=rules, fqdn_policy="gke")
    assert not of_type(resources, "kubernetes:networking.gke.io/v1alpha1:FQDNNetworkPolicy")
    assert not [r for r in resources if "resolver" in r.name or "fqdn" in r.name]
    assert _dns(resources) == ("None", {"nameservers": ["127.0.0.1"]})
    assert named(resources, "kubernetes-network-policy").inputs["spec"]["egress"] == [
        {
            "to": [{"ipBlock": {"cidr": "140.82.112.3/32"}}],
            "ports": [{"protocol": "TCP", "port": 443}],
        }
    ]


def test_quota_and_warm_pool_follow_the_pool(engine: Recorder) -> None:
    resources = build(engine, pool_ready=3, max_concurrent=7)
    quota = named(resources, "kubernetes-quota").inputs["spec"]
    assert quota == {"hard": {"pods": "10", "limits.cpu": "5", "limits.memory": "10240Mi"}}
    pool = named(resources, "kubernetes-warm-pool").inputs["spec"]
    assert pool == {"replicas": 3, "sandboxTemplateRef": {"name": "sandboxkit-test"}}


def test_the_quota_makes_room_for_the_resolver_pods(engine: Recorder) -> None:
    resources = build(
        engine, pool_ready=3, max_concurrent=7, egress_mode="open", resolver=resolver()
    )
    quota = named(resources, "kubernetes-quota").inputs["spec"]
    # 10 sandboxes of 0.5 vCPU and 1024 MiB, 2 resolvers of 0.2 vCPU and 64 MiB.
    assert quota == {"hard": {"pods": "12", "limits.cpu": "5400m", "limits.memory": "10368Mi"}}


def test_existing_namespace_and_runtime_class_are_referenced_not_created(
    engine: Recorder,
) -> None:
    resources = build(engine, create_namespace=False, create_runtime_class=False)
    assert not of_type(resources, "kubernetes:core/v1:Namespace")
    assert not of_type(resources, "kubernetes:node.k8s.io/v1:RuntimeClass")
    template = named(resources, "kubernetes-template").inputs
    assert template["metadata"]["namespace"] == "agent-sandboxes"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"object_name": "Bad_Name"}, "DNS-1123"),
        ({"vcpu": 0}, "vcpu"),
        ({"pool_ready": 11}, "pool_ready"),
        (
            {"egress_mode": "allowlist", "egress_rules": ALLOW, "fqdn_policy": "none"},
            "allowlist names need fqdn_policy cilium",
        ),
        (
            {"egress_mode": "allowlist", "egress_rules": ALLOW, "fqdn_policy": "gke"},
            "allowlist names need fqdn_policy cilium",
        ),
        (
            {"egress_mode": "allowlist", "egress_rules": ALLOW, **CILIUM},
            "allowlist names need a resolver",
        ),
        ({"egress_mode": "open"}, "egress_mode open needs a resolver"),
    ],
)
def test_component_refuses_bad_plain_inputs(
    engine: Recorder, changes: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        build(engine, **changes)


@pytest.mark.parametrize(
    ("vcpu", "quantity"), [(1, "1"), (2.0, "2"), (0.5, "500m"), (0.25, "250m")]
)
def test_cpu_quantity(vcpu: float, quantity: str) -> None:
    assert cpu_quantity(vcpu) == quantity


def _crd_schema(shared_dir: Path, file_name: str) -> dict[str, Any]:
    # libyaml's safe loader when PyYAML has it: the templates CRD is 400 KB (0.05 s, not 0.5 s).
    text = (shared_dir / "reference" / "agent-sandbox-crds" / file_name).read_text()
    crd = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    [version] = [v for v in crd["spec"]["versions"] if v["name"] == "v1beta1"]
    return version["schema"]["openAPIV3Schema"]


def _strict(schema: Any) -> Any:
    # CRD schemas prune unknown fields; as JSON Schema that means additionalProperties: false on
    # every object that lists properties, so a misspelt field fails validation here.
    if isinstance(schema, dict):
        result = {k: _strict(v) for k, v in schema.items()}
        if "properties" in schema and "additionalProperties" not in schema:
            result["additionalProperties"] = False
        return result
    if isinstance(schema, list):
        return [_strict(v) for v in schema]
    return schema


@functools.cache
def _crd_validator(shared_dir: Path, file_name: str) -> Any:
    """A validator of the CRD's strict v1beta1 schema, the schema itself checked against its
    metaschema, once per process (as ``jsonschema.validate`` does on every call)."""
    schema = _strict(_crd_schema(shared_dir, file_name))
    validator = jsonschema.validators.validator_for(schema)
    validator.check_schema(schema)
    return validator(schema)


def _crd_errors(shared_dir: Path, file_name: str, document: dict[str, Any]) -> list[str]:
    """Every message the CRD's strict schema gives ``document``."""
    return [e.message for e in _crd_validator(shared_dir, file_name).iter_errors(document)]


@pytest.mark.parametrize(
    ("resource_name", "crd_file"),
    [
        ("kubernetes-template", "extensions.agents.x-k8s.io_sandboxtemplates.yaml"),
        ("kubernetes-warm-pool", "extensions.agents.x-k8s.io_sandboxwarmpools.yaml"),
    ],
)
@pytest.mark.parametrize("mode", ["deny", "open"])
def test_generated_objects_validate_against_the_real_crds(
    engine: Recorder, shared_dir: Path, resource_name: str, crd_file: str, mode: str
) -> None:
    extra = {"resolver": resolver()} if mode == "open" else {}
    resource = named(build(engine, egress_mode=mode, **extra), resource_name)
    document = {
        "apiVersion": resource.inputs["apiVersion"],
        "kind": resource.inputs["kind"],
        "metadata": resource.inputs["metadata"],
        "spec": resource.inputs["spec"],
    }
    assert _crd_errors(shared_dir, crd_file, document) == []


def test_crd_validation_catches_a_misspelt_field(engine: Recorder, shared_dir: Path) -> None:
    resource = named(build(engine), "kubernetes-template")
    spec = dict(resource.inputs["spec"])
    spec["networkPolicyManagment"] = spec.pop("networkPolicyManagement")
    document = {"apiVersion": "x", "kind": "SandboxTemplate", "spec": spec}
    assert _crd_errors(
        shared_dir, "extensions.agents.x-k8s.io_sandboxtemplates.yaml", document
    ) == ["Additional properties are not allowed ('networkPolicyManagment' was unexpected)"]
