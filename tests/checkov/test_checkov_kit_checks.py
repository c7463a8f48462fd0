"""The kit's own checkov checks (policy-packs/checkov/checks) on their pass/fail fixtures: the
exact sets of passing and failing resources per check, from one checkov run; the same run
started warm (``CheckovProcess.warm``) gives exactly its verdicts."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from checkov_support import require_checkov

from sandboxkit.checkov_bridge.process import CheckovProcess, script_interpreter
from sandboxkit.checkov_bridge.runner import (
    KIT_CHECKS_DIR,
    checkov_command,
    checkov_reports,
    run_checkov,
)

PROJECT_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def checkov_bin() -> Path:
    return require_checkov()


FIXTURES = Path(__file__).parent / "fixtures" / "kit_checks"
FILES = [
    FIXTURES / "kubernetes.yaml",
    FIXTURES / "arm.json",
    FIXTURES / "terraform.tfplan.json",
    FIXTURES / ".github" / "workflows" / "pinning.yml",
]

EXPECTED: dict[str, tuple[set[str], set[str]]] = {
    "CKV_SBX_1": (
        {"pass-template"},
        {"fail-template-managed-network", "fail-template-env-injection"},
    ),
    "CKV_SBX_2": ({"pass-pool"}, {"fail-pool-no-template", "fail-pool-unbounded"}),
    "CKV_SBX_3": (
        {"pass-deny", "pass-public-only"},
        {"fail-egress-only-ingress-type", "fail-egress-anywhere", "fail-egress-rule-without-peers"},
    ),
    "CKV_SBX_4": ({"pass-quota"}, {"fail-quota-no-memory"}),
    "CKV_SBX_5": ({"pass-gvisor", "pass-kata"}, {"fail-runc"}),
    "CKV_SBX_6": (
        {"pass-cilium", "pass-gke"},
        {"fail-cilium-match-all", "fail-cilium-rule-without-peers", "fail-gke-match-all"},
    ),
    "CKV_SBX_7": ({"pass-namespace"}, {"fail-namespace-baseline"}),
    "CKV_SBX_8": (
        {"pass-sha", "pass-local", "pass-docker-digest", "pass-run"},
        {"fail-tag", "fail-branch", "fail-short-sha", "fail-docker-tag"},
    ),
    "CKV_SBX_9": ({"pass-pool"}, {"fail-pool-egress", "fail-pool-unset"}),
    "CKV_SBX_10": ({"pass-workspace"}, {"fail-workspace-short", "fail-workspace-unset"}),
    "CKV_SBX_11": ({"pass-environment"}, {"fail-environment-no-logs"}),
    "CKV_SBX_12": ({"pass-executor"}, {"fail-owner", "fail-no-principal"}),
    "CKV_SBX_13": ({"pass-group"}, {"fail-group-untagged"}),
    "CKV_SBX_14": ({"pass-connector"}, {"fail-connector-no-groups", "fail-connector-empty"}),
    "CKV_SBX_15": ({"pass-image"}, {"fail-image-aws-internet", "fail-image-no-connector"}),
    "CKV_SBX_16": ({"pass-dns"}, {"fail-dns-open"}),
    "CKV_SBX_17": ({"pass-logging"}, {"fail-logging-alert-only"}),
    "CKV_SBX_18": ({"pass-run"}, {"fail-run-public-ingress", "fail-run-private-ranges-only"}),
    "CKV_SBX_19": ({"pass-invoker"}, {"fail-all-users"}),
    "CKV_SBX_20": ({"pass-deny-all", "pass-allow-named"}, {"fail-allow-anywhere"}),
    "CKV_SBX_21": ({"pass-bucket"}, {"fail-bucket-short"}),
    "CKV_SBX_22": (
        {
            "pass-worker",
            "pass-wrangler-script",
            "fail-wrangler-workers-dev",
            "fail-wrangler-preview-urls",
        },
        {"fail-worker-plain-token", "fail-worker-no-logs"},
    ),
    # The kit's script (workers_dev, preview_urls: the switches wrangler writes) or a plain
    # script's subdomain resource; a plain script without the switches is not judged.
    "CKV_SBX_23": (
        {"pass-subdomain", "pass-wrangler-script"},
        {
            "fail-subdomain-enabled",
            "fail-subdomain-previews",
            "fail-wrangler-workers-dev",
            "fail-wrangler-preview-urls",
        },
    ),
}
_STEP = re.compile(r"\.steps\[\d+\]\((?P<name>[^)]*)\)$")


def _fixture_name(resource: str) -> str | None:
    """The fixture's name in a checkov resource id; ``None`` for a whole workflow job."""
    if resource.startswith("jobs("):
        step = _STEP.search(resource)
        return step["name"] if step else None
    return resource.rsplit(".", 1)[-1]


FRAMEWORKS = ["kubernetes", "arm", "terraform_plan", "github_actions"]


@pytest.fixture(scope="module")
def plain_reports(checkov_bin: Path) -> list[dict[str, Any]]:
    """One plain checkov run (a new process, nothing warmed) over every fixture file."""
    return run_checkov(checkov_bin, FILES, FRAMEWORKS, PROJECT_DIR / KIT_CHECKS_DIR)


@pytest.fixture(scope="module")
def verdicts(plain_reports: list[dict[str, Any]]) -> dict[str, tuple[set[str], set[str]]]:
    out: dict[str, tuple[set[str], set[str]]] = defaultdict(lambda: (set(), set()))
    for report in plain_reports:
        for status, index in (("passed_checks", 0), ("failed_checks", 1)):
            for result in report["results"].get(status, []):
                name = _fixture_name(result["resource"])
                if result["check_id"].startswith("CKV_SBX_") and name is not None:
                    out[result["check_id"]][index].add(name)
    return dict(out)


def test_every_kit_check_has_one_file_and_fixtures() -> None:
    files = sorted((PROJECT_DIR / KIT_CHECKS_DIR).glob("*.py"))
    ids = []
    for path in files:
        if path.name != "__init__.py":
            found = re.findall(r'id="(CKV_SBX_\d+)"', path.read_text())
            assert len(found) == 1, f"{path.name}: one check per file"
            ids.append(found[0])
    assert sorted(ids) == sorted(EXPECTED)


@pytest.mark.parametrize("check", sorted(EXPECTED))
def test_kit_check_passes_and_fails_exactly_its_fixtures(
    verdicts: dict[str, tuple[set[str], set[str]]], check: str
) -> None:
    assert verdicts.get(check) == EXPECTED[check]


def all_verdicts(reports: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """Every (check, resource, passed/failed) of checkov's reports, the kit's checks and its own."""
    found = set()
    for report in reports:
        results = report["results"]
        assert isinstance(results, dict)
        for status in ("passed_checks", "failed_checks"):
            found |= {(r["check_id"], r["resource"], status) for r in results.get(status, [])}
    return found


def test_a_warmed_process_gives_the_verdicts_of_a_plain_run(
    checkov_bin: Path, plain_reports: list[dict[str, Any]]
) -> None:
    # CheckovProcess (checkov_bridge.runner): started before its files exist, as the gate
    # starts it; the plain run is this module's.
    assert script_interpreter(checkov_bin) is not None, "the venv's checkov is a Python script"
    with CheckovProcess(checkov_bin) as process:
        process.warm()
        process.start(checkov_command(checkov_bin, FILES, FRAMEWORKS, PROJECT_DIR / KIT_CHECKS_DIR))
        warmed = checkov_reports(*process.wait())
    plain = all_verdicts(plain_reports)
    assert {v[0] for v in plain} >= set(EXPECTED)
    assert all_verdicts(warmed) == plain
