"""The kubernetes egress reader: what the rendered objects let a sandbox pod reach and resolve.

Read from the resources alone (never the profile), following each primitive's documented
semantics (sources in /work/notes/k8s-egress.md and ``sandboxkit.kubernetes.cilium``):

- Sandbox pods no policy isolates for egress (``_isolates``) reach every address and their DNS
  every resolver, as Kubernetes admits all egress of a pod no policy isolates.
- ``NetworkPolicy`` selecting the sandbox pods (its ``podSelector``, ``matchLabels`` and
  ``matchExpressions``, holds for the pod template's labels): egress rules add up; an
  ``ipBlock`` admits its block less ``except`` on the rule's TCP ports (no ``ports``: every
  port of every protocol; a rule without ``to``: every address). Pod and namespace peers are
  in-cluster, not internet reach. Enforced by address
  (https://kubernetes.io/docs/concepts/services-networking/network-policies/).
- ``CiliumNetworkPolicy`` and ``CiliumClusterwideNetworkPolicy`` rules (``spec`` and each of
  ``specs``) selecting them: ``toCIDR``/``toCIDRSet``/``toEntities`` (``world``, ``all``,
  ``world-ipv4``, ``world-ipv6``) as addresses; ``toServices`` and ``toGroups`` refused;
  ``toFQDNs`` selectors as names on the rule's TCP ports, with the release's pattern semantics
  (the ``VERSION_ANNOTATION`` the kit writes; an unannotated policy is read as before
  1.19, where ``**.`` is one label). A name is matched by the addresses it resolved to, and at
  L7 as well when the ``toPorts`` entry carries ``serverNames`` (TLS SNI) or HTTP ``host``
  rules that admit it; the names admitted are those both admit. A ``rules.dns`` rule filters
  queries (Cilium's DNS proxy), unless an L4-only rule on port 53 voids it (Cilium docs, Layer
  7 policies: "the layer 7 portions of the latter rule will have no effect").
- ``FQDNNetworkPolicy`` (GKE): ``name`` exact, ``pattern`` ``*.x`` read as one label below
  ``x`` (the depth is not stated in the GKE docs read; assumed as Cilium's, to confirm on a
  first deploy); by resolved address only.
- UDP (so QUIC, HTTP/3), grants of protocol ``udp``: the same rules read for their UDP ports (a
  port list left out holds every protocol; Cilium's ``ANY`` both): address peers as addresses,
  Cilium and GKE names by resolved address only (Envoy checks ``serverNames`` and HTTP rules on
  TCP). Pod and namespace peers, the sandbox's DNS path to the resolver among them, stay
  in-cluster and give no UDP grant.
- Objects declared in a ``kubernetes:yaml/v2:ConfigGroup`` (its ``objs`` and ``yaml``), which
  the provider creates at deployment and a render holds only as the component's inputs, are
  read as the objects they declare; a ``ConfigGroup`` with ``files`` or a ``ConfigFile`` reads
  its objects from paths the render does not hold: "cannot verify" (``ValueError``).
- Resolution follows the pod template's DNS: ``dnsPolicy: None`` with loopback nameservers
  resolves nothing; the kit's resolver (its ConfigMap's dnsmasq configuration, read with
  dnsmasq's documented matching and run by ``tests/kubernetes/test_sandbox_resolver.py``)
  resolves what it forwards, intersected with Cilium's DNS rules; any other nameserver (the
  cluster's kube-dns, which recurses) resolves every name if DNS egress reaches it.

Where the reader meets a shape the kit does not write it errs wide: refusals it cannot place are
ignored, and an unknown pattern is read as the widest scope that holds it.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import yaml

from sandboxkit.boundary import RESOLVER_POD_LABEL
from sandboxkit.dns_names import is_below
from sandboxkit.effective_egress import (
    EffectiveEgress,
    Grant,
    Ports,
    ResourceView,
    Scope,
    as_dict,
    as_dicts,
    as_list,
    udp_grants,
)
from sandboxkit.egress_contract import ConnectionProtocol
from sandboxkit.kubernetes.cilium import (
    MULTI_LABEL_PATTERNS,
    SNI_EXACT,
    SNI_PREFIX_WILDCARDS,
    VERSION_ANNOTATION,
    CiliumVersion,
    parse_version,
)
from sandboxkit.kubernetes.resolver import CONFIG_PATH, DNS_PORT
from sandboxkit.kubernetes.type_tokens import (
    CILIUM_POLICY,
    CLUSTERWIDE_POLICY,
    CONFIG_FILE,
    CONFIG_GROUP,
    CONFIG_MAP,
    DEPLOYMENT,
    GKE_FQDN_POLICY,
    NETWORK_POLICY,
    SANDBOX_TEMPLATE,
)
from sandboxkit.type_tokens import TypeToken

TARGET = "kubernetes"

NP_DOC = (
    "Kubernetes NetworkPolicy: egress ipBlock (cidr, except) and ports "
    "(kubernetes.io/docs/concepts/services-networking/network-policies)"
)
FQDN_DOC = (
    "Cilium toFQDNs: IPs from DNS answers the DNS proxy saw (docs.cilium.io, policy language, "
    "DNS based)"
)
SNI_DOC = (
    "Cilium toFQDNs with TLS serverNames checked by Envoy (docs.cilium.io, policy language, "
    "Limit TLS Server Name Indication)"
)
HOST_DOC = "Cilium toFQDNs with L7 HTTP host rules checked by Envoy (docs.cilium.io, Layer 7)"
CIDR_DOC = "Cilium toCIDR/toCIDRSet/toEntities (docs.cilium.io, policy language, Layer 3)"
GKE_DOC = (
    "GKE FQDNNetworkPolicy: addresses from kube-dns or Cloud DNS answers "
    "(cloud.google.com/kubernetes-engine/docs/how-to/fqdn-network-policies); '*.x' depth "
    "assumed one label"
)
RESOLVER_DOC = (
    "the kit's dnsmasq configuration, run by tests/kubernetes/test_sandbox_resolver.py "
    "(dnsmasq(8) --server/--address: the most specific domain wins)"
)
CILIUM_DNS_DOC = "Cilium DNS proxy rules.dns (docs.cilium.io, Layer 7, DNS Policy and IP Discovery)"
CLUSTER_DNS_DOC = "the cluster resolver (kube-dns recurses for any name)"
# The release semantics of a CiliumNetworkPolicy without the kit's annotation: before '**.'.
UNANNOTATED_CILIUM: Final[CiliumVersion] = (1, 18)
_EVERYWHERE = ("0.0.0.0/0", "::/0")
# Cilium entities outside the cluster and the blocks they stand for (Cilium docs, Policy
# Language, Entities Based: world, world-ipv4, world-ipv6; all includes world).
_WORLD: Final = {
    "world": _EVERYWHERE,
    "all": _EVERYWHERE,
    "world-ipv4": ("0.0.0.0/0",),
    "world-ipv6": ("::/0",),
}
# Egress peers whose endpoints the reader cannot place: Services (which may front external
# endpoints) and cloud provider groups.
_UNREAD_PEERS: Final = frozenset({"toServices", "toGroups"})
_KIT_HOST = re.compile(
    r"^\^(?P<below>\(\[-a-z0-9_\]\+\\\.\)\+)?(?P<name>(?:[-a-z0-9_]|\\\.)+)\(:\d+\)\?\$$"
)

# A name reach, before ports: (host, scope).
Named = tuple[str, Scope]


def contains(outer: Named, inner: Named) -> bool:
    """Whether every name ``inner`` matches, ``outer`` matches too."""
    (oh, os), (ih, is_) = outer, inner
    if os == "any":
        return True
    if is_ == "any":
        return False
    if os == "exact":
        return is_ == "exact" and ih == oh
    if os == "one-label":
        return is_ == "exact" and is_below(ih, oh) and "." not in ih[: -len(oh) - 1]
    if os == "below":
        return is_below(ih, oh) or (ih == oh and is_ in ("below", "one-label"))
    # exact-and-below
    return ih == oh or is_below(ih, oh)


def intersect(left: Iterable[Named], right: Iterable[Named]) -> list[Named]:
    """The names both sides match, as the narrower of each contained pair (errs wide where
    neither contains the other: such pairs are not written by the kit)."""
    right = list(right)
    found: list[Named] = []
    for a in left:
        for b in right:
            if contains(a, b):
                found.append(b)
            elif contains(b, a):
                found.append(a)
    return list(dict.fromkeys(found))


def pattern_scope(pattern: str, version: CiliumVersion) -> Named:
    """A Cilium ``matchPattern`` (or ``serverNames`` entry) as the narrowest ``Named`` that holds
    every name it matches on ``version``."""
    text = pattern.strip().lower().removesuffix(".")
    if set(text) <= {"*"}:
        return ("*", "any")
    if "*" not in text:
        return (text, "exact")
    first, _, rest = text.partition(".")
    if "*" in rest or not rest:
        return ("*", "any")
    multi = first.startswith("**") and set(first) == {"*"} and version >= MULTI_LABEL_PATTERNS
    return (rest, "below" if multi else "one-label")


def _server_name_scope(pattern: str, version: CiliumVersion) -> Named | None:
    """What a ``serverNames`` entry admits on ``version`` (``None``: nothing matches)."""
    text = pattern.strip().lower().removesuffix(".")
    if "*" not in text:
        return (text, "exact")
    if version >= MULTI_LABEL_PATTERNS:
        return pattern_scope(text, version)
    if version < SNI_PREFIX_WILDCARDS:
        return None  # no wildcards before 1.18: a literal '*' matches no real name
    if text.startswith("**."):
        return (text[3:], "below")
    if text.startswith("*.") and "*" not in text[2:]:
        return (text[2:], "one-label")
    return None


def _host_scope(regex: str) -> Named | None:
    """The kit's HTTP host regexes (``cilium.http_host``) read back; ``None`` for any other."""
    match = _KIT_HOST.match(regex)
    if match is None:
        return None
    name = match.group("name").replace("\\.", ".")
    return (name, "below" if match.group("below") else "exact")


