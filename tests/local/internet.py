"""A fake internet for the local target's tests: a network namespace the test makes itself.

Its loopback holds public-looking addresses (nothing leaves the namespace: it has no other
interface), a Debian dnsmasq answers fixed names there, and TCP servers on ports 80 and 443 of
each address record the first bytes every connection sends. The gateway dials it through
``NamespaceSockets``, so no packet reaches any address outside this machine.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Iterator, Mapping

import dns.message
import dns.query

from sandboxkit.local.network import NamespaceSockets

RESOLVER = "192.0.2.53"
PORTS = (80, 443, 8443)


class FakeInternet:
    """The namespace, its resolver and its recording servers.

    Args:
        names: DNS name -> address dnsmasq answers (for the name and every name below it).
    """

    def __init__(self, names: Mapping[str, str]) -> None:
        self.names = dict(names)
        self.namespace = f"sbxtest-{uuid.uuid4().hex[:8]}"
        self.received: dict[tuple[str, int], list[bytes]] = defaultdict(list)
        self._stack = contextlib.ExitStack()

    @property
    def resolver(self) -> tuple[str, int]:
        """The fake internet's DNS server."""
        return RESOLVER, 53

    def __enter__(self) -> FakeInternet:
        ns = self.namespace
        subprocess.run(["ip", "netns", "add", ns], check=True)
        self._stack.callback(subprocess.run, ["ip", "netns", "delete", ns], check=False)
        fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
        self._stack.callback(os.close, fd)
        subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        addresses = {*self.names.values(), RESOLVER}
        for address in addresses:
            prefix = 128 if ":" in address else 32
            subprocess.run(
                ["ip", "-n", ns, "addr", "add", f"{address}/{prefix}", "dev", "lo"], check=True
            )
        self.sockets = NamespaceSockets(fd)
        self._stack.callback(self.sockets.close)
        dnsmasq = subprocess.Popen(
            [
                "ip",
                "netns",
                "exec",
                ns,
                "dnsmasq",
                "--keep-in-foreground",
                "--no-resolv",
                "--no-hosts",
                "--bind-interfaces",
                f"--listen-address={RESOLVER}",
                "--port=53",
                "--user=root",
                "--pid-file=/dev/null",
                *[f"--address=/{name}/{address}" for name, address in self.names.items()],
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self._stack.callback(dnsmasq.wait)
        self._stack.callback(dnsmasq.kill)
        for address in sorted(addresses - {RESOLVER}):
            for port in PORTS:
                self._serve(address, port)
        self._wait_for_resolver()
        return self

    def _serve(self, address: str, port: int) -> None:
        family = socket.AF_INET6 if ":" in address else socket.AF_INET
        listener = self.sockets(family, socket.SOCK_STREAM)
        listener.setblocking(True)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((address, port))
        listener.listen(16)
        self._stack.callback(listener.close)

        def accept() -> None:
            with contextlib.suppress(OSError):
                while True:
                    conn, _ = listener.accept()
                    with conn:
                        conn.settimeout(5)
                        with contextlib.suppress(OSError):
                            self.received[(address, port)].append(conn.recv(65536))
                            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")

        threading.Thread(target=accept, daemon=True).start()

    def _wait_for_resolver(self) -> None:
        query = dns.message.make_query(next(iter(self.names)), "A")
        deadline = time.monotonic() + 5
        while True:
            sock = self.sockets(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                dns.query.udp(query, RESOLVER, timeout=0.2, sock=sock)
                return
            except (OSError, dns.exception.Timeout):
                if time.monotonic() > deadline:
                    raise
            finally:
                sock.close()

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def first_bytes(self, address: str, port: int) -> list[bytes]:
        """What each connection to ``address:port`` sent first, in order."""
        return self.received.get((address, port), [])


@contextlib.contextmanager
def fake_internet(names: Mapping[str, str]) -> Iterator[FakeInternet]:
    """``FakeInternet(names)`` as a context manager."""
    with FakeInternet(names) as internet:
        yield internet
