"""``sandboxkit preview --explain-egress``: each target's effective egress against the contract.

For every target a stack lists, the target's reader (``TargetSpec.read_egress``) computes what
its rendered resources let a sandbox reach, from those resources alone; the stack's profile and
the target's control-plane hosts give the egress contract (``egress_contract.EgressContract``).
Probes derived from the entries (``effective_egress.contract_probes``), each naming its protocol
(``tls``, ``http``, ``tcp``: a plain-TCP probe per name entry, which no target may admit), are
asked of both; every
answer says how the target enforces it and whether that is the kit's own tested code or
documented platform behaviour, and every difference from the contract is marked wider or
narrower.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sandboxkit.effective_egress import (
    Difference,
    EffectiveEgress,
    Inexpressible,
    Probe,
    Verdict,
    compare,
    contract_probes,
    inexpressible,
)
from sandboxkit.egress_contract import EgressContract, destination_of
from sandboxkit.guard import EGRESS_READ_FAILURES
from sandboxkit.render import RenderedStack
from sandboxkit.targets import get_target


@dataclass(frozen=True)
class TargetEgress:
    """One target's egress, explained.

    Attributes:
        target: the target name.
        contract: what the contract admits for this target (profile plus control plane).
        probes: the probes asked, in derivation order.
        effective: the reader's result; ``None`` when the target has no reader, or its
            reader refused the resources (``refusal``).
        differences: probes the target answers unlike the contract.
        findings: grants the contract cannot express, or matches by resolved address only.
        refusal: why the reader cannot read the resources (a link it cannot follow, a rule it
            does not model), which SBX-NET-008 reports as "cannot verify"; ``""`` when read.
    """

    target: str
    contract: EgressContract
    probes: tuple[Probe, ...]
    effective: EffectiveEgress | None
    differences: tuple[Difference, ...]
    findings: tuple[Inexpressible, ...]
    refusal: str = ""

    @property
    def matches_contract(self) -> bool:
        """Read, with no difference and no inexpressible grant."""
        return self.effective is not None and not self.differences and not self.findings


def explain_target(rendered: RenderedStack, target: str) -> TargetEgress:
    """Explain one listed target's egress (see the module docstring); a reader that refuses
    the resources (``guard.EGRESS_READ_FAILURES``) leaves the target unread, with its refusal."""
    contract = rendered.spec.contract(target)
    try:
        effective = get_target(target).read_egress(rendered.target_views(target))
    except EGRESS_READ_FAILURES as failure:
        refusal = str(failure) if isinstance(failure, ValueError) else repr(failure)
        return TargetEgress(target, contract, contract_probes(contract), None, (), (), refusal)
    probes = contract_probes(contract, effective)
    if effective is None:
        return TargetEgress(target, contract, probes, None, (), ())
    return TargetEgress(
        target,
        contract,
        probes,
        effective,
        compare(effective, contract, probes),
        # A UDP grant is compared on its probes above (what the contract makes of it).
        tuple(f for f in inexpressible(effective) if f.kind != "udp"),
    )


def explain_stack(rendered: RenderedStack) -> list[TargetEgress]:
    """Every listed target's egress, in the stack's order."""
    return [explain_target(rendered, target) for target in rendered.spec.targets]


def _verdict(verdict: Verdict, contract: bool) -> dict[str, Any]:
    return {
        "target": verdict.admitted,
        "contract": contract,
        "enforced": list(verdict.enforced),
        "grants": [str(g) for g in verdict.grants],
        "basis": sorted({g.basis for g in verdict.grants}),
    }


def explanation_document(explained: Sequence[TargetEgress]) -> list[dict[str, Any]]:
    """The JSON of ``--explain-egress --json``: per target, its contract, every probe (with its
    ``protocol``) and its two answers (connect and, for names, resolve), and the differences
    and findings as text; for a target whose reader refused its resources, ``cannotVerify``
    with the refusal."""
    out = []
    for item in explained:
        probes = []
        for probe in item.probes:
            entry: dict[str, Any] = {
                "probe": str(probe),
                "protocol": probe.protocol,
                "kind": probe.kind,
                "origin": probe.origin,
            }
            if item.effective is not None:
                entry["connect"] = _verdict(
                    item.effective.admits(probe.host, probe.port, probe.protocol),
                    item.contract.admits(probe.host, probe.port, probe.protocol),
                )
                if isinstance(destination_of(probe.host), str):
                    entry["resolve"] = _verdict(
                        item.effective.resolves(probe.host),
                        item.contract.may_resolve(probe.host),
                    )
            probes.append(entry)
        out.append(
            {
                "target": item.target,
                "mode": item.contract.mode,
                "entries": [str(r) for r in item.contract.rules],
                "controlPlane": [str(r) for r in item.contract.control_plane],
                "read": item.effective is not None,
                "matchesContract": item.matches_contract,
                "probes": probes,
                "differences": [str(d) for d in item.differences],
                "findings": [str(f) for f in item.findings],
            }
        )
        if item.refusal:
            out[-1]["cannotVerify"] = item.refusal
    return out
