"""The mutation table: each hardened default the components set, weakened, the policy that
catches it and the level at which it fails in prod.

A row weakens a shipped stack either through its config (what a user could write) or, when no
config can weaken it, through one rendered input. The unmutated stack must be silent for the
policy; the mutated one must raise exactly the expected policies and nothing else new. Every row
is judged with prod's shipped pack config (``config/prod.json``), whatever stack it weakens: a
weakened hardened default fails the prod gate (``mandatory``) unless a row states otherwise,
which only an organisation's own pack config may do.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

import support as testing
from sandboxkit import gate
from sandboxkit.render import RenderedResource, RenderedStack
from support import REMOVE, named, with_input, without

PROJECT = Path(__file__).resolve().parents[2]
PROD_CONFIG = gate.environment_config_path(gate.pack_dir(PROJECT), "prod")
MANDATORY = "mandatory"


@pytest.fixture(scope="module")
def analyzer() -> testing.RememberingAnalyzer:
    """The pack's analyzer servicer in this process (every check reconfigures it); each row
    changes one resource or one config key of a shared stack, so the unchanged resources'
    ``Analyze`` answers are remembered (``support.RememberingAnalyzer``)."""
    return testing.RememberingAnalyzer(gate.InProcessAnalyzer(gate.pack_dir(PROJECT)))


def stack_values(stack: str) -> dict[str, Any]:
    return testing.stack_values(PROJECT, stack)


def render(stack: str, values: dict[str, Any]) -> RenderedStack:
    return testing.render_values(PROJECT, stack, values)


ConfigMutation = Callable[[dict[str, Any]], None]
InputMutation = Callable[[RenderedStack], RenderedStack]

TEMPLATE = "kubernetes-template"
POD = ("spec", "podTemplate", "spec")
CONTAINER = (*POD, "containers", 0)
SECURITY = (*CONTAINER, "securityContext")


def _profile(section: str, key: str, value: Any) -> ConfigMutation:
    def mutate(values: dict[str, Any]) -> None:
        values.setdefault("profile", {}).setdefault(section, {})[key] = value

    return mutate


def _setting(target: str, key: str, value: Any) -> ConfigMutation:
    def mutate(values: dict[str, Any]) -> None:
        values[target][key] = value

    return mutate


def _open_egress(values: dict[str, Any]) -> None:
    values["profile"]["egress"] = {"mode": "open"}


def _big_pool(values: dict[str, Any]) -> None:
    values["profile"]["pool"] = {"ready": 150, "maxConcurrent": 500}


def _cloudrun_allowlist(values: dict[str, Any]) -> None:
    values["profile"]["egress"] = {"mode": "allowlist", "allow": ["pypi.org"]}
    values["gcp-cloudrun"]["cnameTargets"] = []  # pypi.org answers with addresses
    values["gcp-cloudrun"]["nameMatching"] = "resolved-address"


def _host_runtime(values: dict[str, Any]) -> None:
    values["kubernetes"]["runtimeClass"] = {"name": "runc", "create": False}


def _set(name: str, path: tuple[str | int, ...], value: Any) -> InputMutation:
    return lambda rendered: with_input(rendered, name, path, value)


def _edit(name: str, change: Callable[[dict[str, Any]], None]) -> InputMutation:
    """Change resource ``name``'s inputs in place on a copy (for edits ``_set`` cannot say)."""

    def mutate(rendered: RenderedStack) -> RenderedStack:
        inputs = copy.deepcopy(dict(named(rendered.resources, name).inputs))
        change(inputs)
        for key, value in inputs.items():
            rendered = with_input(rendered, name, (key,), value)
        return rendered

    return mutate


def _policy_action(action: str) -> Callable[[dict[str, Any]], None]:
    def change(inputs: dict[str, Any]) -> None:
        document = json.loads(inputs["policy"])
        document["Statement"][0]["Action"] = action
        inputs["policy"] = json.dumps(document)

    return change


def _trust_without_source(inputs: dict[str, Any]) -> None:
    document = json.loads(inputs["assumeRolePolicy"])
    del document["Statement"][0]["Condition"]
    inputs["assumeRolePolicy"] = json.dumps(document)


