"""The ``cloudflare`` target's effective egress, read from its rendered Worker script only.

Reader of issue 12 for this target: ``read_egress(resources)`` takes the rendered resources (as
``ResourceView``s), finds each Worker script (``type_tokens.WORKER_SCRIPTS``: the kit's
``WranglerScript``, or pulumi-cloudflare's ``WorkersScript``) and its ``EGRESS_POLICY`` binding,
and lets the Worker's own code say what that policy admits (``decide.WorkerDecider``, the
JavaScript of ``worker/src/index.js`` run in workerd), never a Python copy of it:

- **connections** (kit code): the Durable Object installs the interceptions
  ``egressInterceptions(EGRESS_POLICY)`` lists, one per listed host and port (none in ``deny``,
  catch-alls in ``open``), and ``EgressGateway`` decides every routed request with
  ``decideEgress``. Each interception is one grant: ``interceptOutboundHttps("pypi.org")`` is
  ``pypi.org`` exactly on 443, ``interceptOutboundHttp("*.x")`` every name below ``x`` on 80 (the
  platform glob's ``*`` matches any sequence of characters); the catch-alls are every name and
  every address outside ``NON_PUBLIC_IPV4``/``NON_PUBLIC_IPV6`` on 80 (HTTP) or 443 (HTTPS).
  Enforced by name at L7, and more strictly than a check of SNI/Host against a destination: for
  HTTPS the platform terminates TLS with its per-container CA and hands the gateway the request;
  the gateway decides on that request's URL and re-issues it itself to exactly that URL (the
  container's ``Host`` header dropped), so upstream SNI and Host are the checked name and the
  address the container dialled is never used (a forged SNI or fronted Host reaches only the
  checked name). The grants are verified against the Worker's own decisions on probes derived
  from them before they are returned (``WorkerReadError`` when they disagree).
- **routing** (documented platform behaviour, not testable here): that the platform sends a
  container's request to the gateway when, and only when, an interception matches its Host or
  SNI, and that ports other than 80 and 443 never leave (``enableInternet: false``).
  Sources: developers.cloudflare.com/containers/api/durable-object-container/ and
  developers.cloudflare.com/containers/configuration/outbound-traffic/.
- **UDP** (so QUIC): no grant. The kit's Durable Object starts every container with
  ``enableInternet: false``, so nothing but intercepted HTTP and HTTPS leaves (same sources);
  a script of other content is SBX-NET-003's (``worker_code_problems``).
- **resolution** (documented platform behaviour): the Worker cannot see DNS. The current
  outbound-traffic page says "your outbound configuration decides which DNS lookups resolve", so
  a name resolves when an interception covers it; an older text of the same page sent every
  query to Cloudflare's resolvers (a DNS tunnel). Confirm on a first deploy (worker README, "DNS").

The target has no control-plane hosts: the Durable Object reaches its container through
``getTcpPort`` (ingress), so ``deny`` grants nothing.

``TargetSpec.read_egress`` finds this module by its place in the target's folder
(``sandboxkit preview --explain-egress``).
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Final

from sandboxkit.boundary import EGRESS_POLICY_BINDING, NON_PUBLIC_IPV4, NON_PUBLIC_IPV6
from sandboxkit.cloudflare.decide import Interception, WorkerDecider
from sandboxkit.cloudflare.plan import COMPATIBILITY_FLAGS
from sandboxkit.cloudflare.spec import WORKER_MODULE
from sandboxkit.cloudflare.type_tokens import WORKER_SCRIPTS
from sandboxkit.effective_egress import (
    EffectiveEgress,
    Grant,
    Probe,
    ResourceView,
    Scope,
    derive_probes,
)
from sandboxkit.egress_contract import ConnectionProtocol, EgressRule

TARGET: Final = "cloudflare"
CONNECT_SOURCE: Final = (
    "kit code: egressInterceptions and EgressGateway.decideEgress in "
    "cloudflare/worker/src/index.js (cloudflare/worker/test/interceptions.test.mjs, "
    "decide-egress.test.mjs; tests/cloudflare/test_cloudflare_reach.py); routed to the gateway by "
    "ctx.container interceptions, "
    "developers.cloudflare.com/containers/api/durable-object-container/"
)
RESOLVE_SOURCE: Final = (
    "developers.cloudflare.com/containers/configuration/outbound-traffic/ (2026-11: 'Your "
    "outbound configuration decides which DNS lookups resolve'); untested here, see the Worker "
    "README, DNS"
)
# The port each interception method routes and what it carries (Non-HTTP traffic: only 80 and
# 443 are intercepted): the platform routes a container's HTTP by its Host, its HTTPS (TLS) by
# its SNI; other bytes on 80 and 443 match no interception and never leave (enableInternet:
# false).
_ROUTES: Final[Mapping[str, tuple[int, ConnectionProtocol]]] = {
    "interceptOutboundHttp": (80, "http"),
    "interceptAllOutboundHttp": (80, "http"),
    "interceptOutboundHttps": (443, "tls"),
}
# Names a catch-all (open) policy is checked on besides the derived probes: public, any port.
_OPEN_PROBES: Final = (("example.com", 443), ("example.com", 80), ("example.com", 8443))


# The Worker module this kit ships. What the reader says holds for this code only: a script with
# other content may install catch-all interceptions or an open gateway whatever EGRESS_POLICY says.
KIT_WORKER_SHA256: Final = hashlib.sha256(WORKER_MODULE.read_bytes()).hexdigest()


class WorkerReadError(RuntimeError):
    """The grants read from a Worker's policy disagree with the Worker's own decisions, or the
    Worker installs an interception this reader cannot express (message says which)."""


def egress_policy_text(view: ResourceView) -> str | None:
    """The ``EGRESS_POLICY`` plain-text binding of a ``WorkersScript`` view, or ``None``."""
    bindings = view.props.get("bindings")
    for binding in bindings if isinstance(bindings, list) else []:
        if (
            isinstance(binding, dict)
            and binding.get("name") == EGRESS_POLICY_BINDING
            and binding.get("type") == "plain_text"
            and isinstance(binding.get("text"), str)
        ):
            return str(binding["text"])
    return None


def worker_code_problems(name: str, props: Mapping[str, object]) -> list[str]:
    """Why a ``WorkersScript``'s grants cannot be read from its ``EGRESS_POLICY`` alone, as
    sentences saying the fix (the policy gate's SBX-NET-003); empty for the kit's Worker.

    Args:
        name: the script's logical name.
        props: its inputs (camelCase keys: ``content``, ``compatibilityFlags``).

    Two kinds: ``content`` other than the kit's Worker module (``KIT_WORKER_SHA256``), whose
    interceptions and gateway nothing here describes; and compatibility flags without
    ``global_fetch_strictly_public`` (or with ``global_fetch_private_origin``), under which the
    gateway's fetch to a host of the Worker's own zone goes to that origin past WAF and Access
    (``plan.COMPATIBILITY_FLAGS``).
    """
    problems = []
    content = props.get("content")
    digest = hashlib.sha256(content.encode()).hexdigest() if isinstance(content, str) else None
    if digest != KIT_WORKER_SHA256:
        problems.append(
            f"Worker {name} does not run the kit's Worker code (its content differs from "
            "components/sandboxkit/cloudflare/worker/src/index.js), so nothing says its "
            "containers reach only the listed hosts: its interceptions may be catch-alls and its "
            "gateway open; deploy the kit's Worker module unchanged."
        )
    given = props.get("compatibilityFlags")
    # The policy pack hands its input proxies (a Sequence, never a list).
    flags: list[str] = []
    if isinstance(given, Sequence) and not isinstance(given, str):
        flags = [str(flag) for flag in given]
    if any(f not in flags for f in COMPATIBILITY_FLAGS) or "global_fetch_private_origin" in flags:
        problems.append(
            f"Worker {name} runs without the compatibility flag global_fetch_strictly_public, so "
            "its egress gateway's fetch to a host of the Worker's own zone goes straight to that "
            "origin, past WAF and Access; set compatibility_flags to "
            "[global_fetch_strictly_public]."
        )
    return problems


def read_egress(
    resources: Iterable[ResourceView], decider: WorkerDecider | None = None
) -> EffectiveEgress:
    """What the rendered ``WorkersScript``s let a sandbox reach (module docstring).

    Args:
        resources: the target's rendered resources; only Worker scripts are read. A script
            without a readable ``EGRESS_POLICY`` grants nothing (the Worker then denies every
            request and refuses to start containers).
        decider: a running ``WorkerDecider`` to ask; default: one per process, started when a
            policy is first read (about 0.1 s), each policy's answer kept for the process.

    Returns:
        ``EffectiveEgress("cloudflare", connect, resolve)``: per interception a connection
        grant (kit code, enforced by name at L7) and a resolution grant (platform
        documentation); for a catch-all also the address grants ``0.0.0.0/0`` and ``::/0``
        less the non-public blocks (enforced by address).

    Raises:
        WorkerReadError: grants that disagree with the Worker on a probe, or an interception
            pattern other than a name, ``*.name`` or ``*``.
        WorkerDecideError: when the Worker's code cannot be run (workerd, which the Worker's
            npm dependencies install, missing).
    """
    connect: list[Grant] = []
    resolve: list[Grant] = []
    for script in resources:
        kit_or_provider = any(t.matches(script.type) for t in WORKER_SCRIPTS)
        policy = egress_policy_text(script) if kit_or_provider else None
        if policy is None:
            continue
        resource = f"{script.type} {script.name}"
        steps = _checked(decider, policy) if decider else _checked_with_shared_decider(policy)
        connect += [g for step in steps for g in _connect_grants(step, resource)]
        resolve += [_resolve_grant(step, resource) for step in steps]
    return EffectiveEgress(TARGET, tuple(connect), tuple(dict.fromkeys(resolve)))


# One WorkerDecider per process, started when a policy is first read and closed at exit: the
# policy pack reads every stack's resources with every target's reader, often the same policy.
_SHARED: list[WorkerDecider] = []


@functools.cache
def _checked_with_shared_decider(policy: str) -> tuple[Interception, ...]:
    if not _SHARED:
        decider = WorkerDecider().__enter__()
        atexit.register(decider.close)
        _SHARED.append(decider)
    return _checked(_SHARED[0], policy)


def _checked(worker: WorkerDecider, policy: str) -> tuple[Interception, ...]:
    """The interceptions the Worker installs under ``policy``, once their grants answered the
    probes derived from them as the Worker's code does."""
    steps = tuple(worker.interceptions(policy))
    _verify(worker, policy, [g for step in steps for g in _connect_grants(step, "")])
    return steps


