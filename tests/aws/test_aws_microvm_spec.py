"""The ``aws-microvm`` spec: egress plan, retention rounding, layout, enforcement map, caps."""

from __future__ import annotations

import pytest

from sandboxkit.aws.network import resolver_address, subnet_layout
from sandboxkit.aws.spec import (
    LOG_RETENTION_DAYS,
    SPEC,
    MicrovmSettings,
    control_plane_rule,
    egress_plan,
    log_retention,
)
from sandboxkit.egress_contract import parse_rule
from sandboxkit.errors import ConfigError
from sandboxkit.profile import SandboxProfile
from sandboxkit.secrets import SecretValue
from sandboxkit.targets import TARGET_MODULES, KitContext
from settings_paths import refusal, with_value


def settings(**overrides: object) -> MicrovmSettings:
    return MicrovmSettings.model_validate(
        {
            "region": "eu-west-1",
            "controlPlaneUrl": "https://agents.example.com",
            "workerArtifact": {"bucket": "example-artifacts", "key": "w.zip"},
            "webhookSecret": SecretValue("a" * 32),
            "workerCredentialKey": SecretValue("b" * 32),
            "vpcCidr": "10.0.0.0/16",
            "availabilityZones": ["eu-west-1a"],
            **overrides,
        }
    )


def profile(mode: str = "deny", allow: tuple[str, ...] = ()) -> SandboxProfile:
    return SandboxProfile.model_validate({"egress": {"mode": mode, "allow": list(allow)}})


def test_registered_under_its_public_name() -> None:
    assert TARGET_MODULES["aws-microvm"] == "sandboxkit.aws.spec"
    assert SPEC.name == "aws-microvm"


def test_plan_for_deny_holds_only_the_control_plane() -> None:
    plan = egress_plan(profile(), settings(controlPlaneHosts=["cdn.example.com"]))
    assert plan.names == (parse_rule("agents.example.com"), parse_rule("cdn.example.com"))
    assert plan.dns_names == ("agents.example.com", "cdn.example.com")
    assert plan.tcp_ports == (443,)
    assert plan.ip_rules == ()


def test_plan_splits_names_ports_and_ips() -> None:
    allow = (
        "pypi.org",
        "*.pythonhosted.org",
        "mirror.example.org:80",
        "grpc.example.org:8443",
        "93.184.216.34:8443",
    )
    plan = egress_plan(profile("allowlist", allow), settings())
    assert [str(rule) for rule in plan.names] == [
        "agents.example.com:443",
        "grpc.example.org:8443",
        "mirror.example.org:80",
        "pypi.org:443",
        "*.pythonhosted.org:443",
    ]
    assert plan.tcp_ports == (80, 443, 8443)
    assert plan.ip_rules == (parse_rule("93.184.216.34:8443"),)


def test_plan_opens_no_port_no_name_uses() -> None:
    plan = egress_plan(
        profile("allowlist", ("mirror.example.org:8443",)),
        settings(controlPlaneUrl="https://agents.example.com:8443/api"),
    )
    assert plan.tcp_ports == (8443,)


def test_plan_refuses_each_unenforceable_entry_by_value() -> None:
    bad = profile("allowlist", ("example.org:8443", "[2001:4860::8888]", "pypi.org"))
    with pytest.raises(ConfigError) as caught:
        egress_plan(bad, settings())
    assert [(p.key, p.value) for p in caught.value.problems] == [
        ("sandboxkit:profile.egress.allow", "[2001:4860::8888]:443"),
    ]
    assert "IPv4-only" in caught.value.problems[0].expected


