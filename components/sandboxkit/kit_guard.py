"""The handlers of rules checked the same way on every target, and every handler the pack runs.

Most checks are a target's (``HANDLERS`` in each target folder's ``guard.py``): they read the
resource types that target creates. Three rules read what no single target owns, so the kit
declares their handlers here, in ``HANDLERS``:

- SBX-SEC-002 reads every input of every resource type for credential-shaped text;
- SBX-NET-006 and SBX-NET-008 read the whole stack through every registered target's egress
  reader (``TargetSpec.read_egress``), each reader over the resources its component created
  (as ``preview --explain-egress`` does).

``declared_handlers`` is the one list the pack's rules run: these first, then the registered
targets' in registry order; ``coverage`` says, per rule, which targets' handlers cover what.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sandboxkit.boundary import RESOLVER_PORTS
from sandboxkit.credentials import CREDENTIAL_SHAPES
from sandboxkit.effective_egress import (
    Difference,
    EffectiveEgress,
    Grant,
    compare,
    contract_probes,
    inexpressible,
    port_runs,
)
from sandboxkit.egress_contract import EgressContract
from sandboxkit.guard import (
    EGRESS_READ_FAILURES,
    CheckContext,
    Handler,
    SecretSink,
    StackHandler,
    StackResource,
    numbers,
    target_views,
    unreadable_egress,
    walk_strings,
)
from sandboxkit.policy_rules import MATCHES_CONTRACT, NAMES_BY_NAME, NO_CREDENTIALS, PolicyRule
from sandboxkit.targets import TARGET_MODULES, get_target, parts_by_target, target_parts
from sandboxkit.type_tokens import EVERY_TYPE

# --- SBX-SEC-002: credentials in plain inputs ----------------------------------------------------


def secret_sinks(resource_type: str) -> tuple[SecretSink, ...]:
    """The secret stores the registered targets declare (``SECRET_SINKS`` of each folder's
    ``guard.py``) for resources of ``resource_type``: a credential there is where it belongs."""
    return tuple(
        s for s in _declared_sinks(tuple(TARGET_MODULES.items())) if s.type.matches(resource_type)
    )


@functools.lru_cache(maxsize=8)
def _declared_sinks(registry: tuple[tuple[str, str], ...]) -> tuple[SecretSink, ...]:
    # Keyed by the registry's contents: a target registered later (a test's fake one) counts.
    del registry
    return tuple(target_parts("guard", "SECRET_SINKS"))


def scan_credentials(resource_type: str, props: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """``(input path, what it looks like)`` for each credential-shaped string in ``props``."""
    sinks = secret_sinks(resource_type)
    # walk_strings skips unknown inputs: a value computed from another resource, or a secret,
    # is not text the stack wrote, so it never decides this policy.
    for path, text in walk_strings(props):
        if any(sink.stores(props, path) for sink in sinks):
            continue
        for label, shape in CREDENTIAL_SHAPES.items():
            if shape.search(text):
                yield path, label


def _credentials(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    resource_type = ctx.resource_type
    for path, label in scan_credentials(resource_type, props):
        yield (
            f"Input {path} of {ctx.name} holds what looks like {label} in plain text; remove "
            "it, rotate it, and pass it as a Pulumi secret to a secret store."
        )


# --- SBX-NET-006 and SBX-NET-008: every target's egress, read from the stack -------------------


@dataclass(frozen=True)
class _TargetRead:
    """One registered target's egress as its reader found it in the stack: ``effective`` is
    ``None`` when the reader raised ``failure`` (one of ``guard.EGRESS_READ_FAILURES``)."""

    target: str
    effective: EffectiveEgress | None
    failure: Exception | None
    urns: Mapping[str, str]

    def unreadable(self, rule: PolicyRule) -> tuple[str, str | None]:
        """``rule``'s finding for a target whose reader failed, on the target's component."""
        assert self.failure is not None
        return unreadable_egress(rule.id, self.target, self.failure), self.urns.get(self.target)


def _read_targets(resources: Sequence[StackResource]) -> Iterator[_TargetRead]:
    """Every registered target with a reader that found its resources in the stack, each reader
    reading the resources its component created and those outside every component
    (``guard.target_views``, as explain-egress does). A reader that
    refuses them or fails on an input of the wrong shape (``guard.EGRESS_READ_FAILURES``)
    gives a read without ``effective``, which each check reports: never a target skipped, nor
    the stack's check crashed by one target."""
    urns = {r.name: r.urn for r in resources}
    for target in TARGET_MODULES:
        try:
            effective = get_target(target).read_egress(target_views(resources, target))
        except EGRESS_READ_FAILURES as failure:
            yield _TargetRead(target, None, failure, urns)
            continue
        if effective is not None:
            yield _TargetRead(target, effective, None, urns)


