"""Test helpers: run components under the recording engine, edit renders, a loopback HTTP peer.

Example::

    with recording_engine("test") as engine:
        engine.run(lambda: AgentSandbox("kubernetes", args))
    template = one(engine.resources, SANDBOX_TEMPLATE_TYPE)
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import gc
import http.server
import json
import os
import shutil
import sys
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from typer.testing import CliRunner

from sandboxkit.cli import app
from sandboxkit.config import ConfigSource, load_stack, read_stack_file
from sandboxkit.effective_egress import EffectiveEgress, Grant
from sandboxkit.gate import Analyzer
from sandboxkit.project import stack_file
from sandboxkit.render import (
    Recorder,
    RenderedResource,
    RenderedStack,
    render_source,
    render_stack,
)
from sandboxkit.targets import TARGET_MODULES, get_target

_frozen_with_modules = 0


def freeze_new_imports() -> None:
    """When modules were imported since the last call: collect once, then freeze what is left.

    A target's first render in a process imports its cloud SDK's services (hundreds of
    thousands of objects that live as long as the process). Frozen (``gc.freeze``), they are
    skipped by every later collection; left young, every full collection walked them all
    again (0.2-0.3 s each; 15-20% of a render-heavy test file's CPU). The collection first
    frees the garbage of the work so far, which freezing would keep forever. Cheap when
    nothing was imported: one length comparison.
    """
    global _frozen_with_modules  # noqa: PLW0603 - the process's one freezing point
    if len(sys.modules) != _frozen_with_modules:
        gc.collect()
        gc.freeze()
        _frozen_with_modules = len(sys.modules)


# Environment variables that make rich draw progress on a pipe: unset for a real process whose
# piped output is asserted.
PROGRESS_ENV = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


@dataclass(frozen=True)
class Ran:
    """What a command line run gave: exit code, standard output, standard error (text)."""

    returncode: int
    stdout: str
    stderr: str


def invoke_cli(*args: str, cwd: Path, env: Mapping[str, str] | None = None) -> Ran:
    """``sandboxkit ARGS`` run in this process from folder ``cwd`` with ``env`` set meanwhile.

    The command's own exit codes come back as ``returncode`` (2 for a config problem, raised
    inside the command as ``typer.Exit``); any other exception is raised again, so a test that
    expects an exit code fails with the traceback a user would have seen. Seconds of CPU less
    than a new interpreter, which imports the cloud SDKs again; each command keeps at least one
    test of its real process (``python -m sandboxkit``) for the console-script entry point.
    """
    with contextlib.chdir(cwd):
        result = CliRunner().invoke(app, list(args), env=dict(env or {}))
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Ran(result.exit_code, result.stdout, result.stderr)


# Set (to anything) to rewrite the golden files after a deliberate change of the kit's output.
UPDATE_GOLDEN = "SANDBOXKIT_UPDATE_GOLDEN"


def assert_golden_text(path: Path, text: str) -> None:
    """``text`` equals the golden file ``path`` byte for byte; with ``UPDATE_GOLDEN`` set in
    the environment the file is written first (a deliberate change, reviewed in its diff)."""
    if os.environ.get(UPDATE_GOLDEN):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no golden file {path}: run with {UPDATE_GOLDEN}=1 to record it"
    golden = path.read_bytes()
    if text.encode() != golden:
        diff = difflib.unified_diff(
            golden.decode().splitlines(keepends=True),
            text.splitlines(keepends=True),
            fromfile=str(path),
            tofile="output",
        )
        raise AssertionError(f"the output differs from {path.name}:\n" + "".join(diff))


class RememberingAnalyzer:
    """An ``Analyzer`` that answers a repeated per-resource ``Analyze`` from memory.

    ``Analyze`` sees one resource only (type, URN, name, parent, properties) and the pack config
    last sent with ``Configure``: the same request under the same config gets the same
    diagnostics. Tests that check many copies of one stack, each with one resource or one
    config key weakened (the mutation table), analyze each unchanged resource once instead of
    once per copy. The key is both messages' deterministic serialization; each answer is a
    fresh copy of the first (``crossguard.analyze`` fills in a diagnostic's URN in place).
    ``AnalyzeStack``, ``Configure`` and ``GetAnalyzerInfo`` always go to ``inner``. ``asked``
    and ``answered`` count the ``Analyze`` calls and those answered from memory.
    """

    def __init__(self, inner: Analyzer) -> None:
        self.inner = inner
        self.asked = 0
        self.answered = 0
        self._config = b""
        self._answers: dict[tuple[bytes, bytes], tuple[type[Any], bytes]] = {}

    def GetAnalyzerInfo(self, request: Any) -> Any:  # noqa: N802 - gRPC method names
        """Forward to ``inner``."""
        return self.inner.GetAnalyzerInfo(request)

    def Configure(self, request: Any) -> Any:  # noqa: N802
        """Forward to ``inner`` and remember the config the next answers are valid under."""
        self._config = request.SerializeToString(deterministic=True)
        return self.inner.Configure(request)

    def Analyze(self, request: Any) -> Any:  # noqa: N802
        """``inner``'s answer to the first identical request under the current config."""
        self.asked += 1
        key = (self._config, request.SerializeToString(deterministic=True))
        if key in self._answers:
            self.answered += 1
        else:
            response = self.inner.Analyze(request)
            self._answers[key] = (type(response), response.SerializeToString())
        kind, raw = self._answers[key]
        return kind.FromString(raw)

    def AnalyzeStack(self, request: Any) -> Any:  # noqa: N802
        """Forward to ``inner``: the stack-wide policies see every resource each time."""
        return self.inner.AnalyzeStack(request)


def of_type(resources: Iterable[RenderedResource], type_token: str) -> list[RenderedResource]:
    """The resources of one type token, in registration order."""
    return [r for r in resources if r.type == type_token]


def one(resources: Iterable[RenderedResource], type_token: str) -> RenderedResource:
    """The only resource of ``type_token``. Raises ``AssertionError`` unless exactly one."""
    found = of_type(resources, type_token)
    assert len(found) == 1, f"expected one {type_token}, found {[r.name for r in found]}"
    return found[0]


def named(resources: Iterable[RenderedResource], name: str) -> RenderedResource:
    """The resource with logical name ``name``. Raises ``AssertionError`` unless exactly one."""
    found = [r for r in resources if r.name == name]
    assert len(found) == 1, f"expected one resource named {name}, found {len(found)}"
    return found[0]


def build_target(
    engine: Recorder,
    target: str,
    settings: Mapping[str, Any],
    profile: Mapping[str, Any] | None = None,
    *,
    environment: str = "prod",
    secrets: Iterable[str] = (),
) -> list[RenderedResource]:
    """Validate a one-target config as stack ``test`` and build the target under ``engine``.

    ``settings`` are the ``sandboxkit:<target>`` values and ``profile`` the
    ``sandboxkit:profile`` values (default profile when ``None``), both in their camelCase
    config form. ``secrets`` names the settings (``webhookSecret``) given as if declared
    ``secure:`` in a stack file. The component is named ``target``, as ``program.main`` names
    it. Returns every resource registered so far.

    Raises:
        ConfigError: the config does not validate (as ``load_stack``).
    """
    values: dict[str, Any] = {
        "environment": environment,
        "targets": [target],
        target: dict(settings),
    }
    if profile is not None:
        values["profile"] = dict(profile)
    secret_paths = frozenset(f"{target}.{key}" for key in secrets)
    spec = load_stack(ConfigSource(values=values, secret_paths=secret_paths), "test")
    engine.run(lambda: get_target(target).build(spec.plans[target]))
    return engine.resources


# Pass as ``value`` to ``with_input`` to remove the key instead of setting it.
REMOVE = object()


def with_input(
    rendered: RenderedStack, name: str, path: Sequence[str | int], value: Any
) -> RenderedStack:
    """A copy of ``rendered`` with one input of resource ``name`` set (or ``REMOVE``d).

    ``path`` walks the wire-form inputs: keys for mappings, indexes for lists, e.g.
    ``("spec", "podTemplate", "spec", "containers", 0, "securityContext", "privileged")``.
    Missing mappings along the path are created.
    """
    target = named(rendered.resources, name)
    inputs = copy.deepcopy(dict(target.inputs))
    node: Any = inputs
    for step in path[:-1]:
        node = node.setdefault(step, {}) if isinstance(step, str) else node[step]
    if value is REMOVE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    changed = replace(target, inputs=inputs)
    return replace(
        rendered, resources=tuple(changed if r is target else r for r in rendered.resources)
    )


def without(rendered: RenderedStack, name: str) -> RenderedStack:
    """A copy of ``rendered`` without resource ``name``."""
    target = named(rendered.resources, name)
    return replace(rendered, resources=tuple(r for r in rendered.resources if r is not target))


def stack_values(project_dir: Path, stack: str) -> dict[str, Any]:
    """An editable copy of a stack file's ``sandboxkit:*`` values (``secure:`` left unknown)."""
    return copy.deepcopy(dict(read_stack_file(stack_file(project_dir, stack)).values))


OPEN_EGRESS_REFUSED_BY = frozenset(
    name for name in TARGET_MODULES if (accepts := get_target(name).accepts) and not accepts.open
)
"""Targets whose spec refuses ``profile.egress.mode: open`` at config load (exit 2), as each
declares (``TargetSpec.accepts``): azure-sessions and cloudflare."""


def open_egress(values: dict[str, Any], prefix: str = "") -> None:
    """Set ``profile.egress`` to open in ``values`` and drop the targets that refuse it.

    ``prefix`` is ``""`` for ``stack_values`` dicts and ``"sandboxkit:"`` for a stack file's
    ``config`` mapping.
    """
    values[f"{prefix}profile"]["egress"] = {"mode": "open"}
    values[f"{prefix}targets"] = [
        target for target in values[f"{prefix}targets"] if target not in OPEN_EGRESS_REFUSED_BY
    ]


_SHIPPED: dict[tuple[Path, str, bytes, bytes], RenderedStack] = {}


def shipped_render(project_dir: Path, stack: str) -> RenderedStack:
    """``render_stack(project_dir, stack)``, rendered once per process for the exact bytes of
    the stack file and Pulumi.yaml, and handed out as a deep copy (a test may edit what it
    gets): a dozen tests read the shipped prod, dev and staging renders, 0.1-0.3 s each.
    Tests about the render itself call ``render_stack``."""
    key = (
        project_dir.resolve(),
        stack,
        stack_file(project_dir, stack).read_bytes(),
        (project_dir / "Pulumi.yaml").read_bytes(),
    )
    if key not in _SHIPPED:
        _SHIPPED[key] = render_stack(project_dir, stack)
    return copy.deepcopy(_SHIPPED[key])


def render_values(project_dir: Path, stack: str, values: dict[str, Any]) -> RenderedStack:
    """Render config values offline as stack ``stack`` (e.g. a weakened copy of its file)."""
    return render_source(project_dir, stack, ConfigSource(values=values))


@dataclass(frozen=True)
class RecordedRequest:
    """One request a ``LoopbackHTTP`` received: method, raw path (query included), headers, body."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class LoopbackServer:
    """An HTTP server on ``127.0.0.1`` (a free port, ``port``) serving the request handler
    class ``_handler()`` returns from a daemon thread until ``close()`` (or the end of a
    ``with`` block) shuts it down and frees the port. Subclasses set what their handler reads
    before calling ``__init__``."""

    def __init__(self) -> None:
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, args=(0.05,), daemon=True).start()

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        raise NotImplementedError

    def close(self) -> None:
        """Stop serving and free the port."""
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class LoopbackHTTP(LoopbackServer):
    """A loopback HTTP stand-in for a service the code under test calls (a control plane).

    Routes map ``(method, path)`` (the raw request path, query included) to a queue of
    ``(status, headers, body)`` responses: each request takes the next one, and the last repeats.
    A request with no route gets 404 with an empty body. Every request is recorded, in arrival
    order, in ``requests``. Binds ``127.0.0.1`` on a free port (``url`` is
    ``http://127.0.0.1:<port>``) and serves GET, POST, PUT and DELETE from a daemon thread until
    ``close()`` (or the end of a ``with`` block) shuts it down and frees the port.

    Example::

        with LoopbackHTTP() as plane:
            plane.answer("GET", "/v1/jobs/1", 200, {"commands": []})
            ...  # the code under test calls plane.url
        assert plane.calls() == [("GET", "/v1/jobs/1")]
    """

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self.routes: dict[tuple[str, str], list[tuple[int, dict[str, str], bytes]]] = {}
        super().__init__()
        self.url = f"http://127.0.0.1:{self.port}"

    def answer(
        self,
        method: str,
        path: str,
        status: int,
        body: Any = b"",
        headers: Mapping[str, str] | None = None,
    ) -> None:
        """Queue a response for ``method path``: ``body`` bytes as they are, else JSON-encoded."""
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.routes.setdefault((method, path), []).append((status, dict(headers or {}), raw))

    def calls(self) -> list[tuple[str, str]]:
        """``(method, path)`` of every request so far, in arrival order."""
        return [(r.method, r.path) for r in self.requests]

    def _respond(self, request: RecordedRequest) -> tuple[int, dict[str, str], bytes]:
        self.requests.append(request)
        queue = self.routes.get((request.method, request.path)) or [(404, {}, b"")]
        return queue.pop(0) if len(queue) > 1 else queue[0]

    def _handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        respond = self._respond

        class Handler(http.server.BaseHTTPRequestHandler):
            def _handle(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = RecordedRequest(self.command, self.path, dict(self.headers.items()), body)
                status, headers, raw = respond(request)
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            do_GET = do_POST = do_PUT = do_DELETE = _handle  # noqa: N815 - http.server names

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


# A valid stack file (kubernetes on a kind context): tests change one thing in it.
GOOD = """\
config:
  sandboxkit:environment: dev
  sandboxkit:targets: [kubernetes]
  sandboxkit:kubernetes:
    context: kind-test
    image: example.com/sandbox:1
"""


def kit_program(root: Path, main: str = "components") -> Path:
    """The kit's own program (``components/__main__.py``) copied to ``root/<main>/``, where a
    scratch project's Pulumi.yaml ``main`` names it (``"."``: the project folder)."""
    folder = root / main
    folder.mkdir(parents=True, exist_ok=True)
    entry = folder / "__main__.py"
    shutil.copy(Path(__file__).resolve().parent.parent / "components" / "__main__.py", entry)
    return entry


def make_project(tmp_path: Path, stacks: dict[str, str | bytes], name: str = "sandboxkit") -> Path:
    """A project folder: Pulumi.yaml (``stackConfigDir: stacks``), the kit's program and the
    given stack files."""
    (tmp_path / "Pulumi.yaml").write_text(
        f"name: {name}\nruntime: python\nmain: components/\nstackConfigDir: stacks\n"
    )
    kit_program(tmp_path)
    (tmp_path / "stacks").mkdir()
    for stack, text in stacks.items():
        path = tmp_path / "stacks" / f"Pulumi.{stack}.yaml"
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return tmp_path


def udp_of(effective: EffectiveEgress) -> tuple[Grant, ...]:
    """The connection grants of ``effective`` that admit UDP (so QUIC), in order."""
    return tuple(g for g in effective.connect if g.covers_protocol("udp"))
