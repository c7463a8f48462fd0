"""gcp-cloudrun and gcp-gke settings: the exact exit-2 errors, each naming its key."""

from __future__ import annotations

from typing import Any

import pytest

from sandboxkit.config import ConfigSource, StackSpec, load_stack
from sandboxkit.errors import MISSING, ConfigError
from sandboxkit.gcp.gke.spec import GkeSettings

CLOUDRUN = {
    "project": "example-project",
    "region": "us-central1",
    "image": "example.com/l:1",
    "sandboxImage": "example.com/s:1",
}
GKE = {"project": "example-project", "region": "us-central1", "image": "example.com/s:1"}


def load(target: str, settings: dict[str, Any], profile: dict[str, Any] | None = None) -> StackSpec:
    values = {"environment": "prod", "targets": [target], target: settings}
    if profile is not None:
        values["profile"] = profile
    return load_stack(ConfigSource(values=values), "test")


def problems(
    target: str, settings: dict[str, Any], profile: dict[str, Any] | None = None
) -> dict[str, str]:
    with pytest.raises(ConfigError) as caught:
        load(target, settings, profile)
    return {p.key: p.expected for p in caught.value.problems}


@pytest.mark.parametrize("target,base", [("gcp-cloudrun", CLOUDRUN), ("gcp-gke", GKE)])
@pytest.mark.parametrize("key", ["project", "region"])
def test_project_and_region_are_required(target: str, base: dict[str, str], key: str) -> None:
    settings = {k: v for k, v in base.items() if k != key}
    assert problems(target, settings) == {
        f"sandboxkit:{target}.{key}": "a value (this key is required)"
    }


def test_a_wildcard_entry_exits_2_naming_the_entry_and_secure_web_proxy() -> None:
    profile = {"egress": {"mode": "allowlist", "allow": ["pypi.org", "*.pythonhosted.org"]}}
    with pytest.raises(ConfigError) as caught:
        load("gcp-cloudrun", CLOUDRUN, profile)
    (problem,) = caught.value.problems
    assert problem.key == "sandboxkit:profile.egress.allow"
    assert problem.value == "*.pythonhosted.org:443"
    assert "Secure Web Proxy" in problem.expected
    assert "exact names only for target gcp-cloudrun" in problem.expected


def test_the_gke_target_refuses_name_entries_naming_each_and_the_alternative() -> None:
    """GKE FQDNNetworkPolicy learns addresses only from kube-dns or Cloud DNS answers; sandbox
    DNS goes to the kit's resolver, so names would resolve and never connect."""
    profile = {"egress": {"mode": "allowlist", "allow": ["pypi.org", "*.pythonhosted.org"]}}
    with pytest.raises(ConfigError) as caught:
        load("gcp-gke", GKE, profile)
    (problem,) = caught.value.problems
    assert problem.key == "sandboxkit:profile.egress.allow"
    assert problem.value == ["pypi.org:443", "*.pythonhosted.org:443"]
    assert problem.expected.startswith("IP entries only on target gcp-gke: GKE FQDNNetworkPolicy")
    assert problem.expected.endswith(
        "Use target kubernetes with fqdnPolicy cilium (Cilium 1.19 or later) for name entries"
    )


def test_the_gke_target_takes_ip_entries_without_a_resolver() -> None:
    spec = load("gcp-gke", GKE, {"egress": {"mode": "allowlist", "allow": ["140.82.112.3:443"]}})
    assert "resolver" not in spec.plans["gcp-gke"]["sandbox"]
    assert spec.enforcement["gcp-gke"]["egress.mode"].where.startswith(
        "NetworkPolicy for IP entries"
    )


def test_open_egress_on_gke_needs_the_resolver_image() -> None:
    assert problems("gcp-gke", GKE, {"egress": {"mode": "open"}}) == {
        "sandboxkit:gcp-gke.resolver.image": "the image of the kit's DNS resolver, needed with "
        "egress mode open (build images/resolver and pin it by digest): sandbox pods resolve "
        "names only through it"
    }