@pytest.mark.parametrize(
    ("allow", "value", "expected"),
    [
        (
            [f"host{i}.example.org" for i in range(500)],
            "501 entries",
            "at most 500 names (two firewall rules each, in a rule group of 1000)",
        ),
        (
            [f"8.8.{i // 200}.{i % 200 + 1}" for i in range(101)],
            "101 entries",
            "at most 100 IP addresses (resolved-IP validation exempts at most 100)",
        ),
    ],
)
def test_plan_refuses_more_entries_than_the_firewall_holds(
    allow: list[str], value: str, expected: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        egress_plan(profile("allowlist", tuple(allow)), settings())
    (problem,) = caught.value.problems
    assert (problem.key, problem.value) == ("sandboxkit:profile.egress.allow", value)
    assert problem.expected.startswith(expected)
    assert "wildcard" in problem.expected
    # One fewer fits (the control plane is the 500th name).
    assert egress_plan(profile("allowlist", tuple(allow[:-1])), settings()).mode == "allowlist"


@pytest.mark.parametrize(
    ("url", "at", "shown", "encoded"),
    [
        ("https://agents.example.com /x", 26, "' '", "%20"),  # newcomer finding F11
        ("https://agents.example.com/a\tb", 28, "'\\t'", "%09"),
        ("https://agents.example.com/<x>", 27, "'<'", "%3C"),
        ("https://agents.example.com/\u00a0", 27, "'\\xa0'", "%C2%A0"),
    ],
)
def test_a_control_plane_url_with_a_character_urls_exclude_is_refused(
    url: str, at: int, shown: str, encoded: str
) -> None:
    with pytest.raises(ValueError) as caught:
        control_plane_rule(url)
    assert str(caught.value) == (
        'an https:// URL without spaces, control characters or <>"{}|\\^` (RFC 3986 section '
        f"2); it holds {shown} at {at}: percent-encode it ({encoded})"
    )
    refused = refusal(with_value("aws-microvm.controlPlaneUrl", url))
    assert refused is not None
    assert refused.keys == ("sandboxkit:aws-microvm.controlPlaneUrl",)


def test_control_plane_url_gives_host_and_port() -> None:
    assert str(control_plane_rule("https://agents.example.com/a%20b")) == "agents.example.com:443"
    assert str(control_plane_rule("https://api.example.com:443/v1")) == "api.example.com:443"
    with pytest.raises(ValueError, match="https://"):
        control_plane_rule("https://user:pw@api.example.com")


@pytest.mark.parametrize(
    ("days", "kept"), [(1, 1), (2, 3), (30, 30), (31, 60), (366, 400), (3653, 3653)]
)
def test_log_retention_rounds_up_to_an_allowed_value(days: int, kept: int) -> None:
    assert log_retention(days) == kept
    assert kept in LOG_RETENTION_DAYS


def test_log_retention_refuses_beyond_the_longest() -> None:
    with pytest.raises(ValueError, match="at most 3653"):
        log_retention(3654)


def test_subnet_layout_and_resolver() -> None:
    assert subnet_layout("10.40.0.0/20", 2) == {
        "private": ["10.40.0.0/24", "10.40.1.0/24"],
        "firewall": ["10.40.2.0/24", "10.40.3.0/24"],
        "public": ["10.40.4.0/24", "10.40.5.0/24"],
    }
    assert resolver_address("10.40.0.0/20") == "10.40.0.2"


def test_enforcement_map_says_where_each_field_is_enforced() -> None:
    plan = SPEC.plan(profile(), settings(), KitContext("test", "prod", "aws-microvm"))
    kinds = {k: e.kind for k, e in SPEC.enforcement(profile(), settings(), plan).items()}
    assert kinds == {
        "egress.mode": "platform",
        "limits.vcpu": "none",
        "limits.memoryMiB": "none",
        "limits.execTimeoutSeconds": "runtime",
        "limits.maxLifetimeSeconds": "platform",
        "limits.idleTimeoutSeconds": "platform",
        "pool.ready": "none",
        "pool.maxConcurrent": "none",
        "audit.logRetentionDays": "platform",
    }


def test_caps_carry_their_sources() -> None:
    caps = {c.field: c for c in SPEC.caps}
    assert (
        caps["limits.maxLifetimeSeconds"].maximum,
        caps["limits.idleTimeoutSeconds"].minimum,
        caps["audit.logRetentionDays"].maximum,
    ) == (28_800, 60, 3653)
    assert (
        "RunMicrovmRequestMaximumDurationInSecondsInteger"
        in caps["limits.maxLifetimeSeconds"].source
    )
    assert "IdlePolicyMaxIdleDurationSecondsInteger" in caps["limits.idleTimeoutSeconds"].source
    assert "Days" in caps["audit.logRetentionDays"].source


def test_base_image_defaults_to_the_regions_managed_image() -> None:
    assert settings().base_image() == "arn:aws:lambda:eu-west-1:aws:microvm-image:al2023-1"
    own = "arn:aws:lambda:eu-west-1:123456789012:microvm-image:base"
    assert settings(baseImageArn=own).base_image() == own


def test_secret_settings_are_declared() -> None:
    assert MicrovmSettings.secret_keys() == {"webhookSecret", "workerCredentialKey"}
