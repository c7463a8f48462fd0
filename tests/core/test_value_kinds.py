"""Accepted-but-wrong values, refused by kind on every target (issue 15 section 2, issue 14
items 7 and 8): each example's exact exit-2 problem, starting from the prod stack, which lists
all six targets, and changing one value."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sandboxkit.config import ConfigSource, StackSpec, load_stack, read_stack_file
from sandboxkit.errors import REDACTED, ConfigError, Problem
from sandboxkit.project import stack_file
from sandboxkit.targets import TARGET_MODULES, get_target
from sandboxkit.value_formats import (
    MIN_SHARED_SECRET_LENGTH,
    ImageIdentity,
    pinned_by_digest,
    same_image,
)
from support import stack_values

IMAGE_EXPECTED = (
    "an OCI image reference, name[:tag][@digest] (lower-case repository path of letters, "
    "digits and . _ - separators, optionally after a registry host[:port]/; digest "
    "algorithm:hex), e.g. ghcr.io/example/sandbox:1.0 or ghcr.io/example/sandbox@sha256:<64 hex>"
)
SYSTEM_NAMESPACE_EXPECTED = (
    "a namespace of the kit's own, not one the cluster or a shared add-on uses (kube-*, gke-*, "
    "gmp-*, agent-sandbox-system, calico-system, cert-manager, cilium-secrets, "
    "config-management-system, default, gatekeeper-system, istio-system, kyverno, linkerd, "
    "tigera-operator)"
)
POOL_BOUND = (
    "at most 1000000 (the kit-wide bound: above every target's cap and default quota; each "
    "target's own cap may be lower)"
)


PROJECT_DIR = Path(__file__).resolve().parents[2]
# The prod stack file's secure: paths, so its secrets stay secrets in every example.
SECRET_PATHS = read_stack_file(stack_file(PROJECT_DIR, "prod")).secret_paths


def load(values: dict[str, Any]) -> StackSpec:
    return load_stack(ConfigSource(values=values, secret_paths=SECRET_PATHS), "prod")


def problems_of(values: dict[str, Any]) -> list[Problem]:
    with pytest.raises(ConfigError) as caught:
        load(values)
    return list(caught.value.problems)


@pytest.fixture
def prod(project_dir: Path) -> dict[str, Any]:
    return stack_values(project_dir, "prod")


def test_the_prod_stack_lists_every_target(prod: dict[str, Any]) -> None:
    # The examples below change one value of it, so each kind is tried on every target.
    assert set(prod["targets"]) == set(TARGET_MODULES)


# --- Values beyond what any platform takes --------------------------------------------------


@pytest.mark.parametrize(
    ("section", "key", "value", "expected"),
    [
        (
            "limits",
            "vcpu",
            2**64,
            "at most 1920 (the vCPU of the largest machine any target offers, Compute Engine X4)",
        ),
        (
            "limits",
            "memoryMiB",
            2**64,
            "at most 33554432 (32 TiB, the memory of the largest machine any target offers)",
        ),
        (
            "limits",
            "maxLifetimeSeconds",
            2**63,
            "at most 31622400 (a year and a day, the kit-wide bound on any sandbox duration)",
        ),
        (
            "audit",
            "logRetentionDays",
            10**6,
            "at most 3653 (the longest any target's log store keeps logs)",
        ),
        ("pool", "maxConcurrent", 10**30, POOL_BOUND),
    ],
)
def test_profile_values_beyond_every_platform_are_refused_kit_wide(
    prod: dict[str, Any], section: str, key: str, value: int, expected: str
) -> None:
    prod["profile"].setdefault(section, {})[key] = value
    assert problems_of(prod) == [Problem(f"sandboxkit:profile.{section}.{key}", value, expected)]


def test_a_pool_of_two_billion_is_refused_before_any_quota_is_rendered(
    prod: dict[str, Any],
) -> None:
    prod["profile"]["pool"] = {"ready": 2_000_000_000, "maxConcurrent": 2_000_000_000}
    assert problems_of(prod) == [
        Problem("sandboxkit:profile.pool.ready", 2_000_000_000, POOL_BOUND),
        Problem("sandboxkit:profile.pool.maxConcurrent", 2_000_000_000, POOL_BOUND),
    ]


@pytest.mark.parametrize(
    ("target", "bound", "source"),
    [
        (
            "kubernetes",
            150_000,
            "Kubernetes supports at most 150,000 pods per cluster "
            "(kubernetes.io/docs/setup/best-practices/cluster-large)",
        ),
        (
            "gcp-gke",
            150_000,
            "Kubernetes supports at most 150,000 pods per cluster "
            "(kubernetes.io/docs/setup/best-practices/cluster-large)",
        ),
        (
            "cloudflare",
            24_000,
            "developers.cloudflare.com/containers/platform/limits/ (Account limits: concurrent "
            "vCPU 1,500, so 24,000 lite instances of 1/16 vCPU)",
        ),
        (
            "azure-sessions",
            600,
            "learn.microsoft.com/azure/container-apps/session-pool: "
            "scaleConfiguration.maxConcurrentSessions (--max-sessions), maximum 600",
        ),
    ],
)
def test_each_target_bounds_the_pool_by_its_platform_cap(
    prod: dict[str, Any], target: str, bound: int, source: str
) -> None:
    prod["targets"] = [target]
    prod["profile"]["pool"] = {"ready": 2, "maxConcurrent": bound + 1}
    assert problems_of(prod) == [
        Problem(
            "sandboxkit:profile.pool.maxConcurrent",
            bound + 1,
            f"at most {bound} for target {target} (source: {source})",
        )
    ]
    assert any(
        cap.field == "pool.maxConcurrent" and cap.maximum == bound
        for cap in get_target(target).caps
    )


def test_run_as_user_is_a_32_bit_user_id(prod: dict[str, Any]) -> None:
    prod["kubernetes"]["runAsUser"] = 2**63
    assert problems_of(prod) == [
        Problem("sandboxkit:kubernetes.runAsUser", 2**63, "less than or equal to 4294967294")
    ]


# --- CIDR settings: the egress contract's special-purpose table, not is_private ----------------

SPECIAL_PURPOSE = [
    ("0.0.0.0/16", '"This network", 0.0.0.0/8, [RFC791], Section 3.2'),
    ("127.0.0.0/16", "Loopback, 127.0.0.0/8, [RFC1122], Section 3.2.1.3"),
    ("169.254.0.0/16", "Link Local, 169.254.0.0/16, [RFC3927]"),
]


@pytest.mark.parametrize(("cidr", "row"), SPECIAL_PURPOSE)
def test_the_aws_vpc_is_private_use_space(prod: dict[str, Any], cidr: str, row: str) -> None:
    prod["aws-microvm"]["vpcCidr"] = cidr
    assert problems_of(prod) == [
        Problem(
            "sandboxkit:aws-microvm.vpcCidr",
            cidr,
            "a private-use (RFC 1918) IPv4 block from /16 to /24, e.g. 10.20.0.0/16: "
            f"{cidr} is not private-use address space ({row})",
        )
    ]


@pytest.mark.parametrize(
    ("target", "key"),
    [
        ("gcp-cloudrun", "subnetCidr"),
        ("gcp-gke", "subnetCidr"),
        ("gcp-gke", "podsCidr"),
        ("gcp-gke", "servicesCidr"),
        ("gcp-gke", "masterCidr"),
    ],
)
@pytest.mark.parametrize(
    ("cidr", "row"),
    [
        ("192.0.2.0/24", "Documentation (TEST-NET-1), 192.0.2.0/24, [RFC5737]"),
        ("169.254.0.0/26", "Link Local, 169.254.0.0/16, [RFC3927]"),
    ],
)
def test_google_ranges_are_private_use_space(
    prod: dict[str, Any], target: str, key: str, cidr: str, row: str
) -> None:
    prod[target][key] = cidr
    assert problems_of(prod) == [
        Problem(
            f"sandboxkit:{target}.{key}",
            cidr,
            "a private-use (RFC 1918) IPv4 range such as 10.8.0.0/24, inside 10.0.0.0/8, "
            f"172.16.0.0/12 or 192.168.0.0/16: {cidr} is not private-use address space ({row})",
        )
    ]


# --- Free text where a format is known -----------------------------------------------------

IMAGE_SETTINGS = [
    ("kubernetes", ("image",)),
    ("kubernetes", ("resolver", "image")),
    ("gcp-gke", ("image",)),
    ("gcp-gke", ("resolver", "image")),
    ("gcp-cloudrun", ("image",)),
    ("azure-sessions", ("image",)),
    ("cloudflare", ("image",)),
]


@pytest.mark.parametrize(("target", "path"), IMAGE_SETTINGS)
@pytest.mark.parametrize(
    ("image", "why"),
    [
        ("кубернетес", " (invalid reference format)"),
        ("{{x}}", " (invalid reference format)"),
        ("Example.com/Sandbox:1", " (repository name must be lowercase)"),
        ("null", "; 'null' reads as a missing value, not an image name"),
    ],
)
def test_every_image_setting_takes_oci_references_only(
    prod: dict[str, Any], target: str, path: tuple[str, ...], image: str, why: str
) -> None:
    holder = prod[target]
    for part in path[:-1]:
        holder = holder[part]
    holder[path[-1]] = image
    key = ".".join(path)
    assert problems_of(prod) == [Problem(f"sandboxkit:{target}.{key}", image, IMAGE_EXPECTED + why)]


@pytest.mark.parametrize(("target", "path"), IMAGE_SETTINGS)
def test_an_image_of_white_space_is_refused_as_padding(
    prod: dict[str, Any], target: str, path: tuple[str, ...]
) -> None:
    holder = prod[target]
    for part in path[:-1]:
        holder = holder[part]
    holder[path[-1]] = " "
    key = ".".join(path)
    expected = "text without leading or trailing spaces or line breaks: this is white space only"
    assert problems_of(prod) == [Problem(f"sandboxkit:{target}.{key}", " ", expected)]


def test_cloud_run_template_images_are_oci_references(prod: dict[str, Any]) -> None:
    prod["gcp-cloudrun"]["templates"] = [{"name": "py", "image": "{{x}}"}]
    assert problems_of(prod) == [
        Problem(
            "sandboxkit:gcp-cloudrun.templates[0].image",
            "{{x}}",
            IMAGE_EXPECTED + " (invalid reference format)",
        )
    ]


@pytest.mark.parametrize(
    "image",
    [
        "ghcr.io/example/sandbox:3.12",
        "ghcr.io/example/sandbox@sha256:" + "5d" * 32,
        "registry.example.com:5000/team/sandbox:v1@sha256:" + "0a" * 32,
        "python",
    ],
)
def test_oci_references_with_tag_digest_or_registry_port_are_accepted(
    prod: dict[str, Any], image: str
) -> None:
    for target in ("kubernetes", "gcp-gke", "gcp-cloudrun", "azure-sessions", "cloudflare"):
        prod[target]["image"] = image
    spec = load(prod)
    assert spec.plans["kubernetes"]["image"] == image


def test_an_arn_of_twenty_xs_is_not_a_microvm_image_arn(prod: dict[str, Any]) -> None:
    prod["aws-microvm"]["baseImageArn"] = "x" * 20
    assert problems_of(prod) == [
        Problem(
            "sandboxkit:aws-microvm.baseImageArn",
            "x" * 20,
            "a MicroVM image ARN, arn:<partition>:lambda:<region>:<account or aws>:"
            "microvm-image:<name> (botocore 1.44.8 lambda-microvms shape MicrovmImageArn)",
        )
    ]


def test_launcher_layers_are_layer_version_arns(prod: dict[str, Any]) -> None:
    good = "arn:aws:lambda:eu-west-1:123456789012:layer:boto3:7"
    prod["aws-microvm"]["launcherLayers"] = [good, "x", good.rsplit(":", 1)[0]]
    expected = (
        "a Lambda layer version ARN, arn:aws:lambda:<region>:<12-digit account>:"
        "layer:<name>:<version> (botocore 1.44.8 lambda shape LayerVersionArn)"
    )
    assert problems_of(prod) == [Problem("sandboxkit:aws-microvm.launcherLayers[1]", "x", expected)]
    prod["aws-microvm"]["launcherLayers"] = [good]
    spec = load(prod)
    assert spec.plans["aws-microvm"]["launcher_layers"] == (good,)


def test_a_compatibility_date_is_a_real_day(prod: dict[str, Any]) -> None:
    prod["cloudflare"]["compatibilityDate"] = "2025-13-45"
    assert problems_of(prod) == [
        Problem(
            "sandboxkit:cloudflare.compatibilityDate",
            "2025-13-45",
            "a real calendar date written YYYY-MM-DD, e.g. 2026-07-01",
        )
    ]


# --- Kubernetes namespaces among system workloads -------------------------------------------


@pytest.mark.parametrize("target", ["kubernetes", "gcp-gke"])
def test_the_entry_namespace_is_never_a_system_namespace(prod: dict[str, Any], target: str) -> None:
    prod[target]["entryNamespace"] = "kube-system"
    assert problems_of(prod) == [
        Problem(f"sandboxkit:{target}.entryNamespace", "kube-system", SYSTEM_NAMESPACE_EXPECTED)
    ]


def test_sandboxes_among_istio_with_entry_from_default_are_refused(
    prod: dict[str, Any],
) -> None:
    prod["kubernetes"].update(
        namespace="istio-system", createNamespace=False, entryNamespace="default"
    )
    assert problems_of(prod) == [
        Problem("sandboxkit:kubernetes.namespace", "istio-system", SYSTEM_NAMESPACE_EXPECTED),
        Problem("sandboxkit:kubernetes.entryNamespace", "default", SYSTEM_NAMESPACE_EXPECTED),
    ]


@pytest.mark.parametrize("namespace", ["gke-managed-system", "gmp-system", "kube-anything"])
def test_reserved_prefixes_are_refused_too(prod: dict[str, Any], namespace: str) -> None:
    prod["kubernetes"]["namespace"] = namespace
    assert problems_of(prod) == [
        Problem("sandboxkit:kubernetes.namespace", namespace, SYSTEM_NAMESPACE_EXPECTED)
    ]


# --- Secrets of one kind, one minimum ---------------------------------------------------------

SECRET_SETTINGS = [
    ("aws-microvm", "webhookSecret"),
    ("aws-microvm", "workerCredentialKey"),
    ("cloudflare", "tokenSigningKey"),
    ("cloudflare", "sandboxIdKey"),
]


def test_the_secret_settings_are_exactly_these() -> None:
    # A new secret setting must join SECRET_SETTINGS (and take SharedSecret).
    found = {
        (name, key)
        for name in TARGET_MODULES
        for key in get_target(name).settings_model.secret_keys()
    }
    assert found == set(SECRET_SETTINGS)


@pytest.mark.parametrize(("target", "key"), SECRET_SETTINGS)
def test_every_hmac_key_and_token_has_the_same_minimum(
    prod: dict[str, Any], target: str, key: str
) -> None:
    prod[target][key] = "s" * (MIN_SHARED_SECRET_LENGTH - 1)
    assert problems_of(prod) == [
        Problem(
            f"sandboxkit:{target}.{key}",
            REDACTED,
            "a secret of at least 32 characters (every HMAC key and bearer token the kit "
            "takes; e.g. openssl rand -hex 32)",
        )
    ]
    prod[target][key] = "s" * MIN_SHARED_SECRET_LENGTH
    assert load(prod).settings[target]


def test_the_worker_applies_the_same_minimum(project_dir: Path) -> None:
    worker = project_dir / "components/sandboxkit/cloudflare/worker/src/index.js"
    assert f"const MIN_SECRET_LENGTH = {MIN_SHARED_SECRET_LENGTH};" in worker.read_text()


# --- secure: holding something other than ciphertext -----------------------------------------


@pytest.mark.parametrize("held", ["5", "[a, b]", "null", '""'])
def test_secure_holding_no_ciphertext_is_refused(tmp_path: Path, held: str) -> None:
    path = tmp_path / "Pulumi.prod.yaml"
    path.write_text(
        f"config:\n  sandboxkit:cloudflare:\n    tokenSigningKey:\n      secure: {held}\n"
    )
    with pytest.raises(ConfigError) as caught:
        read_stack_file(path)
    assert list(caught.value.problems) == [
        Problem(
            "sandboxkit:cloudflare.tokenSigningKey.secure",
            REDACTED,
            "the ciphertext text pulumi config set --secret writes; run pulumi config set "
            "--secret --path 'sandboxkit:cloudflare.tokenSigningKey' <value>",
        )
    ]


# -- image identity (issue 32): one image by any spelling -----------------------------------------

DIGEST = "sha256:" + "0d" * 32


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # A digest names the content, whatever the name or tag written before it.
        (f"us-docker.pkg.dev/p/a/launcher@{DIGEST}", f"us-docker.pkg.dev/p/a/launcher:x@{DIGEST}"),
        (f"us-docker.pkg.dev/p/a/launcher@{DIGEST}", f"ghcr.io/other/name@{DIGEST}"),
        # The registry host is case-insensitive and its default port is no other registry.
        ("us-docker.pkg.dev/p/a/launcher:1", "US-Docker.Pkg.Dev/p/a/launcher:1"),
        ("ghcr.io/x/y:1", "ghcr.io:443/x/y:1"),
        ("registry.example.com/x/y:1", "registry.example.com:80/x/y:1"),
        # Docker Hub, as the Docker CLI resolves a name without a registry.
        ("python:3.12", "docker.io/library/python:3.12"),
        ("python", "index.docker.io/library/python:latest"),
        ("someone/tool:1", "docker.io/someone/tool:1"),
        # A digest on one side only: the same repository with no differing tag may be it.
        (f"ghcr.io/x/y@{DIGEST}", "ghcr.io/x/y:1"),
        (f"ghcr.io/x/y:1@{DIGEST}", "ghcr.io/x/y:1"),
    ],
)
def test_one_image_by_another_spelling_is_the_same_image(first: str, second: str) -> None:
    assert same_image(first, second) and same_image(second, first)


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (f"ghcr.io/x/y@{DIGEST}", "ghcr.io/x/y@sha256:" + "1d" * 32),
        (f"ghcr.io/x/y:1@{DIGEST}", "ghcr.io/x/y:2"),
        ("ghcr.io/x/y:1", "ghcr.io/x/y:2"),
        ("ghcr.io/x/y:1", "ghcr.io:8443/x/y:1"),
        ("ghcr.io/x/y:1", "ghcr.io/x/z:1"),
        ("localhost:5000/y:1", "localhost/y:1"),
    ],
)
def test_different_images_are_different(first: str, second: str) -> None:
    assert not same_image(first, second) and not same_image(second, first)


def test_identity_normalises_host_port_hub_and_digest() -> None:
    assert ImageIdentity.of(f"Index.Docker.IO:443/python:3@{DIGEST}") == ImageIdentity(
        "docker.io/library/python", "3", DIGEST
    )
    assert pinned_by_digest(f"ghcr.io/x/y@{DIGEST}")
    assert not pinned_by_digest("ghcr.io/x/y:1")
    assert not pinned_by_digest("ghcr.io/x/y@sha256:0d0d")
    assert not pinned_by_digest("ghcr.io/x/y@SHA256:" + "0D" * 32)
