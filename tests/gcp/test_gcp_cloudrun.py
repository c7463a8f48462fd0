"""gcp-cloudrun: exact children, hardened inputs, and the egress firewall rules."""

from __future__ import annotations

import ipaddress
import re
from pathlib import Path
from typing import Any, cast

import pytest

from sandboxkit.config import ConfigSource, load_stack
from sandboxkit.errors import ConfigError
from sandboxkit.gcp.cloud_dns import Outcome, PolicyRule, answer
from sandboxkit.gcp.cloudrun.ngfw import Probe, decide, read_rules
from sandboxkit.gcp.cloudrun.plan import MAX_OBJECT_NAME, CloudRunSandboxArgs
from sandboxkit.gcp.cloudrun.service import (
    ALLOW_FIRST_PRIORITY,
    DENY_ALL_PRIORITY,
    CloudRunSandbox,
)
from sandboxkit.gcp.common import check_object_name
from sandboxkit.gcp.response_policy import REFUSAL_TEXT, rule_name
from sandboxkit.render import Recorder
from support import build_target, named, of_type, one, shipped_render

SERVICE = "gcp:cloudrunv2/service:Service"
RULE = "gcp:compute/networkFirewallPolicyRule:NetworkFirewallPolicyRule"
DNS_POLICY = "gcp:dns/responsePolicy:ResponsePolicy"
DNS_RULE = "gcp:dns/responsePolicyRule:ResponsePolicyRule"
SETTINGS = {
    "project": "example-project",
    "region": "us-central1",
    "image": "us-docker.pkg.dev/example-project/agents/launcher:1",
    "sandboxImage": "us-docker.pkg.dev/example-project/agents/sandbox:1",
    # The allowlists below name no CNAME (``cnameTargets`` is required with names).
    "cnameTargets": [],
    "nameMatching": "resolved-address",  # names match by resolved address (accepted)
    "invokers": ["serviceAccount:agent@example-project.iam.gserviceaccount.com"],
}
ALLOWLIST = [
    "pypi.org",
    "files.pythonhosted.org",
    "api.example.com:8443",
    "93.184.216.34",
]


def build(engine: Recorder, profile: dict[str, Any] | None = None, **settings: Any) -> list[Any]:
    return build_target(engine, "gcp-cloudrun", {**SETTINGS, **settings}, profile)


def allowlist(engine: Recorder) -> list[Any]:
    return build(engine, {"egress": {"mode": "allowlist", "allow": ALLOWLIST}})


def test_children_are_exactly_the_documented_set_with_egress_deny(engine: Recorder) -> None:
    resources = build(engine)
    assert sorted((r.type, r.name) for r in resources) == sorted(
        [
            ("sandboxkit:index:CloudRunSandbox", "gcp-cloudrun"),
            ("gcp:serviceaccount/account:Account", "gcp-cloudrun-service-account"),
            ("gcp:compute/network:Network", "gcp-cloudrun-network"),
            ("gcp:compute/subnetwork:Subnetwork", "gcp-cloudrun-subnet"),
            (
                "gcp:compute/networkFirewallPolicy:NetworkFirewallPolicy",
                "gcp-cloudrun-firewall-policy",
            ),
            (
                "gcp:compute/networkFirewallPolicyAssociation:NetworkFirewallPolicyAssociation",
                "gcp-cloudrun-firewall-association",
            ),
            (RULE, "gcp-cloudrun-deny-all-ipv4"),
            (RULE, "gcp-cloudrun-deny-all-ipv6"),
            (DNS_POLICY, "gcp-cloudrun-dns-policy"),
            (DNS_RULE, "gcp-cloudrun-dns-refuse-everything-else"),
            (DNS_RULE, f"gcp-cloudrun-dns-{rule_name('metadata.google.internal.')}"),
            (SERVICE, "gcp-cloudrun-service"),
            ("gcp:cloudrunv2/serviceIamMember:ServiceIamMember", "gcp-cloudrun-invoker-0"),
            ("gcp:logging/projectBucketConfig:ProjectBucketConfig", "gcp-cloudrun-log-bucket"),
            ("gcp:logging/projectSink:ProjectSink", "gcp-cloudrun-log-sink"),
        ]
    )
    component = named(resources, "gcp-cloudrun")
    assert all(r.parent == component.urn for r in resources if r is not component)
    assert all(r.inputs["project"] == "example-project" for r in resources if r.custom)


