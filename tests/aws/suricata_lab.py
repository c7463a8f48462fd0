"""Run Suricata offline on flows a test writes, to see what a stateful rule set admits.

Each probe becomes one TCP conversation in a pcap (handshake, the client's first data packet,
a server reply, more client data), from a sandbox address in ``HOME_NET`` to a public address.
Suricata (Debian ``suricata``, 7.0 like Network Firewall) runs once over all of them with
``--simulate-ips``, the rules under test, and a last rule standing in for the firewall policy's
``aws:drop_established`` default (drop every packet of an established flow no pass rule took).
A probe is ``pass`` when Suricata passed its flow and blocked none of its packets, ``drop`` when
it blocked one. The resolved-IP validation of the firewall policy is AWS's, not Suricata's: a
probe here says what the rules alone admit.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from scapy.layers.inet import IP, TCP
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import wrpcap

SANDBOX = "10.40.0.10"
HOME_NET = "10.40.0.0/20"
SURICATA_CONFIG = Path("/etc/suricata/suricata.yaml")
# The stand-in for aws:drop_established, after every rule under test (strict order).
DROP_ESTABLISHED = (
    'drop ip any any -> any any (msg:"aws:drop_established"; flow:established; sid:9; rev:1;)'
)
_FIRST_CLIENT_PORT = 40_000

Kind = Literal["tls", "http", "tcp"]


@dataclass(frozen=True)
class Probe:
    """One connection attempt: ``kind`` of first data packet, the name it claims, where it goes.

    Attributes:
        kind: ``tls`` (a ClientHello with ``name`` as SNI), ``http`` (a GET with ``Host: name``)
            or ``tcp`` (bytes with no name in them).
        name: the SNI or Host value (ignored for ``tcp``).
        address: destination IPv4 address.
        port: destination TCP port.
        syn_data: whether the first data rides on the SYN (TCP Fast Open, RFC 7413 section 3)
            instead of following the handshake.
    """

    kind: Kind
    name: str
    address: str
    port: int
    syn_data: bool = False


def client_hello(name: str) -> bytes:
    """A TLS 1.3 ClientHello record carrying one ``server_name`` (RFC 8446 4.1.2, RFC 6066 3)."""
    host = name.encode("ascii")
    server_name = b"\x00" + struct.pack("!H", len(host)) + host
    names = struct.pack("!H", len(server_name)) + server_name
    extensions = struct.pack("!HH", 0, len(names)) + names
    body = (
        b"\x03\x03"
        + bytes(32)
        + b"\x00"
        + struct.pack("!H", 4)
        + b"\x13\x01\x13\x02"
        + b"\x01\x00"
        + struct.pack("!H", len(extensions))
        + extensions
    )
    handshake = b"\x01" + struct.pack("!I", len(body))[1:] + body
    return b"\x16\x03\x01" + struct.pack("!H", len(handshake)) + handshake


def first_data(probe: Probe) -> bytes:
    """The client's first payload for ``probe``."""
    if probe.kind == "tls":
        return client_hello(probe.name)
    if probe.kind == "http":
        return f"GET / HTTP/1.1\r\nHost: {probe.name}\r\nUser-Agent: probe\r\n\r\n".encode()
    return b"SSH-2.0-probe\r\n"


def conversation(probe: Probe, client_port: int, start: float) -> list[Ether]:
    """Handshake, first data, server ACK and reply, one more client segment."""
    client, server = 1_000, 5_000
    data = first_data(probe)
    reply = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n" if probe.kind == "http" else b"ok"

    def segment(outbound: bool, flags: str, seq: int, ack: int, payload: bytes = b"") -> Ether:
        src, dst = (SANDBOX, probe.address) if outbound else (probe.address, SANDBOX)
        sport, dport = (client_port, probe.port) if outbound else (probe.port, client_port)
        packet = (
            Ether()
            / IP(src=src, dst=dst)
            / TCP(sport=sport, dport=dport, flags=flags, seq=seq, ack=ack, window=65535)
        )
        return packet / Raw(payload) if payload else packet

    sent = client + 1 + len(data)
    if probe.syn_data:
        # The server acknowledges the SYN's data in its SYN-ACK (RFC 7413 section 4.2.2).
        opening = [
            segment(True, "S", client, 0, data),
            segment(False, "SA", server, sent),
            segment(True, "A", sent, server + 1),
        ]
    else:
        opening = [
            segment(True, "S", client, 0),
            segment(False, "SA", server, client + 1),
            segment(True, "A", client + 1, server + 1),
            segment(True, "PA", client + 1, server + 1, data),
            segment(False, "A", server + 1, sent),
        ]
    packets = [
        *opening,
        segment(False, "PA", server + 1, sent, reply),
        segment(True, "PA", sent, server + 1 + len(reply), b"more"),
    ]
    for index, packet in enumerate(packets):
        packet.time = start + index / 100
    return packets


