"""The analyzer transport: how the gate reaches the sandbox-guard pack.

Two transports answer the same four calls (``Analyzer``): ``InProcessAnalyzer`` calls the pack's
own servicer from pulumi-policy in this process (the default: fast), and ``pack_process`` starts
the pack as a subprocess and talks gRPC to it, exactly as the Pulumi CLI does. The enum names map
the analyzer protocol's enforcement levels and severities to the words reports use.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import importlib.util
import os
import selectors
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

from google.protobuf import json_format, struct_pb2
from pulumi.runtime import proto
from pulumi.runtime.proto import analyzer_pb2_grpc

from sandboxkit.config import NAMESPACE
from sandboxkit.errors import ConfigError, Problem

PACK_DIR = Path("policy-packs") / "sandbox-guard"
ENFORCEMENT_NAMES = {
    proto.ADVISORY: "advisory",
    proto.MANDATORY: "mandatory",
    proto.REMEDIATE: "remediate",
    proto.DISABLED: "disabled",
}
ENFORCEMENT_VALUES = {name: value for value, name in ENFORCEMENT_NAMES.items()}
SEVERITY_NAMES = {
    proto.POLICY_SEVERITY_UNSPECIFIED: "unspecified",
    proto.POLICY_SEVERITY_LOW: "low",
    proto.POLICY_SEVERITY_MEDIUM: "medium",
    proto.POLICY_SEVERITY_HIGH: "high",
    proto.POLICY_SEVERITY_CRITICAL: "critical",
}
PACK_START_TIMEOUT_SECONDS = 60
PACK_PROCESS_VERSION = "0.0.1"


class Analyzer(Protocol):
    """The four analyzer calls the gate makes; a gRPC stub and ``InProcessAnalyzer`` both fit."""

    def GetAnalyzerInfo(self, request: Any) -> Any: ...  # noqa: N802 - gRPC method names
    def Configure(self, request: Any) -> Any: ...  # noqa: N802
    def Analyze(self, request: Any) -> Any: ...  # noqa: N802
    def AnalyzeStack(self, request: Any) -> Any: ...  # noqa: N802


def pack_dir(project_dir: Path) -> Path:
    """The sandbox-guard pack folder of a project."""
    return project_dir / PACK_DIR


def load_policies(pack: Path) -> ModuleType:
    """Import the pack's ``policies`` package under a private name (never plain ``policies``).

    Args:
        pack: the pack folder (``pack_dir``), holding ``policies/__init__.py``.

    Returns:
        The package, registered as ``sandboxkit_pack_policies`` in ``sys.modules`` (its
        ``PACK_NAME``, ``ALL_POLICIES``, ``DEFAULT_ENFORCEMENT``, ``RULES_BY_NAME``, ...).

    Raises:
        ConfigError: naming the pack folder when it has no ``policies/__init__.py`` (a project
            without the kit's ``policy-packs/``).
    """
    init = pack / "policies" / "__init__.py"
    if not init.is_file():
        raise ConfigError(
            Problem(
                str(pack),
                f"no {init.relative_to(pack)}",
                "the sandbox-guard policy pack, which sandboxkit check and pack-config run: "
                f"copy policy-packs/ from the sandboxkit repository into {pack.parent.parent}, "
                "or run the command in a sandboxkit clone",
            )
        )
    spec = importlib.util.spec_from_file_location(
        "sandboxkit_pack_policies", init, submodule_search_locations=[str(init.parent)]
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@dataclass
class _CallMemo:
    """What one ``InProcessAnalyzer`` call has converted (``SharedConversions``) and computed
    (``once_per_call``).

    Attributes:
        structs: a ``Struct``'s serialization -> its dict.
        results: per shared function (``once_per_call``), ``id(argument) -> (the argument,
            kept alive so that its id is not reused within the call, the result)``.
    """

    structs: dict[bytes, dict[str, Any]] = field(default_factory=dict)
    results: dict[Callable[..., Any], dict[int, tuple[Any, Any]]] = field(
        default_factory=lambda: defaultdict(dict)
    )


_CALL_MEMO: contextvars.ContextVar[_CallMemo | None] = contextvars.ContextVar(
    "sandboxkit_analyzer_call_memo", default=None
)


class SharedConversions:
    """protobuf's ``json_format`` as pulumi-policy's servicer module sees it in this process.

    pulumi-policy 1.x converts a resource's properties (a ``Struct``) to a dict once per policy
    it runs (``policy.py``: ``Analyze`` for the request, ``AnalyzeStack`` for every resource),
    so a stack of N resources and P policies costs N x P conversions of the same messages.
    Inside one ``InProcessAnalyzer`` call, ``MessageToDict`` of a ``Struct`` converted already
    in that call returns the first conversion, keyed by the message's serialization in its own
    key order (a deterministic serialization sorts keys, so two messages differing only in
    key order would share one conversion, and a check reading keys in order would name
    another input); pulumi-policy's ``deserialize_properties`` copies what it reads and never
    changes it, and that copy reaches the policies only through a read-only proxy
    (``once_per_call``), so they see what they saw before (``tests/policy/test_pack_process.py``
    holds both). Outside such a call, and for any other message or option, it is
    ``json_format`` itself.

    ``InProcessAnalyzer`` installs it for the whole process and leaves it there: outside its
    calls it converts as ``json_format`` does.
    """

    def __getattr__(self, name: str) -> Any:
        return getattr(json_format, name)

    def MessageToDict(self, message: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N802
        """``json_format.MessageToDict``, converted once per call for a plain ``Struct``."""
        memo = _CALL_MEMO.get()
        if memo is None or args or kwargs or not isinstance(message, struct_pb2.Struct):
            return json_format.MessageToDict(message, *args, **kwargs)
        key = message.SerializeToString()
        if key not in memo.structs:
            memo.structs[key] = json_format.MessageToDict(message)
        return memo.structs[key]


def once_per_call(
    function: Callable[[Any], Any], prepare: Callable[[Any], Any] | None = None
) -> Callable[..., Any]:
    """``function`` (of one argument) computed once per argument object inside one
    ``InProcessAnalyzer`` call, the first result (through ``prepare``) handed to every later
    caller; outside a call, or with any further argument, ``function`` itself.

    pulumi-policy 1.x builds each resource's ``deserialize_properties`` copy and its
    ``unknown_checking_proxy`` (a proxy object per dict and list, each with its property path)
    once per policy: 30% of CrossGuard's CPU on prod. Given the same dict (``SharedConversions``
    hands out one per message), every policy of the call now reads one copy and one proxy,
    made read-only (``read_only_inputs``): a policy assigning to its inputs would otherwise
    change what the policies after it read, which over gRPC it never does.
    """

    @functools.wraps(function)
    def shared(value: Any, *args: Any, **kwargs: Any) -> Any:
        memo = _CALL_MEMO.get()
        if memo is None or args or kwargs:
            return function(value, *args, **kwargs)
        results = memo.results[function]
        found = results.get(id(value))
        if found is None:
            result = function(value)
            found = results[id(value)] = (value, prepare(result) if prepare else result)
        return found[1]

    return shared


class SharedInputError(TypeError):
    """A policy assigned to its inputs (``args.props[key] = ...``) inside an
    ``InProcessAnalyzer`` call, where every policy of the call reads the same input proxy."""


@functools.cache
def _shared_mapping_class() -> type:
    """pulumi-policy's mapping proxy, with assignment refused (``SharedInputError``)."""
    from pulumi_policy.proxy import _DictProxy

    class SharedInputs(_DictProxy):
        def __setitem__(self, key: Any, value: Any) -> None:
            raise SharedInputError(
                f"a policy assigned {key!r} in its input properties: in process "
                "(sandboxkit.gate.InProcessAnalyzer) every policy of a call reads the same "
                "inputs, so the assignment would change what the policies after it read; "
                "assign to a copy (dict(args.props)) instead"
            )

    return SharedInputs