def _port_numbers(port: Mapping[str, Any]) -> tuple[str, set[int] | None]:
    protocol = str(port.get("protocol") or "TCP").upper()
    value, end = port.get("port"), port.get("endPort")
    try:
        first = int(str(value))
    except ValueError:
        return protocol, None  # a named port: any number
    last = int(str(end)) if end is not None else first
    return protocol, set(range(first, last + 1))


def _ports_of(ports: Iterable[Mapping[str, Any]], protocol: str = "TCP") -> Ports | None:
    """The ``protocol`` (``TCP`` or ``UDP``) ports of a port list: ``"any"`` for an empty list
    (every protocol) or a named port, ``None`` when it lists other protocols only. Cilium's
    ``ANY`` holds both."""
    found: set[int] = set()
    listed = list(ports)
    if not listed:
        return "any"
    for port in listed:
        listed_protocol, numbers = _port_numbers(port)
        if listed_protocol not in (protocol, "ANY"):
            continue
        if numbers is None:
            return "any"
        found |= numbers
    return frozenset(found) if found else None


def admits_dns(ports: Iterable[Mapping[str, Any]]) -> bool:
    """Whether a port list (NetworkPolicy ``ports``, Cilium ``toPorts[].ports``; plain values)
    admits port 53 on some protocol: an empty list or a named port does."""
    listed = list(ports)
    return not listed or any((n := _port_numbers(p)[1]) is None or DNS_PORT in n for p in listed)


