"""``sandboxkit checkov`` as CI runs it: JSON with CKV ids on URNs, exit codes, and a clear
failure naming the install command when checkov is missing.

The command runs in this process (``support.invoke_cli``: a new interpreter imports the cloud
SDKs again, seconds of CPU), checkov in its own as always; one test runs the real process
(``python -m sandboxkit checkov``) for the console-script entry point."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from checkov_support import require_checkov

from sandboxkit.checkov_bridge.process import CHECKOV_ENV, INSTALL_COMMAND
from support import invoke_cli

PROJECT_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def checkov_bin() -> Path:
    return require_checkov()


LOG_GROUP_URN = (
    "urn:pulumi:prod::sandboxkit::sandboxkit:index:MicrovmSandbox"
    "$aws:cloudwatch/logGroup:LogGroup::aws-microvm-flow-logs"
)
TEMPLATE_URN = (
    "urn:pulumi:prod::sandboxkit::sandboxkit:index:AgentSandbox"
    "$kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate::kubernetes-template"
)


def run_process(*args: str) -> subprocess.CompletedProcess[str]:
    """``python -m sandboxkit checkov ARGS`` in a new interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "sandboxkit", "checkov", *args],
        cwd=PROJECT_DIR,
        env={**os.environ, "PYTHONPATH": str(PROJECT_DIR / "components")},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_prod_json_lists_accepted_findings_on_the_template_urn(checkov_bin: Path) -> None:
    result = invoke_cli(
        "checkov", "--stack", "prod", "--json", "--no-project-files", cwd=PROJECT_DIR
    )
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["stacks"] == ["prod"]
    assert document["violations"] == []
    accepted = {(v["policy"], v["urn"], v["source"]) for v in document["accepted"]}
    assert {a for a in accepted if a[1] == TEMPLATE_URN} == {
        ("CKV_K8S_8", TEMPLATE_URN, "checkov"),
        ("CKV_K8S_9", TEMPLATE_URN, "checkov"),
    }
    # The profile's 30-day retention against checkov's one year, on the right log group.
    assert ("CKV_AWS_338", LOG_GROUP_URN, "checkov") in accepted
    # Issue 31 item 18: the level each would fail at (the command's default, mandatory), said
    # to be accepted with the baseline entry's reason; "advisory" hid the level.
    assert {(v["enforcement"], v["accepted"]) for v in document["accepted"]} == {
        ("mandatory", True)
    }
    assert all(v["reason"] for v in document["accepted"])
    template = document["coverage"]["kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate"]
    assert "CKV_K8S_22" in template["checks"]
    assert template["kit_checks"] == ["CKV_SBX_1"]
    assert document["summary"]["failed"] == 0


def test_missing_checkov_fails_with_the_install_command() -> None:
    result = invoke_cli(
        "checkov", "--stack", "prod", cwd=PROJECT_DIR, env={CHECKOV_ENV: "/nonexistent/checkov"}
    )
    assert result.returncode == 2
    # The message comes first (no traceback before it: invoke_cli raises any exception other
    # than the command's own exit) and names the install command.
    assert result.stderr.startswith("error: checkov not found at /nonexistent/checkov")
    assert INSTALL_COMMAND in " ".join(result.stderr.split())


def test_no_stack_named_exits_2() -> None:
    result = run_process()
    assert result.returncode == 2
    assert "--stack" in result.stderr
