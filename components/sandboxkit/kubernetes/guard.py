"""The sandbox-guard checks of the Kubernetes objects the kit creates (agent-sandbox templates,
network policies, quotas), on any cluster; gcp-gke re-exports them. The pod walls (SBX-K8S-*)
are in ``pod_guard.py``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sandboxkit.boundary import (
    EVERYWHERE,
    LINK_LOCAL_RESOLVERS,
    RESOLVER_POD_LABEL,
    SANDBOX_POD_LABEL,
)
from sandboxkit.effective_egress import ResourceView, as_dicts
from sandboxkit.guard import (
    CheckContext,
    Handler,
    SecretSink,
    StackHandler,
    StackResource,
    containers_of,
    dig,
    items,
    judge_each,
    labelled_target,
    number,
    of_kind,
    resource_views,
    sandbox_pod_spec,
)
from sandboxkit.guard_checks import (
    PortSpan,
    cidr_problems,
    container_size_problems,
    count_problems,
    entries_problems,
    identity_allowed,
    inline_secrets,
    listed_variables,
    ports_problem,
    target_setting,
    time_problems,
    unpinned_images,
)
from sandboxkit.kubernetes import pod_guard
from sandboxkit.kubernetes.egress_reader import (
    admits_dns,
    dnsmasq_names,
    peer_kind,
    resolver_command_line,
    resolver_config,
    selects,
)
from sandboxkit.kubernetes.resolver import CONFIG_PATH
from sandboxkit.kubernetes.type_tokens import (
    CILIUM_POLICY,
    CONFIG_MAP,
    DEPLOYMENT,
    GKE_FQDN_POLICY,
    NETWORK_POLICY,
    RESOURCE_QUOTA,
    ROLE_BINDINGS,
    ROLES,
    SANDBOX_POD_KINDS,
    SANDBOX_TEMPLATE,
    SECRET,
    WARM_POOL,
)
from sandboxkit.policy_rules import (
    ALLOWLIST_SPECIFIC,
    BOUNDED_POOLS,
    DIGEST_PINNED,
    EGRESS_ATTACHED,
    EGRESS_CLOSED,
    LEAST_PRIVILEGE,
    NO_GUEST_IDENTITY,
    PLAINTEXT_ENV,
    QUOTA_ATTACHED,
    SANDBOX_DNS_FILTERED,
    SIZE_LIMITS,
    TIME_LIMITS,
)
from sandboxkit.type_tokens import of_type

KUBERNETES_ADMIN_ROLES = ("cluster-admin", "admin", "edit")


# --- SBX-NET-001 -------------------------------------------------------------------------------


def _span(port: Any, end_port: Any = None) -> PortSpan:
    """A rule's port (a number, digits, a name; absent or 0 for every port) and end port."""
    if port is None or str(port) in ("0", "0.0"):
        return None
    if isinstance(port, str) and not port.isdigit():
        return port
    first = int(port)
    last = int(end_port) if isinstance(end_port, int | float) else first
    return first, last


def _listed_spans(ports: Any) -> list[PortSpan]:
    """Spans of a ``ports`` list of ``{protocol, port, endPort}`` (absent or empty: every
    port), as NetworkPolicy, FQDNNetworkPolicy and Cilium ``toPorts[].ports`` write them."""
    entries = [p for p in items(ports) if isinstance(p, Mapping)]
    if not entries:
        return [None]
    return [_span(p.get("port"), p.get("endPort")) for p in entries]


def _selects_sandboxes(selector: Any) -> bool:
    """Whether a pod/endpoint selector's matchLabels take in the kit's sandbox pods."""
    labels = dig(selector, "matchLabels", {}) or {}
    return not labels or SANDBOX_POD_LABEL in labels