def test_the_gke_resolver_forwards_to_the_metadata_server_by_default() -> None:
    settings = {**GKE, "resolver": {"image": "example.com/resolver:1"}}
    resolver = load("gcp-gke", settings, {"egress": {"mode": "open"}}).plans["gcp-gke"]["sandbox"][
        "resolver"
    ]
    assert (resolver["upstream"], resolver["upstream_address"]) == (
        "metadata-server",
        "169.254.169.254",
    )
    assert resolver["config"].splitlines()[-1] == "server=169.254.169.254#53"


def test_a_sandbox_larger_than_the_largest_instance_names_the_profile_key() -> None:
    found = problems("gcp-cloudrun", CLOUDRUN, {"limits": {"vcpu": 7.5}})
    assert list(found) == ["sandboxkit:profile.limits.vcpu"]
    assert found["sandboxkit:profile.limits.vcpu"].startswith(
        "at most 7 for target gcp-cloudrun: one sandbox plus the launcher reserve (1)"
    )
    memory = problems("gcp-cloudrun", CLOUDRUN, {"limits": {"memoryMiB": 31745}})
    assert list(memory) == ["sandboxkit:profile.limits.memoryMiB"]
    assert memory["sandboxkit:profile.limits.memoryMiB"].startswith("at most 31744 ")


def test_the_largest_sandbox_that_fits_is_accepted() -> None:
    spec = load("gcp-cloudrun", CLOUDRUN, {"limits": {"vcpu": 7, "memoryMiB": 31744}})
    assert (
        "maxInstanceRequestConcurrency 1" in spec.enforcement["gcp-cloudrun"]["limits.vcpu"].where
    )


def test_a_sandbox_larger_than_the_configured_instance_names_the_instance() -> None:
    settings = {**CLOUDRUN, "instance": {"vcpu": 2, "memoryMiB": 4096}}
    found = problems("gcp-cloudrun", settings, {"limits": {"vcpu": 1, "memoryMiB": 3584}})
    assert list(found) == ["sandboxkit:gcp-cloudrun.instance"]
    assert (
        "the default is the largest, 8 vCPU and 32768 MiB"
        in found["sandboxkit:gcp-cloudrun.instance"]
    )


@pytest.mark.parametrize(
    "instance,key",
    [
        ({"vcpu": 3, "memoryMiB": 4096}, "sandboxkit:gcp-cloudrun.instance.vcpu"),
        ({"vcpu": 8, "memoryMiB": 2048}, "sandboxkit:gcp-cloudrun.instance.memoryMiB"),
        ({"vcpu": 2, "memoryMiB": 16384}, "sandboxkit:gcp-cloudrun.instance.memoryMiB"),
    ],
)
def test_instance_sizes_follow_the_cloud_run_table(instance: dict[str, int], key: str) -> None:
    assert list(problems("gcp-cloudrun", {**CLOUDRUN, "instance": instance})) == [key]


@pytest.mark.parametrize(
    "principal", ["allUsers", "allAuthenticatedUsers", "domain:example.com", "user:someone"]
)
def test_invokers_must_be_named_principals(principal: str) -> None:
    found = problems("gcp-cloudrun", {**CLOUDRUN, "invokers": [principal]})
    assert list(found) == ["sandboxkit:gcp-cloudrun.invokers[0]"]
    assert "allUsers, allAuthenticatedUsers and domain: would open" in next(iter(found.values()))


def test_ingress_is_never_all_traffic() -> None:
    found = problems("gcp-cloudrun", {**CLOUDRUN, "ingress": "all"})
    assert list(found) == ["sandboxkit:gcp-cloudrun.ingress"]


@pytest.mark.parametrize("cidr", ["10.8.0.0/27", "8.8.8.0/24", "10.8.0.1/24", "nonsense"])
def test_the_egress_subnet_is_private_and_at_least_a_slash_26(cidr: str) -> None:
    found = problems("gcp-cloudrun", {**CLOUDRUN, "subnetCidr": cidr})
    assert list(found) == ["sandboxkit:gcp-cloudrun.subnetCidr"]


