"""Issue 32's "done when": the full prod stack carrying every weakening the prod gate passed
fails the gate, each weakening named by its policy, with checkov and without; the shipped prod
and staging still pass.

Six weakenings are written in the stack config, as a user would. Two more are refused there
(the launcher's image by digest as the sandbox image, a resolver's ISATAP form as an entry), so
they are rendered inputs, as a fork of the components would produce them. checkov runs once,
over the weakened prod and the shipped prod and staging together.
"""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from checkov_support import PROJECT_DIR, require_checkov

from sandboxkit import gate
from sandboxkit.render import RenderedStack
from support import named, render_values, shipped_render, stack_values, with_input

LAUNCHER_DIGEST = "sha256:0d4f6c1e9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d"
FOREIGN = "999999999999"
RUN = "gcp-cloudrun-service"
NETWORK_POLICY = "kubernetes-network-policy"

# (policy, resource) each weakening must raise, by weakening.
EXPECTED = {
    "1 image by tag": {("SBX-SEC-003", "cloudflare-script")},
    "2 the launcher's image as the sandbox's": {("SBX-SES-004", RUN)},
    "3 a public control plane behind 48 /8s": {("SBX-NET-009", "gcp-gke-cluster")},
    "4 a namespace the stack does not create": {("SBX-K8S-009", "kubernetes-template")},
    "5 a control-plane host on the DNS port": {("SBX-NET-008", "aws-microvm")},
    "6 8.8.8.8 as an ISATAP identifier": {("SBX-NET-002", NETWORK_POLICY)},
    "7 ceilings and other accounts' code": {
        ("SBX-SES-003", "aws-microvm-launcher"),
        ("SBX-SES-003", "aws-microvm-credential-key"),
        ("SBX-SES-002", "cloudflare-script"),
        ("SBX-SEC-004", "aws-microvm-launcher"),
        ("SBX-SEC-004", "aws-microvm-image"),
    },
}


def weakened_prod() -> RenderedStack:
    """The shipped prod with all seven of issue 32's weakenings."""
    values: dict[str, Any] = stack_values(PROJECT_DIR, "prod")
    values["cloudflare"].update(
        image="docker.io/someone/anything:latest", tokenMaxLifetimeSeconds=3600
    )
    values["gcp-gke"].update(
        privateEndpoint=False,
        masterAuthorizedNetworks=[f"{first}.0.0.0/8" for first in range(11, 59)],
    )
    values["kubernetes"]["createNamespace"] = False
    values["aws-microvm"].update(
        controlPlaneHosts=["pastebin.com", "ns1.example.net:853"],
        replayWindowSeconds=3600,
        workerCredentialKeyMaxAgeDays=365,
        launcherLayers=[f"arn:aws:lambda:eu-west-1:{FOREIGN}:layer:anything:1"],
        baseImageArn=f"arn:aws:lambda:eu-west-1:{FOREIGN}:microvm-image:anything",
    )
    rendered = render_values(PROJECT_DIR, "prod", values)
    template = copy.deepcopy(dict(named(rendered.resources, RUN).inputs)["template"])
    template["sandboxes"]["templates"][0]["image"] = (
        f"us-docker.pkg.dev/example-sandboxkit-prod/agents/launcher:sandbox@{LAUNCHER_DIGEST}"
    )
    rendered = with_input(rendered, RUN, ("template",), template)
    egress = copy.deepcopy(list(named(rendered.resources, NETWORK_POLICY).inputs["spec"]["egress"]))
    egress.append(
        {
            "to": [{"ipBlock": {"cidr": "2600:1f18::200:5efe:808:808/128"}}],
            "ports": [{"protocol": "TCP", "port": 443}],
        }
    )
    weakened = with_input(rendered, NETWORK_POLICY, ("spec", "egress"), egress)
    # Its own name beside the shipped prod in one checkov run (each stack's export is a folder
    # named after it); the environment, and so every level, stays prod's.
    return replace(weakened, stack="prod-weakened")


@pytest.fixture(scope="module")
def checkov_bin() -> Path:
    return require_checkov()


def test_every_weakening_fails_prod_by_its_policy_with_and_without_checkov(
    checkov_bin: Path,
) -> None:
    stacks = [weakened_prod(), shipped_render(PROJECT_DIR, "prod")]
    stacks.append(shipped_render(PROJECT_DIR, "staging"))
    with_checkov = gate.check_stacks(stacks, PROJECT_DIR)
    without = gate.check_stacks(stacks, PROJECT_DIR, checkov=False)
    for (weakened, prod, staging), checkov_ran in ((with_checkov, True), (without, False)):
        assert (weakened.checkov is not None) == checkov_ran
        found = {
            (v.policy, v.urn.rsplit("::", 1)[-1]): v.enforcement
            for v in weakened.violations
            if v.source == "crossguard"
        }
        for weakening, expected in EXPECTED.items():
            assert expected <= found.keys(), weakening
            assert {found[pair] for pair in expected} == {"mandatory"}, weakening
        assert weakened.failed
        assert not prod.failed and not prod.violations
        assert not staging.failed
