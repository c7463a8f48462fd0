"""Settings, plan, enforcement map and factory of the ``local`` target (no SDK import here).

``local`` runs one command at a time on the machine the kit runs on (``sandboxkit run``), in a
bubblewrap sandbox under the stack's profile: for trying an agent's task under the prod
profile before deploying, and for running untrusted code (patches, plugins, generated scripts)
in CI under the same rules. See docs/targets/local.md.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, ClassVar

from pydantic import AfterValidator, Field, field_validator

from sandboxkit.credentials import credential_kind
from sandboxkit.deployer import DeployerPolicy
from sandboxkit.effective_egress import ResourceView
from sandboxkit.egress_contract import EgressContract
from sandboxkit.errors import NOT_SHOWN, ConfigError, FieldError, Problem
from sandboxkit.local.deployer import local_policy
from sandboxkit.local.isolation import Limits
from sandboxkit.local.plan import TARGET, LocalPlan
from sandboxkit.profile import SandboxProfile
from sandboxkit.provider_config import CREDENTIAL_WORDS
from sandboxkit.targets import (
    Cap,
    EgressAcceptance,
    Enforcement,
    KitComponent,
    KitContext,
    TargetSettings,
    TargetSpec,
)

# A gigabyte of workdir and 256 MiB of /tmp hold a typical repository checkout and build; both
# are tmpfs, so what is written there counts against limits.memoryMiB.
DEFAULT_WORKDIR_SIZE_MIB = 1024
DEFAULT_TMP_SIZE_MIB = 256
# 256 processes and threads: a compiler's or test runner's workers, far below a fork bomb.
DEFAULT_MAX_PROCESSES = 256
# The conventional HTTP proxy port (Squid's, tinyproxy's).
DEFAULT_PROXY_PORT = 3128
# Under the user's state folder (XDG Base Directory: $XDG_STATE_HOME, default ~/.local/state).
DEFAULT_AUDIT_LOG = "~/.local/state/sandboxkit/{stack}/local-audit.jsonl"
# What every command gets; nothing of the caller's environment passes.
BASE_ENVIRONMENT = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/workspace",
    "LANG": "C.UTF-8",
}
AUDIT_LOG_KEY = "sandboxkit:local.auditLog"
# The system's own files (Filesystem Hierarchy Standard 3.0: /etc host configuration, /usr, /bin,
# /sbin, /lib, /boot the system's programs and data) and the kernel's (/proc, /sys, /dev): an
# audit log appended, rotated and deleted there would overwrite them or be discarded (/dev/null).
SYSTEM_FOLDERS = (
    "/etc",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib64",
    "/boot",
    "/proc",
    "/sys",
    "/dev",
)
PROXY_VARIABLES = frozenset({"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"})
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
GATEWAY_SOURCE = "tests/local/test_gateway.py (sandboxkit.local.gateway decides by EgressContract)"


def _resolver(value: str) -> str:
    host, port = _split_resolver(value)
    try:
        ipaddress.ip_address(host)
    except ValueError:
        raise ValueError("an IP address with an optional port (9.9.9.9, 127.0.0.1:5353)") from None
    if port and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise ValueError("a port from 1 to 65535 after the address")
    return value


def _in_system_folder(path: str) -> bool:
    normal = os.path.normpath(path)
    return any(normal == f or normal.startswith(f"{f}/") for f in SYSTEM_FOLDERS)


def _audit_log(value: str) -> str:
    if value.endswith("/") or os.path.basename(os.path.normpath(value)) in ("", ".", ".."):
        raise ValueError(
            "a file path, not a folder (~/.local/state/sandboxkit/{stack}/audit.jsonl)"
        )
    if _in_system_folder(value):
        raise ValueError(
            f"a file outside the system's folders ({', '.join(SYSTEM_FOLDERS)}): the kit appends "
            "to, rotates and deletes its audit log files; the default is "
            f"{DEFAULT_AUDIT_LOG}"
        )
    return value


def check_audit_file(path: Path) -> None:
    """Refuse ``path`` as the audit log ``sandboxkit run`` appends to, rotates and deletes.

    Raises:
        ConfigError: naming ``sandboxkit:local.auditLog`` when ``path``, its links followed,
            lies in a ``SYSTEM_FOLDERS`` folder, exists and is not a regular file (a device
            such as ``/dev/null``, a folder, a pipe), or is a non-empty file whose first line is
            not a JSON object (not one of the kit's JSON-lines audit logs).
    """
    real = path.resolve()
    expected = ""
    if _in_system_folder(str(real)):
        expected = f"a file outside the system's folders ({', '.join(SYSTEM_FOLDERS)})"
    elif real.exists():
        if not stat.S_ISREG(real.stat().st_mode):
            expected = "a regular file (this path is a device, a folder or a pipe)"
        else:
            with real.open("rb") as file:
                first = file.readline(1 << 20)
            if first and not _json_object(first):
                expected = (
                    "a new file or one of the kit's JSON-lines audit logs (this file holds "
                    "something else, which the kit would append to, rotate and delete)"
                )
    if expected:
        raise ConfigError(Problem(AUDIT_LOG_KEY, str(path), expected))


def _json_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def _split_resolver(text: str) -> tuple[str, str]:
    """Address and port text (empty when absent) of ``address[:port]`` / ``[v6]:port``."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        return host, rest.removeprefix(":")
    if text.count(":") == 1:
        host, _, port = text.partition(":")
        return host, port
    return text, ""


class LocalSettings(TargetSettings):
    """``sandboxkit:local`` settings.

    Attributes:
        workdirSizeMiB: size of the writable workdir (``/workspace``, a tmpfs), MiB.
        tmpSizeMiB: size of ``/tmp`` (a tmpfs), MiB.
        maxProcesses: processes and threads the sandbox may hold at once (cgroup ``pids.max``).
        resolver: the DNS server the egress gateway resolves through, ``address[:port]``;
            default: the host's first ``/etc/resolv.conf`` nameserver, read per run.
        proxyPort: the gateway's loopback port inside the sandbox.
        auditLog: the audit log file (``{stack}`` is replaced by the stack name, ``~`` by the
            user's home). Not in a system folder (``/etc``, ``/usr``, ``/dev``, ``/proc``,
            ``/sys`` ...); ``sandboxkit run`` also exits 2 when the path exists and is not a
            regular file (``/dev/null``) or not one of the kit's JSON-lines audit logs.
        environment: variables the command gets besides ``PATH``, ``HOME`` and ``LANG`` (plain
            values only, no setting of ``local`` is a secret: a sandbox holds no credential).
            A variable whose name says it holds a credential (``GITHUB_TOKEN``, ``password``:
            ``CREDENTIAL_WORDS``) or whose value looks like one (``ghp_...``, ``AKIA...``:
            ``CREDENTIAL_SHAPES``) exits 2 naming ``environment.<variable>``, its value not
            shown, as a plain credential under any other namespace does.
    """

    workdir_size_mib: Annotated[int, Field(gt=0, le=1024 * 1024)] = Field(
        DEFAULT_WORKDIR_SIZE_MIB, alias="workdirSizeMiB"
    )
    tmp_size_mib: Annotated[int, Field(gt=0, le=1024 * 1024)] = Field(
        DEFAULT_TMP_SIZE_MIB, alias="tmpSizeMiB"
    )
    max_processes: Annotated[int, Field(ge=8, le=4_194_304)] = Field(
        DEFAULT_MAX_PROCESSES, alias="maxProcesses"
    )
    resolver: Annotated[str, AfterValidator(_resolver)] | None = None
    proxy_port: Annotated[int, Field(ge=1024, le=65535)] = Field(
        DEFAULT_PROXY_PORT, alias="proxyPort"
    )
    audit_log: Annotated[str, Field(min_length=1), AfterValidator(_audit_log)] = Field(
        DEFAULT_AUDIT_LOG, alias="auditLog"
    )
    environment: Annotated[dict[str, str], Field(strict=False)] = Field(default_factory=dict)

    @field_validator("environment")
    @classmethod
    def _plain_names(cls, value: dict[str, str]) -> dict[str, str]:
        for name in value:
            if not _VARIABLE.match(name):
                raise ValueError(f"variable names of letters, digits and _, not {name!r}")
            if name in PROXY_VARIABLES:
                raise ValueError(f"no {name}: the kit points the proxy variables at its gateway")
        credentials = [
            FieldError(
                f".{name}",
                NOT_SHOWN,
                "no credential: a local sandbox runs untrusted code, which reads its whole "
                "environment, and a plain value is readable by anyone who reads the stack file; "
                "remove the variable (no setting of local is a secret: a Pulumi secret, pulumi "
                "config set --secret, belongs to a target's secret settings, never to a "
                "sandbox's environment)",
            )
            for name, text in value.items()
            if CREDENTIAL_WORDS.search(name) or credential_kind(text) is not None
        ]
        if credentials:
            raise FieldError.first_of(credentials)
        return value


def system_resolver() -> tuple[str, int]:
    """The host's first ``/etc/resolv.conf`` nameserver, port 53 (dnspython reads the file)."""
    import dns.resolver

    return str(dns.resolver.Resolver().nameservers[0]), 53


def resolver_address(text: str) -> tuple[str, int]:
    """``(address, port)`` of a validated ``resolver`` setting (port 53 when it names none)."""
    host, port = _split_resolver(text)
    return host, int(port or 53)


def local_plan(profile: SandboxProfile, settings: LocalSettings, context: KitContext) -> LocalPlan:
    """The ``local`` plan: the profile's egress as the gateway's contract and its limits.

    The resolver is kept as written (``None``: the host's, read when a command runs), so a
    render does not depend on the machine it runs on.
    """
    limits = profile.limits
    return LocalPlan(
        contract=EgressContract.of(profile.egress),
        limits=Limits(
            vcpu=limits.vcpu,
            memory_mib=limits.memory_mib,
            pids=settings.max_processes,
            timeout_seconds=limits.exec_timeout_seconds,
            workdir_mib=settings.workdir_size_mib,
            tmp_mib=settings.tmp_size_mib,
        ),
        resolver=None if settings.resolver is None else resolver_address(settings.resolver),
        proxy_port=settings.proxy_port,
        environment={**BASE_ENVIRONMENT, **settings.environment},
        audit_log=settings.audit_log.replace("{stack}", context.stack),
        retention_days=profile.audit.log_retention_days,
        labels=context.labels(),
    )


def audit_path(plan: LocalPlan) -> Path:
    """The plan's audit log file, ``~`` expanded."""
    return Path(plan["audit_log"]).expanduser()


def local_enforcement(profile: SandboxProfile) -> dict[str, Enforcement]:
    """Where each profile field is enforced by ``sandboxkit run``."""
    mode = profile.egress.mode
    egress = (
        "bubblewrap --unshare-net: a network namespace with loopback only"
        if mode == "deny"
        else "loopback-only network namespace; the kit's egress gateway "
        "(sandboxkit.local.gateway: CONNECT and http:// by EgressContract, names resolved by "
        "the gateway, rebinding answers dropped, TLS server name bound to the CONNECT host)"
    )
    one_shot = (
        "a local sandbox runs one command and ends with it: limits.execTimeoutSeconds bounds it"
    )
    return {
        "egress.mode": Enforcement("runtime", egress),
        "limits.vcpu": Enforcement("runtime", "cgroup CPU quota (cpu.cfs_quota_us, cpu.max)"),
        "limits.memoryMiB": Enforcement(
            "runtime", "cgroup memory limit (memory.limit_in_bytes, memory.max), swap included"
        ),
        "limits.execTimeoutSeconds": Enforcement(
            "runtime", "sandboxkit run kills the whole sandbox at the deadline (exit 137)"
        ),
        "limits.maxLifetimeSeconds": Enforcement("none", one_shot),
        "limits.idleTimeoutSeconds": Enforcement("none", one_shot),
        "pool.ready": Enforcement(
            "none", "no warm pool: a bubblewrap sandbox starts in milliseconds"
        ),
        "pool.maxConcurrent": Enforcement(
            "none", "each sandboxkit run is one sandbox; the caller bounds how many it starts"
        ),
        "audit.logRetentionDays": Enforcement(
            "runtime", "rotated audit log files older than this are deleted at rotation"
        ),
    }


class LocalTarget(TargetSpec[LocalSettings, LocalPlan]):
    """The ``local`` target."""

    name: ClassVar[str] = TARGET
    sdks: ClassVar[Mapping[str, float]] = {}
    accepts: ClassVar[EgressAcceptance | None] = EgressAcceptance()
    settings_model = LocalSettings
    caps: ClassVar[tuple[Cap, ...]] = (
        # A bubblewrap sandbox is one cgroup on this host: the CPU quota cannot exceed the
        # host's cores, checked when a command runs (os.cpu_count()); here only the kit's.
        # The quota is microseconds per 100 ms period, at least 1 ms: a smaller vCPU would
        # be raised to 0.01 without a word.
        Cap(
            "limits.vcpu",
            0.01,
            None,
            "the CFS bandwidth quota, microseconds per 100,000 us period, is at least 1 ms "
            "(kernel Documentation/scheduler/sched-bwc.rst: the minimum quota is 1ms)",
            step=0.00001,
        ),
        Cap(
            "limits.memoryMiB",
            16,
            None,
            "the kit's floor: the dynamic loader, a shell and the sandbox's tmpfs pages need "
            "more than a few MiB (a cgroup below it kills the first process)",
        ),
    )

    def plan(
        self, profile: SandboxProfile, settings: LocalSettings, context: KitContext
    ) -> LocalPlan:
        """See ``local_plan``."""
        return local_plan(profile, settings, context)

    def enforcement(
        self, profile: SandboxProfile, settings: LocalSettings, plan: LocalPlan | None
    ) -> dict[str, Enforcement]:
        """See ``local_enforcement``."""
        return local_enforcement(profile)

    def deployer_policy(
        self,
        context: KitContext,
        settings: LocalSettings,
        resources: Sequence[ResourceView],
    ) -> DeployerPolicy:
        """The host's packages, privileges and writable folders (``local.deployer``)."""
        return local_policy(self.name, resources)

    def component(self, plan: LocalPlan) -> KitComponent:
        """The ``LocalSandbox`` component, recording the gateway's policy."""
        from sandboxkit.local.component import LocalSandbox

        return LocalSandbox(self.name, plan)


SPEC = LocalTarget()
