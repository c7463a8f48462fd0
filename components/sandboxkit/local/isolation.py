"""The ``local`` target's wall: a bubblewrap sandbox, a seccomp filter and cgroup limits.

One command runs under ``bwrap`` (Debian's ``bubblewrap``) with every namespace unshared (user,
pid, net, ipc, uts, cgroup), no capabilities, ``no_new_privs`` (bubblewrap always sets it), an
unprivileged uid, a new session, killed with its parent, a read-only root made of read-only
binds of the host's system folders, a sized tmpfs ``/tmp`` and a sized tmpfs workdir, and an
environment holding only what the plan passes. The seccomp filter is built with libseccomp
(PyPI ``pyseccomp``, a ctypes binding of Debian's ``libseccomp2``) and handed to bubblewrap,
which loads it just before it executes the command.

Limits go through cgroups (``CgroupLimits``): memory, CPU quota and a pid cap, on a v2
hierarchy when it has those controllers, else on the v1 controllers (this machine's kind has
v1 only). A host where neither can be written is refused (``HostError`` names each limit),
never run without the limit.
"""

from __future__ import annotations

import errno
import os
import shutil
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

# The uid and gid the command runs as inside its user namespace: "nobody", which owns nothing
# on the read-only root.
SANDBOX_UID = 65534
SANDBOX_GID = 65534
# Where the writable workdir sits inside the sandbox.
WORKDIR = "/workspace"
# Host folders bound read-only to make the sandbox's root: the system's programs and
# libraries, and the configuration they read. Nothing of /home, /root, /run, /var or the kit's
# own state is bound.
SYSTEM_FOLDERS = ("/usr", "/etc/alternatives", "/etc/ssl", "/etc/ca-certificates")
SYSTEM_FILES = ("/etc/ld.so.cache", "/etc/nsswitch.conf", "/etc/passwd", "/etc/group")
# Merged-/usr links (Debian 12): /bin -> usr/bin and so on.
USR_LINKS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")

# Syscalls refused with EPERM. Docker's default seccomp profile (moby/profiles
# seccomp/default.json; docs.docker.com/engine/security/seccomp, "Significant syscalls blocked
# by the default profile") refuses these for an unprivileged container; the kit refuses them
# outright, for any argument. ``clone``/``clone3`` with namespace flags stay possible at the
# syscall level but meet ``unshare``'s wall: the user namespace bubblewrap made is not allowed
# to make another (``--disable-userns``), and without one no namespace can be made.
REFUSED_SYSCALLS = (
    "acct",
    "add_key",
    "bpf",
    "clock_adjtime",
    "clock_settime",
    "create_module",
    "delete_module",
    "finit_module",
    "fsconfig",
    "fsmount",
    "fsopen",
    "fspick",
    "get_kernel_syms",
    "get_mempolicy",
    "init_module",
    "io_uring_enter",
    "io_uring_register",
    "io_uring_setup",
    "ioperm",
    "iopl",
    "kcmp",
    "kexec_file_load",
    "kexec_load",
    "keyctl",
    "lookup_dcookie",
    "mbind",
    "mount",
    "mount_setattr",
    "move_mount",
    "move_pages",
    "name_to_handle_at",
    "nfsservctl",
    "open_by_handle_at",
    "open_tree",
    "perf_event_open",
    "personality",
    "pivot_root",
    "process_vm_readv",
    "process_vm_writev",
    "ptrace",
    "query_module",
    "quotactl",
    "reboot",
    "request_key",
    "set_mempolicy",
    "setns",
    "settimeofday",
    "swapoff",
    "swapon",
    "sysfs",
    "_sysctl",
    "umount2",
    "unshare",
    "uselib",
    "userfaultfd",
    "ustat",
    "vm86",
    "vm86old",
)
CFS_PERIOD_US = 100_000
MIB = 1024 * 1024


class HostError(Exception):
    """The host cannot give what the stack asks (no bubblewrap, no writable cgroup for a
    limit). The CLI exits 2 with the message, which names the setting and the fix."""


