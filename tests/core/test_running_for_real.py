"""README's "Running it for real" and docs/running-for-real.md stay true to the installed SDKs."""

from __future__ import annotations

import json
import re
from importlib.metadata import version
from pathlib import Path

import pytest

from support import invoke_cli

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
# Words as a reader sees them: line breaks in the Markdown source are spaces.
SECTION = " ".join(
    README[README.index("## Running it for real") : README.index("## Commands")].split()
)
GUIDE = (ROOT / "docs" / "running-for-real.md").read_text()

PLUGINS = {
    "aws": "pulumi-aws",
    "gcp": "pulumi-gcp",
    "azure-native": "pulumi-azure-native",
    "cloudflare": "pulumi-cloudflare",
    "kubernetes": "pulumi-kubernetes",
}


@pytest.mark.parametrize("plugin", PLUGINS)
def test_each_plugin_version_is_the_installed_sdks(plugin: str) -> None:
    installed = version(PLUGINS[plugin])
    assert f"`{plugin}` {installed}" in SECTION
    assert f"| `{PLUGINS[plugin]}` (plugin `{plugin}`) | {installed} |" in GUIDE


def test_the_cli_version_floor_is_the_installed_sdks() -> None:
    assert f"`pulumi` SDK's {'.'.join(version('pulumi').split('.')[:2])}" in SECTION


def test_the_section_has_the_steps_a_first_deployment_needs() -> None:
    for step in (
        "pulumi login",
        "pulumi stack init dev",
        "--secret --path 'sandboxkit:aws-microvm.webhookSecret'",
        "images/launcher/Dockerfile",
        "X-Sandboxkit-Signature",
    ):
        assert step in SECTION, step
    assert "placeholder" in SECTION


def test_the_guide_names_permissions_and_every_output_of_each_target() -> None:
    outputs = {
        "kubernetes": ["namespace", "sandboxTemplateName", "warmPoolName", "networkPolicyName"],
        "aws-microvm": ["webhookUrl", "launcherFunctionName", "imageArn", "connectorArn"],
        "azure-sessions": ["poolManagementEndpoint", "poolName", "workspaceId"],
        "cloudflare": ["scriptName", "workersDevEnabled", "instanceType"],
        "gcp-cloudrun": ["serviceUri", "serviceAccountEmail", "firewallPolicyName"],
        "gcp-gke": ["clusterName", "nodePoolName", "nodeServiceAccountEmail"],
    }
    for target, names in outputs.items():
        assert f"- **{target}**:" in GUIDE, target
        for name in names:
            assert re.search(rf"\| [^|\n]*{target}[^|\n]* \| [^|\n]*`{name}`", GUIDE), name


def test_the_two_set_up_commands_stay_at_the_top() -> None:
    setup = README[README.index("## Set up") : README.index("## Running it for real")]
    commands = [line for line in setup.splitlines() if line.startswith((".venv", "python", "bash"))]
    assert commands == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/sandboxkit preview "
        "--stack dev && bash .ci/install-debian bubblewrap && .venv/bin/sandboxkit run --stack dev "
        "-- /bin/true",
        "bash .ci/run",
    ]


def _kit_commands() -> list[list[str]]:
    """Every ``.venv/bin/sandboxkit`` command of the guide's bash blocks, as arguments."""
    blocks = re.findall(r"```bash\n(.*?)```", GUIDE, re.S)
    return [
        line.split()[1:]
        for block in blocks
        for line in block.splitlines()
        if line.startswith(".venv/bin/sandboxkit ")
    ]


def test_the_guide_names_each_step_of_a_deploy_and_back() -> None:
    commands = [c[0] for c in _kit_commands()]
    expected = ["deployer-policy", "preview", "check", "pack-config", "cloudflare-config"]
    assert set(expected) <= set(commands)
    for step in ("pulumi login", "wrangler containers push", "pulumi destroy --stack mine"):
        assert step in GUIDE, step


@pytest.mark.parametrize("arguments", _kit_commands(), ids=" ".join)
def test_every_kit_command_of_the_guide_runs(arguments: list[str], tmp_path: Path) -> None:
    # ``mine`` is the reader's stack: the shipped prod lists every target.
    argv = ["prod" if a == "mine" else a for a in arguments]
    if "--out" in argv:
        at = argv.index("--out") + 1
        argv[at] = str(tmp_path / Path(argv[at]).name)
    ran = invoke_cli(*argv, cwd=ROOT)
    assert ran.returncode == 0, ran.stderr


@pytest.mark.parametrize("target", ["gcp-cloudrun", "gcp-gke"])
def test_the_guides_gcp_roles_are_the_ones_deployer_policy_prints(target: str) -> None:
    # The guide named roles/resourcemanager.projectIamAdmin for gcp-cloudrun, whose render
    # makes no project IAM binding; deployer-policy, derived from the render, printed none.
    bullet = GUIDE[GUIDE.index(f"- **{target}**:") :].split("\n- **", 1)[0]
    named = set(re.findall(r"`(roles/[A-Za-z.]+)`", bullet))
    printed = invoke_cli("deployer-policy", "--stack", "prod", "--target", target, cwd=ROOT)
    assert printed.returncode == 0, printed.stderr
    assert named == set(json.loads(printed.stdout)["roles"])
