"""A finding points at the deepest stack-file key it is about: the line a reviewer changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandboxkit.cli import app
from sandboxkit.gate.locations import rule_line, stack_keys

STACK = """\
config:
  sandboxkit:environment: prod
  sandboxkit:targets: [kubernetes, cloudflare]
  sandboxkit:profile:
    egress:
      mode: allowlist
      allow:
        - pypi.org:443
        - files.pythonhosted.org:443
    limits:
      maxLifetimeSeconds: 86400
    pool: {ready: 2, maxConcurrent: 2000}
  sandboxkit:kubernetes:
    context: prod-agents
    image: ghcr.io/example/agent:3.12
    resolver:
      image: ghcr.io/example/resolver:1.0
  sandboxkit:cloudflare:
    workersDev: true
"""


def test_stack_keys_give_each_key_and_list_item_its_line() -> None:
    keys = {k.path: (k.line, k.value) for k in stack_keys(STACK)}
    assert keys[("config", "sandboxkit:kubernetes", "resolver", "image")] == (
        17,
        "ghcr.io/example/resolver:1.0",
    )
    assert keys[("config", "sandboxkit:profile", "egress", "allow", "[1]")] == (
        9,
        "files.pythonhosted.org:443",
    )
    assert keys[("config", "sandboxkit:profile", "pool", "maxConcurrent")] == (12, "2000")
    assert stack_keys("config: [") == []


@pytest.mark.parametrize(
    ("rule", "target", "message", "line"),
    [
        # The quoted value: the resolver's image, not the sandbox image nor the section.
        (
            "SBX-SEC-003",
            "kubernetes",
            "Deployment kubernetes-resolver runs image ghcr.io/example/resolver:1.0 by tag",
            17,
        ),
        (
            "SBX-SEC-003",
            "kubernetes",
            "SandboxTemplate kubernetes-template runs image ghcr.io/example/agent:3.12 by tag",
            15,
        ),
        # An allowlist entry by its host (the entry carries its port).
        ("SBX-NET-006", "kubernetes", "admits files.pythonhosted.org by resolved address", 9),
        # A config key the message names.
        (
            "SBX-RES-002",
            "kubernetes",
            "lifetime 86400 s is above 3600 s; lower sandboxkit:profile.limits.maxLifetimeSeconds",
            11,
        ),
        # A setting of the finding's target named in the message.
        ("SBX-SES-002", "cloudflare", "the Worker is on workers.dev (workersDev); turn it off", 19),
        # Nothing quoted or named: the area's profile key, else the target's section, else 1.
        ("SBX-NET-001", "kubernetes", "egress reaches everything", 5),
        ("SBX-K8S-001", "kubernetes", "a container runs as root", 13),
        ("SBX-K8S-001", None, "a container runs as root", 1),
    ],
)
def test_a_finding_points_at_the_deepest_key_it_is_about(
    rule: str, target: str | None, message: str, line: int
) -> None:
    assert rule_line(STACK, rule, target, message) == line


def test_sarif_points_at_the_image_line_of_the_stack_file(project_dir: Path) -> None:
    args = ["check", "--all-stacks", "--no-checkov", "--format", "sarif"]
    result = CliRunner().invoke(app, [*args, "--project-dir", str(project_dir)])
    assert result.exit_code == 0, result.output
    found = []
    for finding in json.loads(result.stdout)["runs"][0]["results"]:
        location = finding["locations"][0]["physicalLocation"]
        path = project_dir / location["artifactLocation"]["uri"]
        line = path.read_text().splitlines()[location["region"]["startLine"] - 1].strip()
        found.append((finding["ruleId"], path.name, line))
    assert sorted(found) == [
        (
            "SBX-NET-006",
            "Pulumi.staging.yaml",
            'allow: ["pypi.org:443", "files.pythonhosted.org:443"]',
        ),
        (
            "SBX-NET-006",
            "Pulumi.staging.yaml",
            'allow: ["pypi.org:443", "files.pythonhosted.org:443"]',
        ),
        ("SBX-SEC-003", "Pulumi.dev.yaml", "image: ghcr.io/example/agent-python-sandbox:3.12"),
        ("SBX-SEC-003", "Pulumi.staging.yaml", "image: ghcr.io/example/agent-python-sandbox:3.12"),
        (
            "SBX-SEC-003",
            "Pulumi.staging.yaml",
            "image: us-docker.pkg.dev/example-sandboxkit-staging/agents/launcher:1",
        ),
    ]
