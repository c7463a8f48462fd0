"""Property tests over generated stack files and config trees (issue 15): whatever the input,
reading and validating a stack ends in a spec (exit 0) or a ``ConfigError`` (exit 2), within a
bounded time; never any other exception (the CLI's exit 70). Most examples run in-process
(cheap); a small sample runs the whole command.

The number of examples comes from the Hypothesis profile (``tests/conftest.py``): ``ci``
(``HYPOTHESIS_PROFILE=ci``, as ``.ci/run`` sets it) runs at least 1,000 of each.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandboxkit.config import load_stack_file
from sandboxkit.errors import ConfigError
from support import invoke_cli

BUDGET_SECONDS = 1.0  # CPU seconds one example may take (the reader's bounds keep it far below)

KEYS = [
    "sandboxkit:environment",
    "sandboxkit:targets",
    "sandboxkit:profile",
    "sandboxkit:kubernetes",
    "sandboxkit:gcp-cloudrun",
    "sandboxkit:cloudflare",
    "profile",
    "environment",
    "sandboxkit:fire",
    "aws:region",
    "egress",
    "mode",
    "allow",
    "limits",
    "vcpu",
    "memoryMiB",
    "maxLifetimeSeconds",
    "pool",
    "ready",
    "image",
    "context",
    "secure",
    "1",
    "<<",
]
PLAIN = [
    "dev",
    "prod",
    "kubernetes",
    "allowlist",
    "deny",
    "010",
    "1:00:00",
    "yes",
    "on",
    "0x1F",
    "0o17",
    "1_000",
    "~",
    "null",
    "true",
    "2025-13-45",
    "'quoted'",
    '"{x"',
    '"[1"',
    "'[\"kubernetes\"]'",
    "!!binary aGk=",
    "!!python/object/apply:os.system [echo]",
    "&a x",
    "*a",
    "*undefined",
    "9" * 5000,
    "-9223372036854775809",
    "18446744073709551616",
    "1e400",
    ".nan",
    "-.inf",
    "{a: 1}",
    "[kubernetes, {a: 1}]",
    "[" * 70 + "]" * 70,
    '"\\ud800"',
    '"\\xff"',
    "pypi.org:443",
    "[pypi.org:443, '*.example.com']",
    "{secure: AAAA}",
    "{secure: 5}",
]


SCALARS = st.one_of(
    st.sampled_from(PLAIN),
    st.integers(min_value=-(2**70), max_value=2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(max_size=12).map(json.dumps),  # a JSON string is a YAML double-quoted one
)
# A tree of mappings (dict), lists (list) and scalar texts, rendered by ``render``. Built once:
# a strategy built inside a draw is built and validated again for every example (most of this
# file's CPU went there).
BLOCKS = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
        st.lists(inner, max_size=4),
    ),
    max_leaves=12,
)
ENTRIES = st.dictionaries(st.sampled_from(KEYS), BLOCKS, max_size=4)
DAMAGE = st.sampled_from(["none", "none", "none", "byte", "utf16", "dup", "cut"])


def render(value: Any, indent: int) -> str:
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return " {}\n"
        return "\n" + "".join(f"{pad}{k}:{render(v, indent + 1)}" for k, v in value.items())
    if isinstance(value, list):
        if not value:
            return " []\n"
        return "\n" + "".join(f"{pad}-{render(v, indent + 1)}" for v in value)
    return f" {value}\n"


@st.composite
def stack_files(draw: st.DrawFn) -> bytes:
    """A stack file: a mostly-valid stack with generated entries, then maybe byte damage."""
    body: dict[str, Any] = {
        "sandboxkit:environment": "dev",
        "sandboxkit:targets": "[kubernetes]",
        "sandboxkit:kubernetes": {"context": "kind-test", "image": "example.com/sandbox:1"},
    }
    body.update(draw(ENTRIES))
    text = "config:" + render(body, 1)
    damage = draw(DAMAGE)
    data = text.encode()
    if damage == "byte":
        at = draw(st.integers(min_value=0, max_value=len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=3)) + data[at:]
    elif damage == "utf16":
        data = text.encode("utf-16")
    elif damage == "dup":
        lines = text.splitlines(keepends=True)
        at = draw(st.integers(min_value=1, max_value=len(lines) - 1))
        data = "".join([*lines[: at + 1], lines[at], *lines[at + 1 :]]).encode()
    elif damage == "cut":
        data = data[: draw(st.integers(min_value=0, max_value=len(data)))]
    return data


JSON_LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False),
    st.sampled_from(["dev", "kubernetes", "allowlist", "pypi.org:443", "010", "{x", "", " "]),
    st.text(max_size=8),
)
CONFIG_TREES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.one_of(
        st.dictionaries(st.sampled_from([*KEYS[10:], "x"]), inner, max_size=4),
        st.lists(inner, max_size=4),
    ),
    max_leaves=16,
)


@pytest.fixture(scope="module")
def project() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "Pulumi.yaml").write_text("name: sandboxkit\nruntime: python\n")
        yield root


def outcome(root: Path, data: bytes) -> int:
    """The exit code the command line would give: 0 valid, 2 refused (anything else raises)."""
    (root / "Pulumi.t.yaml").write_bytes(data)
    started = time.process_time()
    try:
        load_stack_file(root, "t")
        code = 0
    except ConfigError as exc:
        assert exc.problems and all(p.key for p in exc.problems)
        code = 2
    assert time.process_time() - started < BUDGET_SECONDS
    return code


@settings(
    max_examples=1000, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(data=stack_files())
def test_any_stack_file_is_read_or_refused(project: Path, data: bytes) -> None:
    assert outcome(project, data) in (0, 2)


@settings(
    max_examples=1000, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(
    key=st.sampled_from(
        ["profile", "kubernetes", "targets", "environment", "gcp-cloudrun", "cloudflare"]
    ),
    tree=CONFIG_TREES,
    as_json_text=st.booleans(),
)
def test_any_config_tree_is_read_or_refused(
    project: Path, key: str, tree: Any, as_json_text: bool
) -> None:
    config: dict[str, Any] = {
        "sandboxkit:environment": "dev",
        "sandboxkit:targets": ["kubernetes"],
        "sandboxkit:kubernetes": {"context": "kind-test", "image": "example.com/sandbox:1"},
    }
    config[f"sandboxkit:{key}"] = json.dumps(tree) if as_json_text else tree
    data = yaml.safe_dump({"config": config}, allow_unicode=True).encode()
    assert outcome(project, data) in (0, 2)


# The whole command on a few generated files: the exit code and stderr a user sees. In this
# process (support.invoke_cli raises any other exception again, which the console script would
# turn into exit 70); preview's real process is tests/core/test_progress.py's.
@settings(max_examples=4, deadline=None, database=None, derandomize=True)
@given(data=stack_files())
def test_the_command_line_exits_0_or_2_without_a_traceback(project: Path, data: bytes) -> None:
    (project / "Pulumi.t.yaml").write_bytes(data)
    result = invoke_cli("preview", "--stack", "t", "--json", cwd=project)
    assert result.returncode in (0, 2), result.stderr
    assert "Traceback" not in result.stderr
