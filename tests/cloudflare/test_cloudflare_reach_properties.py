"""Properties (issue 12 point 5): for generated allowlists and probes, the cloudflare target
admits exactly what the egress contract admits, as the Worker's own code decides (run in workerd)
and as its reader states it; ``deny`` admits nothing (no control-plane hosts here)."""

from __future__ import annotations

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from sandboxkit.cloudflare import type_tokens
from sandboxkit.cloudflare.decide import WorkerDecider
from sandboxkit.cloudflare.egress_reader import read_egress
from sandboxkit.cloudflare.spec import INTERCEPTED_PORTS, check_egress, egress_policy
from sandboxkit.effective_egress import Probe, ResourceView, compare
from sandboxkit.egress_contract import EgressContract
from sandboxkit.errors import ConfigError
from sandboxkit.profile import SandboxProfile

LABEL = st.sampled_from(["a", "b", "files", "api", "x1"])
PARENT = st.sampled_from(["pythonhosted.org", "github.com", "example.net", "a.example.org"])
# 8443 and 2222: ports the target refuses in entries, and probes on them are never admitted
# (22 itself no entry may name: SSH carries no name, egress_contract.NAMELESS_PORTS).
PORT = st.sampled_from([443, 80, 8443, 2222])
ENTRY = st.tuples(PARENT, st.booleans(), PORT)
ADDRESS = st.sampled_from(
    ["169.254.169.254", "64:ff9b::a9fe:a9fe", "151.101.0.223", "10.0.0.1", "[2a04:4e42::223]"]
)

WORKERS_SCRIPT = type_tokens.WORKERS_SCRIPT.token


@st.composite
def probes(draw: st.DrawFn, entries: list[tuple[str, bool, int]]) -> list[tuple[str, int]]:
    """Names at, below, above and beside the entries, some upper-case or with a trailing dot,
    and addresses, on the entries' ports and others."""
    found = []
    for _ in range(draw(st.integers(min_value=1, max_value=8))):
        parent = draw(st.sampled_from([host for host, _, _ in entries]))
        below = draw(st.lists(LABEL, max_size=3))
        name = ".".join([*below, parent])
        if draw(st.booleans()):
            name = name.upper() if draw(st.booleans()) else f"{name}."
        found.append((name, draw(PORT)))
    found += [(draw(ADDRESS), draw(PORT)) for _ in range(draw(st.integers(0, 2)))]
    return found


def profile_of(mode: str, entries: list[tuple[str, bool, int]]) -> SandboxProfile:
    allow = [f"{'*.' if wild else ''}{host}:{port}" for host, wild, port in entries]
    egress = {"mode": mode, "allow": allow} if mode == "allowlist" else {"mode": mode}
    return SandboxProfile.model_validate({"egress": egress})


def gateway_url(host: str, port: int) -> str:
    literal = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"{'https' if port == 443 else 'http'}://{literal}:{port}/"


def script(policy: str) -> ResourceView:
    bindings = [{"name": "EGRESS_POLICY", "type": "plain_text", "text": policy}]
    return ResourceView.of(WORKERS_SCRIPT, "cloudflare-script", {"bindings": bindings})


@settings(max_examples=500, deadline=None)
# Each entry once: a profile refuses a repeat (egress_contract: "each entry listed once").
@given(data=st.data(), entries=st.lists(ENTRY, min_size=1, max_size=5, unique=True))
def test_the_target_admits_exactly_what_the_contract_admits(
    worker_decider: WorkerDecider, data: st.DataObject, entries: list[tuple[str, bool, int]]
) -> None:
    profile = profile_of("allowlist", entries)
    if any(port not in INTERCEPTED_PORTS for _, _, port in entries):
        # Refused at config time (exit 2), never deployed narrower than asked.
        try:
            check_egress(profile)
        except ConfigError as refused:
            assert set(refused.keys) == {"sandboxkit:profile.egress.allow"}
            return
        raise AssertionError("an entry on a port other than 80 and 443 was accepted")
    check_egress(profile)
    contract = EgressContract("allowlist", profile.egress.allow)
    asked = data.draw(probes(entries))
    policy = egress_policy(profile)
    worker = worker_decider.probe(policy, asked)
    assert [(p.host, p.port, p.admitted) for p in worker] == [
        (host, port, contract.admits(host, port, "tls")) for host, port in asked
    ]
    # The gateway alone, as if the platform routed everything to it: it is the authority.
    urls = [gateway_url(host, port) for host, port in asked]
    assert [allowed for allowed, _ in worker_decider.decide(policy, urls)] == [
        contract.admits(host, port, "tls") for host, port in asked
    ]
    effective = read_egress([script(policy)], worker_decider)
    assert compare(effective, contract, [Probe.usual(h, p, "entry") for h, p in asked]) == ()


@settings(max_examples=500, deadline=None)
@given(data=st.data(), entries=st.lists(ENTRY, min_size=1, max_size=3))
def test_deny_admits_nothing(
    worker_decider: WorkerDecider, data: st.DataObject, entries: list[tuple[str, bool, int]]
) -> None:
    asked = data.draw(probes(entries))
    assume(asked)
    policy = egress_policy(profile_of("deny", []))
    assert [p.admitted for p in worker_decider.probe(policy, asked)] == [False] * len(asked)
