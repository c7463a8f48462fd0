"""Values the platforms refuse or round, refused by the kit naming the setting (issue 31 item 9):
each started from the prod stack (every target) with one value changed, as a user writes it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandboxkit.aws.spec import bucket_name
from sandboxkit.cloudflare.plan import MAX_COMPATIBILITY_DATE
from sandboxkit.errors import Problem
from settings_paths import refusal, with_value

WORKER_LOCK = (
    Path(__file__).parents[2] / "components/sandboxkit/cloudflare/worker/package-lock.json"
)


def problems_of(path: str, value: object, key: str | None = None) -> list[Problem]:
    """The problems naming ``key`` (default: ``path``) when prod's ``path`` is ``value``."""
    refused = refusal(with_value(path, value))
    assert refused is not None, f"{path}: {value!r} was accepted"
    named = f"sandboxkit:{key or path}"
    found = [p for p in refused.problems if p.key == named]
    assert found, f"no problem names {named}: {[str(p) for p in refused.problems]}"
    return found


@pytest.mark.parametrize("value", ["172.16.0.0/27", "172.16.0.0/29", "172.16.0.16", "10.0.0.0/8"])
def test_the_gke_control_plane_range_is_a_28(value: str) -> None:
    [problem] = problems_of("gcp-gke.masterCidr", value)
    assert problem.value == value
    assert problem.expected.startswith("a /28 such as 172.16.0.16/28, not a /")
    assert "network-isolation" in problem.expected


def test_a_28_control_plane_range_is_accepted() -> None:
    assert refusal(with_value("gcp-gke.masterCidr", "172.16.0.32/28")) is None


@pytest.mark.parametrize("value", ["10.16.0.0/32", "10.16.0.0/24", "10.16.0.0/20"])
def test_a_gke_pods_range_that_holds_too_few_nodes_is_refused(value: str) -> None:
    # Prod: maxNodes 5 and systemNodes 1 in three zones, 18 nodes of a /24 each: a /19 at least.
    [problem] = problems_of("gcp-gke.podsCidr", value)
    assert problem.expected.startswith(
        "a range of at least /19: it holds a /24 for each of the 18 nodes (maxNodes 5 + "
        "systemNodes 1, in each of 3 zones) the pools may reach; widen podsCidr or lower maxNodes"
    )
    assert "flexible-pod-cidr" in problem.expected


def test_the_pods_range_bound_follows_max_nodes() -> None:
    assert refusal(with_value("gcp-gke.podsCidr", "10.16.0.0/19")) is None
    values = with_value("gcp-gke.maxNodes", 1000)
    refused = refusal(values)
    assert refused is not None
    [problem] = [p for p in refused.problems if p.key == "sandboxkit:gcp-gke.podsCidr"]
    assert problem.expected.startswith(
        "a range of at least /12: it holds a /24 for each of the 3003"
    )


@pytest.mark.parametrize(
    ("value", "hint"),
    [
        ("https://example.azurecr.io", "; drop the scheme: example.azurecr.io"),
        ("https://example.azurecr.io/v2/", "; drop the scheme: example.azurecr.io"),
        ("", ""),
        (None, ""),
        ("example.azurecr.io/agent-python-sandbox", ""),
        ("example azurecr io", ""),
    ],
)
def test_an_azure_registry_server_is_a_host_name(value: str | None, hint: str) -> None:
    [problem] = problems_of("azure-sessions.identity.registryServer", value)
    assert problem.expected == (
        "a registry host name with an optional port, e.g. example.azurecr.io (the login server "
        "Container Apps' registries[].server takes, no scheme or path), or leave "
        f"registryServer out{hint}"
    )


def test_a_registry_host_in_other_case_is_accepted() -> None:
    values = with_value("azure-sessions.identity.registryServer", "Example.AzureCR.io:443")
    assert refusal(values) is None


