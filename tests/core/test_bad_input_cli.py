"""The command line on bad input (issue 15, section 1b): exit 2 naming the option, key or file;
a crash exits 70 and unwritable output 74, each in one line, never as the gate's exit 1."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import empty_pb2
from typer.testing import CliRunner

from sandboxkit import cli, gate
from sandboxkit.errors import ConfigError
from sandboxkit.gate.pack_config import lowered_levels, policy_config, read_pack_config
from support import make_project

REPO = Path(__file__).resolve().parents[2]
FINITE = (
    "a finite number, e.g. 8 (JSON has no NaN or Infinity, and a number beyond a 64-bit float, "
    "such as 1e400, reads as Infinity)"
)
COMPONENTS = REPO / "components"


def run_main(*args: str, stdout: Any = subprocess.PIPE, shell_suffix: str = "") -> Any:
    """``python -m sandboxkit ARGS`` as a user runs it (the console-script ``main``)."""
    env = {**os.environ, "PYTHONPATH": str(COMPONENTS)}
    env.pop(cli.DEBUG_ENV, None)
    command = [sys.executable, "-m", "sandboxkit", *args]
    if shell_suffix:
        line = " ".join(f"'{part}'" for part in command) + shell_suffix
        return subprocess.run(
            ["bash", "-c", line],
            check=False,
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    return subprocess.run(
        command,
        check=False,
        cwd=REPO,
        env=env,
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
    )


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli.app, list(args))


# -- a crash is not a verdict ----------------------------------------------------------------


def _crash(*_: Any, **__: Any) -> Any:
    raise TypeError("unhashable type: 'dict'")


def test_an_unexpected_error_exits_70_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "render_stacks", _crash)
    monkeypatch.delenv(cli.DEBUG_ENV, raising=False)
    monkeypatch.setattr(sys, "argv", ["sandboxkit", "preview", "--stack", "dev"])
    with pytest.raises(SystemExit) as caught:
        cli.main()
    assert caught.value.code == cli.EXIT_CRASH == 70
    assert capsys.readouterr().err == (
        "sandboxkit: internal error (exit 70, not a verdict on the stack): TypeError: "
        "unhashable type: 'dict'; set SANDBOXKIT_DEBUG=1 for the traceback\n"
    )


def test_the_debug_variable_adds_the_traceback(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "render_stacks", _crash)
    monkeypatch.setenv(cli.DEBUG_ENV, "1")
    monkeypatch.setattr(sys, "argv", ["sandboxkit", "preview", "--stack", "dev"])
    with pytest.raises(SystemExit) as caught:
        cli.main()
    assert caught.value.code == 70
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):")
    assert "in _crash" in err


# -- output that cannot be written -------------------------------------------------------------


def test_a_full_stdout_exits_74_in_one_line() -> None:
    with open("/dev/full", "w") as full:
        result = run_main("--version", stdout=full)
    assert result.returncode == cli.EXIT_OUTPUT == 74
    assert result.stderr == "sandboxkit: could not write the output: No space left on device\n"


def test_a_closed_stdout_exits_74_in_one_line() -> None:
    result = run_main("--version", shell_suffix=" >&-")
    assert result.returncode == 74
    assert result.stderr == "sandboxkit: could not write the output: stdout is closed\n"


def test_a_pipe_closed_early_exits_74_quietly() -> None:
    reader, writer = os.pipe()
    os.close(reader)  # the reader is gone before the first byte, as `| head -c0` leaves it
    try:
        result = run_main("--version", stdout=writer)
    finally:
        os.close(writer)
    assert (result.returncode, result.stderr) == (74, "")


def test_a_pipe_closed_after_part_of_a_large_write_raises_the_output_error() -> None:
    # Issue 31 item 16: `preview --json | head -c 10` exited 0 with the output cut: CPython's
    # buffered writer reported nothing once the reader left after the first part.
    reader, writer = os.pipe()

    def read_ten_and_leave() -> None:
        os.read(reader, 10)
        os.close(reader)

    leaving = threading.Thread(target=read_ten_and_leave)
    leaving.start()
    with os.fdopen(writer, "w") as stream:
        with pytest.raises(cli.OutputError) as caught:
            cli._GuardedStdout(stream).write("x" * 2_000_000)
        leaving.join()
        assert caught.value.args[0] == errno.EPIPE
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())  # nothing left to fail at close


# -- flags, help, version --------------------------------------------------------------------


def test_flags_are_flags_and_help_says_so() -> None:
    result = invoke("preview", "--help")
    assert result.exit_code == 0
    assert "--json                Print JSON instead of text." in result.stdout
    assert "<bool>" not in result.stdout
    refused = invoke("preview", "--stack", "dev", "--json", "true")
    assert refused.exit_code == 2
    assert "Error: Got unexpected extra argument(s) (true)" in refused.stderr


@pytest.mark.parametrize("written", ["JSON", "Sarif", "TEXT"])
def test_a_format_is_read_in_any_case(written: str) -> None:
    # Issue 31 item 18: --format JSON was refused; parsed, the command goes on to the stack.
    result = invoke("check", "--stack", "no-such", "--format", written, "--project-dir", str(REPO))
    assert result.exit_code == 2
    assert "--format" not in result.stderr
    assert "no-such" in result.stderr


def test_version_and_the_exit_codes_in_help() -> None:
    assert invoke("--version").stdout == "sandboxkit 0.1.0\n"
    help_text = " ".join(invoke("--help").stdout.split())
    assert (
        "Exit codes: 0 success; 1 a mandatory finding (check, checkov); 2 bad config, arguments "
        "or files (every bad key named), or a missing tool or package (the command to install "
        "it named); 70 an unexpected error in the kit (one line; "
        "SANDBOXKIT_DEBUG=1 prints the traceback); 74 the output could not be written (stdout "
        "closed or full, or a pipe closed early)." in help_text
    )


# -- files the commands write ----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["a-directory", "under-a-file", "no-such-folder"])
def test_an_out_that_cannot_be_written_exits_2_naming_it(kind: str, tmp_path: Path) -> None:
    if kind == "a-directory":
        out = tmp_path / "wrangler.json"
        out.mkdir()
        expected = "a file path that can be written (Is a directory)"
    else:
        if kind == "under-a-file":
            (tmp_path / "file").write_text("")
        out = tmp_path / "file" / "wrangler.json"
        # Issue 31 item 18: the folder was created, the mistake never said.
        expected = f"a file in a folder that exists (create {out.parent})"
    result = invoke(
        "cloudflare-config", "--stack", "prod", "--out", str(out), "--project-dir", str(REPO)
    )
    assert result.exit_code == 2
    assert (
        result.stderr == f"error: invalid input\n  --out: got {str(out)!r}; expected {expected}\n"
    )
    assert not (tmp_path / "file").is_dir()


@pytest.mark.parametrize(
    ("command", "out"),
    [
        ("pack-config", "stacks/Pulumi.victim.yaml"),
        ("pack-config", "Pulumi.yaml"),
        ("pack-config", "policy-packs/sandbox-guard/config/dev.json"),
        ("cloudflare-config", "stacks/Pulumi.victim.yaml"),
        ("cloudflare-config", "sandboxkit.yaml"),
    ],
)
def test_an_out_that_is_an_input_file_is_refused_and_left_alone(
    command: str, out: str, tmp_path: Path
) -> None:
    # Issue 31 item 17: pack-config --out stacks/Pulumi.victim.yaml replaced the stack file.
    root = make_project(tmp_path, {"victim": (REPO / "stacks/Pulumi.prod.yaml").read_bytes()})
    shutil.copytree(REPO / "policy-packs", root / "policy-packs")
    (root / "sandboxkit.yaml").write_text("environments: {victim: prod}\n")
    before = (root / out).read_bytes()
    written = str(root / out)
    result = invoke(command, "--stack", "victim", "--out", written, "--project-dir", str(root))
    assert (result.exit_code, (root / out).read_bytes()) == (2, before)
    assert result.stderr == (
        f"error: invalid input\n  --out: got {written!r}; expected a path that is none of the "
        f"files the command reads (this is {root / out}): write the config to a new file\n"
    )


def test_pack_config_writes_json_files_only(tmp_path: Path) -> None:
    out = tmp_path / "pc.yaml"
    result = invoke("pack-config", "--stack", "dev", "--out", str(out), "--project-dir", str(REPO))
    assert (result.exit_code, out.exists()) == (2, False)
    assert result.stderr == (
        f"error: invalid input\n  --out: got {str(out)!r}; expected a file ending in .json (the "
        "pack config is JSON, as pulumi preview --policy-pack-config reads it): e.g. "
        f"{tmp_path / 'pc.json'}\n"
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through any permission")
def test_an_out_without_permission_exits_2_naming_it(tmp_path: Path) -> None:
    folder = tmp_path / "locked"
    folder.mkdir(mode=0o500)
    out = folder / "wrangler.json"
    result = invoke(
        "cloudflare-config", "--stack", "prod", "--out", str(out), "--project-dir", str(REPO)
    )
    assert result.exit_code == 2
    assert f"--out: got {str(out)!r}; expected a file path that can be written" in result.stderr


# -- user text is printed literally ----------------------------------------------------------


def test_key_names_with_colons_are_printed_as_written(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.yaml").write_text("name: sandboxkit\nruntime: python\n")
    (tmp_path / "Pulumi.t.yaml").write_text(
        "config:\n  sandboxkit:fire: 1\n  sandboxkit:environment: '[bold]x'\n"
        "  sandboxkit:targets: [kubernetes]\n"
    )
    result = invoke("preview", "--stack", "t", "--project-dir", str(tmp_path))
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert "🔥" not in result.stderr
    assert lines[1].startswith("  sandboxkit:fire: got '[value not shown]'; expected no such key")
    assert lines[2] == "  sandboxkit:environment: got '[bold]x'; expected one of dev, staging, prod"


# -- the pack config -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def info() -> Any:
    analyzer = gate.InProcessAnalyzer(gate.pack_dir(REPO))
    return analyzer.GetAnalyzerInfo(empty_pb2.Empty())


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        pytest.param(
            {"all": []}, ["f: all: got []; expected advisory, mandatory or disabled"], id="list"
        ),
        pytest.param(
            {"sbx-log-001": {"minimumRetentionDay": 7}},
            [
                "f: sbx-log-001.minimumRetentionDay: got 7; expected a property of the policy "
                "(did you mean 'minimumRetentionDays'?); known: minimumRetentionDays"
            ],
            id="misspelt-threshold",
        ),
        pytest.param(
            {"sbx-log-001": {"minimumRetentionDays": -1}},
            ["f: sbx-log-001.minimumRetentionDays: got -1; expected a whole number at least 0"],
            id="negative-threshold",
        ),
        pytest.param(
            {"all": "remediate"},
            [
                "f: all: got 'remediate'; expected advisory, mandatory or disabled (remediate is "
                "for policies that fix resources; this pack's only validate, so write mandatory)"
            ],
            id="remediate-read-as-mandatory",
        ),
        pytest.param(
            {"sbx-net-001": {"allowedPorts": [0, 70000, -5, 443, 443]}},
            [
                "f: sbx-net-001.allowedPorts: got [0, 70000, -5, 443, 443]; expected a list that "
                "names each item once",
                "f: sbx-net-001.allowedPorts[0]: got 0; expected a whole number at least 1",
                "f: sbx-net-001.allowedPorts[1]: got 70000; expected a whole number at most 65535",
                "f: sbx-net-001.allowedPorts[2]: got -5; expected a whole number at least 1",
            ],
            id="ports-that-name-no-port",
        ),
        pytest.param(
            {"sbx-net-06": "advisory", "sbx-res-001": {"maxVcpu": -1, "maxMemoryMiB": "x"}},
            [
                "f: sbx-net-06: got 'advisory'; expected a policy of the pack or 'all' (did you "
                "mean 'sbx-net-006'?)",
                "f: sbx-res-001.maxMemoryMiB: got 'x'; expected a number",
                "f: sbx-res-001.maxVcpu: got -1; expected a number at least 0",
            ],
            id="misspelt-policy-and-schema-words",
        ),
    ],
)
def test_a_bad_pack_config_entry_is_named(
    info: Any, document: dict[str, Any], expected: list[str]
) -> None:
    with pytest.raises(ConfigError) as caught:
        policy_config(info, document, "f")
    assert [str(p) for p in caught.value.problems] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            '{"sbx-log-001": {"minimumRetentionDays": ' + "9" * 400 + "}}",
            "sbx-log-001.minimumRetentionDays: got '99999999999999999999... (400 digits)'; "
            "expected an integer that fits in 64 bits",
            id="400-digits",
        ),
        pytest.param(
            "[" * 100_000 + "]" * 100_000,
            "got '200000 characters'; expected JSON nested at most 64 deep",
            id="nested-brackets",
        ),
        *(
            pytest.param(
                '{"sbx-res-001": {"maxVcpu": ' + written + "}}",
                f"sbx-res-001.maxVcpu: got {shown}; expected {FINITE}",
                id=f"non-finite-{written}",
            )
            for written, shown in (
                ("NaN", ".nan"),
                ("Infinity", ".inf"),
                ("-Infinity", "-.inf"),
                ("1e400", ".inf"),
            )
        ),
    ],
)
def test_a_pack_config_beyond_the_bounds_is_named(text: str, expected: str, tmp_path: Path) -> None:
    path = tmp_path / "pack.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        read_pack_config(path)
    assert str(caught.value) == f"{path}: {expected}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            '{"all": "mandatory", "all": "advisory"}',
            ["all: got [mandatory, advisory]; expected each key once: it is given 2 times (a "
             "reader would silently keep the later one)"],
            id="duplicate-level",
        ),
        pytest.param(
            '{"sbx-net-06": "advisory", "sbx-res-001": {"maxVcpu": -1}}',
            ["sbx-net-06: got 'advisory'; expected a policy of the pack or 'all' (did you mean "
             "'sbx-net-006'?)",
             "sbx-res-001.maxVcpu: got -1; expected a number at least 0"],
            id="misspelt-policy-negative-threshold",
        ),
    ],
)  # fmt: skip
def test_a_bad_pack_config_exits_2_naming_every_entry(
    text: str, expected: list[str], tmp_path: Path
) -> None:
    path = tmp_path / "pack.json"
    path.write_text(text)
    result = invoke(
        "check", "--stack", "dev", "--no-checkov", "--policy-pack-config", str(path),
        "--project-dir", str(REPO),
    )  # fmt: skip
    assert result.exit_code == 2
    assert result.output.splitlines() == [
        "error: invalid input",
        *(f"  {path}: {line}" for line in expected),
    ]


def test_lowering_every_level_is_named_in_the_output(info: Any, tmp_path: Path) -> None:
    own = json.loads((gate.pack_dir(REPO) / "config" / "prod.json").read_text())
    config = policy_config(info, {"all": "advisory"}, "f")
    reference = policy_config(info, own, "prod.json")
    raised = sorted(name.upper() for name, (level, _) in reference.items() if level == "mandatory")
    assert own == {"all": "mandatory"} and len(raised) == len(info.policies)
    assert lowered_levels(info, config, reference) == tuple(
        f"{policy}: mandatory -> advisory" for policy in raised
    )
    path = tmp_path / "advisory.json"
    path.write_text('{"all": "advisory"}')
    result = invoke(
        "check", "--stack", "prod", "--no-checkov", "--policy-pack-config", str(path),
        "--project-dir", str(REPO),
    )  # fmt: skip
    assert result.exit_code == 0
    assert (
        f"  note: the pack config lowers {len(raised)} policies below the level the pack or the "
        "environment's config gives them: "
        + "; ".join(f"{policy}: mandatory -> advisory" for policy in raised)
    ) in result.stdout.splitlines()


def test_check_refuses_a_folder_named_sandboxkit_yaml(tmp_path: Path) -> None:
    root = make_project(tmp_path, {"dev": (REPO / "stacks/Pulumi.dev.yaml").read_bytes()})
    (root / "sandboxkit.yaml").mkdir()
    result = invoke("check", "--stack", "dev", "--no-checkov", "--project-dir", str(root))
    assert (result.exit_code, result.output.splitlines()[:2]) == (
        2,
        [
            "error: invalid input",
            f"  {root}/sandboxkit.yaml: got 'a folder'; expected a YAML file with the "
            "environments map (stack name pattern: dev, staging or prod): move the folder away "
            "and write sandboxkit.yaml in its place, or remove it to let each stack file's "
            "sandboxkit:environment stand alone",
        ],
    )


# -- a project without the kit's policy packs (issue 31 item 3) ------------------------------


@pytest.mark.parametrize("command", ["check", "pack-config"])
def test_a_project_without_policy_packs_exits_2_naming_the_pack(
    command: str, tmp_path: Path
) -> None:
    make_project(tmp_path, {"dev": (REPO / "stacks/Pulumi.dev.yaml").read_bytes()})
    (tmp_path / "sandboxkit.yaml").write_bytes((REPO / "sandboxkit.yaml").read_bytes())
    extra = ["--no-checkov"] if command == "check" else ["--out", str(tmp_path / "pc.json")]
    pack_config = REPO / "policy-packs/sandbox-guard/config/dev.json"
    result = invoke(
        command, "--stack", "dev", "--policy-pack-config", str(pack_config),
        "--project-dir", str(tmp_path), *extra,
    )  # fmt: skip
    assert (result.exit_code, result.output.splitlines()) == (
        2,
        [
            "error: invalid input",
            f"  {tmp_path}/policy-packs/sandbox-guard: got 'no policies/__init__.py'; expected "
            "the sandbox-guard policy pack, which sandboxkit check and pack-config run: copy "
            f"policy-packs/ from the sandboxkit repository into {tmp_path}, or run the command "
            "in a sandboxkit clone",
        ],
    )