def _network_policy_open(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if not _selects_sandboxes(dig(props, "spec.podSelector")):
        return
    spec = dig(props, "spec", {})
    if "Egress" not in items(spec.get("policyTypes")):
        yield (
            f"NetworkPolicy {ctx.name} selects sandbox pods but does not restrict egress; "
            "add Egress to spec.policyTypes."
        )
    yield from judge_each(spec.get("egress"), lambda index, rule: _open_rule(index, rule, ctx))


def _open_rule(index: int, rule: Any, ctx: CheckContext) -> Iterator[str]:
    # One finding per rule: a rule open to every destination needs no port finding too.
    peers = items(dig(rule, "to"))
    wide = [c for c in (dig(peer, "ipBlock.cidr") for peer in peers) if c in EVERYWHERE]
    if not peers:
        yield (
            f"NetworkPolicy {ctx.name} egress rule {index} has no 'to' and admits every "
            "destination; list the destinations or use egress mode deny."
        )
    elif wide:
        yield (
            f"NetworkPolicy {ctx.name} admits egress to {' and '.join(wide)} (egress mode "
            "open); set sandboxkit:profile.egress.mode to deny or allowlist."
        )
    else:
        what = f"NetworkPolicy {ctx.name} egress rule {index}"
        yield from ports_problem(what, _listed_spans(dig(rule, "ports")), ctx)


def _template_managed_policy(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    management = dig(props, "spec.networkPolicyManagement", "Managed")
    if management != "Unmanaged":
        yield (
            f"SandboxTemplate {ctx.name} has networkPolicyManagement {management}: the "
            "controller's managed policy admits the public internet and policies add up; set it "
            "to Unmanaged so the kit's NetworkPolicy alone decides."
        )


def _cilium_world(rule: Any) -> bool:
    entities = {str(e) for e in items(dig(rule, "toEntities"))}
    cidrs = {str(c) for c in items(dig(rule, "toCIDR"))}
    return bool(entities & {"world", "all"} or cidrs & set(EVERYWHERE))


def _cilium_open(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    for rule in items(dig(props, "spec.egress")):
        if _cilium_world(rule):
            yield (
                f"CiliumNetworkPolicy {ctx.name} admits egress to the whole internet; "
                "allow only toFQDNs entries from the profile's allowlist."
            )


def _cilium_ports(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if not _selects_sandboxes(dig(props, "spec.endpointSelector")):
        return
    for index, rule in enumerate(items(dig(props, "spec.egress"))):
        if _cilium_world(rule):
            continue  # _cilium_open reports it; one finding per rule.
        to_ports = [t for t in items(dig(rule, "toPorts")) if isinstance(t, Mapping)]
        # A rule without toPorts (or a toPorts entry without ports) admits every port.
        spans = [s for t in to_ports for s in _listed_spans(t.get("ports"))] or [None]
        yield from ports_problem(f"CiliumNetworkPolicy {ctx.name} egress rule {index}", spans, ctx)


def _gke_fqdn_ports(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if not _selects_sandboxes(dig(props, "spec.podSelector")):
        return
    for index, rule in enumerate(items(dig(props, "spec.egress"))):
        what = f"FQDNNetworkPolicy {ctx.name} egress rule {index}"
        yield from ports_problem(what, _listed_spans(dig(rule, "ports")), ctx)


# --- SBX-NET-002 -------------------------------------------------------------------------------


_LINK_LOCAL_RESOLVER_BLOCKS = frozenset(f"{a}/32" for a in LINK_LOCAL_RESOLVERS.values())


def _dns_only(rule: Any) -> bool:
    ports = list(items(dig(rule, "ports")))
    return bool(ports) and all(
        str(dig(port, "protocol") or "TCP") in ("UDP", "TCP")
        and number(dig(port, "port")) == "53"
        and dig(port, "endPort") is None
        for port in ports
    )


def _resolver_upstream(props: Mapping[str, Any], rule: Any, cidr: str) -> bool:
    """The kit's resolver reaching a link-local cluster resolver (NodeLocal DNSCache, Cloud DNS
    for GKE): exactly that /32, DNS ports only."""
    selected = dig(props, "spec.podSelector.matchLabels", {}) or {}
    return (
        RESOLVER_POD_LABEL in selected and cidr in _LINK_LOCAL_RESOLVER_BLOCKS and _dns_only(rule)
    )


def _np_entries(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    def judge_rule(_: int, rule: Any) -> Iterator[str]:
        return judge_each(dig(rule, "to"), lambda _, peer: judge_peer(rule, peer))

    def judge_peer(rule: Any, peer: Any) -> Iterator[str]:
        cidr = dig(peer, "ipBlock.cidr")
        if isinstance(cidr, str) and not _resolver_upstream(props, rule, cidr):
            excepted = [str(c) for c in items(dig(peer, "ipBlock.except"))]
            yield from cidr_problems("NetworkPolicy", ctx.name, cidr, excepted)

    yield from judge_each(dig(props, "spec.egress"), judge_rule)


def _kit_pattern(pattern: str) -> str:
    # Cilium's '**.' prefix (1.19+: any depth below, never the apex) is the kit's '*.'.
    return f"*.{pattern[3:]}" if pattern.startswith("**.") else pattern


def _cilium_entries(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    entries = [
        _kit_pattern(str(fqdn.get("matchName") or fqdn.get("matchPattern")))
        for rule in items(dig(props, "spec.egress"))
        for fqdn in items(dig(rule, "toFQDNs"))
    ]
    yield from entries_problems("CiliumNetworkPolicy", ctx.name, entries)


def _gke_fqdn_entries(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    entries = [
        str(match.get("name") or match.get("pattern"))
        for rule in items(dig(props, "spec.egress"))
        for match in items(dig(rule, "matches"))
    ]
    yield from entries_problems("FQDNNetworkPolicy", ctx.name, entries)


# --- SBX-NET-005 -------------------------------------------------------------------------------


def _covers(selector: Any, pod_labels: Mapping[str, str]) -> bool:
    """Whether a NetworkPolicy's pod selector takes in pods with ``pod_labels``; a selector
    the model cannot read (an unknown operator) covers nothing, so SBX-NET-005 reports it."""
    try:
        return selects(selector, pod_labels)
    except ValueError:
        return False


def _templates_without_policy(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    policies = of_kind(resources, NETWORK_POLICY)
    for template in of_kind(resources, SANDBOX_TEMPLATE):
        namespace = dig(template.props, "metadata.namespace")
        pod_labels = dig(template.props, "spec.podTemplate.metadata.labels", {}) or {}
        # Same target (cluster) and namespace: two targets may use the same namespace name.
        covering = [
            p
            for p in policies
            if dig(p.props, "metadata.namespace") == namespace
            and labelled_target(p.props) == labelled_target(template.props)
            and "Egress" in items(dig(p.props, "spec.policyTypes"))
            and _covers(dig(p.props, "spec.podSelector"), pod_labels)
        ]
        if not covering:
            yield (
                f"SandboxTemplate {template.name} has no NetworkPolicy restricting egress of its "
                "pods in its namespace; keep the kit's NetworkPolicy alongside it.",
                template.urn,
            )


# --- SBX-NET-007 -------------------------------------------------------------------------------

_DNS_TYPES = (NETWORK_POLICY, CILIUM_POLICY, CONFIG_MAP, DEPLOYMENT)
_L3_PEERS = ("toEndpoints", "toFQDNs", "toCIDR", "toCIDRSet", "toEntities", "toServices")
# Peers of an L4 rule on port 53 whose DNS Cilium's L7 DNS rule would otherwise filter.
_POD_PEERS = frozenset({"resolver", "cluster", "every-pod"})


def _all_names(pattern: str) -> bool:
    return bool(pattern) and set(pattern.rstrip(".")) <= {"*"}


def _filtering(cnps: Sequence[ResourceView]) -> list[str]:
    """The Cilium policies holding an L7 DNS rule (``rules.dns``)."""
    return [
        c.name
        for c in cnps
        if any(
            as_dicts(dig(to_port, "rules.dns"))
            for rule in as_dicts(c.at("spec.egress"))
            for to_port in as_dicts(rule.get("toPorts"))
        )
    ]


def _cilium_dns_doors(cnps: Sequence[ResourceView]) -> Iterator[tuple[str, str]]:
    filtering = _filtering(cnps)
    for policy in cnps:
        for rule in as_dicts(policy.at("spec.egress")):
            # A rule naming no L3 peer admits every destination, pods included.
            peers = as_dicts(rule.get("toEndpoints"))
            bare = not any(rule.get(key) for key in _L3_PEERS)
            kinds = {peer_kind(p) for p in peers} | ({"every-pod"} if bare else set())
            for to_port in as_dicts(rule.get("toPorts")):
                dns = as_dicts(dig(to_port, "rules.dns"))
                for pattern in (str(d.get("matchPattern") or "") for d in dns):
                    if _all_names(pattern):
                        yield (
                            policy.name,
                            f"CiliumNetworkPolicy {policy.name} lets sandbox pods send every "
                            f"name to their resolver (rules.dns matchPattern '{pattern}'), so a "
                            "query such as <data>.attacker.example carries data out; list the "
                            "allowlisted names only.",
                        )
                ports = as_dicts(to_port.get("ports"))
                if filtering and not dns and kinds & _POD_PEERS and admits_dns(ports):
                    yield (
                        policy.name,
                        f"CiliumNetworkPolicy {policy.name} admits port 53 to pods without a "
                        f"DNS rule, which voids the L7 DNS rule of {', '.join(filtering)} "
                        "(Cilium docs, Layer 7 policies); remove it.",
                    )


def _network_policy_dns_doors(
    nps: Sequence[ResourceView], filtering: Sequence[str]
) -> Iterator[tuple[str, str]]:
    for policy in nps:
        for index, rule in enumerate(as_dicts(policy.at("spec.egress"))):
            if not admits_dns(as_dicts(rule.get("ports"))):
                continue
            peers = as_dicts(rule.get("to"))
            kinds = {peer_kind(p) for p in peers} if peers else {"every-pod"}
            for kind, peer in (("cluster", "kube-dns"), ("every-pod", "every pod")):
                if kind in kinds:
                    yield (
                        policy.name,
                        f"NetworkPolicy {policy.name} egress rule {index} admits DNS from "
                        f"sandbox pods to {peer}, where the cluster's resolver answers any "
                        "name (a DNS tunnel); send sandbox DNS to the kit's resolver only.",
                    )
            if "resolver" in kinds and filtering:
                yield (
                    policy.name,
                    f"NetworkPolicy {policy.name} egress rule {index} admits port 53 without "
                    f"a DNS rule, which voids the L7 DNS rule of {', '.join(filtering)} "
                    "(Cilium docs, Layer 7 policies); remove it and leave DNS to the Cilium "
                    "policy.",
                )


def _resolver_doors(views: Sequence[ResourceView]) -> Iterator[tuple[str, str]]:
    command_line = resolver_command_line(views)
    for view in views:
        config = resolver_config(view)
        if config is None:
            continue
        try:
            forwarded = dnsmasq_names(config, command_line, CONFIG_PATH)
        except ValueError as unread:
            yield (
                view.name,
                f"ConfigMap {view.name}: {unread}; the gate cannot verify which names the "
                "kit's resolver forwards: forward only the allowlisted names (the kit's "
                "resolver configuration does).",
            )
            continue
        if forwarded is None:
            yield (
                view.name,
                f"ConfigMap {view.name} makes the kit's resolver forward every name upstream "
                "(a 'server=' without a domain or for '#', in it or on the resolver's command "
                "line, or no 'no-resolv'), so sandbox "
                "queries reach a recursive resolver; forward only the allowlisted names (the "
                "kit's resolver configuration does).",
            )


def _reaches_internet(nps: Sequence[ResourceView], cnps: Sequence[ResourceView]) -> bool:
    """Whether the sandbox pods connect to the whole internet (egress mode open, or a rule
    with no destination), where any name may resolve."""
    np_rules = [r for v in nps for r in as_dicts(v.at("spec.egress"))]
    cilium_rules = [r for v in cnps for r in as_dicts(v.at("spec.egress"))]
    return any(_cilium_world(r) for r in cilium_rules) or any(
        not as_dicts(r.get("to"))
        or any(dig(peer, "ipBlock.cidr") in EVERYWHERE for peer in as_dicts(r.get("to")))
        for r in np_rules
    )


def _sandbox_dns(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    urns = {r.name: r.urn for r in resources}
    views = of_type(resource_views(resources, "kubernetes:"), *_DNS_TYPES)
    nps = [
        v
        for v in views
        if NETWORK_POLICY.matches(v.type) and _selects_sandboxes(v.at("spec.podSelector"))
    ]
    cnps = [
        v
        for v in views
        if CILIUM_POLICY.matches(v.type) and _selects_sandboxes(v.at("spec.endpointSelector"))
    ]
    if _reaches_internet(nps, cnps):
        return  # SBX-NET-001 reports it; a DNS tunnel takes out nothing more.
    for name, sentence in [
        *_cilium_dns_doors(cnps),
        *_network_policy_dns_doors(nps, _filtering(cnps)),
        *_resolver_doors(views),
    ]:
        yield sentence, urns.get(name)


# --- SBX-IAM-001 -------------------------------------------------------------------------------


def _admin_binding(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    role = dig(props, "roleRef.name")
    if role in KUBERNETES_ADMIN_ROLES:
        yield f"{ctx.name} binds {role}; bind a Role with only the verbs and resources needed."


def _wildcard_role(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    for rule in items(props.get("rules")):
        for key in ("verbs", "resources", "apiGroups"):
            if "*" in items(dig(rule, key)):
                yield f"Role {ctx.name} allows '*' {key}; list them explicitly."


# --- SBX-IAM-002 -------------------------------------------------------------------------------


def _token_mounted(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if sandbox_pod_spec(props).get("automountServiceAccountToken") is not False:
        if identity_allowed(ctx):
            return
        yield (
            f"{ctx.name} mounts a service-account token into sandbox pods; set "
            "automountServiceAccountToken to false."
        )


# --- SBX-RES-001..003 --------------------------------------------------------------------------


def _pod_limits(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    containers = containers_of(sandbox_pod_spec(props))
    yield from container_size_problems("SandboxTemplate", containers, "resources.limits", ctx)


def _pod_deadline(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    deadline = sandbox_pod_spec(props).get("activeDeadlineSeconds")
    label = f"SandboxTemplate {ctx.name}"
    yield from time_problems(ctx, label, "activeDeadlineSeconds", deadline, "maxLifetimeSeconds")


def _quota_pods(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if labelled_target(props) is None:
        return
    yield from count_problems(
        f"ResourceQuota {ctx.name}",
        "spec.hard.pods",
        dig(props, "spec.hard.pods"),
        ctx.setting("maxConcurrentSandboxes"),
        "maxConcurrent",
    )


def _warm_pool(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    yield from count_problems(
        f"SandboxWarmPool {ctx.name}",
        "spec.replicas",
        dig(props, "spec.replicas"),
        ctx.setting("maxReadySandboxes"),
        "ready",
    )


# --- SBX-RES-004 -------------------------------------------------------------------------------


def _quota_per_namespace(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    # Keyed by target (cluster) and namespace: two targets may use the same namespace name.
    quotas = pod_guard.made_per_target(
        (r for r in of_kind(resources, RESOURCE_QUOTA) if dig(r.props, "spec.hard.pods")),
        "metadata.namespace",
    )
    for r in of_kind(resources, SANDBOX_TEMPLATE):
        namespace = dig(r.props, "metadata.namespace")
        if (labelled_target(r.props), namespace) not in quotas:
            yield (
                f"SandboxTemplate {r.name} runs in namespace {namespace}, which has no "
                "ResourceQuota bounding its pods; keep the kit's quota alongside it.",
                r.urn,
            )


# --- SBX-SEC-001, SBX-SEC-003 ------------------------------------------------------------------


def _pod_env(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    for container in containers_of(sandbox_pod_spec(props)):
        variables = listed_variables(container.get("env"))
        yield from inline_secrets("SandboxTemplate", ctx.name, variables, ctx)


def _pod_images(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    images = [c.get("image") for c in containers_of(sandbox_pod_spec(props))]
    yield from unpinned_images("SandboxTemplate", ctx.name, images, target_setting(ctx, "image"))


def _resolver_images(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    # The kit's resolver answers every sandbox's DNS: its image is judged as a sandbox's is.
    images = [c.get("image") for c in containers_of(dig(props, "spec.template.spec", {}) or {})]
    setting = target_setting(ctx, "resolver.image")
    yield from unpinned_images("Deployment", ctx.name, images, setting)


# A Secret holds secrets: SBX-SEC-002 does not read its data.
SECRET_SINKS = (SecretSink(SECRET, ("data", "stringData")),)

HANDLERS = (
    *pod_guard.HANDLERS,
    Handler(
        EGRESS_CLOSED,
        (NETWORK_POLICY,),
        _network_policy_open,
        "NetworkPolicies selecting sandbox pods: no rule to everywhere, only allowed ports",
    ),
    Handler(
        EGRESS_CLOSED,
        (SANDBOX_TEMPLATE,),
        _template_managed_policy,
        "SandboxTemplates: networkPolicyManagement not Unmanaged",
    ),
    Handler(
        EGRESS_CLOSED,
        (CILIUM_POLICY,),
        _cilium_open,
        "CiliumNetworkPolicies: no world entity or open CIDR",
    ),
    Handler(EGRESS_CLOSED, (CILIUM_POLICY,), _cilium_ports, "CiliumNetworkPolicies: toPorts"),
    Handler(EGRESS_CLOSED, (GKE_FQDN_POLICY,), _gke_fqdn_ports, "GKE FQDNNetworkPolicies: ports"),
    Handler(
        ALLOWLIST_SPECIFIC,
        (NETWORK_POLICY,),
        _np_entries,
        "NetworkPolicy ipBlocks: specific public addresses",
    ),
    Handler(
        ALLOWLIST_SPECIFIC,
        (CILIUM_POLICY,),
        _cilium_entries,
        "CiliumNetworkPolicy toFQDNs and CIDRs: specific public hosts",
    ),
    Handler(
        ALLOWLIST_SPECIFIC,
        (GKE_FQDN_POLICY,),
        _gke_fqdn_entries,
        "GKE FQDNNetworkPolicy names: specific public hosts",
    ),
    StackHandler(
        EGRESS_ATTACHED,
        _templates_without_policy,
        "each SandboxTemplate: a NetworkPolicy over its pods",
    ),
    StackHandler(
        SANDBOX_DNS_FILTERED,
        _sandbox_dns,
        "sandbox DNS: Cilium DNS rules, the kit's resolver, kube-dns paths",
    ),
    Handler(
        LEAST_PRIVILEGE,
        ROLE_BINDINGS,
        _admin_binding,
        "RoleBindings and ClusterRoleBindings: no cluster-admin, admin or edit",
    ),
    Handler(
        LEAST_PRIVILEGE,
        ROLES,
        _wildcard_role,
        "Roles and ClusterRoles: no wildcard verb or resource",
    ),
    Handler(
        NO_GUEST_IDENTITY,
        SANDBOX_POD_KINDS,
        _token_mounted,
        "sandbox pods: no mounted service-account token",
    ),
    Handler(
        SIZE_LIMITS, SANDBOX_POD_KINDS, _pod_limits, "sandbox pods: container CPU and memory limits"
    ),
    Handler(
        TIME_LIMITS,
        SANDBOX_POD_KINDS,
        _pod_deadline,
        "sandbox pods: lifetime (shutdown time and active deadline)",
    ),
    Handler(BOUNDED_POOLS, (RESOURCE_QUOTA,), _quota_pods, "ResourceQuotas: pods"),
    Handler(BOUNDED_POOLS, (WARM_POOL,), _warm_pool, "SandboxWarmPools: replicas"),
    StackHandler(
        QUOTA_ATTACHED, _quota_per_namespace, "each sandbox namespace: a ResourceQuota on pods"
    ),
    Handler(
        PLAINTEXT_ENV, SANDBOX_POD_KINDS, _pod_env, "sandbox pods: plain environment variables"
    ),
    Handler(DIGEST_PINNED, SANDBOX_POD_KINDS, _pod_images, "sandbox pods: image digests"),
    Handler(
        DIGEST_PINNED,
        (DEPLOYMENT,),
        _resolver_images,
        "the kit's resolver Deployment: image digests",
    ),
)
