"""The pack as the Pulumi CLI runs it: a subprocess answering the analyzer protocol over gRPC."""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pulumi
import pulumi_policy.policy
import pytest
from google.protobuf import empty_pb2, json_format, struct_pb2
from pulumi.runtime import proto
from pulumi_policy import proxy as proxy_module

import support as testing
from sandboxkit import gate
from sandboxkit.render import RenderedStack

PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def analyzer() -> gate.InProcessAnalyzer:
    """The pack's analyzer servicer in this process (every check reconfigures it)."""
    return gate.InProcessAnalyzer(gate.pack_dir(PROJECT))


def stack_values(stack: str) -> dict[str, Any]:
    return testing.stack_values(PROJECT, stack)


def render(stack: str, values: dict[str, Any]) -> RenderedStack:
    return testing.render_values(PROJECT, stack, values)


COMPONENTS = Path(__file__).resolve().parents[2] / "components"


@pytest.fixture(scope="module")
def stub() -> Iterator[Any]:
    # This worktree's kit first, as the pack's own venv would have it installed.
    env = {"PYTHONPATH": os.pathsep.join([str(COMPONENTS), os.environ.get("PYTHONPATH", "")])}
    with gate.pack_process(gate.pack_dir(PROJECT), stack="prod", env=env) as analyzer:
        yield analyzer


def test_get_analyzer_info_lists_every_policy(stub: Any, analyzer: gate.InProcessAnalyzer) -> None:
    info = stub.GetAnalyzerInfo(empty_pb2.Empty())
    assert info.name == "sandbox-guard"
    assert info.version == analyzer.GetAnalyzerInfo(empty_pb2.Empty()).version
    assert info.supportsConfig
    names = [p.name for p in info.policies]
    assert names == [p.name for p in analyzer.GetAnalyzerInfo(empty_pb2.Empty()).policies]
    assert len(names) == 37
    net_001 = next(p for p in info.policies if p.name == "sbx-net-001")
    assert net_001.severity == proto.POLICY_SEVERITY_CRITICAL
    assert net_001.enforcementLevel == proto.ADVISORY
    assert net_001.remediation_steps.startswith("Set sandboxkit:profile.egress.mode")
    assert net_001.policy_type == proto.PolicyType.POLICY_TYPE_RESOURCE
    net_005 = next(p for p in info.policies if p.name == "sbx-net-005")
    assert net_005.policy_type == proto.PolicyType.POLICY_TYPE_STACK


INTERNET_EGRESS = (
    "arn:aws:lambda:us-east-1:aws:network-connector:aws-network-connector:INTERNET_EGRESS"
)


def _props(values: dict[str, Any]) -> struct_pb2.Struct:
    struct = struct_pb2.Struct()
    struct.update(values)
    return struct


def test_analyze_of_a_bad_resource_returns_the_expected_diagnostics(stub: Any) -> None:
    request = proto.ConfigureAnalyzerRequest()
    request.policyConfig["sbx-net-001"].CopyFrom(
        proto.PolicyConfig(enforcementLevel=proto.MANDATORY, properties=_props({}))
    )
    stub.Configure(request)
    response = stub.Analyze(
        proto.AnalyzeRequest(
            type="aws:lambda/function:Function",
            name="launcher",
            urn="urn:pulumi:prod::sandboxkit::aws:lambda/function:Function::launcher",
            properties=_props(
                {
                    "environment": {
                        "variables": {"IMAGE_ARN": "arn:i", "CONNECTOR_ARN": INTERNET_EGRESS}
                    }
                }
            ),
        )
    )
    found = [(d.policyName, d.enforcementLevel, d.severity) for d in response.diagnostics]
    assert ("sbx-net-001", proto.MANDATORY, proto.POLICY_SEVERITY_CRITICAL) in found
    (message,) = [d.message for d in response.diagnostics if d.policyName == "sbx-net-001"]
    assert message.endswith(
        f"MicroVM launcher launcher runs MicroVMs with the AWS-managed connector "
        f"{INTERNET_EGRESS} (CONNECTOR_ARN), so they reach the internet unfiltered; set it to "
        "the kit's CoreNetworkConnector."
    )


def test_a_secret_input_arrives_wrapped_and_is_still_judged(stub: Any) -> None:
    # The engine marks secrets with a signature; pulumi-policy unwraps them for Analyze.
    secret = gate_secret("AKIAABCDEFGHIJKLMNOP")
    response = stub.Analyze(
        proto.AnalyzeRequest(
            type="aws:lambda/function:Function",
            name="launcher",
            urn="urn:pulumi:prod::sandboxkit::aws:lambda/function:Function::launcher",
            properties=_props({"environment": {"variables": {"MIRROR": secret}}}),
        )
    )
    assert [d.policyName for d in response.diagnostics] == ["sbx-sec-002"]


def gate_secret(value: str) -> dict[str, Any]:
    from sandboxkit.render import secret_wrap

    return secret_wrap(value)


def test_the_subprocess_and_in_process_verdicts_on_a_stack_match(
    stub: Any, analyzer: gate.InProcessAnalyzer
) -> None:
    values = stack_values("prod")
    testing.open_egress(values)
    rendered = testing.with_input(
        render("prod", values), "gcp-cloudrun-service", ("template", "timeout"), "7200s"
    )
    over_grpc = gate.check_rendered(stub, rendered, PROJECT)
    in_process = gate.check_rendered(analyzer, rendered, PROJECT)
    assert over_grpc.violations == in_process.violations
    assert {(v.policy, v.enforcement) for v in over_grpc.violations} == {
        ("SBX-NET-001", "mandatory"),
        ("SBX-NET-003", "mandatory"),
        ("SBX-RES-002", "mandatory"),
    }