def read_only_inputs(proxy: Any) -> Any:
    """``proxy`` (an ``unknown_checking_proxy`` result) with every mapping in it made
    read-only in place: assigning raises ``SharedInputError``; reading is unchanged."""
    from pulumi_policy.proxy import _DictProxy, _ListProxy

    shared = _shared_mapping_class()
    pending = [proxy]
    while pending:
        node = pending.pop()
        if isinstance(node, _DictProxy):
            node.__class__ = shared
            pending.extend(node["__target"].values())
        elif isinstance(node, _ListProxy):
            pending.extend(node["__target"])
    return proxy


def _share_within_calls() -> None:
    """Install ``SharedConversions`` and ``once_per_call`` versions of pulumi-policy's
    ``deserialize_properties`` and ``unknown_checking_proxy`` (read-only) in its servicer
    module, once per process (outside an ``InProcessAnalyzer`` call they behave as the
    originals)."""
    from pulumi_policy import policy as servicer_module

    if isinstance(servicer_module.json_format, SharedConversions):
        return
    servicer_module.json_format = SharedConversions()
    for name, prepare in (
        ("deserialize_properties", None),
        ("unknown_checking_proxy", read_only_inputs),
    ):
        setattr(servicer_module, name, once_per_call(getattr(servicer_module, name), prepare))