@dataclass(frozen=True)
class _Pods:
    """The sandbox pods' labels and DNS settings, from the SandboxTemplate."""

    labels: Mapping[str, str]
    dns_policy: str
    nameservers: tuple[str, ...]
    namespace: str
    template: str


def _sandbox_pods(resources: Sequence[ResourceView]) -> Iterator[_Pods]:
    for view in resources:
        if SANDBOX_TEMPLATE.matches(view.type):
            pod = as_dict(view.at("spec.podTemplate"))
            spec = as_dict(pod.get("spec"))
            labels = as_dict(as_dict(pod.get("metadata")).get("labels"))
            yield _Pods(
                {str(k): str(v) for k, v in labels.items()},
                str(spec.get("dnsPolicy") or "ClusterFirst"),
                tuple(str(n) for n in as_list(as_dict(spec.get("dnsConfig")).get("nameservers"))),
                str(view.at("metadata.namespace") or ""),
                view.name,
            )


# Cilium's endpoint label naming a pod's namespace (every endpoint carries it; Kubernetes pods
# do not): in a peer it narrows namespaces, not pods.
_NAMESPACE_LABEL = "io.kubernetes.pod.namespace"


def selects(selector: Any, labels: Mapping[str, str]) -> bool:
    """Whether a label selector selects a pod with ``labels``: every ``matchLabels`` pair and
    every ``matchExpressions`` requirement (``In``, ``NotIn``, ``Exists``, ``DoesNotExist``)
    hold; an empty or missing selector selects every pod. Keys lose Cilium's ``k8s:`` prefix.
    Kubernetes LabelSelector, https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/
    ("Resources that support set-based requirements").

    Raises:
        ValueError: for another operator (the selection, and so the egress, is unknown).
    """
    chosen: Mapping[str, Any] = selector if isinstance(selector, Mapping) else {}
    wanted = chosen.get("matchLabels")
    for key, value in (wanted if isinstance(wanted, Mapping) else {}).items():
        if labels.get(str(key).removeprefix("k8s:")) != str(value):
            return False
    expressions = chosen.get("matchExpressions")
    for requirement in expressions if isinstance(expressions, Sequence) else ():
        key = str(requirement.get("key", "")).removeprefix("k8s:")
        values = {str(v) for v in requirement.get("values") or ()}
        operator = requirement.get("operator")
        if operator == "In":
            held = labels.get(key) in values
        elif operator == "NotIn":
            held = labels.get(key) not in values
        elif operator == "Exists":
            held = key in labels
        elif operator == "DoesNotExist":
            held = key not in labels
        else:
            raise ValueError(
                f"label selector operator {operator!r}: In, NotIn, Exists or DoesNotExist"
            )
        if not held:
            return False
    return True