def test_the_service_is_a_gen2_sandbox_launcher_reachable_only_internally(
    engine: Recorder,
) -> None:
    service = one(build(engine), SERVICE).inputs
    assert service["launchStage"] == "ALPHA"
    assert service["ingress"] == "INGRESS_TRAFFIC_INTERNAL_ONLY"
    assert service["invokerIamDisabled"] is False
    assert service["location"] == "us-central1"
    template = service["template"]
    assert template["executionEnvironment"] == "EXECUTION_ENVIRONMENT_GEN2"
    (container,) = template["containers"]
    assert container["sandboxLauncher"] is True
    assert container["resources"]["limits"] == {"cpu": "8", "memory": "32768Mi"}
    assert template["serviceAccount"] == "sbx-test-run@example-project.iam.gserviceaccount.com"
    assert template["vpcAccess"]["egress"] == "ALL_TRAFFIC"


def test_every_sandbox_starts_from_the_kits_template_of_the_sandbox_image(
    engine: Recorder,
) -> None:
    # Without a template a sandbox mounts the launcher's root filesystem at /: the service
    # always holds the kit's template, and the launcher is told its name (nothing else).
    template = one(build(engine), SERVICE).inputs["template"]
    assert template["sandboxes"] == {
        "templates": [
            {"name": "sandbox", "image": "us-docker.pkg.dev/example-project/agents/sandbox:1"}
        ]
    }
    (container,) = template["containers"]
    assert container["image"] == "us-docker.pkg.dev/example-project/agents/launcher:1"
    assert container["envs"] == [{"name": "SANDBOXKIT_SANDBOX_TEMPLATE", "value": "sandbox"}]


def test_sizing_reaches_concurrency_scaling_and_timeout(engine: Recorder) -> None:
    # Defaults: 8 vCPU / 32768 MiB instance, 1 vCPU / 1024 MiB reserve, 1 vCPU / 2048 MiB
    # sandboxes: 7 slots; ready 2 -> 1 warm instance; 50 concurrent -> 8 instances.
    template = one(build(engine), SERVICE).inputs["template"]
    assert template["maxInstanceRequestConcurrency"] == 7
    assert template["scaling"] == {"minInstanceCount": 1, "maxInstanceCount": 8}
    assert template["timeout"] == "300s"


def test_further_templates_follow_the_kits_and_carry_no_environment(engine: Recorder) -> None:
    templates = [{"name": "python", "image": "example.com/python:3.12", "command": ["python3"]}]
    service = one(build(engine, templates=templates), SERVICE).inputs
    assert service["launchStage"] == "ALPHA"
    assert service["template"]["sandboxes"] == {
        "templates": [
            {"name": "sandbox", "image": "us-docker.pkg.dev/example-project/agents/sandbox:1"},
            {"name": "python", "image": "example.com/python:3.12", "commands": ["python3"]},
        ]
    }


def test_no_public_invoker_and_no_project_role_for_the_launcher(engine: Recorder) -> None:
    resources = build(engine)
    members = [
        r.inputs["member"]
        for r in of_type(resources, "gcp:cloudrunv2/serviceIamMember:ServiceIamMember")
    ]
    assert members == ["serviceAccount:agent@example-project.iam.gserviceaccount.com"]
    for resource in resources:
        assert "allUsers" not in str(resource.inputs)
        assert "allAuthenticatedUsers" not in str(resource.inputs)
    # The audit record goes to stdout (a container log, no role): the launcher's account
    # holds no project-wide roles/logging.logWriter, nor any other project role.
    assert not of_type(resources, "gcp:projects/iAMMember:IAMMember")
    assert not of_type(resources, "gcp:projects/iAMBinding:IAMBinding")


