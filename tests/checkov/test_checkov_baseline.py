"""The reviewed baseline: every entry has a reason, no entry is stale, and the shipped stacks and
the kit's files have no checkov failure it does not accept."""

from __future__ import annotations

from pathlib import Path

import pytest
from checkov_support import require_checkov, scan_shipped

from sandboxkit.checkov_bridge.baseline import BaselineError, load_baseline, parse_baseline
from sandboxkit.checkov_bridge.mapping import UNCHECKED
from sandboxkit.checkov_bridge.runner import CheckovReport

PROJECT_DIR = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def checkov_bin() -> Path:
    return require_checkov()


@pytest.fixture(scope="module")
def shipped_report(checkov_bin: Path) -> CheckovReport:
    return scan_shipped(checkov_bin)


REASON = "Sandbox pods are one-shot and have nothing to probe."


def test_every_entry_of_the_shipped_baseline_has_a_reason() -> None:
    entries = load_baseline(PROJECT_DIR)
    assert entries
    assert all(len(e.reason.split()) >= 6 for e in entries)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"check": "CKV_K8S_8", "resource_type": "t"}, r"accepted\[0\]\.reason: got None"),
        ({"check": "CKV_K8S_8", "resource_type": "t", "reason": "ok"}, r"accepted\[0\]\.reason"),
        ({"check": "K8S_8", "resource_type": "t", "reason": REASON}, r"accepted\[0\]\.check"),
        ({"check": "CKV_K8S_8", "reason": REASON}, "exactly one of resource_type, urn, file"),
        (
            {"check": "CKV_K8S_8", "urn": "u*", "file": "f", "reason": REASON},
            "exactly one of",
        ),
        ({"check": "CKV_K8S_8", "urn": "u*", "why": REASON}, r"unknown keys \['why'\]"),
    ],
)
def test_a_malformed_entry_is_refused_naming_it(entry: dict[str, str], message: str) -> None:
    with pytest.raises(BaselineError, match=message):
        parse_baseline({"accepted": [entry]}, "baseline.yaml")


def test_an_entry_matches_its_check_and_selector_only() -> None:
    (entry,) = parse_baseline(
        {"accepted": [{"check": "CKV_K8S_43", "urn": "urn:pulumi:dev::*", "reason": REASON}]},
        "b",
    )
    assert entry.matches("CKV_K8S_43", None, "urn:pulumi:dev::sandboxkit::x", "f", "r")
    assert not entry.matches("CKV_K8S_43", None, "urn:pulumi:prod::sandboxkit::x", "f", "r")
    assert not entry.matches("CKV_K8S_22", None, "urn:pulumi:dev::sandboxkit::x", "f", "r")


def test_a_type_entry_accepts_every_api_version_of_its_type_and_no_other_type() -> None:
    pool = "azure-native:app:ContainerAppsSessionPool"
    (entry,) = parse_baseline(
        {"accepted": [{"check": "CKV_SBX_9", "resource_type": pool, "reason": REASON}]}, "b"
    )
    versioned = "azure-native:app/v20240202preview:ContainerAppsSessionPool"
    for token in (pool, versioned):
        assert entry.matches("CKV_SBX_9", token, "urn", "f", "r")
    assert not entry.matches("CKV_SBX_9", "azure-native:app:ManagedEnvironment", "urn", "f", "r")
    assert not entry.matches("CKV_SBX_9", None, "urn", "f", "r")


def test_shipped_stacks_and_files_have_no_unaccepted_failure(shipped_report: CheckovReport) -> None:
    assert [f.violation() for f in shipped_report.failures] == []


def test_no_baseline_entry_is_stale(shipped_report: CheckovReport) -> None:
    used = {f.accepted for f in shipped_report.accepted}
    stale = [e for e in load_baseline(PROJECT_DIR) if e not in used]
    assert stale == []


def test_prod_kubernetes_findings_are_only_the_probe_checks(shipped_report: CheckovReport) -> None:
    prod = [f for f in shipped_report.for_stack("prod") if not f.passed]
    kubernetes = [f for f in prod if f.type is not None and f.type.startswith("kubernetes:")]
    assert {(f.policy, f.urn.rsplit("::", 1)[-1]) for f in kubernetes} == {
        ("CKV_K8S_8", "kubernetes-template"),
        ("CKV_K8S_9", "kubernetes-template"),
        ("CKV_K8S_8", "gcp-gke-agent-sandbox-template"),
        ("CKV_K8S_9", "gcp-gke-agent-sandbox-template"),
    }


def test_every_exported_type_is_evaluated_by_at_least_one_check(
    shipped_report: CheckovReport,
) -> None:
    coverage = shipped_report.coverage()
    assert coverage
    unchecked = {t for t, row in coverage.items() if not row["checks"]}
    assert unchecked == set(UNCHECKED)
