"""checkov fails closed: an export it cannot fully read is an error naming the file, never a pass.

checkov 3.3.30 exits 0 with ``parsing_errors: 0`` and ``resource_count: 0`` on a file it cannot
parse, and drops a Kubernetes document whose ``name`` holds ``#`` with a debug line only. One
checkov run over the dev stack's exports, two of them made unreadable that way.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from checkov_support import PROJECT_DIR, require_checkov

from sandboxkit.checkov_bridge.exporters import StackExport, export_stack
from sandboxkit.checkov_bridge.runner import CheckovFailedError, check_fully_read, scan
from support import shipped_render


def _exports() -> tuple[StackExport, StackExport]:
    """The dev stack's exports as the kit writes them, and a copy checkov cannot fully read."""
    good = export_stack(shipped_render(PROJECT_DIR, "dev"))
    files = dict(good.files)
    files["terraform.tfplan.json"] = '{"planned_values": {"root_module": {"resources": ['
    # The resolver's Deployment, renamed with a `#`: checkov's parser drops the document.
    files["kubernetes.kubernetes.yaml"] = files["kubernetes.kubernetes.yaml"].replace(
        "name: sandboxkit-dev-resolver\n", "name: sandboxkit-dev-resolver#1\n", 1
    )
    assert files["kubernetes.kubernetes.yaml"] != good.files["kubernetes.kubernetes.yaml"]
    return good, dataclasses.replace(good, files=files)


def test_an_export_checkov_cannot_fully_read_is_refused_naming_each_file() -> None:
    require_checkov()
    _, bad = _exports()
    with pytest.raises(CheckovFailedError) as caught:
        scan(PROJECT_DIR, [bad], include_project_files=False, baseline=())
    message = str(caught.value)
    tf_count = sum(r.framework == "terraform_plan" for r in bad.resources)
    k8s_count = sum(r.framework == "kubernetes" for r in bad.resources)
    assert message.startswith("checkov could not read every file it was given")
    assert (
        f"dev/terraform.tfplan.json (terraform_plan): checkov read 0 of the {tf_count} "
        "terraform_plan resources exported"
    ) in message
    assert (
        f"dev/kubernetes.kubernetes.yaml (kubernetes): checkov read {k8s_count - 2} of the "
        f"{k8s_count} kubernetes resources exported; never reported on "
        "Deployment.agent-sandboxes.sandboxkit-dev-resolver, Pod.agent-sandboxes."
    ) in message


def test_a_parsing_error_and_a_missing_framework_report_are_refused(tmp_path: Path) -> None:
    good, _ = _exports()
    k8s = [r for r in good.resources if r.framework == "kubernetes"]
    count = {"passed": 1, "failed": 0, "resource_count": len(k8s), "parsing_errors": 1}
    reports = [
        {
            "check_type": "kubernetes",
            "summary": count,
            "results": {"parsing_errors": [str(tmp_path / "dev" / "kubernetes.kubernetes.yaml")]},
        }
    ]
    with pytest.raises(CheckovFailedError) as caught:
        check_fully_read(reports, [good], tmp_path, PROJECT_DIR)
    message = str(caught.value)
    assert "dev/kubernetes.kubernetes.yaml: checkov could not parse it" in message
    # No terraform_plan report at all: none of its resources was read.
    assert "dev/terraform.tfplan.json (terraform_plan): checkov read 0 of the" in message
    # A report that read everything passes.
    reports[0]["results"] = {"parsing_errors": []}
    count["parsing_errors"] = 0
    only_k8s = dataclasses.replace(good, resources=tuple(k8s))
    check_fully_read(reports, [only_k8s], tmp_path, PROJECT_DIR)