def _policies(
    resources: Sequence[ResourceView], kind: TypeToken, pods: _Pods
) -> list[ResourceView]:
    selector = "spec.endpointSelector" if kind == CILIUM_POLICY else "spec.podSelector"
    labels = dict(pods.labels)
    if kind == CILIUM_POLICY and pods.namespace:
        labels[_NAMESPACE_LABEL] = pods.namespace
    return [v for v in resources if kind.matches(v.type) and selects(v.at(selector), labels)]


def _address_grant(cidr: str, ports: Ports, excluded: Iterable[str], where: str, doc: str) -> Grant:
    return Grant(cidr, "exact", ports, "address", "platform-doc", doc, where, tuple(excluded))


def _np_connect(view: ResourceView, protocol: str = "TCP") -> Iterator[Grant]:
    where = f"NetworkPolicy {view.name}"
    for rule in as_list(view.at("spec.egress")):
        ports = _ports_of(as_list(as_dict(rule).get("ports")), protocol)
        if ports is None:
            continue
        peers = as_list(as_dict(rule).get("to"))
        if not peers:
            yield from (_address_grant(c, ports, (), where, NP_DOC) for c in _EVERYWHERE)
        for peer in peers:
            block = as_dict(as_dict(peer).get("ipBlock"))
            if "cidr" in block:
                excepted = [str(e) for e in as_list(block.get("except"))]
                yield _address_grant(str(block["cidr"]), ports, excepted, where, NP_DOC)


def _version(view: ResourceView) -> CiliumVersion:
    text = as_dict(view.at("metadata.annotations")).get(VERSION_ANNOTATION)
    return parse_version(str(text)) if text else UNANNOTATED_CILIUM


def _selector_scope(selector: Mapping[str, Any], version: CiliumVersion) -> Named | None:
    if "matchName" in selector:
        return (str(selector["matchName"]).lower().removesuffix("."), "exact")
    if "matchPattern" in selector:
        return pattern_scope(str(selector["matchPattern"]), version)
    return None


# Cilium's Envoy admits a connection on a port with serverNames only as TLS naming one of them,
# and on a port with HTTP rules only as HTTP requests they admit: plain TCP is dropped either way
# (docs.cilium.io, policy language, "TLS SNI" and "Layer 7 Examples").
_TLS: Final[frozenset[ConnectionProtocol]] = frozenset({"tls"})
_HTTP: Final[frozenset[ConnectionProtocol]] = frozenset({"http"})


def _name_grants(
    selectors: list[Named],
    to_port: Mapping[str, Any],
    version: CiliumVersion,
    where: str,
    protocol: str = "TCP",
) -> Iterator[Grant]:
    ports = _ports_of(as_list(to_port.get("ports")), protocol)
    if ports is None:
        return
    if protocol != "TCP":
        # Envoy checks serverNames and HTTP rules on TCP only: a datagram to the name's
        # addresses passes by address.
        for host, scope in selectors:
            yield Grant(host, scope, ports, "resolved-address", "platform-doc", FQDN_DOC, where)
        return
    servers = [str(s) for s in as_list(to_port.get("serverNames"))]
    hosts = [
        str(as_dict(r).get("host", "")) for r in as_list(as_dict(to_port.get("rules")).get("http"))
    ]
    if servers and version >= SNI_EXACT:
        admitted = [n for s in servers if (n := _server_name_scope(s, version)) is not None]
        for host, scope in intersect(selectors, admitted):
            yield Grant(
                host, scope, ports, "name-l7", "platform-doc", SNI_DOC, where, protocols=_TLS
            )
        return
    if hosts and all(h for h in hosts):
        read = [_host_scope(h) for h in hosts]
        if all(n is not None for n in read):
            named = [n for n in read if n is not None]
            for host, scope in intersect(selectors, named):
                yield Grant(
                    host, scope, ports, "name-l7", "platform-doc", HOST_DOC, where, protocols=_HTTP
                )
            return
    for host, scope in selectors:
        yield Grant(host, scope, ports, "resolved-address", "platform-doc", FQDN_DOC, where)