def test_exec_timeout_is_capped_by_the_request_timeout() -> None:
    found = problems(
        "gcp-cloudrun",
        CLOUDRUN,
        {"limits": {"execTimeoutSeconds": 3601, "maxLifetimeSeconds": 7200}},
    )
    assert "sandboxkit:profile.limits.execTimeoutSeconds" in found
    assert found["sandboxkit:profile.limits.execTimeoutSeconds"].startswith(
        "from 1 to 3600 for target gcp-cloudrun"
    )


def test_cloud_run_lifetime_is_not_enforced_and_must_be_acknowledged() -> None:
    found = problems("gcp-cloudrun", CLOUDRUN, {"limits": {"maxLifetimeSeconds": 1800}})
    assert list(found) == ["sandboxkit:profile.limits.maxLifetimeSeconds"]
    spec = load(
        "gcp-cloudrun",
        {**CLOUDRUN, "unenforced": ["limits.maxLifetimeSeconds"]},
        {"limits": {"maxLifetimeSeconds": 1800}},
    )
    assert spec.enforcement["gcp-cloudrun"]["limits.maxLifetimeSeconds"].kind == "none"


def test_log_retention_is_capped_at_3650_days() -> None:
    for target, base in (("gcp-cloudrun", CLOUDRUN), ("gcp-gke", GKE)):
        found = problems(target, base, {"audit": {"logRetentionDays": 3651}})
        assert list(found) == ["sandboxkit:profile.audit.logRetentionDays"]


def test_gke_master_authorized_networks_are_cidrs() -> None:
    found = problems("gcp-gke", {**GKE, "masterAuthorizedNetworks": ["10.0.0.0/24", "office"]})
    assert list(found) == ["sandboxkit:gcp-gke.masterAuthorizedNetworks[1]"]


def test_gke_enforcement_reuses_the_kubernetes_map_with_its_log_bucket() -> None:
    from sandboxkit.kubernetes.spec import kubernetes_enforcement

    spec = load("gcp-gke", GKE)
    expected = kubernetes_enforcement(spec.profile, "gke")
    got = dict(spec.enforcement["gcp-gke"])
    assert got.pop("audit.logRetentionDays").kind == "platform"
    expected.pop("audit.logRetentionDays")
    assert got == expected


def only_problem(target: str, settings: dict[str, Any]) -> tuple[str, object, str]:
    with pytest.raises(ConfigError) as caught:
        load(target, settings)
    (problem,) = caught.value.problems
    return problem.key, problem.value, problem.expected


def test_gke_min_nodes_above_max_nodes_names_min_nodes() -> None:
    assert only_problem("gcp-gke", {**GKE, "minNodes": 5, "maxNodes": 2}) == (
        "sandboxkit:gcp-gke.minNodes",
        5,
        "at most maxNodes (2)",
    )
    assert load("gcp-gke", {**GKE, "minNodes": 2, "maxNodes": 2}).settings["gcp-gke"]


@pytest.mark.parametrize("cidr", ["0.0.0.0/0", "::/0", "0.0.0.0/1", "10.0.0.0/7", "2001:db8::/31"])
def test_gke_refuses_authorized_networks_covering_much_of_the_internet(cidr: str) -> None:
    settings = {**GKE, "privateEndpoint": False, "masterAuthorizedNetworks": [cidr]}
    key, value, expected = only_problem("gcp-gke", settings)
    assert (key, value) == ("sandboxkit:gcp-gke.masterAuthorizedNetworks[0]", cidr)
    widest = "/32" if ":" in cidr else "/8"
    assert expected.startswith(f"an IPv{6 if ':' in cidr else 4} network no wider than {widest}")
    assert "opens the control plane to much of the internet" in expected