def seccomp_filter(out: IO[bytes]) -> None:
    """Write the sandbox's seccomp filter, as BPF, to ``out``: every syscall allowed except
    ``REFUSED_SYSCALLS``, which fail with EPERM.

    Raises:
        HostError: when libseccomp cannot be loaded.
    """
    try:
        import pyseccomp
    except OSError as exc:  # the binding loads libseccomp.so at import
        raise HostError(
            f"libseccomp is not installed ({exc}): apt-get install libseccomp2"
        ) from None
    rules = pyseccomp.SyscallFilter(defaction=pyseccomp.ALLOW)
    for name in REFUSED_SYSCALLS:
        try:
            rules.add_rule(pyseccomp.ERRNO(errno.EPERM), name)
        except (ValueError, RuntimeError, OSError):
            # A syscall this architecture does not have (vm86 on x86-64, say): nothing to refuse.
            continue
    rules.export_bpf(out)


@dataclass(frozen=True)
class Limits:
    """What one sandbox may use.

    Attributes:
        vcpu: CPU quota, vCPU (``profile.limits.vcpu``).
        memory_mib: memory, MiB (``profile.limits.memoryMiB``); swap is not allowed beyond it.
        pids: processes and threads at once (``sandboxkit:local.maxProcesses``).
        timeout_seconds: wall clock of the command, seconds (``limits.execTimeoutSeconds``).
        workdir_mib: the writable workdir, MiB (``sandboxkit:local.workdirSizeMiB``).
        tmp_mib: ``/tmp``, MiB (``sandboxkit:local.tmpSizeMiB``).
    """

    vcpu: float
    memory_mib: int
    pids: int
    timeout_seconds: int
    workdir_mib: int
    tmp_mib: int


@dataclass(frozen=True)
class Usage:
    """What a sandbox's cgroups recorded once it ended.

    Attributes:
        peak_memory_mib: the most memory it held, MiB (rounded up).
        memory_limit_hit: whether the kernel killed a process for memory.
        pids_limit_hit: whether a fork or clone was refused for the pid cap.
    """

    peak_memory_mib: int
    memory_limit_hit: bool
    pids_limit_hit: bool


def _first_line_value(path: Path, key: str) -> int:
    for line in path.read_text().splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value)
    return 0