def test_deny_has_no_route_out_and_no_nat(engine: Recorder) -> None:
    resources = build(engine)
    network = one(resources, "gcp:compute/network:Network").inputs
    assert network["deleteDefaultRoutesOnCreate"] is True
    assert network["networkFirewallPolicyEnforcementOrder"] == "BEFORE_CLASSIC_FIREWALL"
    assert network["autoCreateSubnetworks"] is False
    assert not of_type(resources, "gcp:compute/routerNat:RouterNat")
    rules = {r.inputs["ruleName"]: r.inputs for r in of_type(resources, RULE)}
    assert set(rules) == {"deny-all-ipv4", "deny-all-ipv6"}
    assert rules["deny-all-ipv4"]["match"]["destIpRanges"] == ["0.0.0.0/0"]
    assert rules["deny-all-ipv6"]["match"]["destIpRanges"] == ["::/0"]
    for rule in rules.values():
        assert rule["action"] == "deny"
        assert rule["direction"] == "EGRESS"
        assert rule["enableLogging"] is True
        assert rule["match"]["layer4Configs"] == [{"ipProtocol": "all"}]


def test_allowlist_allows_exactly_the_profile_per_port(engine: Recorder) -> None:
    resources = allowlist(engine)
    rules = {r.inputs["ruleName"]: r.inputs for r in of_type(resources, RULE)}
    allows = {name: rule for name, rule in rules.items() if rule["action"] == "allow"}
    assert {name: rule["match"] for name, rule in allows.items()} == {
        "allow-fqdn-443": {
            "destFqdns": ["files.pythonhosted.org", "pypi.org"],
            "layer4Configs": [{"ipProtocol": "tcp", "ports": ["443"]}],
        },
        "allow-fqdn-8443": {
            "destFqdns": ["api.example.com"],
            "layer4Configs": [{"ipProtocol": "tcp", "ports": ["8443"]}],
        },
        "allow-ipv4-443": {
            "destIpRanges": ["93.184.216.34/32"],
            "layer4Configs": [{"ipProtocol": "tcp", "ports": ["443"]}],
        },
    }
    denies = {name: rule for name, rule in rules.items() if rule["action"] == "deny"}
    assert set(denies) == {
        "deny-non-public-ipv4",
        "deny-non-public-ipv6",
        "deny-all-ipv4",
        "deny-all-ipv6",
    }
    first_allow = min(a["priority"] for a in allows.values())
    assert first_allow == ALLOW_FIRST_PRIORITY
    assert denies["deny-non-public-ipv4"]["priority"] < first_allow
    assert denies["deny-non-public-ipv6"]["priority"] < first_allow
    assert denies["deny-all-ipv4"]["priority"] == DENY_ALL_PRIORITY
    assert denies["deny-all-ipv6"]["priority"] > max(a["priority"] for a in allows.values())
    assert all(rule["enableLogging"] is True for rule in rules.values())
    assert len({rule["priority"] for rule in rules.values()}) == len(rules)


def test_allowlist_and_open_route_through_logged_nat(engine: Recorder) -> None:
    resources = allowlist(engine)
    network = one(resources, "gcp:compute/network:Network").inputs
    assert network["deleteDefaultRoutesOnCreate"] is False
    nat = one(resources, "gcp:compute/routerNat:RouterNat").inputs
    assert nat["logConfig"] == {"enable": True, "filter": "ALL"}
    assert nat["sourceSubnetworkIpRangesToNat"] == "LIST_OF_SUBNETWORKS"


def test_open_denies_non_public_ranges_before_allowing_the_rest(engine: Recorder) -> None:
    resources = build(engine, {"egress": {"mode": "open"}})
    rules = {r.inputs["ruleName"]: r.inputs for r in of_type(resources, RULE)}
    assert rules["deny-non-public-ipv4"]["priority"] < rules["allow-public-ipv4"]["priority"]
    assert "169.254.0.0/16" in rules["deny-non-public-ipv4"]["match"]["destIpRanges"]
    assert rules["allow-public-ipv4"]["priority"] < rules["deny-all-ipv4"]["priority"]