@pytest.mark.parametrize(
    ("cidr", "row"),
    [
        ("127.0.0.0/8", "Loopback, 127.0.0.0/8, [RFC1122], Section 3.2.1.3"),
        ("169.254.0.0/16", "Link Local, 169.254.0.0/16, [RFC3927]"),
        ("203.0.113.0/24", "Documentation (TEST-NET-3), 203.0.113.0/24, [RFC5737]"),
        ("2001:db8::/32", "Documentation, 2001:db8::/32, [RFC3849]"),
    ],
)
def test_gke_refuses_authorized_networks_no_operator_uses(cidr: str, row: str) -> None:
    # The same special-purpose table as the egress contract: is_private would admit these.
    settings = {**GKE, "privateEndpoint": False, "masterAuthorizedNetworks": [cidr]}
    assert only_problem("gcp-gke", settings) == (
        "sandboxkit:gcp-gke.masterAuthorizedNetworks[0]",
        cidr,
        f"a public or private-use network operators connect from: {cidr} includes {cidr}, "
        f"which no operator's network uses ({row})",
    )


@pytest.mark.parametrize("cidr", ["10.0.0.0/8", "81.2.69.142/32", "2a00:1450::/32", "fd00::/32"])
def test_gke_accepts_authorized_networks_up_to_the_widest(cidr: str) -> None:
    settings = {**GKE, "privateEndpoint": False, "masterAuthorizedNetworks": [cidr]}
    gke = load("gcp-gke", settings).settings["gcp-gke"]
    assert isinstance(gke, GkeSettings)
    assert gke.master_authorized_networks == (cidr,)


@pytest.mark.parametrize("version", ["1.29", "1.35"])
def test_gke_refuses_versions_without_agent_sandbox_v1beta1(version: str) -> None:
    key, value, expected = only_problem("gcp-gke", {**GKE, "minMasterVersion": version})
    assert (key, value) == ("sandboxkit:gcp-gke.minMasterVersion", version)
    assert expected.startswith(
        "1.36 or later: Agent Sandbox's v1beta1 API needs 1.36.3-gke.1767000"
    )
    assert "how-install-agent-sandbox" in expected


# The shipped default before the fix: a patch release, which ages out of GKE's versions.
@pytest.mark.parametrize("version", ["1.36.3-gke.1767000", "1.36.3", "1.37.1-gke.2"])
def test_gke_refuses_a_pinned_patch_release(version: str) -> None:
    key, value, expected = only_problem("gcp-gke", {**GKE, "minMasterVersion": version})
    assert (key, value) == ("sandboxkit:gcp-gke.minMasterVersion", version)
    assert expected.startswith("a minor version such as 1.36 (1.X): GKE resolves it to the")


@pytest.mark.parametrize("version", ["latest", "1.36.3-gke", "v1.37", "1.x"])
def test_gke_refuses_versions_it_cannot_compare(version: str) -> None:
    key, value, expected = only_problem("gcp-gke", {**GKE, "minMasterVersion": version})
    assert (key, value) == ("sandboxkit:gcp-gke.minMasterVersion", version)
    assert expected == "a GKE minor version such as 1.36 (1.X)"


@pytest.mark.parametrize("version", ["1.36", "1.37", "1.100", "2.0"])
def test_gke_accepts_versions_from_the_floor_compared_as_numbers(version: str) -> None:
    gke = load("gcp-gke", {**GKE, "minMasterVersion": version}).settings["gcp-gke"]
    assert isinstance(gke, GkeSettings)
    assert gke.min_master_version == version


@pytest.mark.parametrize(
    "change,key,other",
    [
        ({"subnetCidr": "10.16.0.0/20"}, "subnetCidr", "podsCidr (10.16.0.0/14)"),
        ({"podsCidr": "10.0.0.0/12"}, "podsCidr", "subnetCidr (10.10.0.0/20)"),
        ({"servicesCidr": "10.17.0.0/24"}, "servicesCidr", "podsCidr (10.16.0.0/14)"),
        ({"masterCidr": "10.20.0.0/28"}, "masterCidr", "servicesCidr (10.20.0.0/20)"),
        (
            {"subnetCidr": "10.40.0.0/20", "podsCidr": "10.40.0.0/14"},
            "subnetCidr",
            "podsCidr (10.40.0.0/14)",
        ),
    ],
)
def test_gke_refuses_overlapping_ranges_naming_both(
    change: dict[str, str], key: str, other: str
) -> None:
    found_key, value, expected = only_problem("gcp-gke", {**GKE, **change})
    assert (found_key, value) == (f"sandboxkit:gcp-gke.{key}", change[key])
    assert expected.startswith(f"a range that does not overlap {other}")


