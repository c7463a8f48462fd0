"""The offline render: run the Pulumi program under a recording engine built on Pulumi's mocks.

``render_stack`` returns every resource the program registers, with its inputs as the engine
sees them (camelCase, secrets still marked), and the stack outputs. ``recording_engine`` is
the same machinery for tests.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import gc
import json
import runpy
import sys
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from google.protobuf import json_format
from pulumi.runtime import config as runtime_config
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime import resource as runtime_resource
from pulumi.runtime.proto import engine_pb2, source_pb2
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from sandboxkit import program
from sandboxkit.config import NAMESPACE, ConfigSource, StackSpec, load_stack, stack_source
from sandboxkit.effective_egress import ResourceView
from sandboxkit.errors import REDACTED, ConfigError
from sandboxkit.guard import owner_of, target_views
from sandboxkit.mockcloud import CloudMocks
from sandboxkit.project import program_file, project_name, stack_environment
from sandboxkit.sdk_parts import import_partial_packages

UNKNOWN_TEXT = "[unknown]"

# The SDK's own capture of a registration's stack trace (``registration_stack_traces``).
_SDK_STACK_TRACE = runtime_resource._get_stack_trace  # noqa: SLF001


def is_secret_value(value: Any) -> bool:
    """Whether a wire-form value is a Pulumi secret wrapper."""
    return (
        isinstance(value, dict) and value.get(rpc._special_sig_key) == rpc._special_secret_sig  # noqa: SLF001
    )


def secret_wrap(value: Any) -> dict[str, Any]:
    """Wrap a plain value the way the engine marks a secret on the wire."""
    return {rpc._special_sig_key: rpc._special_secret_sig, "value": value}  # noqa: SLF001


def to_display(value: Any) -> Any:
    """Wire form to JSON for people: secrets ``"[secret]"``, unknowns ``"[unknown]"``, ints."""
    if is_secret_value(value):
        return REDACTED
    if isinstance(value, dict):
        sig = value.get(rpc._special_sig_key)  # noqa: SLF001
        if sig in (rpc._special_asset_sig, rpc._special_archive_sig):  # noqa: SLF001
            kind = "asset" if sig == rpc._special_asset_sig else "archive"  # noqa: SLF001
            detail = {k: to_display(v) for k, v in value.items() if k != rpc._special_sig_key}  # noqa: SLF001
            return {kind: detail}
        return {k: to_display(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_display(v) for v in value]
    if value == rpc.UNKNOWN:
        return UNKNOWN_TEXT
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def as_the_pack_reads(value: Any) -> Any:
    """Wire form as the policy pack reads it: a secret as its value (the engine hands a policy
    the values of secrets; the offline render's stand-in ``UNKNOWN_SECRET`` where it could not
    decrypt one), the rest as ``to_display`` shows it. A reader then follows a link through a
    secret as the gate does: a known value like any other, the stand-in as a link it cannot
    place ("cannot verify")."""
    if is_secret_value(value):
        return as_the_pack_reads(value.get("value"))
    if isinstance(value, list):
        return [as_the_pack_reads(item) for item in value]
    if isinstance(value, dict) and rpc._special_sig_key not in value:  # noqa: SLF001
        return {key: as_the_pack_reads(item) for key, item in value.items()}
    return to_display(value)


@dataclass(frozen=True)
class RenderedResource:
    """One registered resource.

    Attributes:
        urn: the URN the engine would assign.
        type: the type token, e.g. ``kubernetes:networking.k8s.io/v1:NetworkPolicy``.
        name: the logical name.
        parent: the parent's URN (the stack's URN for top-level components).
        custom: ``False`` for component resources.
        inputs: the inputs in wire form (camelCase keys; secrets wrapped, see ``to_display``).
    """

    urn: str
    type: str
    name: str
    parent: str | None
    custom: bool
    inputs: Mapping[str, Any]

    def display(self) -> dict[str, Any]:
        """The JSON shape of ``sandboxkit preview --json``."""
        return {
            "urn": self.urn,
            "type": self.type,
            "name": self.name,
            "parent": self.parent,
            "inputs": to_display(self.inputs),
        }


@dataclass(eq=False)
class RenderedStackResource:
    """A rendered resource as the guard's stack checks see one (``guard.StackResource``), so
    the render asks the gate's own questions of it: who owns it (``guard.owner_of``) and what
    a target's reader reads (``guard.target_views``). Made by ``stack_resources``.

    Attributes:
        resource: the rendered resource.
        parent: its parent among the same resources; ``None`` at the top (the stack's own
            resource is never recorded).
    """

    resource: RenderedResource
    parent: RenderedStackResource | None = None

    @property
    def resource_type(self) -> str:
        """The type token."""
        return self.resource.type

    @property
    def urn(self) -> str:
        """The resource's URN."""
        return self.resource.urn

    @property
    def name(self) -> str:
        """The logical name."""
        return self.resource.name

    @functools.cached_property
    def props(self) -> Mapping[str, Any]:
        """The inputs as the policy pack reads them (``as_the_pack_reads``): plain values,
        a secret as its value (the offline render's stand-in where it could not decrypt one),
        unknowns ``[unknown]``, assets and archives as ``{kind: {...}}``."""
        read: Mapping[str, Any] = as_the_pack_reads(self.resource.inputs)
        return read


