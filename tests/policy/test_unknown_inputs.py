"""Unknown inputs under ``pulumi preview --policy-pack``: the pack judges the known parts and
reports "cannot verify" where an unknown decides, at the policy's level (mandatory in prod).

pulumi-policy 1.21 would drop a policy for a resource when a check reads an unknown and report
one advisory "can't run policy ... during preview" note instead (``pulumi_policy.policy``,
``Analyze``), hiding mandatory findings on the known parts. Each case renders the prod stack,
puts the wire protocol's unknown sentinel where a preview would have one, and sends the resources
through the real analyzer (``Analyze``/``AnalyzeStack`` of the pack's servicer).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pulumi.runtime import rpc

import support as testing
from sandboxkit import gate
from sandboxkit.render import RenderedStack
from support import with_input

PROJECT = Path(__file__).resolve().parents[2]
UNKNOWN = rpc.UNKNOWN
POLICY = "kubernetes-network-policy"
TEMPLATE = "kubernetes-template"
HTTPS = [{"protocol": "TCP", "port": 443}]


@pytest.fixture(scope="module")
def analyzer() -> gate.InProcessAnalyzer:
    return gate.InProcessAnalyzer(gate.pack_dir(PROJECT))


@pytest.fixture(scope="module")
def prod() -> RenderedStack:
    values = testing.stack_values(PROJECT, "prod")
    for target in set(values["targets"]) - {"kubernetes"}:
        del values[target]
    values["targets"] = ["kubernetes"]
    return testing.render_values(PROJECT, "prod", values)


def findings(analyzer: gate.InProcessAnalyzer, rendered: RenderedStack) -> set[tuple[str, ...]]:
    result = gate.check_rendered(analyzer, rendered, PROJECT)
    return {
        (v.policy, v.enforcement, v.urn.rsplit("::", 1)[-1], v.message) for v in result.violations
    }


def cannot_verify(policy: str, kind: str, name: str, path: str) -> str:
    return (
        f"Cannot verify {policy} on {kind} {name}: input {path} is unknown during preview "
        "(computed from another resource's output), and the verdict depends on it; run the gate "
        "where the value is known (sandboxkit check renders it, or a preview after the resource "
        "it comes from exists), or set it from a known value."
    )


NP = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
ST = "kubernetes:extensions.agents.x-k8s.io/v1beta1:SandboxTemplate"


def test_all_known_prod_inputs_are_silent(
    analyzer: gate.InProcessAnalyzer, prod: RenderedStack
) -> None:
    assert findings(analyzer, prod) == set()


def test_an_unknown_cidr_beside_everywhere_keeps_the_net_001_finding(
    analyzer: gate.InProcessAnalyzer, prod: RenderedStack
) -> None:
    egress: list[dict[str, Any]] = [
        {"to": [{"ipBlock": {"cidr": UNKNOWN}}], "ports": HTTPS},
        {"to": [{"ipBlock": {"cidr": "0.0.0.0/0"}}], "ports": HTTPS},
    ]
    found = findings(analyzer, with_input(prod, POLICY, ("spec", "egress"), egress))
    assert (
        "SBX-NET-001",
        "mandatory",
        POLICY,
        f"NetworkPolicy {POLICY} admits egress to 0.0.0.0/0 (egress mode open); set "
        "sandboxkit:profile.egress.mode to deny or allowlist.",
    ) in found
    assert (
        "SBX-NET-001",
        "mandatory",
        POLICY,
        cannot_verify("SBX-NET-001", NP, POLICY, "spec.egress[0].to[0].ipBlock.cidr"),
    ) in found
    assert not [f for f in found if "can't run policy" in f[3]]


def _unknown_cidr_only(prod: RenderedStack) -> RenderedStack:
    egress = [{"to": [{"ipBlock": {"cidr": UNKNOWN}}], "ports": HTTPS}]
    return with_input(prod, POLICY, ("spec", "egress"), egress)


# Stack policies whose egress readers read whole resources (``ResourceView``): an unknown
# anywhere in a resource they read is "cannot verify" for them (README: what the preview sees).
WHOLE_RESOURCE_READERS = ("SBX-NET-006", "SBX-NET-007", "SBX-NET-008")
# The policies that read the NetworkPolicy's peers.
READ_BY = ("SBX-NET-001", "SBX-NET-002", *WHOLE_RESOURCE_READERS)


def _whole_resource(kind: str, name: str, path: str) -> set[tuple[str, ...]]:
    return {
        (policy, "mandatory", name, cannot_verify(policy, kind, name, path))
        for policy in WHOLE_RESOURCE_READERS
    }


def test_an_unknown_that_decides_is_cannot_verify_at_mandatory_in_prod(
    analyzer: gate.InProcessAnalyzer, prod: RenderedStack
) -> None:
    found = findings(analyzer, _unknown_cidr_only(prod))
    path = "spec.egress[0].to[0].ipBlock.cidr"
    assert found == {
        (policy, "mandatory", POLICY, cannot_verify(policy, NP, POLICY, path)) for policy in READ_BY
    }


def test_cannot_verify_takes_the_policys_level(
    analyzer: gate.InProcessAnalyzer, prod: RenderedStack, tmp_path: Path
) -> None:
    relaxed = tmp_path / "relaxed.json"
    relaxed.write_text('{"all": "mandatory", "sbx-net-002": "advisory"}')
    result = gate.check_rendered(analyzer, _unknown_cidr_only(prod), PROJECT, relaxed)
    levels = {(v.policy, v.enforcement) for v in result.violations}
    assert ("SBX-NET-002", "advisory") in levels
    assert ("SBX-NET-001", "mandatory") in levels


def test_an_unknown_runtime_class_cannot_be_verified(
    analyzer: gate.InProcessAnalyzer, prod: RenderedStack
) -> None:
    rendered = with_input(
        prod, TEMPLATE, ("spec", "podTemplate", "spec", "runtimeClassName"), UNKNOWN
    )
    found = findings(analyzer, rendered)
    path = "spec.podTemplate.spec.runtimeClassName"
    assert found == {
        ("SBX-K8S-004", "mandatory", TEMPLATE, cannot_verify("SBX-K8S-004", ST, TEMPLATE, path)),
        # Whether the stack creates the class it names (SBX-K8S-009) depends on the name too.
        ("SBX-K8S-009", "mandatory", TEMPLATE, cannot_verify("SBX-K8S-009", ST, TEMPLATE, path)),
        *_whole_resource(ST, TEMPLATE, path),
    }


def test_credentials_are_still_found_beside_an_unknown_and_the_unknown_decides_nothing(
    analyzer: gate.InProcessAnalyzer, prod: RenderedStack
) -> None:
    env = [
        {"name": "UPSTREAM", "value": UNKNOWN},
        {"name": "MIRROR", "value": "AKIAABCDEFGHIJKLMNOP"},
    ]
    path = ("spec", "podTemplate", "spec", "containers", 0, "env")
    found = findings(analyzer, with_input(prod, TEMPLATE, path, env))
    assert found == {
        (
            "SBX-SEC-002",
            "mandatory",
            TEMPLATE,
            f"Input spec.podTemplate.spec.containers[0].env[1].value of {TEMPLATE} holds what "
            "looks like an AWS access key id in plain text; remove it, rotate it, and pass it as "
            "a Pulumi secret to a secret store.",
        ),
        *_whole_resource(ST, TEMPLATE, "spec.podTemplate.spec.containers[0].env[0].value"),
    }


def test_an_unknown_secret_named_variable_is_cannot_verify(
    analyzer: gate.InProcessAnalyzer, prod: RenderedStack
) -> None:
    env = [{"name": "API_TOKEN", "value": UNKNOWN}]
    where = ("spec", "podTemplate", "spec", "containers", 0, "env")
    found = findings(analyzer, with_input(prod, TEMPLATE, where, env))
    path = "spec.podTemplate.spec.containers[0].env[0].value"
    assert found == {
        ("SBX-SEC-001", "mandatory", TEMPLATE, cannot_verify("SBX-SEC-001", ST, TEMPLATE, path)),
        *_whole_resource(ST, TEMPLATE, path),
    }