def _cilium_connect(view: ResourceView, protocol: str = "TCP") -> Iterator[Grant]:
    where = f"CiliumNetworkPolicy {view.name}"
    version = _version(view)
    for rule in as_dicts(view.at("spec.egress")):
        to_ports = [as_dict(p) for p in as_list(rule.get("toPorts"))] or [{}]
        selectors = [
            n for s in as_list(rule.get("toFQDNs")) if (n := _selector_scope(as_dict(s), version))
        ]
        if selectors:
            for to_port in to_ports:
                yield from _name_grants(selectors, to_port, version, where, protocol)
            continue
        unread = sorted(_UNREAD_PEERS & set(rule))
        if unread:
            raise ValueError(
                f"{where}: egress to {', '.join(unread)}, which the reader does not model "
                "(their endpoints may be outside the cluster)"
            )
        blocks = [str(c) for c in as_list(rule.get("toCIDR"))]
        blocks += [str(as_dict(c).get("cidr")) for c in as_list(rule.get("toCIDRSet"))]
        for entity in dict.fromkeys(str(e) for e in as_list(rule.get("toEntities"))):
            blocks += [b for b in _WORLD.get(entity, ()) if b not in blocks]
        for to_port in to_ports:
            ports = _ports_of(as_list(to_port.get("ports")), protocol)
            if ports is not None:
                yield from (_address_grant(b, ports, (), where, CIDR_DOC) for b in blocks)


def _gke_connect(view: ResourceView, protocol: str = "TCP") -> Iterator[Grant]:
    where = f"FQDNNetworkPolicy {view.name}"
    for rule in as_list(view.at("spec.egress")):
        ports = _ports_of(as_list(as_dict(rule).get("ports")), protocol)
        if ports is None:
            continue
        for match in as_dicts(as_dict(rule).get("matches")):
            named: Named = (
                (str(match["name"]).lower(), "exact")
                if "name" in match
                else pattern_scope(str(match.get("pattern", "*")), UNANNOTATED_CILIUM)
            )
            yield Grant(*named, ports, "resolved-address", "platform-doc", GKE_DOC, where)


# --- Resolution ---------------------------------------------------------------------------------


# dnsmasq(8) 2.90 options that read names or upstreams from somewhere the render does not hold.
_UNREAD_SOURCES = ("resolv-file", "servers-file", "conf-dir", "conf-file", "conf-script")
_REVERSE_ZONES = ("in-addr.arpa", "ip6.arpa")
# Short forms of the options above and of server/address/local (dnsmasq(8) 2.90 OPTIONS).
_SHORT = {"S": "server", "A": "address", "r": "resolv-file", "C": "conf-file", "7": "conf-dir"}


def dnsmasq_options(args: Sequence[str]) -> list[tuple[str, str]]:
    """``(option, value)`` of a dnsmasq command line (``--server=x``, ``--server x``,
    ``-S x``, ``-Sx``); a flag's value is ``""``."""
    found: list[tuple[str, str]] = []
    items = list(args)
    index = 0
    while index < len(items):
        item = str(items[index])
        index += 1
        if item.startswith("--"):
            key, eq, value = item[2:].partition("=")
            if not eq and key in (*_SHORT.values(), "rev-server", "local") and index < len(items):
                value, index = str(items[index]), index + 1
            found.append((key, value))
        elif item.startswith("-") and len(item) > 1 and item[1] in _SHORT:
            value = item[2:]
            if not value and index < len(items):
                value, index = str(items[index]), index + 1
            found.append((_SHORT[item[1]], value))
    return found