def test_flow_logs_and_log_retention(engine: Recorder) -> None:
    resources = build(engine, {"audit": {"logRetentionDays": 90}})
    subnet = one(resources, "gcp:compute/subnetwork:Subnetwork").inputs
    assert subnet["logConfig"]["flowSampling"] == 1
    assert subnet["privateIpGoogleAccess"] is False
    bucket = one(resources, "gcp:logging/projectBucketConfig:ProjectBucketConfig").inputs
    assert bucket["retentionDays"] == 90
    assert bucket["location"] == "us-central1"
    sink = one(resources, "gcp:logging/projectSink:ProjectSink").inputs
    assert sink["destination"] == (
        "logging.googleapis.com/projects/example-project/locations/us-central1/buckets/"
        f"{bucket['bucketId']}"
    )
    assert 'resource.labels.service_name="sbx-test-launcher"' in sink["filter"]


def test_prod_stack_exports_the_documented_outputs(project_dir: Path) -> None:
    rendered = shipped_render(project_dir, "prod")
    assert rendered.outputs["gcp-cloudrun"] == {
        "serviceUri": rendered.outputs["gcp-cloudrun"]["serviceUri"],
        "serviceAccountEmail": "sbx-prod-run@example-sandboxkit-prod.iam.gserviceaccount.com",
        "networkName": "sbx-prod-run",
        "firewallPolicyName": "sbx-prod-run-egress",
    }
    assert rendered.outputs["gcp-cloudrun"]["serviceUri"].startswith("https://sbx-prod-launcher-")


def dns_of(resources: list[Any]) -> list[PolicyRule]:
    """The rendered response policy rules, read by the readers' model of Cloud DNS."""
    return [PolicyRule.from_inputs(r.inputs) for r in of_type(resources, DNS_RULE)]


def test_deny_answers_every_name_inside_cloud_dns(engine: Recorder) -> None:
    resources = build(engine)
    policy = one(resources, DNS_POLICY).inputs
    service = one(resources, SERVICE).inputs
    (interface,) = service["template"]["vpcAccess"]["networkInterfaces"]
    assert policy["responsePolicyName"] == "sbx-test-run-dns"
    assert policy["networks"] == [{"networkUrl": interface["network"]}]
    rules = dns_of(resources)
    # The tunnel: a query carrying data never reaches attacker.example's name servers.
    assert answer(rules, "c2VjcmV0.x.attacker.example", "A") is Outcome.NO_DATA
    assert answer(rules, "pypi.org", "AAAA") is Outcome.NO_DATA
    assert answer(rules, "x.attacker.example", "TXT") is Outcome.LOCAL_DATA
    # The launcher's credentials come from the metadata server, by name.
    assert answer(rules, "metadata.google.internal", "A") is Outcome.RESOLVED
    refusal = named(resources, "gcp-cloudrun-dns-refuse-everything-else").inputs
    assert refusal["dnsName"] == "*."
    assert refusal["localData"] == {
        "localDatas": [{"name": "*.", "type": "TXT", "ttl": 300, "rrdatas": [f'"{REFUSAL_TEXT}"']}]
    }
    assert "behavior" not in refusal


def test_allowlist_resolves_the_listed_names_only(engine: Recorder) -> None:
    rules = dns_of(allowlist(engine))
    resolved = {
        name
        for name in (
            "pypi.org",
            "files.pythonhosted.org",
            "api.example.com",
            "x.pypi.org",
            "pythonhosted.org",
            "x.attacker.example",
            "93.184.216.34.nip.io",
        )
        if answer(rules, name, "A") is Outcome.RESOLVED
    }
    assert resolved == {"pypi.org", "files.pythonhosted.org", "api.example.com"}


