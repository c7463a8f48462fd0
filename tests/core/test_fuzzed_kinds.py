"""Fuzzed input by kind (issue 31): each kind of mistake a generated stack can hold, tried in
every setting of that kind on every target (``settings_paths``), starting from the prod stack
(all six targets) and changing one value. Whatever the value, validation ends in a spec or a
``ConfigError`` naming exactly the setting changed (exit 2), never another exception (exit
70). The time bound over long values is a benchmark: ``benchmarks/long_values.py``."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandboxkit.aws.spec import aws_regions
from sandboxkit.config import _key_homes
from sandboxkit.errors import Problem
from sandboxkit.targets import TARGET_MODULES
from sandboxkit.value_formats import MAX_IMAGE_REFERENCE_LENGTH, image_reference
from settings_paths import of_type, refusal, setting_paths, validated_by, with_value

FUZZ = settings(max_examples=1000, suppress_health_check=[HealthCheck.too_slow])


def refused_keys(path: str, value: object) -> list[str] | None:
    """The keys the refusal of prod with ``path`` set to ``value`` names; ``None`` if none."""
    refused = refusal(with_value(path, value))
    return None if refused is None else list(refused.keys)


# --- image references: malformed digests (item 1) -------------------------------------------

IMAGE_SETTINGS = setting_paths(validated_by(image_reference))
HEX = "0123456789abcdef"
# What docker-image-py (as the distribution reference library) accepts: these algorithms with
# exactly this many lower-case hex digits (docker_image/digest.py DIGESTS_SIZE, in bytes).
DIGEST_LENGTHS = {"sha256": 64, "sha384": 96, "sha512": 128}


def test_every_image_setting_is_found() -> None:
    assert IMAGE_SETTINGS == [
        "kubernetes.image",
        "kubernetes.resolver.image",
        "azure-sessions.image",
        "gcp-cloudrun.image",
        "gcp-cloudrun.sandboxImage",
        "gcp-cloudrun.templates[0].image",
        "gcp-gke.image",
        "gcp-gke.resolver.image",
        "cloudflare.image",
    ]


@pytest.mark.parametrize("path", IMAGE_SETTINGS)
@pytest.mark.parametrize("digest", ["sha256:" + "A" * 64, "sha256:" + "a" * 63])
def test_the_reported_malformed_digests_are_refused_naming_the_setting(
    path: str, digest: str
) -> None:
    image = f"ghcr.io/example/sandbox@{digest}"
    assert refused_keys(path, image) == [f"sandboxkit:{path}"]


@FUZZ
@given(
    path=st.sampled_from(IMAGE_SETTINGS),
    algorithm=st.sampled_from([*DIGEST_LENGTHS, "md5", "sha1", "SHA256", "sha256+b64", "x"]),
    digits=st.text(alphabet=HEX + "ABCDEFgz_=-.:", max_size=160)
    | st.integers(0, 160).map(lambda n: "a" * n),
)
def test_any_digest_in_any_image_setting_is_accepted_or_refused_naming_it(
    path: str, algorithm: str, digits: str
) -> None:
    image = f"ghcr.io/example/sandbox@{algorithm}:{digits}"
    well_formed = len(digits) == DIGEST_LENGTHS.get(algorithm) and set(digits) <= set(HEX)
    assert refused_keys(path, image) == (None if well_formed else [f"sandboxkit:{path}"])


@pytest.mark.parametrize("path", IMAGE_SETTINGS)
def test_an_image_reference_beyond_the_grammars_longest_is_refused_unparsed(path: str) -> None:
    # 100,000 dots once took docker-image-py's expressions 6 s (benchmarks/long_values.py).
    refused = refusal(with_value(path, "a." * 50_000))
    assert refused is not None
    [problem] = refused.problems
    assert (problem.key, problem.expected.split(", at most ")[1]) == (
        f"sandboxkit:{path}",
        f"{MAX_IMAGE_REFERENCE_LENGTH} characters (a name of at most 255, a tag of at most 128, "
        "a digest of at most sha512:<128 hex>); this one has 100,000",
    )


# --- text with leading or trailing white space (item 5) -------------------------------------

# Text whose spaces are its meaning (config._PADDING_KEPT): a command, its arguments, a policy.
PADDING_KEPT = {
    "gcp-cloudrun.templates[0].command[0]",
    "gcp-cloudrun.templates[0].args[0]",
    "aws-microvm.executionRolePolicy",
}
TEXT_SETTINGS = [
    "profile.egress.allow[0]",
    *(p for p in setting_paths(of_type(str)) if p not in PADDING_KEPT),
]


def padded_problem(path: str, value: str) -> Problem:
    fix = f"write {value.strip()!r}" if value.strip() else "this is white space only"
    return Problem(
        f"sandboxkit:{path}",
        value,
        f"text without leading or trailing spaces or line breaks: {fix}",
    )


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("kubernetes.image", "ghcr.io/x/y:1\n"),
        ("aws-microvm.controlPlaneUrl", " https://agents.example.com"),
    ],
)
def test_the_reported_padded_values_are_refused_naming_the_setting(path: str, value: str) -> None:
    refused = refusal(with_value(path, value))
    assert refused is not None and list(refused.problems) == [padded_problem(path, value)]


@FUZZ
@given(
    path=st.sampled_from(TEXT_SETTINGS),
    text=st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20),
    before=st.text(" \t\n\r\u00a0\u3000", max_size=3),
    after=st.text(" \t\n\r\u00a0\u3000", max_size=3),
)
def test_text_padded_with_white_space_is_refused_in_every_text_setting(
    path: str, text: str, before: str, after: str
) -> None:
    value = f"{before}{text}{after}"
    refused = refusal(with_value(path, value))
    if value != value.strip():
        assert refused is not None and padded_problem(path, value) in refused.problems
    # Named once, for its padding: no second problem about the same value.
    assert refused is None or [p.key for p in refused.problems].count(f"sandboxkit:{path}") <= 1


# --- ports, digits and brackets (items 6-8) -------------------------------------------------

PORT_EXPECTED = (
    "is not a whole number from 1 to 65535 in ASCII digits without a leading zero (e.g. 443)"
)


@pytest.mark.parametrize("port", ["٤٤٣", "\uff14\uff14\uff13", "0443", "²", "0", "", "65536"])
@pytest.mark.parametrize("where", ["allow", "controlPlaneHosts", "controlPlaneUrl"])
def test_a_port_is_ascii_digits_without_a_leading_zero_everywhere(port: str, where: str) -> None:
    said = f"port {port!r} {PORT_EXPECTED}"
    if where == "allow":
        path, value = "profile.egress.allow[0]", f"pypi.org:{port}"
        values = with_value(path, value)
        values["profile"]["egress"]["mode"] = "allowlist"
        expected = f"a specific public host[:port] entry: {said}"
    elif where == "controlPlaneHosts":
        path, value = "aws-microvm.controlPlaneHosts[0]", f"telemetry.example.com:{port}"
        values, expected = with_value(path, value), said
    else:
        path, value = "aws-microvm.controlPlaneUrl", f"https://agents.example.com:{port}/api"
        values = with_value(path, value)
        expected = f"a URL whose host and port are allowed: {said}"
    refused = refusal(values)
    assert refused is not None and list(refused.problems) == [
        Problem(f"sandboxkit:{path}", value, expected)
    ]


@pytest.mark.parametrize(
    ("entry", "written"),
    [
        ("[pypi.org]:443", "pypi.org:443"),
        ("[*.pythonhosted.org]:443", "*.pythonhosted.org:443"),
        ("[1.2.3.4]", "1.2.3.4"),
    ],
)
@pytest.mark.parametrize("path", ["profile.egress.allow[0]", "aws-microvm.controlPlaneHosts[0]"])
def test_brackets_hold_ipv6_literals_only(entry: str, written: str, path: str) -> None:
    values = with_value(path, entry)
    if "allow" in path:
        values["profile"]["egress"]["mode"] = "allowlist"
    refused = refusal(values)
    said = f"brackets are for IPv6 literals only; write {written}"
    expected = f"a specific public host[:port] entry: {said}" if "allow" in path else said
    assert refused is not None and list(refused.problems) == [
        Problem(f"sandboxkit:{path}", entry, expected)
    ]


@pytest.mark.parametrize(
    ("path", "version"),
    [("kubernetes.ciliumVersion", "1.١٩"), ("gcp-gke.minMasterVersion", "1.٣٦")],
)
def test_versions_are_ascii_digits(path: str, version: str) -> None:
    refused = refusal(with_value(path, version))
    assert refused is not None and list(refused.keys) == [f"sandboxkit:{path}"]


# --- tiny memory and region typos (item 10) -------------------------------------------------


def test_memory_below_every_targets_minimum_names_each_floor_and_the_unit() -> None:
    refused = refusal(with_value("profile.limits.memoryMiB", 4))
    assert refused is not None
    unit = "; memoryMiB counts MiB: 4 GiB is 4096"
    runtime = (
        "container runtimes refuse a memory limit below 6 MiB: the pod fails with "
        "CreateContainerError (kubernetes/kubernetes#124841; sig-node: a runtime requirement)"
    )
    key = "sandboxkit:profile.limits.memoryMiB"
    named = [p for p in refused.problems if p.expected.endswith(unit)]
    # Each target's floor (a target added later names its own beside these).
    assert [p for p in named if "for target local " not in p.expected] == [
        Problem(key, 4, f"at least 6 for target kubernetes (source: {runtime}){unit}"),
        Problem(
            key,
            4,
            "at least 512 for target gcp-cloudrun (source: Cloud Run's minimum memory in the "
            "second generation execution environment, which the service runs in "
            "(https://cloud.google.com/run/docs/configuring/services/memory-limits, Minimum "
            f"memory)){unit}",
        ),
        Problem(key, 4, f"at least 6 for target gcp-gke (source: {runtime}){unit}"),
        Problem(
            key,
            4,
            "from 256 to 12288 for target cloudflare (source: developers.cloudflare.com/"
            f"containers/platform/limits/ (Instance Types)){unit}",
        ),
    ]
    # azure-sessions sizes custom containers exactly (2 GiB per vCPU) and names its own size.
    assert "2048 (2 GiB per vCPU, for 1 vCPU) for target azure-sessions" in str(refused)


@pytest.mark.parametrize("zones", [["eu-west-1a"], ["eu-centrall-1a"]])
def test_an_aws_region_typo_is_named_with_the_region_meant_not_blamed_on_the_zones(
    zones: list[str],
) -> None:
    values = with_value("aws-microvm.region", "eu-centrall-1")
    values["aws-microvm"]["availabilityZones"] = zones
    refused = refusal(values)
    assert refused is not None and list(refused.problems) == [
        Problem(
            "sandboxkit:aws-microvm.region",
            "eu-centrall-1",
            f"an AWS region (did you mean 'eu-central-1'?): one of the {len(aws_regions())} "
            "regions of botocore's endpoints data, e.g. eu-west-1 (aws ec2 describe-regions "
            "lists your account's)",
        )
    ]


def test_every_region_of_every_partition_is_known() -> None:
    regions = aws_regions()
    assert {"eu-central-1", "cn-north-1", "us-gov-west-1", "us-isob-east-1"} <= set(regions)
    for region in ("eu-central-1", "cn-north-1", "us-gov-west-1"):
        values = with_value("aws-microvm.region", region)
        values["aws-microvm"]["availabilityZones"] = [f"{region}a"]
        refused = refusal(values)
        assert refused is None or "sandboxkit:aws-microvm.region" not in refused.keys


# --- a unit suffix on a numeric setting (item 13) -------------------------------------------

NUMERIC_SETTINGS = setting_paths(of_type(int, float))


UNITLESS = "written without a unit"


@pytest.mark.parametrize(
    ("path", "value", "hint"),
    [
        ("profile.limits.memoryMiB", "4GiB", f"memoryMiB counts MiB, {UNITLESS}: 4GiB is 4096"),
        ("profile.limits.memoryMiB", "4G", f"memoryMiB counts MiB, {UNITLESS}"),
        ("profile.limits.maxLifetimeSeconds", "2h", f"maxLifetimeSeconds counts seconds, {UNITLESS}: 2h is 7200"),  # noqa: E501
        ("profile.limits.vcpu", "500m", f"vcpu counts vCPU, {UNITLESS}: 500m is 0.5"),
        ("profile.audit.logRetentionDays", "1w", f"logRetentionDays counts days, {UNITLESS}: 1w is 7"),  # noqa: E501
        ("kubernetes.entryPort", "8080tcp", f"entryPort is a port number, {UNITLESS}"),
        ("profile.pool.ready", "3x", f"ready is a plain number, {UNITLESS}"),
    ],
)  # fmt: skip
def test_the_reported_unit_suffixes_name_the_unit_and_the_number(
    path: str, value: str, hint: str
) -> None:
    refused = refusal(with_value(path, value))
    assert refused is not None
    [problem] = [p for p in refused.problems if p.key == f"sandboxkit:{path}"]
    assert problem.expected.endswith(f"; {hint}")


@FUZZ
@given(
    path=st.sampled_from(NUMERIC_SETTINGS),
    number=st.integers(0, 10**6).map(str) | st.decimals(0, 1000, places=2).map(str),
    space=st.sampled_from(["", " "]),
    suffix=st.sampled_from(["Mi", "MiB", "GiB", "G", "GB", "s", "m", "h", "d", "w", "x", "vCPU"]),
)
def test_a_unit_suffix_on_any_numeric_setting_names_the_setting_and_its_unit(
    path: str, number: str, space: str, suffix: str
) -> None:
    value = f"{number}{space}{suffix}"
    refused = refusal(with_value(path, value))
    assert refused is not None
    [problem] = [p for p in refused.problems if p.key == f"sandboxkit:{path}"]
    name = path.rsplit(".", 1)[-1]
    assert f"; {name} " in problem.expected
    assert UNITLESS in problem.expected


# --- a key at the wrong level (item 12) -----------------------------------------------------

HOMES = _key_homes()
SECTIONS = [
    "",
    "profile",
    "profile.egress",
    "profile.limits",
    "profile.pool",
    "profile.audit",
    *TARGET_MODULES,
    "kubernetes.resolver",
    "aws-microvm.assumeRole",
]


def _home_of(parent: str, key: str) -> str:
    return f"sandboxkit:{parent}.{key}" if parent else f"sandboxkit:{key}"


@pytest.mark.parametrize(
    ("parent", "key", "value", "homes"),
    [
        ("profile", "allow", ["pypi.org:443"], "sandboxkit:profile.egress.allow"),
        ("", "limits", {"vcpu": 2}, "sandboxkit:profile.limits"),
    ],
)
def test_the_reported_nesting_mistakes_name_where_the_key_belongs(
    parent: str, key: str, value: object, homes: str
) -> None:
    values = with_value(f"{parent}.{key}" if parent else key, value)
    refused = refusal(values)
    assert refused is not None
    [problem] = [p for p in refused.problems if p.key == _home_of(parent, key)]
    # A plain list of host names is shown: no home of the key holds a secret.
    assert problem.value == value
    assert f"; it belongs at {homes}: move it there; known keys: " in problem.expected


@FUZZ
@given(key=st.sampled_from(sorted(HOMES)), parent=st.sampled_from(SECTIONS))
def test_a_key_at_any_wrong_level_names_every_place_it_belongs(key: str, parent: str) -> None:
    written = _home_of(parent, key)
    known_here = any(path == written for path, _ in HOMES[key])
    if known_here or (not parent and key in ("environment", "targets", "profile")):
        return
    refused = refusal(with_value(f"{parent}.{key}" if parent else key, "x"))
    assert refused is not None
    [problem] = [p for p in refused.problems if p.key == written]
    if problem.expected.startswith("no such setting"):
        return  # a target's own refusal of a key it never takes (aws-microvm.egress)
    homes = ", ".join(path for path, _ in HOMES[key])
    assert f"; it belongs at {homes}: move it there" in problem.expected
    secret = any(is_secret for _, is_secret in HOMES[key])
    assert (problem.value == "[value not shown]") == secret


@pytest.mark.parametrize(
    "path", ["kubernetes.resolver.kubeDnsAddress", "gcp-gke.resolver.kubeDnsAddress"]
)
@pytest.mark.parametrize(
    "address", ["0.0.0.0", "127.0.0.1", "224.0.0.251", "169.254.1.1", "255.255.255.255"]
)
def test_the_kube_dns_address_is_a_unicast_cluster_ip(path: str, address: str) -> None:
    # Issue 31 item 9: each of these was accepted and rendered as the resolver's upstream.
    refused = refusal(with_value(path, address))
    assert refused is not None and f"sandboxkit:{path}" in refused.keys
    [problem] = [p for p in refused.problems if p.key == f"sandboxkit:{path}"]
    assert problem.expected.endswith(
        ": a unicast ClusterIP, never an unspecified, loopback, link-local, multicast or reserved "
        "address"
    )