class CgroupLimits:
    """One sandbox's cgroups: created with its limits, joined by the sandbox's first process
    before it executes bubblewrap, read and removed when it ends.

    Args:
        root: the cgroup file system (``/sys/fs/cgroup``).
        limits: what to enforce.

    Raises:
        HostError: naming each limit (``limits.memoryMiB``, ``limits.vcpu``,
            ``sandboxkit:local.maxProcesses``) whose controller cannot be written here.
    """

    def __init__(self, limits: Limits, root: Path = Path("/sys/fs/cgroup")) -> None:
        self.name = f"sandboxkit-{uuid.uuid4().hex[:12]}"
        self.version = 2 if self._v2_has(root) else 1
        self.dirs: dict[str, Path] = {}
        wanted = {
            "memory": "sandboxkit:profile.limits.memoryMiB",
            "cpu": "sandboxkit:profile.limits.vcpu",
            "pids": "sandboxkit:local.maxProcesses",
        }
        failed = []
        for controller, key in wanted.items():
            folder = root / self.name if self.version == 2 else root / controller / self.name
            try:
                folder.mkdir(exist_ok=False)
            except OSError as exc:
                failed.append(f"{key} ({controller} controller: {exc.strerror} at {folder.parent})")
                continue
            self.dirs[controller] = folder
            if self.version == 2:
                break
        if failed:
            self.remove()
            raise HostError(
                "the host cannot enforce "
                + "; ".join(failed)
                + ": run as root on a host with cgroup v1 memory, cpu and pids controllers, or "
                "cgroup v2 with them delegated to this user"
            )
        self._write_limits(limits)

    @staticmethod
    def _v2_has(root: Path) -> bool:
        controllers = root / "cgroup.controllers"
        try:
            present = set(controllers.read_text().split())
        except OSError:
            return False
        return {"memory", "cpu", "pids"} <= present

    def _file(self, controller: str, name: str) -> Path:
        return (
            self.dirs[next(iter(self.dirs))] / name
            if self.version == 2
            else (self.dirs[controller] / name)
        )

    def _write_limits(self, limits: Limits) -> None:
        memory = str(limits.memory_mib * MIB)
        quota = str(max(1000, round(limits.vcpu * CFS_PERIOD_US)))
        if self.version == 2:
            self._file("memory", "memory.max").write_text(memory)
            self._file("memory", "memory.swap.max").write_text("0")
            self._file("cpu", "cpu.max").write_text(f"{quota} {CFS_PERIOD_US}")
            self._file("pids", "pids.max").write_text(str(limits.pids))
            return
        self._file("memory", "memory.limit_in_bytes").write_text(memory)
        swap = self._file("memory", "memory.memsw.limit_in_bytes")
        if swap.exists():
            swap.write_text(memory)
        self._file("cpu", "cpu.cfs_period_us").write_text(str(CFS_PERIOD_US))
        self._file("cpu", "cpu.cfs_quota_us").write_text(quota)
        self._file("pids", "pids.max").write_text(str(limits.pids))

    def join(self) -> None:
        """Move the calling process into every cgroup (run in the child, before exec)."""
        pid = str(os.getpid())
        for folder in dict.fromkeys(self.dirs.values()):
            (folder / "cgroup.procs").write_text(pid)

    def pids(self) -> list[int]:
        """The processes still in the sandbox's cgroup."""
        procs = self._file("pids", "cgroup.procs")
        try:
            return [int(line) for line in procs.read_text().split()]
        except OSError:
            return []

    def usage(self) -> Usage:
        """What the cgroups recorded (call once the sandbox ended, before ``remove``)."""
        if self.version == 2:
            peak_file = self._file("memory", "memory.peak")
            peak = int(peak_file.read_text()) if peak_file.exists() else 0
            oom = _first_line_value(self._file("memory", "memory.events"), "oom_kill")
        else:
            peak = int(self._file("memory", "memory.max_usage_in_bytes").read_text())
            oom = _first_line_value(self._file("memory", "memory.oom_control"), "oom_kill")
        pids_max = _first_line_value(self._file("pids", "pids.events"), "max")
        return Usage(-(-peak // MIB), oom > 0, pids_max > 0)

    def remove(self) -> None:
        """Remove the cgroups (their processes must have ended)."""
        for folder in self.dirs.values():
            try:
                folder.rmdir()
            except OSError:
                continue


def bwrap_argv(
    command: Sequence[str],
    limits: Limits,
    env: Mapping[str, str],
    *,
    seccomp_fd: int,
    own_network: bool,
    seed: Path | None = None,
    binds: Sequence[tuple[Path, str]] = (),
) -> list[str]:
    """The ``bwrap`` command line for ``command``.

    Args:
        command: the program and its arguments, run in ``WORKDIR``.
        limits: the tmpfs sizes come from here.
        env: the whole environment the command gets.
        seccomp_fd: an open file descriptor holding the filter (``seccomp_filter``), passed
            to the child.
        own_network: ``True`` to have bubblewrap make a network namespace with loopback only
            (``deny``); ``False`` when the caller has already put the child in one (the
            gateway's namespace).
        seed: a host folder bound read-only at ``/.sandboxkit/seed`` (copied into the
            workdir by the caller's command).
        binds: extra read-only binds (host path, path inside), e.g. a Unix socket.

    Raises:
        HostError: when ``bwrap`` is not installed.
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise HostError(
            "the local target runs sandboxes with bubblewrap, which is not installed: "
            "apt-get install bubblewrap"
        )
    argv = [bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    argv += ["--unshare-cgroup", "--disable-userns", "--die-with-parent", "--new-session"]
    if own_network:
        argv.append("--unshare-net")
    argv += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_GID), "--cap-drop", "ALL"]
    argv += ["--hostname", "sandbox", "--clearenv"]
    for folder in SYSTEM_FOLDERS:
        if Path(folder).is_dir():
            argv += ["--ro-bind", folder, folder]
    for file in SYSTEM_FILES:
        if Path(file).is_file():
            argv += ["--ro-bind", file, file]
    for link in USR_LINKS:
        if Path(f"/usr/{link}").is_dir():
            argv += ["--symlink", f"usr/{link}", f"/{link}"]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--size", str(limits.tmp_mib * MIB), "--tmpfs", "/tmp"]
    argv += ["--size", str(limits.workdir_mib * MIB), "--tmpfs", WORKDIR]
    argv += ["--chmod", "0777", WORKDIR]
    if seed is not None:
        argv += ["--ro-bind", str(seed), "/.sandboxkit/seed"]
    for host, inside in binds:
        argv += ["--ro-bind", str(host), inside]
    argv += ["--remount-ro", "/", "--chdir", WORKDIR]
    for key, value in sorted(env.items()):
        argv += ["--setenv", key, value]
    argv += ["--seccomp", str(seccomp_fd), "--", *command]
    return argv
