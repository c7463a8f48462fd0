"""SBX-SEC-003 over rendered component output: sandbox images are pinned by digest.

Each case renders the shipped prod stack with one sandbox image written as a tag (through the
stack config, as a user would) and compares the gate's findings with the unchanged render's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pack_calls import resource_reports

import support as testing
from sandboxkit import gate
from sandboxkit.errors import ConfigError
from sandboxkit.guard_checks import unpinned_images

PROJECT = Path(__file__).resolve().parents[2]
TAGGED = "ghcr.io/example/agent-python-sandbox:3.12"
LAUNCHER_TAGGED = "us-docker.pkg.dev/example-sandboxkit-prod/agents/launcher:1"
PINNED = "ghcr.io/example/agent-python-sandbox@sha256:" + "5d3f0c6f" * 8
POLICY = "SBX-SEC-003"


@pytest.fixture(scope="module")
def analyzer() -> gate.InProcessAnalyzer:
    """The pack's analyzer servicer in this process (every check reconfigures it)."""
    return gate.InProcessAnalyzer(gate.pack_dir(PROJECT))


def _findings(result: gate.CheckResult) -> set[tuple[str, str]]:
    return {(v.policy, v.urn.rsplit("::", 1)[-1]) for v in result.violations}


def _check(analyzer: gate.InProcessAnalyzer, values: dict[str, Any]) -> gate.CheckResult:
    return gate.check_rendered(analyzer, testing.render_values(PROJECT, "prod", values), PROJECT)


@pytest.fixture(scope="module")
def prod(analyzer: gate.InProcessAnalyzer) -> gate.CheckResult:
    return _check(analyzer, testing.stack_values(PROJECT, "prod"))


def _image(target: str, image: str, key: str = "image") -> Callable[[dict[str, Any]], None]:
    def mutate(values: dict[str, Any]) -> None:
        values[target][key] = image

    return mutate


def _run_template(image: str) -> Callable[[dict[str, Any]], None]:
    def mutate(values: dict[str, Any]) -> None:
        values["gcp-cloudrun"]["templates"] = [{"name": "python", "image": image}]

    return mutate


def test_shipped_prod_images_are_all_pinned(prod: gate.CheckResult) -> None:
    assert POLICY in prod.rules
    assert not [v for v in prod.violations if v.policy == POLICY]


@pytest.mark.parametrize(
    ("mutate", "resource", "kind"),
    [
        (_image("kubernetes", TAGGED), "kubernetes-template", "SandboxTemplate"),
        (_image("gcp-gke", TAGGED), "gcp-gke-agent-sandbox-template", "SandboxTemplate"),
        (_image("gcp-cloudrun", TAGGED), "gcp-cloudrun-service", "Cloud Run service"),
        (_run_template(TAGGED), "gcp-cloudrun-service", "Cloud Run service"),
        (
            _image("gcp-cloudrun", TAGGED, "sandboxImage"),
            "gcp-cloudrun-service",
            "Cloud Run service",
        ),
        (_image("azure-sessions", TAGGED), "azure-sessions-pool", "Session pool"),
        # Issue 32: the container of the Worker's Durable Objects, held by no Pulumi resource,
        # passed by tag; the Worker carries it for the gate.
        (_image("cloudflare", TAGGED), "cloudflare-script", "Worker"),
        # The launcher's own image is judged by the same rule.
        (_image("gcp-cloudrun", LAUNCHER_TAGGED), "gcp-cloudrun-service", "Cloud Run service"),
    ],
    ids=[
        "kubernetes",
        "gcp-gke",
        "cloudrun-container",
        "cloudrun-template",
        "cloudrun-sandbox-image",
        "azure-sessions",
        "cloudflare",
        "cloudrun-launcher",
    ],
)
def test_tag_only_image_fires_exactly_this_policy_on_that_resource(
    analyzer: gate.InProcessAnalyzer,
    prod: gate.CheckResult,
    mutate: Callable[[dict[str, Any]], None],
    resource: str,
    kind: str,
    *,
    request: pytest.FixtureRequest,
) -> None:
    values = testing.stack_values(PROJECT, "prod")
    mutate(values)
    result = _check(analyzer, values)
    before = {(v.policy, v.urn) for v in prod.violations}
    new = [v for v in result.violations if (v.policy, v.urn) not in before]
    assert {(v.policy, v.urn.rsplit("::", 1)[-1]) for v in new} == {(POLICY, resource)}
    (violation,) = new
    tagged = LAUNCHER_TAGGED if "launcher" in violation.message else TAGGED
    # Issue 31 item 14: where the stack wrote the image (Cloud Run: the launcher's image, or a
    # template's, sandboxImage or a templates[] entry).
    target = resource.rsplit("-", 1)[0].removesuffix("-agent-sandbox")
    template = request.node.callspec.id in ("cloudrun-template", "cloudrun-sandbox-image")
    key = "sandboxImage or templates[].image" if template else "image"
    where = f" in sandboxkit:{target}.{key}"
    assert violation.message == (
        f"{kind} {resource} runs image {tagged} by tag, which can be moved to other content; "
        f"pin it by digest{where} (image@sha256:<64 hex digits>)."
    )
    assert violation.severity == "medium"
    # prod's pack config makes every policy mandatory.
    assert violation.enforcement == "mandatory"
    assert result.failed