def test_cloudrun_max_concurrent_states_the_bound_it_gives() -> None:
    where = {
        max_concurrent: load("gcp-cloudrun", CLOUDRUN, {"pool": {"maxConcurrent": max_concurrent}})
        .enforcement["gcp-cloudrun"]["pool.maxConcurrent"]
        .where
        for max_concurrent in (50, 49)
    }
    assert where[50] == (
        "template.scaling.maxInstanceCount 8 with maxInstanceRequestConcurrency 7: at most "
        "8 x 7 = 56 sandboxes at once, 6 more than maxConcurrent 50, since instances hold 7 "
        "sandboxes each and the smallest multiple of 7 at or above 50 is 56"
    )
    assert where[49] == (
        "template.scaling.maxInstanceCount 7 with maxInstanceRequestConcurrency 7: at most "
        "7 x 7 = 49 sandboxes at once, exactly maxConcurrent 49"
    )


def test_an_unknown_template_key_lists_the_template_keys() -> None:
    settings = {**CLOUDRUN, "templates": [{"name": "t", "image": "x", "env": {"A": "b"}}]}
    key, _, expected = only_problem("gcp-cloudrun", settings)
    assert key == "sandboxkit:gcp-cloudrun.templates[0].env"
    assert expected == "no such key; known keys: name, image, command, args, workingDir"


@pytest.mark.parametrize(
    "entry",
    ["*.map.fastly.net", "fastly.net:443", "151.101.0.223", "metadata.google.internal", "x"],
)
def test_cname_targets_are_exact_public_names_without_ports(entry: str) -> None:
    profile = {"egress": {"mode": "allowlist", "allow": ["files.pythonhosted.org"]}}
    found = problems("gcp-cloudrun", {**CLOUDRUN, "cnameTargets": [entry]}, profile)
    assert list(found) == ["sandboxkit:gcp-cloudrun.cnameTargets[0]"]


@pytest.mark.parametrize("mode", ["deny", "open"])
def test_cname_targets_need_egress_allowlist(mode: str) -> None:
    settings = {**CLOUDRUN, "cnameTargets": ["dualstack.python.map.fastly.net"]}
    found = problems("gcp-cloudrun", settings, {"egress": {"mode": mode}})
    assert found == {
        "sandboxkit:gcp-cloudrun.cnameTargets": f"no names with egress mode {mode}: CNAME "
        "targets resolve only for allowlisted names (deny resolves no name; open resolves "
        "every name)"
    }


def test_ipv6_entries_exit_2_since_the_subnet_is_ipv4_only() -> None:
    allow = ["pypi.org", "[2a04:4e42:400::223]:443", "93.184.216.34"]
    with pytest.raises(ConfigError) as caught:
        load("gcp-cloudrun", CLOUDRUN, {"egress": {"mode": "allowlist", "allow": allow}})
    (problem,) = caught.value.problems
    assert problem.key == "sandboxkit:profile.egress.allow"
    assert problem.value == "[2a04:4e42:400::223]:443"
    assert problem.expected.startswith("a name or an IPv4 address for target gcp-cloudrun")


def test_a_cloudrun_stack_without_a_sandbox_image_is_refused_with_the_reason() -> None:
    # There is no setting to run sandboxes without a template: a stack written before
    # sandboxImage existed exits 2 naming the key, the reason and the fix.
    settings = {k: v for k, v in CLOUDRUN.items() if k != "sandboxImage"}
    key, value, expected = only_problem("gcp-cloudrun", settings)
    assert (key, value) == ("sandboxkit:gcp-cloudrun.sandboxImage", MISSING)
    assert expected == (
        "the image sandboxes run, apart from the launcher's (build images/sandbox and pin it by "
        "digest): without a template a Cloud Run sandbox mounts the launcher container's root "
        "filesystem read-only at / (https://cloud.google.com/run/docs/reference/sandbox-cli), so "
        "untrusted code would read everything the launcher image holds; the kit has no setting "
        "to run without one"
    )