def stack_resources(resources: Sequence[RenderedResource]) -> list[RenderedStackResource]:
    """``resources`` as the guard's stack checks see them (``RenderedStackResource``), in
    order, each linked to its parent among them; a parent outside them is ``None``."""
    views = {resource.urn: RenderedStackResource(resource) for resource in resources}
    for view in views.values():
        if view.resource.parent is not None:
            view.parent = views.get(view.resource.parent)
    return list(views.values())


class RecordingMonitor(mocks.MockMonitor):
    """A mock resource monitor that records every registration in order."""

    def __init__(self, cloud: CloudMocks) -> None:
        super().__init__(cloud)
        self.cloud = cloud
        self.registrations: list[RenderedResource] = []

    def RegisterResource(self, request: Any) -> Any:  # noqa: N802 - gRPC method name
        """Record the request as the engine would see it, then let the mocks answer."""
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self.registrations.append(
                RenderedResource(
                    urn=response.urn,
                    type=request.type,
                    name=request.name,
                    parent=request.parent or None,
                    custom=bool(request.custom),
                    inputs=json_format.MessageToDict(request.object),
                )
            )
        return response


@dataclass
class Recorder:
    """What a run under ``recording_engine`` registered, exported and warned."""

    monitor: RecordingMonitor
    outputs: dict[str, Any] = field(default_factory=dict)
    # (the target being built when it was logged, the URN it is attached to, the text)
    logged: list[tuple[str | None, str, str]] = field(default_factory=list)
    current_target: str | None = None

    @property
    def cloud(self) -> CloudMocks:
        """The mocks answering this render (what they invented: ``CloudMocks.invented``)."""
        return self.monitor.cloud

    @property
    def resources(self) -> list[RenderedResource]:
        """Registered resources in registration order."""
        return self.monitor.registrations

    def attributed_warnings(self) -> list[tuple[str | None, str]]:
        """Each warning logged, in log order, with the target it belongs to: the top-level
        component owning the resource it is attached to, else the target being built when it
        was logged; ``None`` for the program's own (before any target)."""
        by_urn = {view.urn: view for view in stack_resources(self.resources)}
        attributed = []
        for target, urn, text in self.logged:
            owner = owner_of(by_urn[urn]) if urn in by_urn else target
            attributed.append((owner, text))
        return attributed

    @property
    def warnings(self) -> list[str]:
        """The warnings logged: the program's own first, then each target's (in the order the
        targets were built), each group in log order. A warning attached to a resource is
        logged when its URN resolves, after every target's synchronous work, so plain log
        order would depend on the event loop's scheduling."""
        attributed = self.attributed_warnings()
        rank = {target: i for i, target in enumerate(dict.fromkeys(t for t, _ in attributed))}
        rank[None] = -1
        return [text for target, text in sorted(attributed, key=lambda pair: rank[pair[0]])]

    def run(self, program: Callable[[], Any]) -> Any:
        """Run ``program`` to completion, then resolve the stack outputs into ``outputs``.

        The cyclic garbage collector is paused meanwhile (``collector_paused``).
        """
        result: dict[str, Any] = {}

        async def body() -> None:
            result["value"] = program()
            root = settings.get_root_resource()
            exported = getattr(root, "outputs", {})
            for name, value in exported.items():
                self.outputs[name] = await _resolve(value)

        with collector_paused():
            _sync_await(run_pulumi_func(body))
        return result.get("value")


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector inside the block; restore its state after.

    A render imports the cloud SDKs' service packages (hundreds of thousands of objects: every
    resource's args and output classes), and each of the collections those allocations trigger
    walks every object alive: measured on prod, 40% of the render's CPU went to collections
    that freed almost nothing (benchmarks/README.md). What the render leaves as cyclic garbage
    is collected after, by the next collection.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def collector_off_until_exit() -> None:
    """For a process that renders and exits (the ``sandboxkit`` command, never a test
    process): no cyclic garbage collection from now on, and none at exit.

    After a render every object the SDK imports made is young, so the first collection after
    ``collector_paused`` would walk them all, and the interpreter's collection at exit walks
    them again (about 2 s of CPU for prod). A one-shot command makes little cyclic garbage
    (the peak memory did not move, benchmarks/README.md); at exit every object is moved to the
    permanent generation (``gc.freeze``), which that last collection skips.
    """
    gc.disable()
    atexit.register(gc.freeze)