def distinct_properties(rendered: RenderedStack) -> set[bytes]:
    """The distinct properties messages of ``rendered``'s resources (key-sorted bytes)."""
    return {
        _props(dict(r.inputs)).SerializeToString(deterministic=True) for r in rendered.resources
    }


def plain(value: Any) -> Any:
    """Properties as plain dicts and lists (unknowns included), read through pulumi-policy's
    input proxies where there are some; an asset or archive as its kind and fields."""
    if isinstance(value, pulumi.Asset | pulumi.Archive):
        return (type(value).__name__, plain(vars(value)))
    proxy: Any = value
    if isinstance(value, Mapping):
        items = value if isinstance(value, dict) else proxy["__target"]
        return {key: plain(item) for key, item in items.items()}
    if isinstance(value, Sequence) and not isinstance(value, str):
        return [plain(item) for item in (value if isinstance(value, list) else proxy["__target"])]
    return value


def test_in_process_each_properties_message_is_converted_and_proxied_once_per_call(
    analyzer: gate.InProcessAnalyzer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pulumi-policy converts the properties, copies them and builds an input proxy over the
    # copy once per policy; in process, once per message and call (gate.analyzer's
    # SharedConversions and once_per_call), read by every policy. The verdicts equal the
    # subprocess's (test above).
    rendered = testing.shipped_render(PROJECT, "prod")
    real_conversion = json_format.MessageToDict
    real_proxy = proxy_module._proxy_helper
    converted: list[tuple[bytes, Any]] = []
    built: list[tuple[Any, Any]] = []

    def converting(message: Any, *args: Any, **kwargs: Any) -> Any:
        result = real_conversion(message, *args, **kwargs)
        converted.append((message.SerializeToString(), result))
        return result

    def proxying(value: Any, path: list[str]) -> Any:
        result = real_proxy(value, path)
        if not path:  # a whole resource's properties (unknown_checking_proxy), not a part
            built.append((copy.deepcopy(value), result))
        return result

    monkeypatch.setattr(json_format, "MessageToDict", converting)
    monkeypatch.setattr(proxy_module, "_proxy_helper", proxying)
    gate.crossguard.analyze(analyzer, rendered)

    def content(raw: bytes) -> bytes:
        return struct_pb2.Struct.FromString(raw).SerializeToString(deterministic=True)

    distinct = distinct_properties(rendered)
    # Analyze: each resource once; AnalyzeStack: each distinct properties message once.
    assert len(converted) == len(built) == len(rendered.resources) + len(distinct)
    assert {content(raw) for raw, _ in converted} == distinct
    # Every policy read the shared conversions and proxies; none changed them.
    for raw, shared in converted:
        assert shared == real_conversion(struct_pb2.Struct.FromString(raw))
    for properties, proxy in built:
        assert plain(proxy) == plain(properties)


def test_in_process_a_policy_cannot_assign_to_the_inputs_it_shares(
    analyzer: gate.InProcessAnalyzer,
) -> None:
    # Found in review: over gRPC each policy gets its own proxy, in process one is shared by
    # every policy of a call, so an assignment changed what the next policy read. It raises.
    servicer_module: Any = pulumi_policy.policy
    properties = {"spec": {"labels": {"app": "sandbox"}, "ports": [{"port": 443.0}]}}
    with gate.analyzer._within_one_call():
        copied = servicer_module.deserialize_properties(properties)
        props = servicer_module.unknown_checking_proxy(copied)
        assert servicer_module.unknown_checking_proxy(copied) is props
        assert props["spec"]["ports"][0]["port"] == 443.0
        spec = props["spec"]
        for mapping in (props, spec, spec["labels"], spec["ports"][0]):
            with pytest.raises(gate.analyzer.SharedInputError, match=r"assign to a copy"):
                mapping["app"] = "other"
        assert spec["labels"]["app"] == "sandbox"
    outside = servicer_module.unknown_checking_proxy(properties)
    outside["spec"] = {}
    assert outside["spec"] == {}


def test_messages_differing_only_in_key_order_keep_their_own_order() -> None:
    # Found in review: keyed by a deterministic (key-sorted) serialization, the second
    # message got the first one's key order, and a check that stops at the first unknown
    # input in order named another path in its "cannot verify" sentence.
    shared = gate.analyzer.SharedConversions()
    with gate.analyzer._within_one_call():
        first = shared.MessageToDict(_props({"annotations": {"a0": "x", "a3": "y"}}))
        second = shared.MessageToDict(_props({"annotations": {"a3": "y", "a0": "x"}}))
        again = shared.MessageToDict(_props({"annotations": {"a0": "x", "a3": "y"}}))
    assert list(first["annotations"]) == ["a0", "a3"]
    assert list(second["annotations"]) == ["a3", "a0"]
    assert again is first


def test_outside_a_call_every_conversion_is_a_new_dict() -> None:
    shared = gate.analyzer.SharedConversions()
    message = _props({"spec": {"replicas": 1}})
    first = shared.MessageToDict(message)
    assert first == {"spec": {"replicas": 1}}
    assert shared.MessageToDict(message) is not first
    assert shared.Parse is json_format.Parse