@pytest.mark.parametrize(
    ("launcher_image", "sandbox_image"),
    [
        # Issue 32: the launcher's digest under another tag passed, as did the registry host in
        # upper case or with its default port.
        (f"example.com/l@sha256:{'0d' * 32}", f"example.com/l:sandbox@sha256:{'0d' * 32}"),
        (f"example.com/l@sha256:{'0d' * 32}", f"example.com/s@sha256:{'0d' * 32}"),
        ("example.com/l:1", "EXAMPLE.com/l:1"),
        ("example.com/l:1", "example.com:443/l:1"),
        ("docker.io/library/python:3", "python:3"),
    ],
)
def test_the_launcher_image_by_another_spelling_is_refused(
    launcher_image: str, sandbox_image: str
) -> None:
    settings = {**CLOUDRUN, "image": launcher_image, "sandboxImage": sandbox_image}
    assert problems("gcp-cloudrun", settings) == {
        "sandboxkit:gcp-cloudrun.sandboxImage": f"an image other than the launcher's "
        f"({launcher_image}): a sandbox running the launcher image reads everything the "
        "launcher holds"
    }


def test_sandboxes_never_run_the_launcher_image() -> None:
    launcher = (
        "an image other than the launcher's (example.com/l:1): a sandbox running the launcher "
        "image reads everything the launcher holds"
    )
    assert problems("gcp-cloudrun", {**CLOUDRUN, "sandboxImage": "example.com/l:1"}) == {
        "sandboxkit:gcp-cloudrun.sandboxImage": launcher
    }
    templates = [
        {"name": "sandbox", "image": "example.com/python:3.12"},
        {"name": "python", "image": "example.com/l:1"},
        {"name": "python", "image": "example.com/python:3.12"},
    ]
    assert problems("gcp-cloudrun", {**CLOUDRUN, "templates": templates}) == {
        "sandboxkit:gcp-cloudrun.templates[0].name": "a name not used yet (sandbox; 'sandbox' "
        "is the kit's template of sandboxImage)",
        "sandboxkit:gcp-cloudrun.templates[1].image": launcher,
        "sandboxkit:gcp-cloudrun.templates[2].name": "a name not used yet (python, sandbox; "
        "'sandbox' is the kit's template of sandboxImage)",
    }


def test_more_than_gkes_50_authorized_networks_are_refused() -> None:
    # GKE API v1 MasterAuthorizedNetworksConfig.cidr_blocks: "up to 50 external networks".
    networks = [f"203.0.{n}.0/24" for n in range(51)]
    found = problems(
        "gcp-gke", {**GKE, "privateEndpoint": False, "masterAuthorizedNetworks": networks}
    )
    assert list(found) == ["sandboxkit:gcp-gke.masterAuthorizedNetworks"]
    assert "at most 50" in found["sandboxkit:gcp-gke.masterAuthorizedNetworks"]
    load("gcp-gke", {**GKE, "privateEndpoint": False, "masterAuthorizedNetworks": networks[:50]})


def test_a_public_endpoint_reason_needs_a_public_endpoint() -> None:
    reason = "the deployer runs outside the VPC until the bastion exists"
    assert problems("gcp-gke", {**GKE, "publicEndpointReason": reason}) == {
        "sandboxkit:gcp-gke.publicEndpointReason": "no reason while privateEndpoint is true (the "
        "reason acknowledges a public control-plane endpoint, privateEndpoint: false)"
    }
    spec = load("gcp-gke", {**GKE, "privateEndpoint": False, "publicEndpointReason": reason})
    settings = spec.settings["gcp-gke"]
    assert isinstance(settings, GkeSettings) and settings.public_endpoint_reason == reason
