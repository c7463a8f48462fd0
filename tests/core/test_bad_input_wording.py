"""How a refusal shows what it refuses (issue 15, a newcomer's run): every problem of a stack
file in one run, values in YAML spelling, credential-shaped values never echoed."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandboxkit import cli
from sandboxkit.credentials import redacted
from sandboxkit.errors import MISSING, Problem
from support import GOOD, make_project


def preview(tmp_path: Path, text: str) -> tuple[int, list[str]]:
    """``sandboxkit preview`` of a stack file holding ``text``: the exit code and the lines
    printed, the project folder shown as ``<p>``."""
    make_project(tmp_path, {"t": text})
    result = CliRunner().invoke(
        cli.app, ["preview", "--stack", "t", "--project-dir", str(tmp_path)]
    )
    return result.exit_code, result.output.replace(str(tmp_path), "<p>").splitlines()


# -- values in YAML spelling, null apart from missing -------------------------------------------


def test_values_are_shown_in_yaml_spelling_and_null_is_not_missing(tmp_path: Path) -> None:
    text = GOOD + (
        "  sandboxkit:profile:\n"
        "    limits:\n"
        "      vcpu:\n"
        "      memoryMiB: null\n"
        "    pool: {ready: true, maxConcurrent: {a: b}}\n"
    )
    assert preview(tmp_path, text) == (
        2,
        [
            "error: invalid input",
            "  sandboxkit:profile.limits.vcpu: got null; expected a valid number",
            "  sandboxkit:profile.limits.memoryMiB: got null; expected a valid integer",
            "  sandboxkit:profile.pool.ready: got true; expected a valid integer",
            "  sandboxkit:profile.pool.maxConcurrent: got {a: b}; expected a valid integer",
        ],
    )


def test_an_absent_key_is_missing_and_values_of_every_kind_print_as_yaml() -> None:
    shown = [
        str(Problem("k", value, "x"))
        for value in (MISSING, None, False, 1.5, float("inf"), ("a", 1), {"a": [True]}, "it")
    ]
    assert shown == [
        "k: got (missing); expected x",
        "k: got null; expected x",
        "k: got false; expected x",
        "k: got 1.5; expected x",
        "k: got .inf; expected x",
        "k: got [a, 1]; expected x",
        "k: got {a: [true]}; expected x",
        "k: got 'it'; expected x",
    ]


# -- credential-shaped values are never echoed ---------------------------------------------------


def test_credential_shaped_values_are_redacted_in_every_problem(tmp_path: Path) -> None:
    text = (
        GOOD.replace("environment: dev", 'environment: "https://user:pw@agents.example.com/api"')
        + '    namespace: "ghp_abcdefghijklmnopqrstuvwxyz0123456789"\n'
        + "  sandboxkit:profile:\n"
        + "    egress:\n"
        + "      mode: allowlist\n"
        + '      allow: ["https://user:AKIAIOSFODNN7EXAMPLE@agents.example.com/api"]\n'
    )
    assert preview(tmp_path, text) == (
        2,
        [
            "error: invalid input",
            "  sandboxkit:environment: got 'https://***@agents.example.com/api'; expected one of "
            "dev, staging, prod",
            "  sandboxkit:profile.egress.allow[0]: got 'https://***@agents.example.com/api'; "
            "expected a specific public host[:port] entry: write host[:port] only, without a "
            "scheme, path or user name",
            "  sandboxkit:kubernetes.namespace: got '[value not shown: looks like a GitHub "
            "token]'; expected a DNS label: 1 to 63 lower-case letters, digits or hyphens, "
            "starting and ending with a letter or digit",
        ],
    )


def test_a_credential_inside_a_list_or_mapping_is_redacted_too() -> None:
    value = {
        "key": "AKIAIOSFODNN7EXAMPLE",
        "urls": ["ftp://u@h/x", "https://h/x?a=b@c", "user:pw@h.example", "me@h.example"],
    }
    assert str(Problem("k", value, "x")) == (
        "k: got {key: '[value not shown: looks like an AWS access key id]', urls: "
        "['ftp://***@h/x', 'https://h/x?a=b@c', '***@h.example', me@h.example]}; expected x"
    )


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("1abc://u:p@h", "1abc://***@h"),  # the scheme starts at the run's first letter
        ("x-1+a.b://u@h", "x-1+a.b://***@h"),
        ("a@b://c:d@e", "a@b://***@e"),
        ("git+ssh://u:p@h and http://v@w", "git+ssh://***@h and http://***@w"),
        ("a" * 500_000 + "://u:p@h", "a" * 500_000 + "://***@h"),
    ],
)
def test_userinfo_is_redacted_from_the_schemes_first_letter(text: str, shown: str) -> None:
    # Issue 31 item 4: the 500,000-letter run once took over a minute (benchmarks/long_values.py).
    assert redacted(text) == shown


# -- a refused default names everything its fix needs --------------------------------------------

CLOUDRUN = """\
  sandboxkit:gcp-cloudrun:
    project: example-sandboxkit-dev
    region: europe-west1
    image: europe-docker.pkg.dev/example-sandboxkit-dev/agents/launcher@sha256:{launcher}
    sandboxImage: europe-docker.pkg.dev/example-sandboxkit-dev/agents/sandbox@sha256:{sandbox}
    invokers: ["serviceAccount:agents@example-sandboxkit-dev.iam.gserviceaccount.com"]
    unenforced: [limits.maxLifetimeSeconds]