def dnsmasq_names(
    config: str, args: Sequence[str] = (), config_path: str | None = None
) -> list[Named] | None:
    """The names a dnsmasq configuration (its file and its command line ``args``) forwards
    upstream, read as dnsmasq(8) 2.90 matches them (the most specific ``--server`` /
    ``--address`` / ``--local`` domain wins); ``None`` when it forwards every name: a
    ``server=`` without domain, or with the domain ``#`` ("matches any domain"), does, even
    beside ``address=/#/`` (measured with dnsmasq 2.90: an unlisted name was forwarded), and so
    does a configuration without ``no-resolv`` (the upstreams of /etc/resolv.conf).

    Raises:
        ValueError: for what the reader does not model: reverse names forwarded
            (``rev-server``, a ``server`` for ``in-addr.arpa`` / ``ip6.arpa``: names under a
            zone the caller owns carry data), or names read from a file the render does not
            hold (``resolv-file``, ``servers-file``, ``conf-dir``, a ``conf-file`` other than
            ``config_path``).
    """
    options: list[tuple[str, str]] = []
    for line in config.splitlines():
        text = line.strip()
        if text and not text.startswith("#"):
            key, _, value = text.partition("=")
            options.append((key.strip(), value.strip()))
    options += dnsmasq_options(args)
    forwarded: list[str] = []
    refused: set[str] = set()
    every = "no-resolv" not in {key for key, _ in options}
    for key, value in options:
        if key in _UNREAD_SOURCES and not (key == "conf-file" and value == config_path):
            raise ValueError(
                f"dnsmasq option {key}={value} reads names or upstreams from a file the render "
                "does not hold"
            )
        if key == "rev-server":
            raise ValueError(
                f"dnsmasq option rev-server={value} forwards reverse names (in-addr.arpa, "
                "ip6.arpa): a zone the caller owns carries data in its names"
            )
        domains = value.split("/")[1:-1] if value.startswith("/") else []
        upstream = value.split("/")[-1] if value.startswith("/") else value
        if key == "address" and domains:
            refused.update(domains)
        elif key == "server" and not domains:
            every = True
        elif key == "server" and upstream:
            if "#" in domains:
                every = True
            reverse = [d for d in domains if d.strip(".").endswith(_REVERSE_ZONES)]
            if reverse or any(d.strip(".") == "arpa" for d in domains):
                raise ValueError(
                    f"dnsmasq option server={value} forwards reverse names ({', '.join(domains)}):"
                    " a zone the caller owns carries data in its names"
                )
            forwarded += [d for d in domains if d != "#"]
    if every:
        return None
    found: list[Named] = []
    for domain in dict.fromkeys(forwarded):
        if domain.startswith("*."):
            found.append((domain[2:], "below"))
        elif f"*.{domain}" in refused:
            found.append((domain, "exact"))
        else:
            found.append((domain, "exact-and-below"))
    return found


def resolver_command_line(resources: Sequence[ResourceView]) -> list[str]:
    """The command line of the kit's resolver Deployment (every container's ``command`` and
    ``args``): pods labelled ``RESOLVER_POD_LABEL``."""
    found: list[str] = []
    for view in resources:
        labels = as_dict(view.at("spec.template.metadata.labels"))
        if DEPLOYMENT.matches(view.type) and RESOLVER_POD_LABEL in labels:
            for container in as_dicts(view.at("spec.template.spec.containers")):
                found += [str(a) for a in as_list(container.get("command"))]
                found += [str(a) for a in as_list(container.get("args"))]
    return found


def resolver_config(view: ResourceView) -> str | None:
    """The dnsmasq configuration a ConfigMap holds for the kit's resolver, else ``None``."""
    config = as_dict(view.at("data")).get(CONFIG_PATH.rsplit("/", 1)[-1])
    return config if CONFIG_MAP.matches(view.type) and isinstance(config, str) else None


def _resolver_config(resources: Sequence[ResourceView]) -> str | None:
    return next((c for v in resources if (c := resolver_config(v)) is not None), None)


@dataclass(frozen=True)
class _DnsPaths:
    """Where the sandbox pods' DNS may go, from their policies.

    Attributes:
        resolver: an L4 rule admits port 53 to the kit's resolver pods (or to every pod).
        cluster: an L4 rule admits port 53 to kube-dns (or to every pod).
        names: the names Cilium's DNS rules admit, ``None`` when no such rule applies.
    """

    resolver: bool
    cluster: bool
    names: list[Named] | None


def peer_kind(peer: Mapping[str, Any]) -> str:
    """Which pods a policy peer selects, as DNS paths go: ``resolver`` (the kit's resolver
    pods), ``cluster`` (kube-dns), ``every-pod`` (no pod labels: every pod of the selected
    namespaces), ``address`` (an ``ipBlock``, or pods with other labels).

    Reads a NetworkPolicy peer (``podSelector``, ``namespaceSelector``, ``ipBlock``) and a
    Cilium endpoint selector (``matchLabels``, ``k8s:`` prefixes) alike; plain values.
    """
    if "ipBlock" in peer:
        return "address"
    selector = peer.get("podSelector") if "podSelector" in peer else peer
    labels = {
        str(k).removeprefix("k8s:"): v
        for k, v in as_dict(as_dict(selector).get("matchLabels")).items()
    }
    if RESOLVER_POD_LABEL in labels:
        return "resolver"
    if labels.get("k8s-app") == "kube-dns":
        return "cluster"
    return "address" if set(labels) - {_NAMESPACE_LABEL} else "every-pod"


