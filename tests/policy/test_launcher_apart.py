"""SBX-SES-004 on Cloud Run: sandboxes share neither the launcher's filesystem nor its identity's
reach.

The old shape (a launcher without sandbox templates, its account holding project-wide
``roles/logging.logWriter``) gets exact findings; the kit's render of the shipped prod stack is
silent.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from pack_calls import stack_reports

import support as testing
from sandboxkit import gate

PROJECT = Path(__file__).resolve().parents[2]
POLICY = "sbx-ses-004"
RUN = "gcp:cloudrunv2/service:Service"
PROJECT_MEMBER = "gcp:projects/iAMMember:IAMMember"
ACCOUNT = "sbx-prod-run@example-project.iam.gserviceaccount.com"
LAUNCHER_IMAGE = "us-docker.pkg.dev/p/agents/launcher@sha256:" + "0d" * 32
SANDBOX_IMAGE = "us-docker.pkg.dev/p/agents/sandbox@sha256:" + "5d" * 32


def service(**template: Any) -> dict[str, Any]:
    """The kit's launcher service shape (r0 in a stack): one launcher container told the
    template ``sandbox``, which runs a separate image."""
    return {
        "template": {
            "serviceAccount": ACCOUNT,
            "containers": [
                {
                    "image": LAUNCHER_IMAGE,
                    "sandboxLauncher": True,
                    "envs": [{"name": "SANDBOXKIT_SANDBOX_TEMPLATE", "value": "sandbox"}],
                }
            ],
            "sandboxes": {"templates": [{"name": "sandbox", "image": SANDBOX_IMAGE}]},
            **template,
        }
    }


def grant(role: str = "roles/logging.logWriter", member: str = ACCOUNT) -> dict[str, Any]:
    return {"project": "example-project", "role": role, "member": f"serviceAccount:{member}"}


def test_the_kits_launcher_shape_is_silent() -> None:
    assert stack_reports(POLICY, [(RUN, service())]) == []


def test_a_launcher_without_templates_exposes_its_filesystem() -> None:
    old = service()
    del old["template"]["sandboxes"]
    del old["template"]["containers"][0]["envs"]
    assert stack_reports(POLICY, [(RUN, old)]) == [
        (
            "Cloud Run service r0 launches sandboxes without a sandbox template, so every "
            "sandbox mounts the launcher container's root filesystem read-only at / and its "
            "code reads everything the launcher image holds; add template.sandboxes.templates "
            "with a separate sandbox image (sandboxkit:gcp-cloudrun.sandboxImage).",
            f"urn::{RUN}::r0",
        )
    ]


@pytest.mark.parametrize(
    "spelling",
    [
        # Issue 32: a digest names the content, whatever tag or name is written before it.
        "us-docker.pkg.dev/p/agents/launcher:sandbox@sha256:" + "0d" * 32,
        "us-docker.pkg.dev/p/agents/other@sha256:" + "0d" * 32,
        # The registry host in another case or with its default port is the same registry.
        "US-Docker.pkg.dev/p/agents/launcher@sha256:" + "0d" * 32,
        "us-docker.pkg.dev:443/p/agents/launcher@sha256:" + "0d" * 32,
    ],
)
def test_the_launcher_image_by_another_spelling_is_no_separation(spelling: str) -> None:
    same = service(sandboxes={"templates": [{"name": "sandbox", "image": spelling}]})
    assert stack_reports(POLICY, [(RUN, same)]) == [
        (
            f"Sandbox template sandbox of Cloud Run service r0 runs the launcher's own image "
            f"{spelling} (the launcher's {LAUNCHER_IMAGE}), so its sandboxes read everything "
            "the launcher holds; give it a separate sandbox image.",
            f"urn::{RUN}::r0",
        )
    ]


def test_the_launcher_repository_under_another_digest_is_another_image() -> None:
    other = "us-docker.pkg.dev/p/agents/launcher@sha256:" + "1d" * 32
    apart = service(sandboxes={"templates": [{"name": "sandbox", "image": other}]})
    assert stack_reports(POLICY, [(RUN, apart)]) == []


def test_a_template_of_the_launcher_image_is_no_separation() -> None:
    same = service(sandboxes={"templates": [{"name": "sandbox", "image": LAUNCHER_IMAGE}]})
    assert stack_reports(POLICY, [(RUN, same)]) == [
        (
            f"Sandbox template sandbox of Cloud Run service r0 runs the launcher's own image "
            f"{LAUNCHER_IMAGE}, so its sandboxes read everything the launcher holds; give it a "
            "separate sandbox image.",
            f"urn::{RUN}::r0",
        )
    ]


def test_the_launcher_must_be_told_one_of_its_templates() -> None:
    untold = service()
    untold["template"]["containers"][0]["envs"] = []
    elsewhere = service()
    elsewhere["template"]["containers"][0]["envs"][0]["value"] = "python"
    assert stack_reports(POLICY, [(RUN, untold), (RUN, elsewhere)]) == [
        (
            "The launcher of Cloud Run service r0 is not told which template to start sandboxes "
            "from (SANDBOXKIT_SANDBOX_TEMPLATE is unset), so it may start them on its own "
            "filesystem; set SANDBOXKIT_SANDBOX_TEMPLATE to one of its templates (sandbox).",
            f"urn::{RUN}::r0",
        ),
        (
            "The launcher of Cloud Run service r1 is not told which template to start sandboxes "
            "from (SANDBOXKIT_SANDBOX_TEMPLATE names python), so it may start them on its own "
            "filesystem; set SANDBOXKIT_SANDBOX_TEMPLATE to one of its templates (sandbox).",
            f"urn::{RUN}::r1",
        ),
    ]


def test_a_service_that_launches_no_sandboxes_is_not_judged() -> None:
    plain = {"template": {"containers": [{"image": LAUNCHER_IMAGE}]}}
    assert stack_reports(POLICY, [(RUN, plain), (PROJECT_MEMBER, grant())]) == []


def test_a_project_wide_log_writer_on_the_launchers_account_is_reported() -> None:
    assert stack_reports(POLICY, [(RUN, service()), (PROJECT_MEMBER, grant())]) == [
        (
            "IAM grant r1 gives roles/logging.logWriter on project example-project to the "
            "account of Cloud Run sandbox launcher r0, so whoever takes over the launcher "
            "writes entries into any log of that project, under any resource (and can forge "
            "other services' records); drop the grant and write the launcher's audit record to "
            "stdout, which Cloud Run sends to Cloud Logging without a role.",
            f"urn::{PROJECT_MEMBER}::r1",
        )
    ]


def test_folder_bindings_count_and_other_grants_do_not() -> None:
    binding = {
        "folder": "folders/123",
        "role": "roles/logging.admin",
        "members": ["user:ops@example.com", f"serviceAccount:{ACCOUNT}"],
    }
    stack = [
        (RUN, service()),
        ("gcp:folder/iAMBinding:IAMBinding", binding),
        # Another account's log writer, and the launcher's non-logging project role: not this
        # policy's finding.
        (PROJECT_MEMBER, grant(member="builder@example-project.iam.gserviceaccount.com")),
        (PROJECT_MEMBER, grant(role="roles/run.viewer")),
    ]
    found = stack_reports(POLICY, stack)
    assert [urn for _, urn in found] == ["urn::gcp:folder/iAMBinding:IAMBinding::r1"]
    assert found[0][0].startswith(
        "IAM grant r1 gives roles/logging.admin on folder folders/123 to the account of Cloud "
        "Run sandbox launcher r0,"
    )


def test_the_kits_render_of_the_prod_stack_is_silent() -> None:
    values = copy.deepcopy(testing.stack_values(PROJECT, "prod"))
    for other in set(values["targets"]) - {"gcp-cloudrun"}:
        del values[other]
    values["targets"] = ["gcp-cloudrun"]
    analyzer = gate.InProcessAnalyzer(gate.pack_dir(PROJECT))
    result = gate.check_rendered(analyzer, testing.render_values(PROJECT, "prod", values), PROJECT)
    assert "SBX-SES-004" in result.rules
    assert [v for v in result.violations if v.policy == "SBX-SES-004"] == []