def _name_scope(pattern: str) -> tuple[str, Scope]:
    if pattern == "*":
        return "*", "any"
    scope: Scope = "below" if pattern.startswith("*.") else "exact"
    host = pattern.removeprefix("*.")
    if "*" in host:
        raise WorkerReadError(f"interception pattern {pattern!r}: not a name, *.name or *")
    return host, scope


def _pattern(step: Interception) -> str:
    return "*" if step.pattern is None else step.pattern


def _connect_grants(step: Interception, resource: str) -> Iterator[Grant]:
    routed, protocol = _ROUTES[step.method]
    port, protocols = frozenset({routed}), frozenset({protocol})
    host, scope = _name_scope(_pattern(step))
    yield Grant(host, scope, port, "name-l7", "kit-code", CONNECT_SOURCE, resource, (), protocols)
    if scope == "any":
        for block, excluded in (("0.0.0.0/0", NON_PUBLIC_IPV4), ("::/0", NON_PUBLIC_IPV6)):
            yield Grant(
                block,
                "exact",
                port,
                "address",
                "kit-code",
                CONNECT_SOURCE,
                resource,
                excluded,
                protocols,
            )


def _resolve_grant(step: Interception, resource: str) -> Grant:
    host, scope = _name_scope(_pattern(step))
    return Grant(host, scope, "any", "query-name", "platform-doc", RESOLVE_SOURCE, resource)