def test_cname_targets_resolve_and_need_allowlist(engine: Recorder) -> None:
    profile = {"egress": {"mode": "allowlist", "allow": ["files.pythonhosted.org"]}}
    chain = ["dualstack.python.map.fastly.net"]
    rules = dns_of(build(engine, profile, cnameTargets=chain))
    assert answer(rules, "dualstack.python.map.fastly.net") is Outcome.RESOLVED
    assert answer(rules, "x.python.map.fastly.net") is Outcome.NO_DATA


def test_open_has_no_response_policy(engine: Recorder) -> None:
    resources = build(engine, {"egress": {"mode": "open"}})
    assert of_type(resources, DNS_POLICY) == []
    assert of_type(resources, DNS_RULE) == []


def test_an_allowed_name_rebound_to_a_private_address_reaches_nothing(engine: Recorder) -> None:
    rules = read_rules((r.name, r.inputs) for r in of_type(allowlist(engine), RULE))
    for address in ("10.8.0.5", "192.168.1.1", "127.0.0.1", "fd00::1"):
        rebound = Probe(port=443, name="pypi.org", address=ipaddress.ip_address(address))
        decision = decide(rules, rebound)
        assert decision.allowed is False
        assert decision.rule is not None and decision.rule.startswith("deny-non-public-")
    public = Probe(port=443, name="pypi.org", address=ipaddress.ip_address("151.101.0.223"))
    assert decide(rules, public).rule == "allow-fqdn-443"


def test_more_names_on_one_port_than_one_rule_takes_fill_further_rules(engine: Recorder) -> None:
    names = [f"host{index:03}.example.com" for index in range(201)]
    resources = build(engine, {"egress": {"mode": "allowlist", "allow": names}})
    allows = {
        r.inputs["ruleName"]: r.inputs
        for r in of_type(resources, RULE)
        if r.inputs["action"] == "allow"
    }
    assert sorted(allows) == ["allow-fqdn-443", "allow-fqdn-443-2", "allow-fqdn-443-3"]
    assert [len(allows[n]["match"]["destFqdns"]) for n in sorted(allows)] == [100, 100, 1]
    listed = [f for n in sorted(allows) for f in allows[n]["match"]["destFqdns"]]
    assert listed == sorted(names)
    assert [allows[n]["priority"] for n in sorted(allows)] == [1000, 1001, 1002]


@pytest.mark.parametrize(
    ("templates", "error"),
    [
        ([{"name": "python", "image": "example.com/python:3.12"}], "none named 'sandbox'"),
        (
            [
                {"name": "sandbox", "image": "us-docker.pkg.dev/example-project/agents/sandbox:1"},
                {"name": "python", "image": SETTINGS["image"]},
            ],
            "an image other than the launcher's",
        ),
    ],
    ids=["kit-template-missing", "launcher-image"],
)
def test_the_component_refuses_templates_that_expose_the_launcher(
    engine: Recorder, templates: list[dict[str, Any]], error: str
) -> None:
    values = {"environment": "prod", "targets": ["gcp-cloudrun"], "gcp-cloudrun": SETTINGS}
    plan = load_stack(ConfigSource(values=values), "test").plans["gcp-cloudrun"]
    args = cast(CloudRunSandboxArgs, {**plan, "templates": tuple(templates)})
    with pytest.raises(ValueError, match=error):
        engine.run(lambda: CloudRunSandbox("gcp-cloudrun", args))


@pytest.mark.parametrize(
    "object_name",
    ["s" * (MAX_OBJECT_NAME + 1), "Sbx-prod", "sbx-prod-", "1sbx", "sbx_prod", ""],
    ids=["too-long", "upper-case", "trailing-hyphen", "leading-digit", "underscore", "empty"],
)
def test_the_component_refuses_an_object_name_no_gcp_name_takes(
    engine: Recorder, object_name: str
) -> None:
    values = {"environment": "prod", "targets": ["gcp-cloudrun"], "gcp-cloudrun": SETTINGS}
    plan = load_stack(ConfigSource(values=values), "test").plans["gcp-cloudrun"]
    assert len(plan["object_name"]) <= MAX_OBJECT_NAME
    check_object_name("s" * MAX_OBJECT_NAME, MAX_OBJECT_NAME)
    args = cast(CloudRunSandboxArgs, {**plan, "object_name": object_name})
    message = f"object_name {object_name!r}: a lower-case name of 22 or fewer"
    with pytest.raises(ValueError, match=re.escape(message)):
        engine.run(lambda: CloudRunSandbox("gcp-cloudrun", args))