@pytest.mark.parametrize(
    ("name", "rule"),
    [
        ("a..b", "no two adjacent dots"),
        ("192.168.1.1", "not an IP address"),
        ("xn--abc", "no 'xn--' prefix (reserved)"),
        ("sthree-artifacts", "no 'sthree-' prefix (reserved)"),
        ("amzn-s3-demo-bucket", "no 'amzn-s3-demo-' prefix (reserved)"),
        ("artifacts-s3alias", "no '-s3alias' suffix (reserved)"),
        ("artifacts--ol-s3", "no '--ol-s3' suffix (reserved)"),
        ("artifacts.mrap", "no '.mrap' suffix (reserved)"),
        ("artifacts--x-s3", "no '--x-s3' suffix (reserved)"),
        ("artifacts--table-s3", "no '--table-s3' suffix (reserved)"),
        ("ab", "3 to 63 lower-case letters"),
        ("a" * 64, "3 to 63 lower-case letters"),
        ("Artifacts", "3 to 63 lower-case letters"),
        ("-artifacts", "3 to 63 lower-case letters"),
        ("artifacts_1", "3 to 63 lower-case letters"),
    ],
)
def test_s3_bucket_names_the_naming_rules_refuse(name: str, rule: str) -> None:
    [problem] = problems_of("aws-microvm.workerArtifact.bucket", name)
    assert problem.expected.startswith(f"an S3 bucket name the bucket naming rules admit: {rule}")
    assert problem.expected.endswith(
        "(source: docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html)"
    )


@pytest.mark.parametrize("name", ["abc", "a.b-c", "1" * 63, "xn-abc", "s3alias-artifacts"])
def test_s3_bucket_names_the_rules_admit(name: str) -> None:
    assert bucket_name(name) == name


@pytest.mark.parametrize("value", ["9999-12-31", "2026-07-31", "2027-01-01"])
def test_a_compatibility_date_beyond_the_shipped_workerd_is_refused(value: str) -> None:
    [problem] = problems_of("cloudflare.compatibilityDate", value)
    assert problem.expected.startswith(
        "2026-07-30 or earlier, the newest date the workerd the kit ships supports"
    )


def test_the_newest_compatibility_date_is_the_shipped_workerds() -> None:
    # A workerd release 1.YYYYMMDD.N supports compatibility dates up to YYYY-MM-DD.
    lock = json.loads(WORKER_LOCK.read_text())
    version = lock["packages"]["node_modules/workerd"]["version"]
    day = version.split(".")[1]
    assert f"{day[:4]}-{day[4:6]}-{day[6:]}" == MAX_COMPATIBILITY_DATE
    assert refusal(with_value("cloudflare.compatibilityDate", MAX_COMPATIBILITY_DATE)) is None


@pytest.mark.parametrize(("value", "target"), [(0.0015, "kubernetes"), (0.0015, "gcp-gke")])
def test_a_vcpu_between_two_millicores_is_refused_not_rounded(value: float, target: str) -> None:
    # Rendered as "2m" before: a third more CPU than the profile asked for, without a word.
    problems = problems_of("profile.limits.vcpu", value)
    assert any(
        p.expected.startswith(f"at least 0.001, in steps of 0.001 for target {target} ")
        for p in problems
    ), [str(p) for p in problems]


@pytest.mark.parametrize("value", [0.005, 0.012345])
def test_a_vcpu_the_cfs_quota_cannot_hold_is_refused_on_local(value: float) -> None:
    problems = problems_of("profile.limits.vcpu", value)
    assert any(
        p.expected.startswith("at least 0.01, in steps of 0.00001 for target local ")
        for p in problems
    ), [str(p) for p in problems]


def test_whole_millicores_pass_the_kubernetes_targets() -> None:
    refused = refusal(with_value("profile.limits.vcpu", 0.25))
    keys = [] if refused is None else [str(p) for p in refused.problems]
    assert not [k for k in keys if "kubernetes" in k or "gcp-gke" in k or "local" in k], keys