def _binding(binding: str, field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(inputs: dict[str, Any]) -> None:
        for entry in inputs["bindings"]:
            if entry["name"] == binding:
                if value is REMOVE:
                    inputs["bindings"].remove(entry)
                else:
                    entry[field] = value
                return
        raise AssertionError(f"no binding {binding}")

    return change


def _add_binding(entry: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    return lambda inputs: inputs["bindings"].append(entry)


# What the Durable Object installs in deny and allowlist, replaced by open's catch-alls.
_LISTED_ONLY = 'if (!parsed.ok || parsed.policy.mode === "deny") return [];'
_CATCH_ALLS = (
    'return [{ method: "interceptAllOutboundHttp" }, '
    '{ method: "interceptOutboundHttps", pattern: "*" }];'
)


def _catch_all_interceptions(inputs: dict[str, Any]) -> None:
    assert _LISTED_ONLY in inputs["content"]
    inputs["content"] = inputs["content"].replace(_LISTED_ONLY, _CATCH_ALLS)


def _rules_string(change: Callable[[list[str]], list[str]]) -> InputMutation:
    """Rewrite the Network Firewall name rules' Suricata lines."""

    def edit(inputs: dict[str, Any]) -> None:
        source = inputs["ruleGroup"]["rulesSource"]
        source["rulesString"] = "\n".join(change(source["rulesString"].splitlines()))

    return _edit(NAME_RULES, edit)


def _drop(name: str) -> InputMutation:
    return lambda rendered: without(rendered, name)


def _launcher_log_writer(rendered: RenderedStack) -> RenderedStack:
    """The launcher's account given project-wide roles/logging.logWriter, as the kit did
    before: the grant ``service_account`` created beside the Cloud Run service."""
    service = named(rendered.resources, RUN)
    old = RenderedResource(
        urn=service.urn.replace(
            "gcp:cloudrunv2/service:Service::gcp-cloudrun-service",
            "gcp:projects/iAMMember:IAMMember::gcp-cloudrun-role-logging-logWriter",
        ),
        type="gcp:projects/iAMMember:IAMMember",
        name="gcp-cloudrun-role-logging-logWriter",
        parent=service.parent,
        custom=True,
        inputs={
            "project": service.inputs["project"],
            "role": "roles/logging.logWriter",
            "member": f"serviceAccount:{service.inputs['template']['serviceAccount']}",
        },
    )
    return replace(rendered, resources=(*rendered.resources, old))


@dataclass(frozen=True)
class Row:
    """One hardened default: where it lives, how it is weakened, what must catch it.

    ``expected`` holds (policy id, resource name) pairs; ``targets`` narrows the stack to some
    of its targets (when a value beyond one target's cap is refused by config validation);
    ``prod`` is the level at which every expected finding fails in prod (prod's shipped pack
    config makes every policy mandatory: no row is an exception today).
    """

    id: str
    stack: str
    expected: frozenset[tuple[str, str]]
    config: ConfigMutation | None = None
    inputs: InputMutation | None = None
    targets: tuple[str, ...] = ()
    prod: str = MANDATORY


def _caught(*pairs: tuple[str, str]) -> frozenset[tuple[str, str]]:
    return frozenset(pairs)


KUBERNETES_ONLY = ("kubernetes",)
POOL = "azure-sessions-pool"
SESSION = ("customContainerTemplate", "containers", 0)
COOLDOWN = ("dynamicPoolConfiguration", "lifecycleConfiguration")
EXECUTOR = "azure-sessions-executor-0"
ZERO_GUID = "00000000-0000-0000-0000-000000000000"
ROLE_DEFINITIONS = f"/subscriptions/{ZERO_GUID}/providers/Microsoft.Authorization/roleDefinitions"
OWNER_ROLE = "8e3af657-a8ff-443c-a75c-2fe8c4bcb635"
IMAGE = "aws-microvm-image"
LAUNCHER = "aws-microvm-launcher"
LAUNCHER_ENV = ("environment", "variables")
FIREWALL_POLICY = "aws-microvm-fw-policy"
RESOLVED_IP = ("firewallPolicy", "Route53ResolvedIPValidation")
NAME_RULES = "aws-microvm-fw-domains"
RULES_SOURCE = ("ruleGroup", "rulesSource")
RULES_STRING = (*RULES_SOURCE, "rulesString")
TLS_PASS = "pass tls $HOME_NET any -> $EXTERNAL_NET"
SNI = "flow:to_server, established; ssl_state:client_hello; tls.sni;"
RUN = "gcp-cloudrun-service"
DNS_CATCH_ALL = "gcp-cloudrun-dns-refuse-everything-else"
CLOUDRUN_ONLY = ("gcp-cloudrun",)
RUN_CONTAINER = ("template", "containers", 0)
GKE_NODE_ROLE = "gcp-gke-role-container-defaultNodeServiceAccount"
GVISOR_POOL = "gcp-gke-gvisor-pool"
WORKER = "cloudflare-script"
HTTPS = [{"protocol": "TCP", "port": 443}]
DNS = [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}]
KUBE_DNS_RULE = {
    "to": [
        {
            "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "kube-system"}},
            "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
        }
    ],
    "ports": DNS,
}
RESOLVER_DNS_RULE = {
    "to": [{"podSelector": {"matchLabels": {"sandboxkit-resolver": "sandboxkit-dev"}}}],
    "ports": DNS,
}
METADATA_POLICY = '{"mode":"allowlist","allow":[{"host":"169.254.169.254","port":80}]}'


ROWS = [
    # Config a user could write.
    Row(
        "egress-open",
        "prod",
        _caught(
            ("SBX-NET-001", "kubernetes-network-policy"),
            ("SBX-NET-001", "gcp-gke-agent-sandbox-network-policy"),
            ("SBX-NET-001", "gcp-cloudrun-allow-public-ipv4"),
            ("SBX-NET-001", "gcp-cloudrun-allow-public-ipv6"),
            ("SBX-NET-001", "aws-microvm-connector-sg"),
            ("SBX-NET-001", "aws-microvm-fw-ip-rules"),
            ("SBX-NET-003", FIREWALL_POLICY),
        ),
        config=_open_egress,
        # azure-sessions and cloudflare refuse open egress at config load; their open pool and
        # Worker policy are the rows below.
        targets=("kubernetes", "aws-microvm", "gcp-cloudrun", "gcp-gke"),
    ),
    Row(
        "vcpu-above-max",
        "prod",
        _caught(("SBX-RES-001", TEMPLATE)),
        config=_profile("limits", "vcpu", 16),
        targets=KUBERNETES_ONLY,
    ),
    Row(
        "memory-above-max",
        "prod",
        _caught(("SBX-RES-001", TEMPLATE)),
        config=_profile("limits", "memoryMiB", 65536),
        targets=KUBERNETES_ONLY,
    ),
    Row(
        "lifetime-above-max",
        "prod",
        _caught(("SBX-RES-002", TEMPLATE)),
        config=_profile("limits", "maxLifetimeSeconds", 86400),
        targets=KUBERNETES_ONLY,
    ),
    Row(
        "concurrency-above-max",
        "prod",
        _caught(("SBX-RES-003", "kubernetes-quota")),
        config=_profile("pool", "maxConcurrent", 2000),
        targets=KUBERNETES_ONLY,
    ),
    Row(
        "warm-pool-above-max",
        "prod",
        _caught(
            ("SBX-RES-003", "kubernetes-warm-pool"),
            ("SBX-RES-003", "gcp-gke-agent-sandbox-warm-pool"),
            ("SBX-RES-003", POOL),
        ),
        config=_big_pool,
    ),
    # A referenced class is also one the gate cannot see (SBX-K8S-009).
    Row(
        "host-kernel-runtime",
        "prod",
        _caught(("SBX-K8S-004", TEMPLATE), ("SBX-K8S-009", TEMPLATE)),
        config=_host_runtime,
    ),
    # Issue 15's weakenings that passed prod as advisory, each written as a user would.
    Row(
        "workers-dev-on",
        "prod",
        _caught(("SBX-SES-002", WORKER)),
        config=_setting("cloudflare", "workersDev", True),
        targets=("cloudflare",),
    ),
    Row(
        "executor-all-zero-principal",
        "prod",
        _caught(("SBX-IAM-004", EXECUTOR)),
        config=_setting(
            "azure-sessions", "executors", [{"principalId": ZERO_GUID, "principalType": "User"}]
        ),
        targets=("azure-sessions",),
    ),
    Row(
        "execution-role-escalates",
        "prod",
        _caught(
            ("SBX-IAM-001", "aws-microvm-execution-policy"),
            ("SBX-IAM-002", "aws-microvm-execution-policy"),
            ("SBX-IAM-002", "aws-microvm-launcher-policy"),
            ("SBX-IAM-002", LAUNCHER),
        ),
        config=_setting(
            "aws-microvm",
            "executionRolePolicy",
            {
                "Version": "2012-10-17",
                "Statement": [
                    {
                        "Effect": "Allow",
                        "Action": ["iam:CreateAccessKey", "iam:PassRole", "sts:AssumeRole"],
                        "Resource": "*",
                    }
                ],
            },
        ),
        targets=("aws-microvm",),
    ),
    Row(
        "log-retention-one-day",
        "prod",
        _caught(
            ("SBX-LOG-001", "aws-microvm-launcher-logs"),
            ("SBX-LOG-001", "aws-microvm-fw-alert-logs"),
            ("SBX-LOG-001", "aws-microvm-fw-flow-logs"),
            ("SBX-LOG-001", "aws-microvm-api-logs"),
            ("SBX-LOG-001", "aws-microvm-flow-logs"),
            ("SBX-LOG-001", "aws-microvm-image-logs"),
            ("SBX-LOG-001", "gcp-cloudrun-log-bucket"),
        ),
        config=_profile("audit", "logRetentionDays", 1),
        # Config refuses it where the target cannot keep it (kubernetes, GKE: the cluster keeps
        # logs; cloudflare: fixed by Cloudflare) or where the platform floor is higher
        # (azure-sessions: 30 days).
        targets=("aws-microvm", "gcp-cloudrun"),
    ),
    # Rendered inputs no config can weaken.
    Row(
        "network-policy-managed",
        "prod",
        _caught(("SBX-NET-001", TEMPLATE)),
        inputs=_set(TEMPLATE, ("spec", "networkPolicyManagement"), "Managed"),
    ),
    Row(
        # No policy isolates the pods' egress: the reader grants every address (SBX-NET-008).
        "network-policy-ingress-only",
        "prod",
        _caught(
            ("SBX-NET-001", "kubernetes-network-policy"),
            ("SBX-NET-005", TEMPLATE),
            ("SBX-NET-008", TEMPLATE),
        ),
        inputs=_set("kubernetes-network-policy", ("spec", "policyTypes"), ["Ingress"]),
    ),
    Row(
        # A review's input: a matchExpressions requirement the sandbox pods fail left them
        # unisolated, while the reader and SBX-NET-005 read matchLabels alone.
        "network-policy-selects-no-sandbox-pod",
        "prod",
        _caught(("SBX-NET-005", TEMPLATE), ("SBX-NET-008", TEMPLATE)),
        inputs=_set(
            "kubernetes-network-policy",
            ("spec", "podSelector", "matchExpressions"),
            [{"key": "sandboxkit-sandbox", "operator": "DoesNotExist"}],
        ),
    ),
    Row(
        "network-policy-admits-all",
        "prod",
        # Open to every destination: SBX-NET-007 leaves the DNS path that adds to SBX-NET-001.
        _caught(
            ("SBX-NET-001", "kubernetes-network-policy"),
            ("SBX-NET-008", "kubernetes-network-policy"),
        ),
        inputs=_set("kubernetes-network-policy", ("spec", "egress"), [{"ports": []}]),
    ),
    Row(
        "network-policy-removed",
        "prod",
        _caught(("SBX-NET-005", TEMPLATE), ("SBX-NET-008", TEMPLATE)),
        inputs=_drop("kubernetes-network-policy"),
    ),
    Row(
        "allow-private-range",
        "prod",
        _caught(("SBX-NET-002", "kubernetes-network-policy")),
        inputs=_set(
            "kubernetes-network-policy",
            ("spec", "egress"),
            [{"to": [{"ipBlock": {"cidr": "10.0.0.0/8"}}], "ports": HTTPS}],
        ),
    ),
    Row(
        "allow-metadata-address",
        "prod",
        _caught(
            ("SBX-NET-002", "kubernetes-network-policy"),
            ("SBX-NET-008", "kubernetes-network-policy"),
        ),
        inputs=_set(
            "kubernetes-network-policy",
            ("spec", "egress"),
            [{"to": [{"ipBlock": {"cidr": "169.254.169.254/32"}}], "ports": HTTPS}],
        ),
    ),
    Row(
        "fqdn-wildcard-everything",
        "dev",
        _caught(("SBX-NET-002", "kubernetes-fqdn-policy")),
        inputs=_set(
            "kubernetes-fqdn-policy", ("spec", "egress", 1, "toFQDNs", 0), {"matchPattern": "*"}
        ),
    ),
    Row(
        "fqdn-world-entity",
        "dev",
        _caught(("SBX-NET-001", "kubernetes-fqdn-policy")),
        inputs=_set("kubernetes-fqdn-policy", ("spec", "egress", 1, "toEntities"), ["world"]),
    ),
    # The DNS doors of issue 13 (door 2), each reopened on the allowlist stack.
    Row(
        "cilium-dns-any-name",
        "dev",
        _caught(("SBX-NET-007", "kubernetes-fqdn-policy")),
        inputs=_set(
            "kubernetes-fqdn-policy",
            ("spec", "egress", 0, "toPorts", 0, "rules"),
            {"dns": [{"matchPattern": "*"}]},
        ),
    ),
    Row(
        "sandbox-dns-to-kube-dns",
        "dev",
        _caught(
            ("SBX-NET-007", "kubernetes-network-policy"),
            ("SBX-NET-008", "kubernetes"),
        ),
        inputs=_set("kubernetes-network-policy", ("spec", "egress"), [KUBE_DNS_RULE]),
    ),
    Row(
        "l4-dns-rule-voids-cilium-dns-rule",
        "dev",
        _caught(("SBX-NET-007", "kubernetes-network-policy")),
        inputs=_set("kubernetes-network-policy", ("spec", "egress"), [RESOLVER_DNS_RULE]),
    ),
    Row(
        "resolver-forwards-every-name",
        "dev",
        _caught(("SBX-NET-007", "kubernetes-resolver-config")),
        inputs=_edit(
            "kubernetes-resolver-config",
            lambda inputs: inputs["data"].update(
                {"dnsmasq.conf": inputs["data"]["dnsmasq.conf"] + "server=10.96.0.10\n"}
            ),
        ),
    ),
    Row(
        "resolver-upstream-on-every-port",
        "dev",
        _caught(("SBX-NET-002", "kubernetes-resolver-policy")),
        inputs=_set(
            "kubernetes-resolver-policy",
            ("spec", "egress"),
            [{"to": [{"ipBlock": {"cidr": "169.254.169.254/32"}}]}],
        ),
    ),
    Row(
        "service-account-token",
        "prod",
        _caught(("SBX-IAM-002", TEMPLATE)),
        inputs=_set(TEMPLATE, (*POD, "automountServiceAccountToken"), True),
    ),
    Row(
        "writable-root",
        "prod",
        _caught(("SBX-K8S-001", TEMPLATE)),
        inputs=_set(TEMPLATE, (*SECURITY, "readOnlyRootFilesystem"), False),
    ),
    Row(
        "capabilities-kept",
        "prod",
        _caught(("SBX-K8S-002", TEMPLATE)),
        inputs=_set(TEMPLATE, (*SECURITY, "capabilities"), {"drop": []}),
    ),
    Row(
        "capability-added",
        "prod",
        _caught(("SBX-K8S-002", TEMPLATE)),
        inputs=_set(TEMPLATE, (*SECURITY, "capabilities"), {"drop": ["ALL"], "add": ["NET_RAW"]}),
    ),
    Row(
        "root-user",
        "prod",
        _caught(("SBX-K8S-003", TEMPLATE)),
        inputs=_set(TEMPLATE, (*SECURITY, "runAsNonRoot"), False),
    ),
    Row(
        "privilege-escalation",
        "prod",
        _caught(("SBX-K8S-003", TEMPLATE)),
        inputs=_set(TEMPLATE, (*SECURITY, "allowPrivilegeEscalation"), True),
    ),
    Row(
        "privileged",
        "prod",
        _caught(("SBX-K8S-003", TEMPLATE)),
        inputs=_set(TEMPLATE, (*SECURITY, "privileged"), True),
    ),
    Row(
        "no-runtime-class",
        "prod",
        _caught(("SBX-K8S-004", TEMPLATE)),
        inputs=_set(TEMPLATE, (*POD, "runtimeClassName"), REMOVE),
    ),
    Row(
        "host-network",
        "prod",
        _caught(("SBX-K8S-005", TEMPLATE)),
        inputs=_set(TEMPLATE, (*POD, "hostNetwork"), True),
    ),
    Row(
        "host-path-volume",
        "prod",
        _caught(("SBX-K8S-005", TEMPLATE)),
        inputs=_set(TEMPLATE, (*POD, "volumes", 0), {"name": "scratch", "hostPath": {"path": "/"}}),
    ),
    Row(
        "seccomp-unconfined",
        "prod",
        _caught(("SBX-K8S-006", TEMPLATE)),
        inputs=lambda r: with_input(
            with_input(r, TEMPLATE, (*POD, "securityContext", "seccompProfile"), REMOVE),
            TEMPLATE,
            (*SECURITY, "seccompProfile", "type"),
            "Unconfined",
        ),
    ),
    Row(
        "namespace-not-restricted",
        "prod",
        _caught(("SBX-K8S-007", "kubernetes-namespace")),
        inputs=_set(
            "kubernetes-namespace",
            ("metadata", "labels", "pod-security.kubernetes.io/enforce"),
            "privileged",
        ),
    ),
    Row(
        "claims-inject-env",
        "prod",
        _caught(("SBX-K8S-008", TEMPLATE)),
        inputs=_set(TEMPLATE, ("spec", "envVarsInjectionPolicy"), "Allowed"),
    ),
    Row(
        "claims-inject-volumes",
        "prod",
        _caught(("SBX-K8S-008", TEMPLATE)),
        inputs=_set(TEMPLATE, ("spec", "volumeClaimTemplatesPolicy"), "Allowed"),
    ),
    Row(
        "runtime-class-referenced",
        "prod",
        _caught(("SBX-K8S-009", TEMPLATE)),
        config=_setting("kubernetes", "runtimeClass", {"name": "gvisor", "create": False}),
        targets=KUBERNETES_ONLY,
    ),
    Row(
        "gke-existing-cluster",
        "prod",
        _caught(("SBX-K8S-009", "gcp-gke-gvisor-pool")),
        config=_setting("gcp-gke", "existingCluster", "agents"),
        targets=("gcp-gke",),
    ),
    Row(
        "no-cpu-memory-limits",
        "prod",
        _caught(("SBX-RES-001", TEMPLATE)),
        inputs=_set(TEMPLATE, (*CONTAINER, "resources"), {}),
    ),
    Row(
        "no-deadline",
        "prod",
        _caught(("SBX-RES-002", TEMPLATE)),
        inputs=_set(TEMPLATE, (*POD, "activeDeadlineSeconds"), REMOVE),
    ),
    Row(
        # A year-long lifetime and a pool of millions, as rendered inputs: config bounds on
        # limits and pool.* refuse the values before a render.
        "year-lifetime-pool-of-millions",
        "prod",
        _caught(
            ("SBX-RES-002", TEMPLATE),
            ("SBX-RES-003", "kubernetes-warm-pool"),
            ("SBX-RES-003", "kubernetes-quota"),
        ),
        inputs=lambda r: with_input(
            with_input(
                with_input(r, TEMPLATE, (*POD, "activeDeadlineSeconds"), 31536000),
                "kubernetes-warm-pool",
                ("spec", "replicas"),
                2000000,
            ),
            "kubernetes-quota",
            ("spec", "hard", "pods"),
            "4000000",
        ),
    ),
    Row(
        "quota-removed",
        "prod",
        _caught(("SBX-RES-004", TEMPLATE)),
        inputs=_drop("kubernetes-quota"),
    ),
    Row(
        "secret-in-env",
        "prod",
        _caught(("SBX-SEC-001", TEMPLATE)),
        inputs=_set(TEMPLATE, (*CONTAINER, "env"), [{"name": "API_TOKEN", "value": "t0ken"}]),
    ),
    Row(
        "image-by-tag",
        "prod",
        _caught(("SBX-SEC-003", TEMPLATE)),
        inputs=_set(TEMPLATE, (*CONTAINER, "image"), "ghcr.io/example/agent-python-sandbox:3.12"),
    ),
    Row(
        "credential-in-input",
        "prod",
        _caught(("SBX-SEC-002", TEMPLATE)),
        inputs=_set(
            TEMPLATE, (*CONTAINER, "env"), [{"name": "MIRROR", "value": "AKIAABCDEFGHIJKLMNOP"}]
        ),
    ),
    # azure-sessions: rendered inputs (config beyond the target's caps exits 2 instead).
    Row(
        "session-egress-enabled",
        "prod",
        _caught(
            ("SBX-NET-001", POOL),
            ("SBX-NET-008", POOL),
        ),
        inputs=_set(POOL, ("sessionNetworkConfiguration", "status"), "EgressEnabled"),
    ),
    Row(
        "session-identity-in-reach",
        "prod",
        _caught(("SBX-IAM-002", POOL)),
        inputs=_set(POOL, ("managedIdentitySettings", 0, "lifecycle"), "Main"),
    ),
    Row(
        "executor-owner-role",
        "prod",
        _caught(("SBX-IAM-001", EXECUTOR)),
        inputs=_set(EXECUTOR, ("roleDefinitionId",), f"{ROLE_DEFINITIONS}/{OWNER_ROLE}"),
    ),
    Row(
        "executor-scope-wider-than-pool",
        "prod",
        _caught(("SBX-IAM-004", EXECUTOR)),
        inputs=_set(EXECUTOR, ("scope",), f"/subscriptions/{ZERO_GUID}/resourceGroups/rg"),
    ),
    Row(
        "session-no-size-limits",
        "prod",
        _caught(("SBX-RES-001", POOL)),
        inputs=_set(POOL, (*SESSION, "resources"), {}),
    ),
    Row(
        "session-cooldown-above-cap",
        "prod",
        _caught(("SBX-RES-002", POOL)),
        inputs=_set(POOL, (*COOLDOWN, "cooldownPeriodInSeconds"), 7200),
    ),
    Row(
        "session-pool-unbounded",
        "prod",
        _caught(("SBX-RES-003", POOL)),
        inputs=_set(POOL, ("scaleConfiguration", "maxConcurrentSessions"), REMOVE),
    ),
    Row(
        "workspace-retention-short",
        "prod",
        _caught(("SBX-LOG-001", "azure-sessions-logs")),
        inputs=_set("azure-sessions-logs", ("retentionInDays",), 7),
    ),
    Row(
        "workspace-removed",
        "prod",
        _caught(("SBX-LOG-002", POOL)),
        inputs=_drop("azure-sessions-logs"),
    ),
    Row(
        "session-secret-in-env",
        "prod",
        _caught(("SBX-SEC-001", POOL)),
        inputs=_set(POOL, (*SESSION, "env"), [{"name": "DB_PASSWORD", "value": "hunter2"}]),
    ),
    # aws-microvm: rendered inputs (its caps refuse the config that would weaken them).
    Row(
        # RunMicrovm's connectors are the runtime egress (the image's are its build's).
        "launcher-internet-egress",
        "prod",
        _caught(("SBX-NET-001", "aws-microvm-launcher")),
        inputs=_set(
            "aws-microvm-launcher",
            ("environment", "variables", "CONNECTOR_ARN"),
            "arn:aws:lambda:eu-west-1:aws:network-connector:aws-network-connector:INTERNET_EGRESS",
        ),
    ),
    Row(
        "connector-sg-all-ports",
        "prod",
        # Every protocol holds UDP, which the aws reader refuses out of the VPC.
        _caught(
            ("SBX-NET-001", "aws-microvm-connector-sg"),
            ("SBX-NET-006", "aws-microvm"),
            ("SBX-NET-008", "aws-microvm"),
        ),
        inputs=_set("aws-microvm-connector-sg", ("egress", 2, "protocol"), "-1"),
    ),
    Row(
        "connector-removed",
        "prod",
        _caught(("SBX-NET-005", IMAGE)),
        inputs=_drop("aws-microvm-connector"),
    ),
    # SBX-NET-008 alone: the rules stay specific public hosts, but the reach is not dev's
    # contract (pypi.org:443, *.pythonhosted.org:443 and the control plane).
    Row(
        "name-rule-for-an-unlisted-host",
        "dev",
        _caught(("SBX-NET-008", NAME_RULES)),
        inputs=_rules_string(
            lambda lines: [
                *lines,
                f'{TLS_PASS} 443 ({SNI} content:"exfil.example.net"; nocase; startswith; '
                "endswith; sid:1999999;)",
            ]
        ),
    ),
    Row(
        "listed-wildcard-dropped",
        "dev",
        _caught(("SBX-NET-008", "aws-microvm")),
        inputs=_rules_string(lambda lines: [x for x in lines if "pythonhosted" not in x]),
    ),
    Row(
        "name-rule-any-name",
        "prod",
        _caught(
            ("SBX-NET-002", NAME_RULES),
            ("SBX-NET-008", NAME_RULES),
        ),
        inputs=_set(NAME_RULES, RULES_STRING, f"{TLS_PASS} 443 ({SNI} sid:1;)"),
    ),
    Row(
        "name-rule-wildcard-apex",
        "prod",
        _caught(
            ("SBX-NET-002", NAME_RULES),
            ("SBX-NET-008", NAME_RULES),
        ),
        inputs=_set(
            NAME_RULES,
            RULES_STRING,
            f'{TLS_PASS} 443 ({SNI} dotprefix; content:".example.com"; nocase; endswith; sid:1;)',
        ),
    ),
    Row(
        "name-rule-any-port",
        "prod",
        _caught(("SBX-NET-001", NAME_RULES)),
        inputs=_set(
            NAME_RULES,
            RULES_STRING,
            f'{TLS_PASS} any ({SNI} content:"agents.example.com"; nocase; startswith; endswith; '
            "sid:1;)",
        ),
    ),
    Row(
        "tcp-pass-to-every-address",
        "prod",
        _caught(
            ("SBX-NET-002", NAME_RULES),
            ("SBX-NET-008", NAME_RULES),
        ),
        inputs=_set(
            NAME_RULES, RULES_STRING, "pass tcp $HOME_NET any -> $EXTERNAL_NET 443 (sid:1;)"
        ),
    ),
    Row(
        "ip-pass-rule-metadata-address",
        "prod",
        _caught(
            ("SBX-NET-002", NAME_RULES),
            ("SBX-NET-008", "aws-microvm"),
        ),
        inputs=_set(
            NAME_RULES, RULES_STRING, "pass tcp $HOME_NET any -> 169.254.169.254 80 (sid:1;)"
        ),
    ),
    Row(
        # aws-microvm's reader cannot read a domain list holding "*" (no name it could match):
        # SBX-NET-006 and SBX-NET-008 report that they cannot verify the target.
        "domain-list-everything",
        "prod",
        _caught(
            ("SBX-NET-002", NAME_RULES),
            ("SBX-NET-006", "aws-microvm"),
            ("SBX-NET-008", "aws-microvm"),
        ),
        inputs=_set(
            NAME_RULES,
            RULES_SOURCE,
            {
                "rulesSourceList": {
                    "generatedRulesType": "ALLOWLIST",
                    "targetTypes": ["TLS_SNI"],
                    "targets": ["*"],
                }
            },
        ),
    ),
    Row(
        "domain-list-denylist",
        "prod",
        _caught(
            ("SBX-NET-003", NAME_RULES),
            ("SBX-NET-008", "aws-microvm"),
        ),
        inputs=_set(
            NAME_RULES,
            RULES_SOURCE,
            {
                "rulesSourceList": {
                    "generatedRulesType": "DENYLIST",
                    "targetTypes": ["TLS_SNI"],
                    "targets": ["evil.example"],
                }
            },
        ),
    ),
    Row(
        "firewall-default-action-order",
        "prod",
        _caught(("SBX-NET-003", FIREWALL_POLICY)),
        inputs=_set(
            FIREWALL_POLICY,
            ("firewallPolicy", "StatefulEngineOptions", "RuleOrder"),
            "DEFAULT_ACTION_ORDER",
        ),
    ),
    Row(
        "firewall-no-default-drop",
        "prod",
        _caught(
            ("SBX-NET-003", FIREWALL_POLICY),
            ("SBX-NET-008", "aws-microvm"),
        ),
        inputs=_set(
            FIREWALL_POLICY, ("firewallPolicy", "StatefulDefaultActions"), ["aws:alert_established"]
        ),
    ),
    # Door 1 (a forged SNI to any address): resolved-IP validation removed or weakened.
    Row(
        "firewall-no-resolved-ip-validation",
        "prod",
        _caught(
            ("SBX-NET-003", FIREWALL_POLICY),
            ("SBX-NET-008", NAME_RULES),
        ),
        inputs=_set(FIREWALL_POLICY, RESOLVED_IP, REMOVE),
    ),
    Row(
        "firewall-resolved-ip-validation-alert-only",
        "prod",
        _caught(
            ("SBX-NET-003", FIREWALL_POLICY),
            ("SBX-NET-008", NAME_RULES),
        ),
        inputs=_set(FIREWALL_POLICY, (*RESOLVED_IP, "Action"), "ALERT"),
    ),
    Row(
        "firewall-resolved-ip-validation-no-source",
        "prod",
        _caught(
            ("SBX-NET-003", FIREWALL_POLICY),
            ("SBX-NET-008", NAME_RULES),
        ),
        inputs=_set(FIREWALL_POLICY, (*RESOLVED_IP, "SourceIPRanges"), []),
    ),
    Row(
        "dns-firewall-fails-open",
        "prod",
        _caught(("SBX-NET-004", "aws-microvm-dns-config")),
        inputs=_set("aws-microvm-dns-config", ("firewallFailOpen",), "ENABLED"),
    ),
    Row(
        "launcher-wildcard-action",
        "prod",
        _caught(("SBX-IAM-001", "aws-microvm-launcher-policy")),
        inputs=_edit("aws-microvm-launcher-policy", _policy_action("lambda:*")),
    ),
    Row(
        "launcher-role-trust-unpinned",
        "prod",
        _caught(("SBX-IAM-005", "aws-microvm-launcher-role")),
        inputs=_edit("aws-microvm-launcher-role", _trust_without_source),
    ),
    Row(
        "flow-log-role-trust-unpinned",
        "dev",
        _caught(("SBX-IAM-005", "aws-microvm-flow-log-role")),
        inputs=_edit("aws-microvm-flow-log-role", _trust_without_source),
    ),
    Row(
        "launcher-execution-role",
        "prod",
        _caught(("SBX-IAM-002", LAUNCHER)),
        inputs=_set(LAUNCHER, (*LAUNCHER_ENV, "EXECUTION_ROLE_ARN"), "arn:aws:iam::1:role/x"),
    ),
    Row(
        "launcher-unsigned-webhooks",
        "prod",
        _caught(("SBX-SES-003", LAUNCHER)),
        inputs=_set(LAUNCHER, (*LAUNCHER_ENV, "WEBHOOK_SECRET_ARN"), REMOVE),
    ),
    Row(
        "launcher-lifetime-above-cap",
        "prod",
        _caught(("SBX-RES-002", LAUNCHER)),
        inputs=_set(LAUNCHER, (*LAUNCHER_ENV, "MAX_DURATION_SECONDS"), "86400"),
    ),
    Row(
        "launcher-unbounded",
        "prod",
        _caught(("SBX-RES-003", LAUNCHER)),
        inputs=_set(LAUNCHER, ("reservedConcurrentExecutions",), REMOVE),
    ),
    Row(
        "log-group-short",
        "prod",
        _caught(("SBX-LOG-001", "aws-microvm-fw-alert-logs")),
        inputs=_set("aws-microvm-fw-alert-logs", ("retentionInDays",), 7),
    ),
    Row(
        "firewall-logs-removed",
        "prod",
        _caught(("SBX-LOG-002", "aws-microvm-fw")),
        inputs=_drop("aws-microvm-fw-logging"),
    ),
    Row(
        "launcher-secret-in-env",
        "prod",
        _caught(("SBX-SEC-001", LAUNCHER)),
        inputs=_set(LAUNCHER, (*LAUNCHER_ENV, "PLATFORM_API_TOKEN"), "t0ken"),
    ),
    # gcp-cloudrun and gcp-gke.
    Row(
        "run-private-ranges-only",
        "prod",
        _caught(
            ("SBX-NET-001", RUN),
            ("SBX-NET-008", RUN),
        ),
        inputs=_set(RUN, ("template", "vpcAccess", "egress"), "PRIVATE_RANGES_ONLY"),
    ),
    Row(
        "run-without-vpc",
        "prod",
        _caught(
            ("SBX-NET-001", RUN),
            ("SBX-NET-008", RUN),
        ),
        inputs=_set(RUN, ("template", "vpcAccess"), REMOVE),
    ),
    Row(
        "deny-all-becomes-allow",
        "prod",
        _caught(
            ("SBX-NET-001", "gcp-cloudrun-deny-all-ipv4"),
            ("SBX-NET-008", "gcp-cloudrun-deny-all-ipv4"),
        ),
        inputs=_set("gcp-cloudrun-deny-all-ipv4", ("action",), "allow"),
    ),
    Row(
        "deny-all-removed",
        "prod",
        _caught(
            ("SBX-NET-005", RUN),
            ("SBX-NET-008", "gcp-cloudrun"),
        ),
        inputs=lambda r: without(
            without(r, "gcp-cloudrun-deny-all-ipv4"), "gcp-cloudrun-deny-all-ipv6"
        ),
    ),
    Row(
        "dns-response-policy-removed",
        "prod",
        _caught(("SBX-NET-005", RUN)),
        inputs=_drop("gcp-cloudrun-dns-policy"),
    ),
    Row(
        "dns-catch-all-bypassed",
        "prod",
        _caught(("SBX-NET-005", RUN)),
        inputs=lambda r: with_input(
            with_input(r, DNS_CATCH_ALL, ("behavior",), "bypassResponsePolicy"),
            DNS_CATCH_ALL,
            ("localData",),
            REMOVE,
        ),
    ),
    Row(
        "names-by-resolved-address",
        "prod",
        _caught(("SBX-NET-006", "gcp-cloudrun-allow-fqdn-443")),
        config=_cloudrun_allowlist,
        targets=CLOUDRUN_ONLY,
    ),
    Row(
        "rebinding-deny-removed",
        "prod",
        _caught(("SBX-NET-005", RUN), ("SBX-NET-006", "gcp-cloudrun-allow-fqdn-443")),
        config=_cloudrun_allowlist,
        inputs=_drop("gcp-cloudrun-deny-non-public-ipv4"),
        targets=CLOUDRUN_ONLY,
    ),
    Row(
        "gke-legacy-datapath",
        "prod",
        _caught(("SBX-NET-003", "gcp-gke-cluster")),
        inputs=_set("gcp-gke-cluster", ("datapathProvider",), REMOVE),
    ),
    Row(
        "gcp-editor-role",
        "prod",
        _caught(("SBX-IAM-001", GKE_NODE_ROLE)),
        inputs=_set(GKE_NODE_ROLE, ("role",), "roles/editor"),
    ),
    Row(
        # The old shape: no sandbox template, so every sandbox mounts the launcher's root
        # filesystem, and the launcher not told one.
        "run-without-template",
        "prod",
        _caught(("SBX-SES-004", RUN)),
        inputs=lambda r: with_input(
            with_input(r, RUN, ("template", "sandboxes"), REMOVE),
            RUN,
            (*RUN_CONTAINER, "envs"),
            REMOVE,
        ),
    ),
    Row(
        "run-template-of-launcher-image",
        "prod",
        _caught(("SBX-SES-004", RUN)),
        inputs=lambda r: with_input(
            r,
            RUN,
            ("template", "sandboxes", "templates", 0, "image"),
            named(r.resources, RUN).inputs["template"]["containers"][0]["image"],
        ),
    ),
    Row(
        "run-launcher-log-writer",
        "prod",
        _caught(("SBX-SES-004", "gcp-cloudrun-role-logging-logWriter")),
        inputs=_launcher_log_writer,
    ),
    Row(
        "gke-node-metadata-exposed",
        "prod",
        _caught(("SBX-IAM-002", GVISOR_POOL)),
        inputs=_set(GVISOR_POOL, ("nodeConfig", "workloadMetadataConfig", "mode"), "GCE_METADATA"),
    ),
    Row(
        "run-invoker-check-off",
        "prod",
        _caught(("SBX-IAM-003", RUN)),
        inputs=_set(RUN, ("invokerIamDisabled",), True),
    ),
    Row(
        "run-public-invoker",
        "prod",
        _caught(("SBX-IAM-003", "gcp-cloudrun-invoker-0")),
        inputs=_set("gcp-cloudrun-invoker-0", ("member",), "allUsers"),
    ),
    Row(
        "run-no-size-limits",
        "prod",
        _caught(("SBX-RES-001", RUN)),
        inputs=_set(RUN, (*RUN_CONTAINER, "resources"), {}),
    ),
    Row(
        "run-timeout-above-cap",
        "prod",
        _caught(("SBX-RES-002", RUN)),
        inputs=_set(RUN, ("template", "timeout"), "7200s"),
    ),
    Row(
        "run-unbounded",
        "prod",
        _caught(("SBX-RES-003", RUN)),
        inputs=_set(RUN, ("template", "scaling", "maxInstanceCount"), REMOVE),
    ),
    Row(
        "log-bucket-short",
        "prod",
        _caught(("SBX-LOG-001", "gcp-cloudrun-log-bucket")),
        inputs=_set("gcp-cloudrun-log-bucket", ("retentionDays",), 7),
    ),
    Row(
        "run-secret-in-env",
        "prod",
        _caught(("SBX-SEC-001", RUN)),
        inputs=_edit(
            RUN,
            lambda inputs: inputs["template"]["containers"][0]["envs"].append(
                {"name": "DB_PASSWORD", "value": "pw"}
            ),
        ),
    ),
    Row(
        "gke-without-gvisor",
        "prod",
        _caught(("SBX-K8S-004", GVISOR_POOL)),
        inputs=_set(GVISOR_POOL, ("nodeConfig", "sandboxConfig"), {}),
    ),
    # cloudflare.
    Row(
        # Open grants every public address: SBX-NET-008 probes the lowest one (1.0.0.0).
        "worker-egress-open",
        "prod",
        _caught(("SBX-NET-001", WORKER), ("SBX-NET-008", WORKER)),
        inputs=_edit(WORKER, _binding("EGRESS_POLICY", "text", '{"mode":"open","allow":[]}')),
    ),
    Row(
        "worker-without-egress-policy",
        "prod",
        _caught(("SBX-NET-001", WORKER)),
        inputs=_edit(WORKER, _binding("EGRESS_POLICY", "text", REMOVE)),
    ),
    Row(
        "worker-allows-metadata",
        "prod",
        _caught(("SBX-NET-002", WORKER)),
        inputs=_edit(WORKER, _binding("EGRESS_POLICY", "text", METADATA_POLICY)),
    ),
    Row(
        # The kit's Worker with egressInterceptions returning the catch-alls in every mode: an
        # unlisted host would get a path whatever EGRESS_POLICY says.
        "worker-catch-all-interceptions",
        "prod",
        _caught(("SBX-NET-003", WORKER)),
        inputs=_edit(WORKER, _catch_all_interceptions),
    ),
    Row(
        "worker-fetches-private-origins",
        "prod",
        _caught(("SBX-NET-003", WORKER)),
        inputs=_set(WORKER, ("compatibilityFlags",), ["global_fetch_private_origin"]),
    ),
    Row(
        "worker-raw-session-ids",
        "prod",
        _caught(("SBX-SES-001", WORKER)),
        inputs=_edit(WORKER, _binding("SANDBOX_ID_KEY", "name", "BUILD_LABEL")),
    ),
    Row(
        # The shape before client tokens: one shared bearer token for every tenant, the tenant
        # taken from the request path (the id key only hides Durable Object ids).
        "worker-shared-bearer-token",
        "prod",
        _caught(("SBX-SES-001", WORKER)),
        inputs=_edit(WORKER, _binding("JWT_SIGNING_KEY", "name", "AUTH_TOKEN")),
    ),
    Row(
        # No credential at all: unauthenticated, and the tenant is the path's.
        "worker-unauthenticated",
        "prod",
        _caught(("SBX-SES-001", WORKER), ("SBX-SES-002", WORKER)),
        inputs=_edit(WORKER, _binding("JWT_SIGNING_KEY", "name", "GREETING")),
    ),
    Row(
        "worker-on-workers-dev",
        "prod",
        _caught(("SBX-SES-002", WORKER)),
        inputs=_set(WORKER, ("workersDev",), True),
    ),
    Row(
        "worker-no-lifetime",
        "prod",
        _caught(("SBX-RES-002", WORKER)),
        inputs=_edit(WORKER, _binding("MAX_LIFETIME_SECONDS", "text", REMOVE)),
    ),
    Row(
        "worker-observability-off",
        "prod",
        _caught(("SBX-LOG-002", WORKER)),
        inputs=_set(WORKER, ("observability", "enabled"), False),
    ),
    Row(
        "worker-plain-secret",
        "prod",
        _caught(("SBX-SEC-001", WORKER)),
        inputs=_edit(WORKER, _add_binding({"type": "plain_text", "name": "API_KEY", "text": "k"})),
    ),
]


LAUNCHER_DIGEST = "sha256:0d4f6c1e9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d"
# 48 public /8s: about 19% of IPv4, each within the per-entry cap (issue 32, weakening 3).
PUBLIC_SLASH_EIGHTS = [f"{first}.0.0.0/8" for first in range(11, 59)]
FOREIGN_ACCOUNT = "999999999999"


def _template_image(image: str) -> Callable[[dict[str, Any]], None]:
    def change(inputs: dict[str, Any]) -> None:
        inputs["template"]["sandboxes"]["templates"][0]["image"] = image

    return change


def _gke_public(values: dict[str, Any]) -> None:
    values["gcp-gke"].update(privateEndpoint=False, masterAuthorizedNetworks=PUBLIC_SLASH_EIGHTS)


def _network_policy_peer(cidr: str) -> Callable[[dict[str, Any]], None]:
    def change(inputs: dict[str, Any]) -> None:
        inputs["spec"]["egress"].append({"to": [{"ipBlock": {"cidr": cidr}}], "ports": HTTPS})

    return change


# Issue 32: weakenings the prod gate passed, one row per item.
ISSUE_32_ROWS = [
    # 1. Images by tag wherever the kit runs one (the cloudflare container had no check).
    Row(
        "cloudflare-image-by-tag",
        "prod",
        _caught(("SBX-SEC-003", WORKER)),
        config=_setting("cloudflare", "image", "docker.io/someone/anything:latest"),
        targets=("cloudflare",),
    ),
    # 2. The launcher's digest under another tag (config refuses it; a fork's render).
    Row(
        "sandbox-template-is-the-launcher-by-digest",
        "prod",
        _caught(("SBX-SES-004", RUN)),
        inputs=_edit(
            RUN,
            _template_image(
                f"us-docker.pkg.dev/example-sandboxkit-prod/agents/launcher:sandbox@{LAUNCHER_DIGEST}"
            ),
        ),
    ),
    # 3. A public control plane behind 48 /8s.
    Row(
        "gke-public-endpoint-wide-networks",
        "prod",
        _caught(("SBX-NET-009", "gcp-gke-cluster")),
        config=_gke_public,
        targets=("gcp-gke",),
    ),
    # 4. A namespace the stack does not create.
    Row(
        "kubernetes-existing-namespace",
        "prod",
        _caught(("SBX-K8S-009", TEMPLATE)),
        config=_setting("kubernetes", "createNamespace", False),
        targets=KUBERNETES_ONLY,
    ),
    # 5. A deny stack's control plane on a resolver port, and on a port beyond 443.
    Row(
        "control-plane-on-a-resolver-port",
        "prod",
        # DNS over TLS: a name on plain DNS's 53 exits 2 at config (NAMELESS_PORTS); 853 is
        # also beyond SBX-NET-001's allowedPorts, for the firewall and the connector.
        _caught(
            ("SBX-NET-008", "aws-microvm"),
            ("SBX-NET-001", "aws-microvm-fw-domains"),
            ("SBX-NET-001", "aws-microvm-connector-sg"),
        ),
        config=_setting(
            "aws-microvm", "controlPlaneHosts", ["pastebin.com", "ns1.example.net:853"]
        ),
        targets=("aws-microvm",),
    ),
    Row(
        "control-plane-beyond-443-in-deny",
        "prod",
        # 8443 is also beyond SBX-NET-001's allowedPorts, for the firewall and the connector.
        _caught(
            ("SBX-NET-008", "aws-microvm"),
            ("SBX-NET-001", "aws-microvm-fw-domains"),
            ("SBX-NET-001", "aws-microvm-connector-sg"),
        ),
        config=_setting("aws-microvm", "controlPlaneHosts", ["telemetry.example.com:8443"]),
        targets=("aws-microvm",),
    ),
    # 6. 8.8.8.8 as an ISATAP identifier under a public prefix (config refuses it as an entry).
    Row(
        "network-policy-to-an-isatap-resolver",
        "prod",
        _caught(
            ("SBX-NET-002", "kubernetes-network-policy"),
            ("SBX-NET-008", "kubernetes-network-policy"),
        ),
        inputs=_edit(
            "kubernetes-network-policy", _network_policy_peer("2600:1f18::200:5efe:808:808/128")
        ),
    ),
    # 7. Ceilings inside the documented ranges, and code from another account.
    Row(
        "replay-window-an-hour",
        "prod",
        _caught(("SBX-SES-003", LAUNCHER)),
        config=_setting("aws-microvm", "replayWindowSeconds", 3600),
        targets=("aws-microvm",),
    ),
    Row(
        "credential-key-a-year",
        "prod",
        _caught(("SBX-SES-003", "aws-microvm-credential-key")),
        config=_setting("aws-microvm", "workerCredentialKeyMaxAgeDays", 365),
        targets=("aws-microvm",),
    ),
    Row(
        "client-tokens-an-hour",
        "prod",
        _caught(("SBX-SES-002", WORKER)),
        config=_setting("cloudflare", "tokenMaxLifetimeSeconds", 3600),
        targets=("cloudflare",),
    ),
    Row(
        "launcher-layer-from-another-account",
        "prod",
        _caught(("SBX-SEC-004", LAUNCHER)),
        config=_setting(
            "aws-microvm",
            "launcherLayers",
            [f"arn:aws:lambda:eu-west-1:{FOREIGN_ACCOUNT}:layer:anything:1"],
        ),
        targets=("aws-microvm",),
    ),
    Row(
        "base-image-from-another-account",
        "prod",
        _caught(("SBX-SEC-004", IMAGE)),
        config=_setting(
            "aws-microvm",
            "baseImageArn",
            f"arn:aws:lambda:eu-west-1:{FOREIGN_ACCOUNT}:microvm-image:anything",
        ),
        targets=("aws-microvm",),
    ),
]
ROWS += ISSUE_32_ROWS


@pytest.mark.parametrize("row", ROWS, ids=[row.id for row in ROWS])
def test_weakened_default_is_caught_by_exactly_its_policy_at_its_prod_level(
    row: Row, analyzer: gate.Analyzer
) -> None:
    rendered, baseline = _baseline(analyzer, row.stack, row.targets)
    if row.config is not None:
        values = _values(row.stack, row.targets)
        row.config(values)
        rendered = render(row.stack, values)
    if row.inputs is not None:
        rendered = row.inputs(rendered)
    mutated = gate.check_rendered(analyzer, rendered, PROJECT, PROD_CONFIG)
    before = {(v.policy, v.urn) for v in baseline.violations}
    new = [v for v in mutated.violations if (v.policy, v.urn) not in before]
    assert {(v.policy, v.urn.rsplit("::", 1)[-1]) for v in new} == row.expected
    assert not {v.policy for v in baseline.violations} & {p for p, _ in row.expected}
    assert {v.enforcement for v in new} == {row.prod}
    assert mutated.failed == (row.prod == MANDATORY)


def test_prod_pack_config_makes_every_policy_mandatory() -> None:
    assert json.loads(PROD_CONFIG.read_text()) == {"all": MANDATORY}


def _values(stack: str, targets: tuple[str, ...]) -> dict[str, Any]:
    values = stack_values(stack)
    if targets:
        dropped = set(values["targets"]) - set(targets)
        values = {k: v for k, v in values.items() if k not in dropped}
        values["targets"] = list(targets)
    return values


_BASELINES: dict[tuple[str, tuple[str, ...]], tuple[RenderedStack, gate.CheckResult]] = {}


def _baseline(
    analyzer: gate.Analyzer, stack: str, targets: tuple[str, ...]
) -> tuple[RenderedStack, gate.CheckResult]:
    # The render is deterministic: rows that only edit inputs share one unmutated render.
    key = (stack, targets)
    if key not in _BASELINES:
        rendered = render(stack, _values(stack, targets))
        _BASELINES[key] = (rendered, gate.check_rendered(analyzer, rendered, PROJECT, PROD_CONFIG))
    return _BASELINES[key]


def test_every_policy_has_a_row() -> None:
    caught = {policy for row in ROWS for policy, _ in row.expected}
    assert caught == {
        "SBX-NET-001",
        "SBX-NET-002",
        "SBX-NET-005",
        "SBX-NET-006",
        "SBX-NET-007",
        "SBX-NET-008",
        "SBX-NET-009",
        "SBX-IAM-001",
        "SBX-IAM-002",
        "SBX-IAM-003",
        "SBX-IAM-004",
        "SBX-IAM-005",
        "SBX-SES-001",
        "SBX-SES-002",
        "SBX-SES-003",
        "SBX-SES-004",
        "SBX-NET-003",
        "SBX-NET-004",
        "SBX-RES-001",
        "SBX-RES-002",
        "SBX-RES-003",
        "SBX-RES-004",
        "SBX-LOG-001",
        "SBX-LOG-002",
        "SBX-SEC-001",
        "SBX-SEC-002",
        "SBX-SEC-003",
        "SBX-SEC-004",
        *(f"SBX-K8S-00{n}" for n in range(1, 10)),
    }


def test_remembered_answers_are_the_packs_own() -> None:
    # The table's analyzer answers an unchanged resource from memory: each check gives what a
    # fresh analyzer gives, the weakened resource is analyzed anew, and the rest are remembered.
    plain = gate.InProcessAnalyzer(gate.pack_dir(PROJECT))
    remembering = testing.RememberingAnalyzer(gate.InProcessAnalyzer(gate.pack_dir(PROJECT)))
    rendered = render("prod", stack_values("prod"))
    weakened = with_input(rendered, WORKER, ("observability", "enabled"), False)
    results = []
    for stack in (rendered, weakened, rendered):
        result = gate.check_rendered(remembering, stack, PROJECT, PROD_CONFIG)
        assert result == gate.check_rendered(plain, stack, PROJECT, PROD_CONFIG)
        results.append({(v.policy, v.urn.rsplit("::", 1)[-1]) for v in result.violations})
    assert results == [set(), {("SBX-LOG-002", WORKER)}, set()]
    count = len(rendered.resources)
    assert (remembering.asked, remembering.answered) == (3 * count, 2 * count - 1)