async def _resolve(value: Any) -> Any:
    if isinstance(value, pulumi.Output):
        plain = await _resolve(await value.future(with_unknowns=True))
        return secret_wrap(plain) if await value.is_secret() else plain
    if isinstance(value, dict):
        return {k: await _resolve(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [await _resolve(v) for v in value]
    if isinstance(value, pulumi.Resource):
        return await _resolve(getattr(value, "urn", None))
    return None if value is rpc.UNKNOWN or type(value).__name__ == "Unknown" else value


class _RecordingEngine:
    """The engine's log service under the mocks: keeps each warning and error (as the
    render's warnings) with the URN it is attached to; debug and info lines are dropped."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder

    def Log(self, request: Any) -> None:  # noqa: N802 - gRPC method name
        """Record ``request`` (an ``engine_pb2.LogRequest``) at warning level or above."""
        if request.severity >= engine_pb2.WARNING:
            recorder = self.recorder
            recorder.logged.append((recorder.current_target, request.urn, request.message))


def _config_for_runtime(source: ConfigSource) -> tuple[dict[str, str], list[str]]:
    values = {
        f"{NAMESPACE}:{key}": json.dumps(value) if isinstance(value, dict | list) else str(value)
        for key, value in source.values.items()
    }
    secret_keys = sorted({f"{NAMESPACE}:{p.split('.')[0]}" for p in source.secret_paths})
    return values, secret_keys


@contextlib.contextmanager
def registration_stack_traces(captured: bool) -> Iterator[None]:
    """Whether Pulumi's SDK captures the Python stack for each resource registration (its
    own behaviour) or sends an empty one, inside the block; restored after.

    The SDK walks the whole stack for every registration (``traceback.extract_stack`` and one
    protobuf frame per level, ``pulumi.runtime.resource._get_stack_trace``) and sends it in
    ``RegisterResourceRequest.stackTrace`` / ``sourcePosition``, where a real engine shows
    where a resource was declared. The mock monitor never reads either field, and
    ``RecordingMonitor`` records the type, name, parent and inputs only: the walk cost 20% of
    an offline render of prod (0.12 s of 0.6 s) and 10-30% under a test's deeper stack, for
    nothing. ``recording_engine`` turns it off unless asked.
    """
    saved = runtime_resource._get_stack_trace  # noqa: SLF001
    runtime_resource._get_stack_trace = _SDK_STACK_TRACE if captured else source_pb2.StackTrace  # noqa: SLF001
    try:
        yield
    finally:
        runtime_resource._get_stack_trace = saved  # noqa: SLF001


@contextlib.contextmanager
def recording_engine(
    stack: str,
    source: ConfigSource | None = None,
    project: str = NAMESPACE,
    *,
    stack_traces: bool = False,
) -> Iterator[Recorder]:
    """Install recording mocks (``preview=False``) and the stack's config; restore all after.

    Args:
        stack: the stack name the program sees.
        source: the ``sandboxkit:*`` config the program reads (none when omitted).
        project: the project name in URNs.
        stack_traces: whether the SDK captures each registration's stack trace, which the
            recorder never reads (``registration_stack_traces``).

    Yields:
        A ``Recorder``; call ``recorder.run(fn)`` to run a program to completion.

    SDK packages that import every module in their ``__init__`` (``sdk_parts.PARTIAL_PACKAGES``)
    are installed, when not imported yet, so that the program loads only the modules it names.
    """
    with (
        registration_stack_traces(captured=stack_traces),
        _recording_engine(stack, source, project) as recorder,
    ):
        yield recorder


@contextlib.contextmanager
def _recording_engine(stack: str, source: ConfigSource | None, project: str) -> Iterator[Recorder]:
    """The mocks and the config of ``recording_engine``."""
    import_partial_packages()
    saved_settings = dict(vars(settings.SETTINGS))
    saved_root = settings.ROOT.get()
    saved_config = dict(runtime_config.CONFIG.get())
    saved_secret_keys = set(runtime_config._SECRET_KEYS.get())  # noqa: SLF001
    cloud = CloudMocks(stack)
    monitor = RecordingMonitor(cloud)
    recorder = Recorder(monitor=monitor)
    try:
        settings.ROOT.set(None)
        values, secret_keys = _config_for_runtime(source or ConfigSource(values={}))
        runtime_config.set_all_config(values, secret_keys)
        mocks.set_mocks(
            cloud,
            project=project,
            stack=stack,
            preview=False,
            monitor=monitor,
        )
        settings.SETTINGS.engine = _RecordingEngine(recorder)
        yield recorder
    finally:
        for key, value in saved_settings.items():
            setattr(settings.SETTINGS, key, value)
        settings.ROOT.set(saved_root)
        runtime_config.set_all_config(saved_config, list(saved_secret_keys))


@dataclass(frozen=True)
class RenderedStack:
    """The result of ``render_stack``.

    Attributes:
        stack: stack name.
        spec: the validated stack.
        resources: registered resources, sorted by URN.
        outputs: stack outputs in wire form (secrets wrapped).
        warnings: warnings the program logged (e.g. a guest-visible execution role).
        placeholders: dotted paths of outputs (``aws-microvm.webhookUrl``) holding a value the
            cloud computes at deploy time, which the render shows as a mock value derived from
            the stack's settings (its region, project, location) and never the real one.
    """

    stack: str
    spec: StackSpec
    resources: tuple[RenderedResource, ...]
    outputs: Mapping[str, Any]
    warnings: tuple[str, ...]
    placeholders: tuple[str, ...] = ()

    def display(self) -> dict[str, Any]:
        """The JSON document of ``sandboxkit preview --json``."""
        return {
            "stack": self.stack,
            "resources": [r.display() for r in self.resources],
            "outputs": to_display(self.outputs),
        }

    def stack_resources(self) -> tuple[RenderedStackResource, ...]:
        """The resources as the guard's stack checks see them (``render.stack_resources``),
        made once per render."""
        return self._stack_resources

    @functools.cached_property
    def _stack_resources(self) -> tuple[RenderedStackResource, ...]:
        return tuple(stack_resources(self.resources))

    @functools.cached_property
    def _owners(self) -> Mapping[str, str]:
        return {view.urn: owner_of(view) for view in self._stack_resources}

    def target_of(self, resource: RenderedResource) -> str | None:
        """The listed target whose component owns ``resource``, directly or through its
        parents (``guard.owner_of``); ``None`` for what the project's program created
        outside every component."""
        owner = self._owners[resource.urn]
        return owner if owner in self.spec.targets else None

    def target_views(self, target: str) -> list[ResourceView]:
        """What ``target``'s egress reader reads of this render (``guard.target_views``):
        the resources its component created and those outside every component, as the
        gate's SBX-NET-008 reads them."""
        return target_views(self._stack_resources, target)


def render_stack(
    project_dir: Path, stack: str, on_target: Callable[[str], None] | None = None
) -> RenderedStack:
    """Run the program offline for ``stack`` and record everything it would create.

    Args:
        project_dir: folder with Pulumi.yaml.
        stack: stack name; its file is ``<stackConfigDir>/Pulumi.<stack>.yaml``.
        on_target: called with each listed target's name as its rendering starts.

    Raises:
        ConfigError: when the stack file is missing or its config is bad.
    """
    return render_source(project_dir, stack, stack_source(project_dir, stack), on_target)


def render_source(
    project_dir: Path,
    stack: str,
    source: ConfigSource,
    on_target: Callable[[str], None] | None = None,
) -> RenderedStack:
    """Like ``render_stack`` with the ``sandboxkit:*`` config given directly (tests, mutations)."""
    spec, share = render_share(project_dir, stack, source, on_target=on_target)
    return joined(stack, spec, [share])


@dataclass(frozen=True)
class RenderedShare:
    """What one run of the program rendered of a stack when it built only some of the stack's
    targets (``program.main``'s ``targets``); ``joined`` makes the stack's render of shares
    that built each target once. Plain data, so another process can send it (pickle).

    Attributes:
        targets: the targets this share built, in the stack's order.
        resources: their resources, in registration order.
        outputs: their stack outputs (one per target), in wire form.
        warnings: ``(target, text)`` in log order (``Recorder.attributed_warnings``); the
            program's own have target ``None``.
        invented: the texts the mocks made up (``CloudMocks.invented``).
    """

    targets: tuple[str, ...]
    resources: tuple[RenderedResource, ...]
    outputs: Mapping[str, Any]
    warnings: tuple[tuple[str | None, str], ...]
    invented: frozenset[str]


def render_share(
    project_dir: Path,
    stack: str,
    source: ConfigSource,
    targets: Collection[str] | None = None,
    on_target: Callable[[str], None] | None = None,
) -> tuple[StackSpec, RenderedShare]:
    """Run the project's own program (``project.program_file``: Pulumi.yaml ``main``) for
    ``stack`` under the recording engine, in a project of Pulumi.yaml's name, building only
    ``targets`` (default: all it lists); ``(the validated stack, the share)``.

    What the program adds around the components (resources, stack transformations) is
    recorded as ``pulumi preview`` would pass it to the policy pack. A program that builds
    the components through ``sandboxkit.program.main`` builds only ``targets`` (see
    ``joined`` for one that builds more).

    Raises:
        ConfigError: when the stack's config is bad (the whole stack is validated), or
            Pulumi.yaml names no program (after the stack's own problems).
    """
    try:
        entry = program_file(project_dir)
    except ConfigError:
        # The stack file's own problems first, as ``pulumi preview`` would give them once
        # the program runs.
        load_stack(source, stack, stack_environment(project_dir, stack))
        raise
    state = program.Rendering(project_dir, targets=targets)
    with recording_engine(stack, source, project_name(project_dir)) as recorder:

        def starting(target: str) -> None:
            recorder.current_target = target
            if on_target is not None:
                on_target(target)

        state.on_target = starting
        with program.rendering(state):
            recorder.run(lambda: run_program(entry))
    spec = state.spec or load_stack(source, stack, stack_environment(project_dir, stack))
    return spec, RenderedShare(
        targets=tuple(t for t in spec.targets if targets is None or t in targets),
        resources=tuple(recorder.resources),
        outputs=dict(recorder.outputs),
        warnings=tuple(recorder.attributed_warnings()),
        invented=frozenset(recorder.cloud.invented),
    )


def run_program(entry: Path) -> None:
    """Run a Python program file as Pulumi's language host does: as ``__main__``, with its
    folder first on ``sys.path`` (restored after)."""
    saved = list(sys.path)
    sys.path.insert(0, str(entry.parent))
    try:
        runpy.run_path(str(entry), run_name="__main__")
    finally:
        sys.path[:] = saved


def joined(stack: str, spec: StackSpec, shares: Sequence[RenderedShare]) -> RenderedStack:
    """The render of ``stack`` (validated: ``spec``) from ``shares`` that together built each
    of its targets once.

    Each target's resources and output come from the share that built it; what the program
    registers and exports outside every target's component (and each whole render of a
    program that builds its components without ``program.main``'s share of the targets) from
    the first share only. Its warnings are the program's own (from the first share), then each
    target's in the stack's order; its outputs follow the stack's order, then the program's
    own; its resources are sorted by URN (registrations arrive from the SDK's threads in no
    fixed order), so the same stack gives the same render however its targets were shared out.
    """
    owner = {target: share for share in shares for target in share.targets}
    outputs = {target: owner[target].outputs[target] for target in spec.targets}
    outputs.update({k: v for k, v in shares[0].outputs.items() if k not in spec.targets})
    program_warnings = [text for target, text in shares[0].warnings if target is None]
    target_warnings = [
        text for t in spec.targets for target, text in owner[t].warnings if target == t
    ]
    invented: set[str] = set().union(*(share.invented for share in shares))
    kept: list[RenderedResource] = []
    for index, share in enumerate(shares):
        for view in stack_resources(share.resources):
            target = owner_of(view)
            if target in share.targets or (target not in spec.targets and index == 0):
                kept.append(view.resource)
    return RenderedStack(
        stack=stack,
        spec=spec,
        resources=tuple(sorted(kept, key=lambda r: r.urn)),
        outputs=outputs,
        warnings=(*program_warnings, *target_warnings),
        placeholders=placeholder_paths(to_display(outputs), invented),
    )


def placeholder_paths(outputs: Any, invented: set[str], path: str = "") -> tuple[str, ...]:
    """Dotted paths (list items as ``[i]``) of the text values in ``outputs`` that hold one of
    the ``invented`` texts (``CloudMocks.invented``): a mock id, ARN or endpoint."""
    if isinstance(outputs, dict):
        items = [(f"{path}.{k}" if path else str(k), v) for k, v in outputs.items()]
    elif isinstance(outputs, list):
        items = [(f"{path}[{i}]", v) for i, v in enumerate(outputs)]
    else:
        held = isinstance(outputs, str) and any(text in outputs for text in invented)
        return (path,) if held else ()
    return tuple(p for key, value in items for p in placeholder_paths(value, invented, key))