def test_the_kits_resolver_image_is_judged_as_a_sandbox_image() -> None:
    # The resolver answers every sandbox's DNS (allowlist stacks deploy it; prod's deny does not).
    deployment = {"spec": {"template": {"spec": {"containers": [{"image": TAGGED}]}}}}
    assert resource_reports("sbx-sec-003", "kubernetes:apps/v1:Deployment", deployment) == [
        f"Deployment r runs image {TAGGED} by tag, which can be moved to other content; pin it "
        "by digest (image@sha256:<64 hex digits>)."
    ]
    deployment["spec"]["template"]["spec"]["containers"][0]["image"] = PINNED
    assert resource_reports("sbx-sec-003", "kubernetes:apps/v1:Deployment", deployment) == []


def test_pinned_cloud_run_template_is_silent(analyzer: gate.InProcessAnalyzer) -> None:
    values = testing.stack_values(PROJECT, "prod")
    _run_template(PINNED)(values)
    assert POLICY not in {policy for policy, _ in _findings(_check(analyzer, values))}


def test_a_short_digest_is_refused_by_config_and_is_not_a_pin_to_the_pack() -> None:
    # Config refuses it before any render (the OCI reference grammar wants a full digest);
    # the pack, which also judges components built directly, does not take it for a pin.
    short = "ghcr.io/example/agent-python-sandbox@sha256:5d3f0c6f"
    values = testing.stack_values(PROJECT, "prod")
    _image("kubernetes", short)(values)
    with pytest.raises(ConfigError) as caught:
        testing.render_values(PROJECT, "prod", values)
    assert [(p.key, p.value) for p in caught.value.problems] == [
        ("sandboxkit:kubernetes.image", short)
    ]
    assert list(unpinned_images("SandboxTemplate", "t", [short, PINNED])) == [
        f"SandboxTemplate t runs image {short} by tag, which can be moved to other content; "
        "pin it by digest (image@sha256:<64 hex digits>)."
    ]


@pytest.mark.parametrize(
    ("environment", "level"), [("dev", "advisory"), ("staging", "advisory"), ("prod", "mandatory")]
)
def test_advisory_outside_prod_mandatory_in_prod(environment: str, level: str) -> None:
    config = json.loads((gate.pack_dir(PROJECT) / "config" / f"{environment}.json").read_text())
    assert config == {"all": level}


def test_an_organisation_can_relax_it_on_purpose(
    analyzer: gate.InProcessAnalyzer, tmp_path: Path
) -> None:
    config = tmp_path / "relaxed.json"
    config.write_text(json.dumps({"all": "mandatory", "sbx-sec-003": "advisory"}))
    values = testing.stack_values(PROJECT, "prod")
    _image("kubernetes", TAGGED)(values)
    rendered = testing.render_values(PROJECT, "prod", values)
    result = gate.check_rendered(analyzer, rendered, PROJECT, pack_config=config)
    (violation,) = [v for v in result.violations if v.policy == POLICY]
    assert violation.enforcement == "advisory"
    assert not result.failed