""".format(
    # Two images: one digest under both names would be the launcher's image as the sandbox's.
    launcher="0d4f6c1e9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d",
    sandbox="5d3f0c6f8e2b9a1c4d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c",
)

K8S_EXEC = (
    "; on kubernetes also acknowledge it with sandboxkit:kubernetes.unenforced: "
    "[limits.execTimeoutSeconds] (Kubernetes has no per-command timeout; the caller's exec "
    "client must apply it)"
)
CLOUDRUN_EXEC = (
    "; on gcp-cloudrun also acknowledge it with sandboxkit:gcp-cloudrun.unenforced: "
    "[limits.execTimeoutSeconds] (Cloud Run has no per-command timeout: template.timeout (set "
    "to this value) ends the HTTP request, not the sandbox command; the launcher must time it "
    "out)"
)
K8S_IDLE = (
    "; on kubernetes also acknowledge it with sandboxkit:kubernetes.unenforced: "
    "[limits.idleTimeoutSeconds] (agent-sandbox has no idle shutdown; claims set "
    "lifecycle.shutdownTime)"
)
CLOUDRUN_IDLE = (
    "; on gcp-cloudrun also acknowledge it with sandboxkit:gcp-cloudrun.unenforced: "
    "[limits.idleTimeoutSeconds] (the sandbox CLI has no idle shutdown; the launcher must "
    "apply it)"
)


def test_a_refused_default_names_the_acknowledgement_each_target_needs(tmp_path: Path) -> None:
    text = (
        GOOD.replace("[kubernetes]", "[kubernetes, gcp-cloudrun]")
        + CLOUDRUN
        + "  sandboxkit:profile:\n    limits: {maxLifetimeSeconds: 100}\n"
    )
    assert preview(tmp_path, text) == (
        2,
        [
            "error: invalid input",
            "  sandboxkit:profile.limits.execTimeoutSeconds: got 300; expected at most "
            "limits.maxLifetimeSeconds (100 s) (default 300, not set in the stack: set "
            f"execTimeoutSeconds explicitly){K8S_EXEC}{CLOUDRUN_EXEC}",
            "  sandboxkit:profile.limits.idleTimeoutSeconds: got 600; expected at most "
            "limits.maxLifetimeSeconds (100 s) (default 600, not set in the stack: set "
            f"idleTimeoutSeconds explicitly){K8S_IDLE}{CLOUDRUN_IDLE}",
        ],
    )


def test_the_fix_the_first_refusal_names_is_the_whole_fix(tmp_path: Path) -> None:
    text = GOOD + (
        "    unenforced: [limits.execTimeoutSeconds, limits.idleTimeoutSeconds]\n"
        "  sandboxkit:profile:\n"
        "    limits: {maxLifetimeSeconds: 100, execTimeoutSeconds: 100, idleTimeoutSeconds: 100}\n"
    )
    code, lines = preview(tmp_path, text)
    assert code == 0, lines
    assert not any(line.startswith("error") for line in lines)


# -- every problem of a stack file in one run ----------------------------------------------------

LINE = (
    "expected a value YAML 1.1 and 1.2 readers read alike (this plain scalar is a number or a "
    "boolean in one and not the other, or a different number): quote it for text, or write the "
    "number in plain decimal (10, 3600)"
)
FILE = "<p>/stacks/Pulumi.t.yaml"


def test_every_reader_problem_and_the_config_problems_beside_them_in_one_run(
    tmp_path: Path,
) -> None:
    text = GOOD + (
        "  sandboxkit:profile:\n"
        "    limits:\n"
        "      vcpu: 2\n"
        "      memoryMiB: 010\n"
        "      vcpu: 3\n"
        "      vcpuu: 1\n"
        "      maxLifetimeSeconds: 1:00:00\n"
        "      idleTimeoutSeconds: 0o17\n"
        "    pool: {ready: yes, maxConcurrent: on}\n"
    )
    assert preview(tmp_path, text) == (
        2,
        [
            "error: invalid input",
            f"  sandboxkit:profile.limits.memoryMiB ({FILE} line 10): got '010'; {LINE}",
            f"  sandboxkit:profile.limits.vcpu ({FILE} line 11): got 'a second entry'; expected "
            "each key once: it is also on line 9 (a reader would silently keep the later one)",
            f"  sandboxkit:profile.limits.maxLifetimeSeconds ({FILE} line 13): got '1:00:00'; "
            f"{LINE}",
            f"  sandboxkit:profile.limits.idleTimeoutSeconds ({FILE} line 14): got '0o17'; {LINE}",
            f"  sandboxkit:profile.pool.ready ({FILE} line 15): got 'yes'; {LINE}",
            f"  sandboxkit:profile.pool.maxConcurrent ({FILE} line 15): got 'on'; {LINE}",
            "  sandboxkit:profile.limits.vcpuu: got '[value not shown]'; expected no such key "
            "(did you mean 'vcpu'?); known keys: vcpu, memoryMiB, execTimeoutSeconds, "
            "maxLifetimeSeconds, idleTimeoutSeconds",
        ],
    )


def test_a_duplicate_key_and_an_unknown_key_are_both_named(tmp_path: Path) -> None:
    text = GOOD + "  sandboxkit:environment: prod\n  sandboxkit:profle: {}\n"
    assert preview(tmp_path, text) == (
        2,
        [
            "error: invalid input",
            f"  sandboxkit:environment ({FILE} line 7): got 'a second entry'; expected each key "
            "once: it is also on line 2 (a reader would silently keep the later one)",
            "  sandboxkit:profle: got '[value not shown]'; expected no such key (did you mean "
            "'profile'?); known keys: environment, targets, profile, kubernetes, azure-sessions, "
            "aws-microvm, gcp-cloudrun, gcp-gke, cloudflare, local",
        ],
    )


def test_a_refusal_that_leaves_nothing_to_read_names_every_reader_problem_only(
    tmp_path: Path,
) -> None:
    # An explicit tag is not built, so the config is not validated: no "no such key" for vcpuu.
    text = GOOD + (
        "  sandboxkit:profile:\n    limits: {vcpu: !!binary aGVsbG8=, memoryMiB: 010, vcpuu: 1}\n"
    )
    assert preview(tmp_path, text) == (
        2,
        [
            "error: invalid input",
            f"  sandboxkit:profile.limits.vcpu ({FILE} line 8): got '!!binary'; expected a plain "
            "value without an explicit tag (quote text instead)",
            f"  sandboxkit:profile.limits.memoryMiB ({FILE} line 8): got '010'; {LINE}",
        ],
    )