def _verify(worker: WorkerDecider, policy: str, grants: list[Grant]) -> None:
    """The grants must answer the probes derived from them as the Worker's code does."""
    rules = [
        EgressRule(g.host, port, "wildcard" if g.scope == "below" else "name")
        for g in grants
        if g.scope in ("exact", "below") and g.network is None and g.ports != "any"
        for port in g.ports
    ]
    # The Worker decides the HTTP(S) requests the platform routes to it, so it is asked the
    # probes that carry a name; plain TCP never reaches it (see _ROUTES).
    probes = [p for p in derive_probes(rules) if p.protocol != "tcp"]
    if any(g.scope == "any" for g in grants):
        probes += [Probe.usual(host, port, "entry") for host, port in _OPEN_PROBES]
    effective = EffectiveEgress(TARGET, tuple(grants), ())
    answers = worker.probe(policy, [(p.host, p.port) for p in probes])
    wrong = [
        f"{probe}: the Worker {'admits' if answer.admitted else 'refuses'} it ({answer.reason})"
        for probe, answer in zip(probes, answers, strict=True)
        if effective.admits(probe.host, probe.port, probe.protocol).admitted != answer.admitted
    ]
    if wrong:
        raise WorkerReadError(
            f"The grants read from {EGRESS_POLICY_BINDING} "
            f"{json.dumps(policy)} disagree with the Worker's own decisions: " + "; ".join(wrong)
        )