def _settings_problem(profile: dict[str, Any], settings: dict[str, Any]) -> Any:
    values = {"environment": "prod", "targets": ["gcp-cloudrun"], "profile": profile}
    values["gcp-cloudrun"] = settings
    with pytest.raises(ConfigError) as caught:
        load_stack(ConfigSource(values=values), "test")
    (problem,) = caught.value.problems
    return problem


def test_deletion_protection_is_explicit_and_on_by_default(engine: Recorder) -> None:
    assert one(build(engine), SERVICE).inputs["deletionProtection"] is True


def test_deletion_protection_off_reaches_the_service(engine: Recorder) -> None:
    service = one(build(engine, deletionProtection=False), SERVICE).inputs
    assert service["deletionProtection"] is False


@pytest.mark.parametrize("stack", ["prod", "staging"])
def test_shipped_stacks_keep_their_launcher_protected(project_dir: Path, stack: str) -> None:
    rendered = shipped_render(project_dir, stack)
    assert one(rendered.resources, SERVICE).inputs["deletionProtection"] is True


def test_an_allowlist_of_names_without_cname_targets_is_refused() -> None:
    # Staging before the fix: files.pythonhosted.org is a CNAME to Fastly's
    # dualstack.python.map.fastly.net, which the catch-all answered itself.
    settings = {k: v for k, v in SETTINGS.items() if k != "cnameTargets"}
    profile = {"egress": {"mode": "allowlist", "allow": ["pypi.org", "files.pythonhosted.org"]}}
    problem = _settings_problem(profile, settings)
    assert problem.key == "sandboxkit:gcp-cloudrun.cnameTargets"
    assert problem.expected.startswith(
        "the exact names the DNS answers of the allowlisted names (files.pythonhosted.org, "
        "pypi.org) are CNAMEs to, or [] when none is a CNAME"
    )


def test_an_allowlist_of_names_needs_resolved_address_matching_accepted() -> None:
    # Cloud NGFW FQDN objects admit a name by its resolved addresses (plain TCP naming no host
    # too): the kit deployed that, weaker than the contract, with only a gate finding.
    settings = {k: v for k, v in SETTINGS.items() if k != "nameMatching"}
    profile = {"egress": {"mode": "allowlist", "allow": ["pypi.org"]}}
    problem = _settings_problem(profile, settings)
    assert problem.key == "sandboxkit:gcp-cloudrun.nameMatching"
    assert problem.expected.startswith(
        "resolved-address, to accept that Cloud NGFW FQDN objects admit pypi.org by the "
        "addresses they resolve to: plain TCP naming no host"
    )
    assert problem.expected.endswith(
        "Or list IPv4 addresses instead of names, or run these sandboxes on kubernetes or "
        "gcp-gke with fqdnPolicy: cilium, which match TLS server names and HTTP hosts"
    )


def test_an_allowlist_of_addresses_needs_no_cname_targets(engine: Recorder) -> None:
    settings = {k: v for k, v in SETTINGS.items() if k not in ("cnameTargets", "nameMatching")}
    build_target(
        engine,
        "gcp-cloudrun",
        settings,
        {"egress": {"mode": "allowlist", "allow": ["93.184.216.34"]}},
    )
    assert of_type(engine.resources, SERVICE)


def test_staging_resolves_files_pythonhosted_orgs_cname_target(project_dir: Path) -> None:
    rules = dns_of(list(shipped_render(project_dir, "staging").resources))
    assert answer(rules, "files.pythonhosted.org") is Outcome.RESOLVED
    assert answer(rules, "dualstack.python.map.fastly.net") is Outcome.RESOLVED
    assert answer(rules, "other.map.fastly.net") is Outcome.NO_DATA
