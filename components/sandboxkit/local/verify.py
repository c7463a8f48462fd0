"""``sandboxkit verify --target local``: the egress contract checked by what a sandbox reaches.

The probes are ``--explain-egress``'s, with their protocols (``effective_egress.contract_probes``:
every entry, its plain-TCP probe, one and two labels below, the apex, another port, the
metadata address and its NAT64 form), plus each listed resolver and platform endpoint
(``dns_names.channel_endpoints``) on its ports over plain TCP. One sandbox, started from the
stack's plan exactly as ``sandboxkit run`` starts it, tries every probe from inside through the
gateway and prints what came back; a probe is *reached* when the destination answered the bytes
sent (``tls``: a ClientHello naming the probe's host; ``http``: a request whose Host is the
probe's host; ``tcp``: plain bytes naming nothing), *refused* otherwise. Each observation is
set beside the contract's answer for the same host, port and protocol.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from sandboxkit.dns_names import channel_endpoints
from sandboxkit.effective_egress import contract_probes
from sandboxkit.local.gateway import SocketFactory
from sandboxkit.local.plan import LocalPlan
from sandboxkit.local.runner import AuditLog, run_sandbox

# DNS, DNS over TLS and DNS over HTTPS: the ports a listed resolver answers on.
RESOLVER_PORTS = (53, 853, 443)
# Runs inside the sandbox: one line of JSON per probe, ``[host, port, protocol, reached]``.
_PROBER = r"""
import json, socket, ssl, sys
def attempt(host, port, protocol):
    try:
        s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
        target = f"[{host}]" if ":" in host else host
        s.sendall(f"CONNECT {target}:{port} HTTP/1.1\r\nHost: {target}:{port}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = s.recv(4096)
            if not chunk:
                return False
            head += chunk
        if b" 200 " not in head.split(b"\r\n")[0]:
            return False
        if protocol == "tls":
            incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
            tls = ssl.create_default_context().wrap_bio(incoming, outgoing, server_hostname=host)
            try:
                tls.do_handshake()
            except ssl.SSLWantReadError:
                pass
            s.sendall(outgoing.read())
        elif protocol == "http":
            s.sendall(f"GET / HTTP/1.1\r\nHost: {target}\r\nConnection: close\r\n\r\n".encode())
        else:
            s.sendall(b"SSH-2.0-sandboxkit-probe\r\n")
        return bool(s.recv(1))
    except OSError:
        return False
for line in sys.stdin.read().splitlines():
    host, port, protocol = json.loads(line)
    print(json.dumps([host, port, protocol, attempt(host, port, protocol)]), flush=True)
"""


@dataclass(frozen=True)
class Observation:
    """One probe, what the contract says and what the sandbox saw.

    Attributes:
        host: the probe's host.
        port: TCP port.
        kind: how the probe was derived (``entry``, ``one-below``, ..., ``plain-tcp``,
            ``resolver``).
        protocol: ``tls`` (a ClientHello naming the host), ``http`` (a request naming it) or
            ``tcp`` (plain bytes).
        contract: whether the contract admits it.
        observed: whether the destination answered.
    """

    host: str
    port: int
    kind: str
    protocol: str
    contract: bool
    observed: bool

    @property
    def differs(self) -> bool:
        """Whether what the sandbox saw is not what the contract says."""
        return self.contract != self.observed


def probes_of(plan: LocalPlan) -> list[tuple[str, int, str, str, bool]]:
    """``(host, port, kind, protocol, contract admits)`` for every probe of ``plan``: the
    explain probes as ``contract_probes`` derives them (the same protocols), then the
    endpoints."""
    contract = plan["contract"]
    found: list[tuple[str, int, str, str, bool]] = [
        (p.host, p.port, p.kind, p.protocol, contract.admits(p.host, p.port, p.protocol))
        for p in contract_probes(contract)
    ]
    for endpoint in channel_endpoints():
        for port in RESOLVER_PORTS if endpoint.kind == "dns" else (80, 443):
            host = endpoint.host
            found.append((host, port, "resolver", "tcp", contract.admits(host, port, "tcp")))
    return found


def verify(
    plan: LocalPlan,
    *,
    audit: AuditLog | None = None,
    sockets: SocketFactory | None = None,
    stack: str = "",
) -> list[Observation]:
    """Try every probe of ``plan`` from inside one sandbox (module docstring).

    Args:
        plan: the stack's ``local`` plan; its resolver answers the probes' names.
        audit: where the sandbox's run and every egress decision are recorded.
        sockets: how the gateway opens outbound sockets (tests dial a namespace of theirs).
        stack: the stack name, for the audit records.

    Raises:
        HostError: as ``run_sandbox``.
        RuntimeError: when the prober inside the sandbox did not answer every probe.
    """
    probes = probes_of(plan)
    # The prober needs the gateway even where the contract admits nothing (deny): it must see
    # every probe refused by the gateway, the one way out there would be.
    lines = "".join(json.dumps([h, p, proto]) + "\n" for h, p, _, proto, _ in probes)
    result = run_sandbox(
        plan,
        ["/usr/bin/python3", "-I", "-c", _PROBER, str(plan["proxy_port"])],
        audit=audit,
        sockets=sockets,
        stack=stack,
        stdin=lines.encode(),
        gateway=True,
    )
    seen = {(h, p, proto): reached for h, p, proto, reached in map(json.loads, result.output)}
    if len(seen) != len({(h, p, proto) for h, p, _, proto, _ in probes}):
        raise RuntimeError(f"the sandbox's prober answered {len(seen)} of {len(probes)} probes")
    return [
        Observation(host, port, kind, protocol, admitted, seen[(host, port, protocol)])
        for host, port, kind, protocol, admitted in probes
    ]


def print_observations(observations: Sequence[Observation]) -> None:
    """One line per probe: host:port, kind, protocol, the contract's answer, the sandbox's."""
    for o in observations:
        word = {True: "admitted", False: "refused"}
        mark = "  DIFFERS" if o.differs else ""
        host = f"[{o.host}]" if ":" in o.host else o.host
        sys.stdout.write(
            f"{f'{host}:{o.port}':<44} {o.kind:<14} {o.protocol:<4} "
            f"contract {word[o.contract]:<9} observed {word[o.observed]}{mark}\n"
        )
    differing = sum(o.differs for o in observations)
    sys.stdout.write(f"{len(observations)} probes, {differing} differing from the contract\n")