# Network Firewall's own rule keyword (developer guide, "Matching specific domains with
# resolved-domain rules"): Suricata does not know it, so the lab runs each rule without it.
# What the keyword adds (the destination was resolved for that name) is AWS's check, like the
# policy's resolved-IP validation; the rest of the rule is Suricata's and runs here.
AWS_ONLY_KEYWORD = re.compile(r'\s*aws_route_53_resolved_domain:\s*"[^"]*";')


def without_aws_keywords(rules: str) -> str:
    """``rules`` with every ``aws_route_53_resolved_domain`` option removed."""
    return AWS_ONLY_KEYWORD.sub("", rules)


def suricata_binary() -> str:
    """The ``suricata`` executable.

    Raises:
        RuntimeError: when it is not installed (``.ci/run`` installs it).
    """
    found = shutil.which("suricata")
    if found is None:
        raise RuntimeError(
            "suricata is not installed: apt-get install -y -t bookworm-backports suricata "
            "(see .ci/run)"
        )
    return found


def verdicts(
    rules: str, probes: list[Probe], workdir: Path, *, keep_aws_keywords: bool = False
) -> list[str]:
    """Run Suricata over ``probes`` with ``rules`` then the drop-established stand-in.

    ``rules`` run without their AWS-only keywords (``without_aws_keywords``) unless
    ``keep_aws_keywords``, which shows that Suricata refuses them.

    Returns:
        ``pass`` or ``drop`` per probe, in order.

    Raises:
        RuntimeError: when Suricata is missing, exits non-zero or rejects a rule.
    """
    packets: list[Ether] = []
    for index, probe in enumerate(probes):
        packets += conversation(probe, _FIRST_CLIENT_PORT + index, 1.0 + index)
    wrpcap(str(workdir / "probes.pcap"), packets)
    text = rules if keep_aws_keywords else without_aws_keywords(rules)
    (workdir / "rules.rules").write_text(f"{text}\n{DROP_ESTABLISHED}\n")
    logs = workdir / "logs"
    logs.mkdir()
    run = subprocess.run(
        [
            suricata_binary(),
            "-c",
            str(SURICATA_CONFIG),
            "--simulate-ips",
            "-k",
            "none",
            "-r",
            str(workdir / "probes.pcap"),
            "-S",
            str(workdir / "rules.rules"),
            "-l",
            str(logs),
            "--set",
            f"vars.address-groups.HOME_NET=[{HOME_NET}]",
            "--set",
            "vars.address-groups.EXTERNAL_NET=!$HOME_NET",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    output = run.stdout + run.stderr
    if run.returncode != 0 or "error parsing signature" in output:
        raise RuntimeError(f"suricata failed (exit {run.returncode}):\n{output}")
    passed: set[int] = set()
    blocked: set[int] = set()
    for line in (logs / "eve.json").read_text().splitlines():
        event = json.loads(line)
        ports = {event.get("src_port"), event.get("dest_port")}
        client = next((p for p in ports if p and p >= _FIRST_CLIENT_PORT), None)
        if client is None:
            continue
        if event["event_type"] == "alert" and event["alert"]["action"] == "blocked":
            blocked.add(client - _FIRST_CLIENT_PORT)
        if event["event_type"] == "flow" and event["flow"].get("action") == "pass":
            passed.add(client - _FIRST_CLIENT_PORT)
    return [
        "drop" if i in blocked else "pass" if i in passed else "unseen" for i in range(len(probes))
    ]