def _dns_paths(nps: Sequence[ResourceView], cnps: Sequence[ResourceView]) -> _DnsPaths:
    reached: set[str] = set()

    def admit(peers: list[Any]) -> None:
        kinds = {peer_kind(as_dict(p)) for p in peers} if peers else {"every-pod"}
        reached.update({"resolver", "cluster"} if "every-pod" in kinds else kinds)

    for view in nps:
        for rule in as_list(view.at("spec.egress")):
            if admits_dns(as_list(as_dict(rule).get("ports"))):
                admit(as_list(as_dict(rule).get("to")))
    names: list[Named] = []
    filtered = False
    for view in cnps:
        version = _version(view)
        for rule in as_dicts(view.at("spec.egress")):
            if rule.get("toFQDNs"):
                continue
            for to_port in as_dicts(rule.get("toPorts")) or [{}]:
                if not admits_dns(as_list(to_port.get("ports"))):
                    continue
                dns = as_list(as_dict(to_port.get("rules")).get("dns"))
                if dns:
                    filtered = True
                    names += [n for d in dns if (n := _selector_scope(as_dict(d), version))]
                else:
                    admit(as_list(rule.get("toEndpoints")))
    # An L4-only rule on port 53 to the same pods voids Cilium's L7 DNS rule (Layer 7 docs).
    void = bool(reached & {"resolver", "cluster"})
    resolver = "resolver" in reached or (filtered and not void)
    cluster = "cluster" in reached or (filtered and not void)
    return _DnsPaths(resolver, cluster, names if filtered and not void else None)


def _is_loopback(text: str) -> bool:
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        return False


def object_type(manifest: Mapping[str, Any]) -> str:
    """The Pulumi type token of a Kubernetes object by its ``apiVersion`` and ``kind``
    (``networking.k8s.io/v1`` ``NetworkPolicy`` is ``kubernetes:networking.k8s.io/v1:
    NetworkPolicy``; the core group's ``v1`` is ``core/v1``), as pulumi-kubernetes names it."""
    api_version = str(manifest.get("apiVersion", ""))
    group_version = api_version if "/" in api_version else f"core/{api_version}"
    return f"kubernetes:{group_version}:{manifest.get('kind', '')}"


def _manifests(view: ResourceView) -> list[dict[str, Any]]:
    """The objects a ``ConfigGroup`` declares in its ``objs`` and ``yaml`` inputs (a YAML text
    of one or more documents, or a list of such texts).

    pulumi-kubernetes' v1 components of the same names register no inputs (their objects are
    registered by the program itself, so rendered): they declare nothing here.

    Raises:
        ValueError: for a ``ConfigFile`` of a ``file`` or a ``ConfigGroup`` of ``files``: the
            objects are read from paths or URLs at deployment, which the render does not hold;
            and for YAML that does not parse.
    """
    where = f"{view.type} {view.name}"
    files = as_list(view.props.get("files"))
    if "file" in view.props or files:
        source = view.props.get("file", files)
        raise ValueError(
            f"{where} reads Kubernetes objects from {source!r} at deployment: the render does not "
            "hold them, so the NetworkPolicies among them cannot be read; give the objects as "
            "objs or yaml"
        )
    found = as_dicts(view.props.get("objs"))
    texts = view.props.get("yaml")
    for text in texts if isinstance(texts, list) else [texts]:
        if not isinstance(text, str):
            continue
        try:
            found += [d for d in yaml.safe_load_all(text) if isinstance(d, dict)]
        except yaml.YAMLError as error:
            raise ValueError(f"{where}: its yaml does not parse ({error})") from None
    return found


def _expanded(resources: Sequence[ResourceView]) -> list[ResourceView]:
    """``resources`` with each ``ConfigGroup`` replaced by the objects it declares, as the
    provider would create them (each named by its ``metadata.name``)."""
    found: list[ResourceView] = []
    for view in resources:
        if not (CONFIG_GROUP.matches(view.type) or CONFIG_FILE.matches(view.type)):
            found.append(view)
            continue
        for manifest in _manifests(view):
            name = str(as_dict(manifest.get("metadata")).get("name", view.name))
            found.append(ResourceView(object_type(manifest), f"{view.name}/{name}", manifest))
    return found


def _cilium_rules(resources: Sequence[ResourceView]) -> list[ResourceView]:
    """``resources`` with each CiliumNetworkPolicy and CiliumClusterwideNetworkPolicy as one
    CiliumNetworkPolicy view per rule: its ``spec`` and each of its ``specs`` (Cilium docs,
    Policy Language: a policy holds a rule in ``spec`` or a list in ``specs``)."""
    found: list[ResourceView] = []
    for view in resources:
        if not (CILIUM_POLICY.matches(view.type) or CLUSTERWIDE_POLICY.matches(view.type)):
            found.append(view)
            continue
        rules = [view.at("spec"), *as_list(view.at("specs"))]
        found += [
            ResourceView(CILIUM_POLICY.token, view.name, {**view.props, "spec": rule})
            for rule in rules
            if isinstance(rule, dict)
        ]
    return found


