"""Network namespaces for the ``local`` target: the sandbox's, and sockets made inside one.

Linux keeps a network namespace per thread, and a socket stays in the namespace it was made
in: a thread that enters (``setns``) or makes (``unshare``) a namespace can hand sockets back
to the rest of the process. The gateway's listener is made this way inside the sandbox's
namespace, and tests dial a "fake internet" namespace of their own the same way.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

CLONE_NEWNET = 0x40000000
# ioctl requests and flag of <linux/sockios.h> and <net/if.h>: read and set an interface's
# flags, and the "up" flag.
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
_LIBC = ctypes.CDLL(None, use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def enter(netns_fd: int) -> None:
    """Move the calling thread into the network namespace open at ``netns_fd``.

    Raises:
        OSError: when the kernel refuses (no ``CAP_SYS_ADMIN``).
    """
    _check(_LIBC.setns(netns_fd, CLONE_NEWNET), "setns")


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | _IFF_UP, b""))


@dataclass
class SandboxNetwork:
    """A new network namespace with loopback only, and a listening socket inside it.

    Attributes:
        netns_fd: an open descriptor of the namespace (``enter`` it in the sandbox's first
            process, before bubblewrap starts).
        listener: TCP, bound to ``127.0.0.1:port`` inside the namespace, listening.
        port: the listener's port.
    """

    netns_fd: int
    listener: socket.socket
    port: int

    @classmethod
    def create(cls, port: int) -> SandboxNetwork:
        """Make the namespace and the listener on ``port`` (a thread of its own does it).

        Raises:
            OSError: when the namespace cannot be made (not root) or the port bound.
        """
        made: dict[str, object] = {}

        def make() -> None:
            try:
                _check(_LIBC.unshare(CLONE_NEWNET), "unshare(CLONE_NEWNET)")
                _loopback_up()
                listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                listener.bind(("127.0.0.1", port))
                listener.listen(64)
                made["listener"] = listener
                made["netns_fd"] = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
            except OSError as exc:
                made["error"] = exc

        thread = threading.Thread(target=make, name="sandbox-netns")
        thread.start()
        thread.join()
        if "error" in made:
            raise made["error"]  # type: ignore[misc]
        listener = made["listener"]
        netns_fd = made["netns_fd"]
        assert isinstance(listener, socket.socket) and isinstance(netns_fd, int)
        return cls(netns_fd, listener, port)

    def close(self) -> None:
        """Close the listener and the namespace descriptor (the namespace ends with its last
        process)."""
        self.listener.close()
        os.close(self.netns_fd)


class NamespaceSockets:
    """Makes sockets inside the network namespace open at ``netns_fd`` (a ``SocketFactory``
    for ``Gateway``): one worker thread enters it once and makes every socket.

    Args:
        netns_fd: an open descriptor of the namespace (``/proc/<pid>/ns/net`` or
            ``/run/netns/<name>``).
    """

    def __init__(self, netns_fd: int) -> None:
        self._pool = ThreadPoolExecutor(1, "netns-sockets", initializer=enter, initargs=(netns_fd,))

    def __call__(self, family: int, kind: int) -> socket.socket:
        """A non-blocking socket of ``family`` and ``kind`` inside the namespace."""
        sock = self._pool.submit(socket.socket, family, kind).result()
        sock.setblocking(False)
        return sock

    def close(self) -> None:
        """Stop the worker thread."""
        self._pool.shutdown()
