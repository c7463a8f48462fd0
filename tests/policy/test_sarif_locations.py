"""A finding points at the deepest stack-file key it is about: the line a reviewer changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandboxkit.checkov_bridge.runner import CheckovFinding
from sandboxkit.cli import app
from sandboxkit.gate import format_sarif
from sandboxkit.gate.checkov_merge import with_checkov
from sandboxkit.gate.locations import checkov_lines, rule_line, stack_keys
from sandboxkit.gate.results import CheckResult
from support import render_values, stack_values

PROJECT = Path(__file__).resolve().parents[2]

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
    assert rule_line(stack_keys(STACK), rule, target, message) == line


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


# checkov findings on resources of STACK's kubernetes target, by resource name and check id.
CHECKOV_ON = {
    # The image checks: the target's image key, not its section.
    ("kubernetes-template", "CKV_K8S_43"): 15,
    ("kubernetes-template", "CKV_K8S_15"): 15,
    # A setting of the profile: its key (the flow mapping's line).
    ("kubernetes-quota", "CKV_SBX_4"): 12,
    # A setting the stack leaves at its default: the nearest section it writes.
    ("kubernetes-runtime-class", "CKV_SBX_5"): 13,
    # A check no setting decides (read-only root is always on): the target's section.
    ("kubernetes-template", "CKV_K8S_22"): 13,
}


def test_checkov_findings_point_at_the_setting_that_decides_them() -> None:
    values = stack_values(PROJECT, "prod")
    for dropped in set(values["targets"]) - {"kubernetes"}:
        del values[dropped]
    values["targets"] = ["kubernetes"]
    rendered = render_values(PROJECT, "prod", values)
    by_name = {r.name: r for r in rendered.resources}
    findings = [
        CheckovFinding(
            policy=check,
            name=f"Ensure {check}",
            passed=False,
            urn=by_name[name].urn,
            type=by_name[name].type,
            file="prod/kubernetes.yaml",
            resource=name,
        )
        for name, check in CHECKOV_ON
    ]
    empty = CheckResult(stack="prod", environment="prod", stack_file="s.yaml", violations=())
    result = with_checkov(empty, findings, "mandatory", checkov_lines(rendered, STACK, findings))
    sarif = format_sarif([result])
    (run,) = [r for r in sarif["runs"] if r["tool"]["driver"]["name"] == "checkov"]
    located = {
        (
            r["locations"][0]["logicalLocations"][0]["fullyQualifiedName"].rsplit("::", 1)[-1],
            r["ruleId"],
        ): r["locations"][0]["physicalLocation"]["region"]["startLine"]
        for r in run["results"]
    }
    assert located == CHECKOV_ON
