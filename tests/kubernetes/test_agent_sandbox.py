"""The kubernetes target: exact children, hardened inputs, and CRD-valid agent-sandbox objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from sandboxkit.egress import parse_rule
from sandboxkit.kubernetes.agent_sandbox import AgentSandbox, cpu_quantity
from sandboxkit.kubernetes.plan import AgentSandboxArgs
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
    assert container["securityContext"] == {
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "readOnlyRootFilesystem": True,
        "runAsNonRoot": True,
        "capabilities": {"drop": ["ALL"]},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
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


def test_open_admits_public_addresses_only(engine: Recorder) -> None:
    egress = named(build(engine, egress_mode="open"), "kubernetes-network-policy").inputs["spec"][
        "egress"
    ]
    v4 = egress[1]["to"][0]["ipBlock"]
    assert v4["cidr"] == "0.0.0.0/0"
    assert {"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16"} <= set(v4["except"])
    v6 = egress[1]["to"][1]["ipBlock"]
    assert v6["cidr"] == "::/0" and "fe80::/10" in v6["except"]


ALLOW = tuple(
    sorted(parse_rule(e) for e in ("pypi.org", "*.pythonhosted.org", "8.8.8.8:53", "x.io:8443"))
)


def test_allowlist_with_cilium_allows_dns_and_exactly_the_listed_names(engine: Recorder) -> None:
    resources = build(engine, egress_mode="allowlist", egress_rules=ALLOW, fqdn_policy="cilium")
    policy = named(resources, "kubernetes-network-policy").inputs["spec"]
    assert policy["egress"][0]["ports"] == [
        {"protocol": "UDP", "port": 53},
        {"protocol": "TCP", "port": 53},
    ]
    assert policy["egress"][1:] == [
        {"to": [{"ipBlock": {"cidr": "8.8.8.8/32"}}], "ports": [{"protocol": "TCP", "port": 53}]}
    ]
    fqdn = named(resources, "kubernetes-fqdn-policy")
    assert fqdn.type == "kubernetes:cilium.io/v2:CiliumNetworkPolicy"
    rules = fqdn.inputs["spec"]["egress"][1:]
    assert rules == [
        {
            "toFQDNs": [{"matchName": "pypi.org"}, {"matchPattern": "*.pythonhosted.org"}],
            "toPorts": [{"ports": [{"port": "443", "protocol": "TCP"}]}],
        },
        {
            "toFQDNs": [{"matchName": "x.io"}],
            "toPorts": [{"ports": [{"port": "8443", "protocol": "TCP"}]}],
        },
    ]


def test_allowlist_with_gke_uses_fqdn_network_policy(engine: Recorder) -> None:
    resources = build(engine, egress_mode="allowlist", egress_rules=ALLOW, fqdn_policy="gke")
    fqdn = named(resources, "kubernetes-fqdn-policy")
    assert fqdn.type == "kubernetes:networking.gke.io/v1alpha1:FQDNNetworkPolicy"
    assert fqdn.inputs["spec"] == {
        "podSelector": {"matchLabels": {"sandboxkit-sandbox": "sandboxkit-test"}},
        "egress": [
            {
                "matches": [{"name": "pypi.org"}, {"pattern": "*.pythonhosted.org"}],
                "ports": [{"protocol": "TCP", "port": 443}],
            },
            {"matches": [{"name": "x.io"}], "ports": [{"protocol": "TCP", "port": 8443}]},
        ],
    }


def test_quota_and_warm_pool_follow_the_pool(engine: Recorder) -> None:
    resources = build(engine, pool_ready=3, max_concurrent=7)
    quota = named(resources, "kubernetes-quota").inputs["spec"]
    assert quota == {"hard": {"pods": "10", "limits.cpu": "5", "limits.memory": "10240Mi"}}
    pool = named(resources, "kubernetes-warm-pool").inputs["spec"]
    assert pool == {"replicas": 3, "sandboxTemplateRef": {"name": "sandboxkit-test"}}


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
        ({"egress_mode": "allowlist", "fqdn_policy": "none"}, "fqdn_policy"),
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
    crd = yaml.safe_load((shared_dir / "reference" / "agent-sandbox-crds" / file_name).read_text())
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
    resource = named(build(engine, egress_mode=mode), resource_name)
    document = {
        "apiVersion": resource.inputs["apiVersion"],
        "kind": resource.inputs["kind"],
        "metadata": resource.inputs["metadata"],
        "spec": resource.inputs["spec"],
    }
    jsonschema.validate(document, _strict(_crd_schema(shared_dir, crd_file)))


def test_crd_validation_catches_a_misspelt_field(engine: Recorder, shared_dir: Path) -> None:
    resource = named(build(engine), "kubernetes-template")
    spec = dict(resource.inputs["spec"])
    spec["networkPolicyManagment"] = spec.pop("networkPolicyManagement")
    schema = _strict(_crd_schema(shared_dir, "extensions.agents.x-k8s.io_sandboxtemplates.yaml"))
    with pytest.raises(jsonschema.ValidationError, match="networkPolicyManagment"):
        jsonschema.validate({"apiVersion": "x", "kind": "SandboxTemplate", "spec": spec}, schema)