@contextlib.contextmanager
def _within_one_call() -> Iterator[None]:
    """Within the block (one analyzer call), ``SharedConversions`` converts each ``Struct``
    once and each ``once_per_call`` function runs once per argument."""
    token = _CALL_MEMO.set(_CallMemo())
    try:
        yield
    finally:
        _CALL_MEMO.reset(token)


class InProcessAnalyzer:
    """The pack's own analyzer servicer, called in this process exactly as over gRPC.

    Requests and responses are the analyzer protocol's messages (``pulumi.runtime.proto``), as a
    gRPC stub takes and returns them. Each ``Analyze`` and ``AnalyzeStack`` converts each
    resource's properties once, not once per policy (``SharedConversions``, installed as the
    servicer module's ``json_format``), and builds one copy and one input proxy per distinct
    properties message, which every policy of the call reads (``once_per_call``). One
    difference from the pack process, where each policy gets its own proxy: assigning through
    it (``args.props[key] = ...``) raises ``SharedInputError`` instead of changing what the
    policies after it read; resources whose properties are the same message share one proxy
    object in ``AnalyzeStack``.

    Raises:
        ConfigError: (on construction) when the pack has no ``policies/__init__.py``.
    """

    def __init__(self, pack: Path) -> None:
        from pulumi_policy.policy import _PolicyAnalyzerServicer

        _share_within_calls()
        policies = load_policies(pack)
        self._servicer = _PolicyAnalyzerServicer(
            policies.PACK_NAME,
            # What PolicyPack reports too; the CLI shows PulumiPolicy.yaml's version instead.
            PACK_PROCESS_VERSION,
            policies.ALL_POLICIES,
            policies.DEFAULT_ENFORCEMENT,
        )

    def GetAnalyzerInfo(self, request: Any) -> Any:  # noqa: N802
        """Forward to the servicer."""
        return self._servicer.GetAnalyzerInfo(request, None)

    def Configure(self, request: Any) -> Any:  # noqa: N802
        """Forward to the servicer."""
        return self._servicer.Configure(request, None)

    def Analyze(self, request: Any) -> Any:  # noqa: N802
        """Forward to the servicer, each properties message converted once."""
        with _within_one_call():
            return self._servicer.Analyze(request, None)

    def AnalyzeStack(self, request: Any) -> Any:  # noqa: N802
        """Forward to the servicer, each properties message converted once."""
        with _within_one_call():
            return self._servicer.AnalyzeStack(request, None)


@contextlib.contextmanager
def pack_process(
    pack: Path,
    stack: str = "check",
    python: str | None = None,
    env: Mapping[str, str] | None = None,
) -> Iterator[analyzer_pb2_grpc.AnalyzerStub]:
    """Start the pack as the Pulumi CLI does and yield a gRPC stub; kill the process after.

    The CLI runs ``python -u -m pulumi.policy <engine address> <pack folder>`` with
    ``PULUMI_PROJECT``, ``PULUMI_STACK``, ``PULUMI_DRY_RUN`` and ``PULUMI_CONFIG`` set; the pack
    prints its port on stdout and serves on 127.0.0.1.

    Raises:
        RuntimeError: when the pack exits or prints no port within 60 s (its stderr attached).
    """
    import grpc

    environment = {
        **os.environ,
        "PULUMI_PROJECT": NAMESPACE,
        "PULUMI_STACK": stack,
        "PULUMI_DRY_RUN": "true",
        "PULUMI_CONFIG": "{}",
        **(env or {}),
    }
    command = [python or sys.executable, "-u", "-m", "pulumi.policy", "127.0.0.1:0", str(pack)]
    process = subprocess.Popen(
        command,
        cwd=pack,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert process.stdout is not None and process.stderr is not None
        selector = selectors.DefaultSelector()
        selector.register(process.stdout, selectors.EVENT_READ)
        ready = selector.select(timeout=PACK_START_TIMEOUT_SECONDS)
        line = process.stdout.readline().decode().strip() if ready else ""
        if not line.isdigit():
            process.kill()
            raise RuntimeError(
                f"policy pack printed no port ({line!r}): {process.stderr.read().decode()}"
            )
        channel = grpc.insecure_channel(f"127.0.0.1:{line}")
        grpc.channel_ready_future(channel).result(timeout=PACK_START_TIMEOUT_SECONDS)
        try:
            yield analyzer_pb2_grpc.AnalyzerStub(channel)
        finally:
            channel.close()
    finally:
        process.kill()
        process.wait()
