"""The ``local`` target's egress gateway: the one way out of an ``allowlist`` or ``open`` sandbox.

The sandbox's network namespace holds loopback only. The gateway, a process of the kit outside
the sandbox, listens on a loopback port inside that namespace (the listening socket is made in
the namespace before the sandbox starts, so nothing inside can take the port) and answers HTTP
proxy requests there: ``CONNECT host:port`` and plain ``GET http://host/...`` (``HTTPS_PROXY``
and ``HTTP_PROXY`` point at it). Each request is decided by
``sandboxkit.egress_contract.EgressContract`` itself, the object every target's reader is
compared with, so the local target has no copy of the rules:

- the destination must be admitted (``EgressContract.admits``);
- a name is resolved by the gateway through its configured resolver (the sandbox has no DNS),
  only when the contract lets it resolve, and every answer must be an address ``open`` mode
  admits (public, not an IPv6 form of an IPv4 address) that no listed resolver or platform
  endpoint holds: a name that answers 127.0.0.1 or 169.254.169.254 (DNS rebinding) is refused;
- a name entry admits TLS and HTTP to that name only: the first bytes in a tunnel must be a TLS
  ClientHello whose server name is the CONNECT host, or an HTTP request whose ``Host`` is; plain
  TCP to a name is refused. An IP entry admits TCP to that address and port;
- the gateway dials only the address it resolved and checked, never a name.

HTTP parsing is h11's (python-hyper), resolution dnspython's; the proxy itself is asyncio
streams, since neither a forward-proxy library nor tinyproxy lets the kit decide each request by
the contract, resolve through its own checks and bind the TLS server name to the tunnel's host.
Every decision is one audit record (``Decision``). Brokered credentials (the gateway adding a
listed host's key so the sandbox never holds it) fit at ``Gateway._open``: the request head is
parsed there before anything is sent upstream.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import struct
from collections.abc import Callable
from dataclasses import dataclass
from ipaddress import ip_address

import dns.exception
import dns.flags
import dns.message
import dns.rdatatype
import h11

from sandboxkit.addresses import IPAddress, open_admits
from sandboxkit.dns_names import channel_refusal
from sandboxkit.egress_contract import (
    CONNECTION_PROTOCOLS,
    ConnectionProtocol,
    EgressContract,
    destination_of,
)

# Bytes of a request head or of a TLS ClientHello the gateway reads before it decides: a
# ClientHello with every extension a browser sends fits in 16 KiB (one TLS record's limit).
HEAD_LIMIT = 16 * 1024
# How long a client may take to send its request head or ClientHello, seconds.
HEAD_TIMEOUT = 10.0
# How long one DNS query and one upstream connection may take, seconds.
RESOLVE_TIMEOUT = 5.0
CONNECT_TIMEOUT = 10.0
TLS_HANDSHAKE = 0x16


@dataclass(frozen=True)
class Decision:
    """One egress decision, as the audit log records it.

    Attributes:
        host: the host the sandbox asked for (name or address).
        port: the TCP port.
        protocol: ``tls``, ``http`` or ``tcp`` (what the first bytes were).
        admitted: whether the gateway connected it.
        reason: why, in the contract's words.
        address: the address dialled (empty when refused before resolution).
    """

    host: str
    port: int
    protocol: str
    admitted: bool
    reason: str
    address: str = ""


def server_name(hello: bytes) -> str | None:
    """The server name (SNI, RFC 6066 section 3) of a TLS ClientHello record, or ``None``.

    Args:
        hello: the first bytes of a connection: one TLS record holding the ClientHello.

    Raises:
        ValueError: when the bytes are not a complete ClientHello record.
    """
    try:
        if hello[0] != TLS_HANDSHAKE or hello[5] != 1:
            raise ValueError("not a TLS ClientHello")
        record_end = 5 + struct.unpack("!H", hello[3:5])[0]
        if len(hello) < record_end:
            raise ValueError("incomplete ClientHello record")
        at = 5 + 4 + 2 + 32  # handshake header, client version, random
        at += 1 + hello[at]  # session id
        at += 2 + struct.unpack("!H", hello[at : at + 2])[0]  # cipher suites
        at += 1 + hello[at]  # compression methods
        if at == record_end:
            return None
        end = at + 2 + struct.unpack("!H", hello[at : at + 2])[0]
        at += 2
        while at + 4 <= end:
            kind, length = struct.unpack("!HH", hello[at : at + 4])
            at += 4
            if kind == 0:  # server_name: list length, then (type, length, name) entries
                if hello[at + 2] != 0:
                    raise ValueError("server name of an unknown type")
                size = struct.unpack("!H", hello[at + 3 : at + 5])[0]
                return hello[at + 5 : at + 5 + size].decode("ascii")
            at += length
        return None
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise ValueError(f"malformed ClientHello ({exc})") from None


def answer_refusal(address: IPAddress) -> str | None:
    """Why a resolved ``address`` may not be dialled, or ``None`` when it may: it must be an
    address ``open`` mode admits and hold no listed resolver or platform endpoint."""
    if not open_admits(address):
        return f"{address} is not a public address (sandboxkit.addresses)"
    return channel_refusal(str(address))


# Opens a non-blocking socket (family, type) in the namespace the gateway dials from.
SocketFactory = Callable[[int, int], socket.socket]


def host_socket(family: int, kind: int) -> socket.socket:
    """A non-blocking socket of ``family`` and ``kind`` in the gateway's own network
    namespace."""
    sock = socket.socket(family, kind)
    sock.setblocking(False)
    return sock


class Gateway:
    """The egress gateway for one sandbox.

    Args:
        contract: what the sandbox may reach.
        resolver: ``(address, port)`` of the DNS server the gateway asks (UDP, then TCP when
            the answer is truncated).
        record: called with each ``Decision``.
        sockets: opens outbound sockets (``host_socket``; tests pass one that opens them in a
            network namespace of their own).
    """

    def __init__(
        self,
        contract: EgressContract,
        resolver: tuple[str, int],
        record: Callable[[Decision], None],
        sockets: SocketFactory = host_socket,
    ) -> None:
        self.contract = contract
        self.resolver = resolver
        self.record = record
        self.sockets = sockets

    async def serve(self, listener: socket.socket) -> asyncio.Server:
        """Start answering on ``listener`` (a bound, listening TCP socket)."""
        listener.setblocking(False)
        return await asyncio.start_server(self._client, sock=listener)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._handle(reader, writer)
        except (TimeoutError, OSError, asyncio.IncompleteReadError, h11.ProtocolError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
        if len(head) > HEAD_LIMIT:
            return
        parser = h11.Connection(h11.SERVER)
        parser.receive_data(head)
        request = parser.next_event()
        if not isinstance(request, h11.Request):
            return
        target = request.target.decode("ascii", "replace")
        if request.method == b"CONNECT":
            host, port = _authority(target, None)
            await self._tunnel(host, port, reader, writer)
            return
        if not target.startswith("http://"):
            await _reply(writer, 400, "the gateway takes CONNECT and http:// requests")
            return
        authority, _, path = target[len("http://") :].partition("/")
        host, port = _authority(authority, 80)
        headers = [(k, v) for k, v in request.headers if k.lower() != b"proxy-connection"]
        hosts = [v.decode("ascii", "replace") for k, v in headers if k.lower() == b"host"]
        if hosts not in ([authority], [host]):
            self._refuse(host, port, "http", "the Host header is not the request's host")
            await _reply(writer, 403, "the Host header must name the request's host")
            return
        lines = [f"{request.method.decode()} /{path} HTTP/1.1".encode()]
        lines += [k + b": " + v for k, v in headers if k.lower() != b"connection"]
        lines.append(b"Connection: close")
        first = b"\r\n".join(lines) + b"\r\n\r\n"
        await self._open(host, port, "http", first, (reader, writer))

    async def _tunnel(
        self, host: str, port: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        destination = destination_of(host)
        # Before the first bytes, what the tunnel carries is unknown: refused now when no
        # protocol is admitted, else decided by what it turns out to carry (``_open``).
        if destination is None or not any(
            self._admitted(host, port, p) for p in CONNECTION_PROTOCOLS
        ):
            self._refuse(host, port, "tcp", self._why_not(host, port))
            await _reply(writer, 403, self._why_not(host, port))
            return
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        if not isinstance(destination, str):
            await self._open(host, port, "tcp", b"", (reader, writer))
            return
        first = await asyncio.wait_for(reader.read(HEAD_LIMIT), HEAD_TIMEOUT)
        protocol, claimed = _claimed_name(first)
        if claimed is None or destination_of(claimed) != destination:
            self._refuse(
                host,
                port,
                protocol,
                f"a name entry admits TLS with server name {host} or HTTP with Host {host}, "
                f"not {protocol} naming {claimed or 'nothing'}",
            )
            return
        await self._open(host, port, protocol, first, (reader, writer))

    def _admitted(self, host: str, port: int, protocol: ConnectionProtocol) -> bool:
        try:
            return self.contract.admits(host, port, protocol)
        except ValueError:
            return False

    def _why_not(self, host: str, port: int) -> str:
        if destination_of(host) is None:
            return f"{host} is neither a fully qualified name nor an IP address"
        return f"{host}:{port} is not in the stack's egress contract ({self.contract.mode})"

    def _refuse(self, host: str, port: int, protocol: str, reason: str) -> None:
        self.record(Decision(host, port, protocol, False, reason))

    async def _open(
        self,
        host: str,
        port: int,
        protocol: ConnectionProtocol,
        first: bytes,
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    ) -> None:
        reader, writer = client
        if not self._admitted(host, port, protocol):
            self._refuse(host, port, protocol, self._why_not(host, port))
            await _reply(writer, 403, self._why_not(host, port))
            return
        destination = destination_of(host)
        if isinstance(destination, str):
            addresses, refusal = await self._resolve(destination)
        else:
            assert destination is not None
            addresses, refusal = [destination], None
        if refusal is not None or not addresses:
            self._refuse(host, port, protocol, refusal or f"{host} has no address")
            if protocol == "http":
                await _reply(writer, 502, refusal or f"{host} has no address")
            return
        upstream = await self._dial(addresses[0], port)
        if upstream is None:
            self._refuse(host, port, protocol, f"{addresses[0]}:{port} did not answer")
            return
        self.record(
            Decision(
                host, port, protocol, True, "admitted by the egress contract", str(addresses[0])
            )
        )
        up_reader, up_writer = upstream
        up_writer.write(first)
        await up_writer.drain()
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    async def _resolve(self, name: str) -> tuple[list[IPAddress], str | None]:
        if not self.contract.may_resolve(name):
            return [], f"{name} may not be resolved under the egress contract"
        found: list[IPAddress] = []
        for kind in (dns.rdatatype.A, dns.rdatatype.AAAA):
            query = dns.message.make_query(name, kind)
            try:
                answer = await self._query(query)
            except (OSError, dns.exception.DNSException) as exc:
                return [], f"the resolver did not answer for {name} ({type(exc).__name__})"
            for rrset in answer.answer:
                if rrset.rdtype != kind:
                    continue
                for item in rrset:
                    address = ip_address(item.address)
                    refusal = answer_refusal(address)
                    if refusal is not None:
                        return [], f"{name} resolved to a refused address: {refusal}"
                    found.append(address)
        return found, None

    async def _query(self, query: dns.message.Message) -> dns.message.Message:
        """``query`` to the resolver over UDP, again over TCP when the answer is truncated
        (RFC 7766); dnspython builds and parses the messages, on sockets from ``sockets``."""
        where, port = self.resolver
        family = socket.AF_INET6 if ":" in where else socket.AF_INET
        loop = asyncio.get_running_loop()
        wire = query.to_wire()
        udp = self.sockets(family, socket.SOCK_DGRAM)
        try:
            await loop.sock_sendto(udp, wire, (where, port))
            while True:
                data = await asyncio.wait_for(loop.sock_recv(udp, 65535), RESOLVE_TIMEOUT)
                answer = dns.message.from_wire(data, ignore_trailing=True)
                if query.is_response(answer):
                    break
        finally:
            udp.close()
        if not answer.flags & dns.flags.TC:
            return answer
        stream = self.sockets(family, socket.SOCK_STREAM)
        try:
            await asyncio.wait_for(loop.sock_connect(stream, (where, port)), RESOLVE_TIMEOUT)
            reader, writer = await asyncio.open_connection(sock=stream)
            writer.write(struct.pack("!H", len(wire)) + wire)
            size = struct.unpack(
                "!H", await asyncio.wait_for(reader.readexactly(2), RESOLVE_TIMEOUT)
            )
            data = await asyncio.wait_for(reader.readexactly(size[0]), RESOLVE_TIMEOUT)
            writer.close()
        finally:
            stream.close()
        return dns.message.from_wire(data)

    async def _dial(
        self, address: IPAddress, port: int
    ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter] | None:
        family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
        sock = self.sockets(family, socket.SOCK_STREAM)
        try:
            await asyncio.wait_for(
                asyncio.get_running_loop().sock_connect(sock, (str(address), port)),
                CONNECT_TIMEOUT,
            )
        except (TimeoutError, OSError):
            sock.close()
            return None
        return await asyncio.open_connection(sock=sock)


def _claimed_name(first: bytes) -> tuple[ConnectionProtocol, str | None]:
    """What the first bytes of a tunnel are (``tls``, ``http`` or ``tcp``) and the name they
    claim (the ClientHello's server name, the request's Host), if any."""
    if first[:1] == bytes([TLS_HANDSHAKE]):
        try:
            return "tls", server_name(first)
        except ValueError:
            return "tls", None
    parser = h11.Connection(h11.SERVER)
    try:
        parser.receive_data(first)
        request = parser.next_event()
    except h11.RemoteProtocolError:
        return "tcp", None
    if isinstance(request, h11.Request):
        hosts = [v.decode("ascii", "replace") for k, v in request.headers if k.lower() == b"host"]
        if len(hosts) == 1:
            return "http", hosts[0].rpartition(":")[0] if ":" in hosts[0] else hosts[0]
        return "http", None
    return "tcp", None


def _authority(text: str, default_port: int | None) -> tuple[str, int]:
    """``host`` and port of ``host:port`` / ``[v6]:port``; ``ValueError`` without a port when
    ``default_port`` is ``None``."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port_text = rest.removeprefix(":")
    else:
        host, _, port_text = text.rpartition(":") if ":" in text else (text, "", "")
    if not port_text:
        if default_port is None:
            raise h11.RemoteProtocolError("CONNECT needs host:port")
        return host, default_port
    if not port_text.isascii() or not port_text.isdigit() or not 1 <= int(port_text) <= 65535:
        raise h11.RemoteProtocolError(f"bad port {port_text!r}")
    return host, int(port_text)


async def _reply(writer: asyncio.StreamWriter, status: int, why: str) -> None:
    body = f"sandboxkit egress gateway: {why}\n".encode()
    writer.write(
        f"HTTP/1.1 {status} {'Forbidden' if status == 403 else 'Refused'}\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
        + body
    )
    with contextlib.suppress(OSError):
        await writer.drain()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            writer.write_eof()