def _urn_of(grant: Grant, urns: Mapping[str, str]) -> str | None:
    # A grant names its resource as "<kind> <name>".
    return urns.get(grant.resource.rpartition(" ")[2])


def _names_by_address(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    # A grant a reader marks 'resolved address only' admits any site on that name's addresses.
    for read in _read_targets(resources):
        target, effective, urns = read.target, read.effective, read.urns
        if effective is None:
            yield read.unreadable(NAMES_BY_NAME)
            continue
        for finding in inexpressible(effective):
            if finding.kind != "resolved-address-only":
                continue
            grant = finding.grant
            yield (
                f"{target} admits {grant.host} by resolved address only ({grant.resource}, "
                "from sandboxkit:profile.egress.allow): "
                "any site on that name's addresses passes, such as another customer of the "
                "same CDN, and so does plain TCP to them naming no host (no TLS SNI, no HTTP "
                "Host); use a target that checks the name itself (TLS SNI or HTTP Host), "
                "or accept it in the pack config (sbx-net-006 advisory).",
                _urn_of(grant, urns),
            )


def _contract_differences(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    contracts = ctx.setting("contracts")
    for read in _read_targets(resources):
        target, effective, urns = read.target, read.effective, read.urns
        if effective is None:
            yield read.unreadable(MATCHES_CONTRACT)
            continue
        declared = contracts.get(target)
        # Open admits every public address on every port: a grant no contract expresses widens
        # nothing there, and the probes below still find a non-public address it admits.
        weak = () if declared and declared["mode"] == "open" else inexpressible(effective)
        for finding in weak:
            if finding.kind == "resolved-address-only":
                continue  # SBX-NET-006's
            if finding.kind == "udp" and declared:
                continue  # the UDP probes below name each address the contract refuses
            yield (
                f"{target} grants what no egress contract expresses: {finding}; deploy the "
                "target's component unchanged, which renders only what the contract says.",
                _urn_of(finding.grant, urns),
            )
        if declared is None:
            if not target_views(resources, target):
                continue  # a reader answers for a target the stack does not list
            # The Pulumi CLI run with the plain config/<environment>.json: nothing to compare
            # with, which must never read as a pass (mandatory in prod).
            yield (
                f"{target} has no egress contract in the pack config, so its egress cannot be "
                "compared with the stack's profile; run the pack with the config `sandboxkit "
                "pack-config --stack <stack> --out <file>` writes (pulumi preview/up "
                "--policy-pack-config <file>), which holds every target's contract.",
                None,
            )
            continue
        contract = EgressContract.from_config(declared)
        yield from (
            (message, urns.get(target)) for message in _control_plane_ports(target, contract, ctx)
        )
        differences = compare(effective, contract, contract_probes(contract, effective))
        # One report per run of consecutive ports: a grant on a port range is one finding.
        for difference, last_port in port_runs(d for d in differences if not _by_address(d)):
            # A wider answer is on the resource granting it; a narrower one on the component.
            grants = difference.verdict.grants
            yield (
                f"{target} differs from the stack's egress contract: "
                f"{difference.describe(last_port)}; deploy the "
                "target's component unchanged for this profile (sandboxkit preview "
                "--explain-egress shows every probe).",
                (_urn_of(grants[0], urns) if grants else None) or urns.get(target),
            )


def _by_address(difference: Difference) -> bool:
    """Whether ``difference`` is plain TCP to a name admitted only by grants matched by the
    name's resolved addresses: SBX-NET-006's finding on those grants (which says so, and which
    the pack config may accept), not a second one here."""
    grants = difference.verdict.grants
    return (
        difference.direction == "wider"
        and difference.probe.protocol == "tcp"
        and bool(grants)
        and all(g.enforced == "resolved-address" for g in grants)
    )


def _control_plane_ports(target: str, contract: EgressContract, ctx: CheckContext) -> Iterator[str]:
    """A sentence for each control-plane entry on a resolver port (in every mode: a DNS channel
    to anywhere) and, with egress ``deny``, on a port outside ``controlPlanePorts`` (the only
    egress a deny stack has is its control plane's own API)."""
    allowed = {int(p) for p in ctx.setting("controlPlanePorts")}
    for rule in contract.control_plane:
        if rule.port in RESOLVER_PORTS:
            yield (
                f"{target} grants control-plane host {rule} on resolver port {rule.port}: a host "
                "reached on a DNS port is a DNS channel to any name, whatever it is called; "
                f"remove it from sandboxkit:{target}.controlPlaneHosts (sandboxes resolve names "
                "only through their target's own resolver)."
            )
        elif contract.mode == "deny" and rule.port not in allowed:
            yield (
                f"{target} grants control-plane host {rule} on port {rule.port} with egress deny, "
                f"where a control plane is reached on port {numbers(sorted(allowed))} only; "
                f"write the host without a port in sandboxkit:{target}.controlPlaneHosts, or add "
                "the port to sbx-net-008's controlPlanePorts in the pack config once reviewed."
            )


HANDLERS: tuple[Handler | StackHandler, ...] = (
    Handler(
        NO_CREDENTIALS,
        (EVERY_TYPE,),
        _credentials,
        "every input of every resource but a secret store: cloud keys, private keys, tokens, JWTs",
    ),
    StackHandler(
        NAMES_BY_NAME,
        _names_by_address,
        "every registered target's egress reader over its component's resources: grants "
        "marked 'resolved address only' (Cloud NGFW FQDN objects), and readers that refuse "
        "their resources",
    ),
    StackHandler(
        MATCHES_CONTRACT,
        _contract_differences,
        "every registered target's egress reader over its component's resources: grants no "
        "contract expresses, and every probe of the contracts in its config",
    ),
)


def declared_handlers() -> tuple[Handler | StackHandler, ...]:
    """Every handler the pack runs: the kit's (``HANDLERS``), then those the registered
    targets declare in their folders' ``guard.py`` (each once, in registry order)."""
    seen = {id(handler) for handler in HANDLERS}
    found = list(HANDLERS)
    for handlers in parts_by_target("guard", "HANDLERS").values():
        for handler in handlers:
            if id(handler) not in seen:
                seen.add(id(handler))
                found.append(handler)
    return tuple(found)


@dataclass(frozen=True)
class Coverage:
    """What one group of handlers of a rule reads.

    Attributes:
        targets: the registered targets whose ``HANDLERS`` hold these handlers (in registry
            order), or ``("every target",)`` for the kit's own.
        covers: each handler's ``covers`` text, in declaration order.
    """

    targets: tuple[str, ...]
    covers: tuple[str, ...]


def coverage(rule: PolicyRule) -> list[Coverage]:
    """What ``rule``'s handlers cover, grouped by the targets that declare them: the kit's
    first, then by the first target declaring each handler (a handler the gcp-gke target
    reuses from the kubernetes target is one entry for both)."""
    declared = parts_by_target("guard", "HANDLERS")
    groups: dict[tuple[str, ...], list[str]] = {}
    for handler in declared_handlers():
        if handler.rule is not rule:
            continue
        owners = tuple(t for t in TARGET_MODULES if any(h is handler for h in declared[t]))
        groups.setdefault(owners or ("every target",), []).append(handler.covers)
    return [Coverage(owners, tuple(covers)) for owners, covers in groups.items()]


def coverage_text(rule: PolicyRule, separator: str = " ") -> str:
    """``rule``'s coverage as one text: ``<targets>: <covers>; <covers>.`` per group, groups
    joined by ``separator`` (a space in the pack's description, ``<br>`` in the docs table)."""
    return separator.join(
        f"{', '.join(group.targets)}: {'; '.join(group.covers)}." for group in coverage(rule)
    )


def pack_description(rule: PolicyRule) -> str:
    """The CrossGuard description of ``rule``: the catalogue's description, then what each
    target's handlers read (``coverage_text``), so the text names only constructs a handler
    checks."""
    return f"{rule.description} Checked on {coverage_text(rule)}"