def _isolates(view: ResourceView) -> bool:
    """Whether a policy selecting the sandbox pods isolates their egress (what no rule admits is
    refused). NetworkPolicy: ``Egress`` in ``policyTypes``, which defaults to it when the policy
    has egress rules (https://kubernetes.io/docs/concepts/services-networking/network-policies/,
    "policyTypes"). CiliumNetworkPolicy: an ``egress`` or ``egressDeny`` rule, unless
    ``enableDefaultDeny.egress`` is false (Cilium docs, Policy Enforcement Modes). GKE
    FQDNNetworkPolicy: an egress rule. An empty rule list isolates nothing (wider)."""
    if NETWORK_POLICY.matches(view.type):
        types = view.at("spec.policyTypes")
        if isinstance(types, list):
            return "Egress" in types
        return bool(as_list(view.at("spec.egress")))
    if CILIUM_POLICY.matches(view.type):
        rules = as_list(view.at("spec.egress")) + as_list(view.at("spec.egressDeny"))
        return bool(rules) and as_dict(view.at("spec.enableDefaultDeny")).get("egress") is not False
    return bool(as_list(view.at("spec.egress")))


def _resolve(
    resources: Sequence[ResourceView],
    pods: _Pods,
    nps: Sequence[ResourceView],
    cnps: Sequence[ResourceView],
    isolated: bool,
) -> list[Grant]:
    # Egress not isolated: DNS reaches the kit's resolver and kube-dns alike.
    paths = _dns_paths(nps, cnps) if isolated else _DnsPaths(True, True, None)
    own = pods.dns_policy == "None"
    if own and all(_is_loopback(n) for n in pods.nameservers):
        return []
    config = _resolver_config(resources) if own else None
    if not (paths.resolver if config is not None else paths.cluster):
        return []
    names: list[Named] = [("*", "any")]
    doc, basis = CLUSTER_DNS_DOC, "platform-doc"
    if config is not None:
        forwarded = dnsmasq_names(config, resolver_command_line(resources), CONFIG_PATH)
        names = [("*", "any")] if forwarded is None else forwarded
        doc, basis = RESOLVER_DOC, "kit-code"
    if paths.names is not None:
        names = intersect(names, paths.names)
        doc = f"{doc}; {CILIUM_DNS_DOC}"
    return [
        Grant(host, scope, "any", "query-name", basis, doc, "SandboxTemplate dnsConfig")  # type: ignore[arg-type]
        for host, scope in names
    ]


def read_egress(resources: Sequence[ResourceView], target: str = TARGET) -> EffectiveEgress:
    """The effective egress of the agent-sandbox objects (see the module docstring).

    Args:
        resources: the target's rendered resources as ``ResourceView``s.
        target: the target name the result carries (``gcp-gke`` reads the same objects).

    Raises:
        ValueError: for what the reader cannot place: objects a YAML component reads from
            files (``_manifests``), a label selector operator it does not know, Cilium peers
            it does not model, a dnsmasq option it does not model.

    Returns:
        Connection grants (addresses; names by resolved address, and at L7 where Envoy checks
        them; UDP grants, ``udp_grants``, for the same rules' UDP ports to addresses and names
        outside the cluster: pod and namespace peers, the path to the resolver among them, are
        in-cluster) and resolution grants, the union over every SandboxTemplate read. No
        SandboxTemplate: nothing is read, nothing admitted.
    """
    connect: list[Grant] = []
    resolve: list[Grant] = []
    udp: list[Grant] = []
    resources = _cilium_rules(_expanded(resources))
    for pods in _sandbox_pods(resources):
        nps = _policies(resources, NETWORK_POLICY, pods)
        cnps = _policies(resources, CILIUM_POLICY, pods)
        gke = _policies(resources, GKE_FQDN_POLICY, pods)
        isolated = any(_isolates(v) for v in (*nps, *cnps, *gke))
        if not isolated:
            # Kubernetes admits all egress of a pod no policy isolates.
            where = f"SandboxTemplate {pods.template}"
            connect += [_address_grant(c, "any", (), where, NP_DOC) for c in _EVERYWHERE]
            udp += [_address_grant(c, "any", (), where, NP_DOC) for c in _EVERYWHERE]
        for protocol, found in (("TCP", connect), ("UDP", udp)):
            found += [g for v in nps for g in _np_connect(v, protocol)]
            found += [g for v in cnps for g in _cilium_connect(v, protocol)]
            found += [g for v in gke for g in _gke_connect(v, protocol)]
        resolve += _resolve(resources, pods, nps, cnps, isolated)
    connect += udp_grants(dict.fromkeys(udp))
    return EffectiveEgress(target, tuple(dict.fromkeys(connect)), tuple(dict.fromkeys(resolve)))
