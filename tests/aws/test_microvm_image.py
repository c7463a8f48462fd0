"""``MicrovmImage``'s API calls, checked by botocore's Stubber (names, types, required members)
and by ``ModelStubber`` (the ``lambda-microvms`` model's patterns and bounds), offline."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from botocore.exceptions import ClientError
from stubbed_api import StubbedClient, stubbed_api

from model_stubber import ModelStubber, PatternError
from sandboxkit.aws.image import HOOKS
from sandboxkit.aws.microvm_image import (
    ImageBuildError,
    MicrovmImage,
    MicrovmImageProvider,
    normalized,
)
from sandboxkit.aws.plan import AwsAccess
from sandboxkit.aws.type_tokens import KIT_MICROVM_IMAGE
from sandboxkit.render import Recorder

REGION = "eu-west-1"
NAME = "kit-image-0a1b2c3d"
ARN = f"arn:aws:lambda:{REGION}:123456789012:microvm-image:{NAME}"
ROLE = "arn:aws:iam::123456789012:role/kit-build-role-1234567"
BASE = f"arn:aws:lambda:{REGION}:aws:microvm-image:al2023-1"
INTERNET = f"arn:aws:lambda:{REGION}:aws:network-connector:aws-network-connector:INTERNET_EGRESS"
NOW = datetime(2026, 12, 1, tzinfo=UTC)
SPEC: dict[str, Any] = {
    "baseImageArn": BASE,
    "buildRoleArn": ROLE,
    "codeArtifact": {"uri": "s3://example-artifacts/worker/worker.zip"},
    "description": "sandboxkit worker",
    "egressNetworkConnectors": [INTERNET],
    "hooks": HOOKS,
    "logging": {"cloudWatch": {"logGroup": "/sandboxkit/prod/kit/image-logs"}},
    "cpuConfigurations": [{"architecture": "ARM_64"}],
}
TAGS = {"sandboxkit-stack": "prod", "sandboxkit-target": "aws-microvm"}
INPUTS: dict[str, Any] = {
    "namePrefix": "kit-image",
    "image": SPEC,
    "tags": TAGS,
    "access": AwsAccess(REGION).inputs(),
}


def image(state: str, **more: Any) -> dict[str, Any]:
    """A GetMicrovmImage response."""
    return {"imageArn": ARN, "name": NAME, "state": state, "createdAt": NOW, **more}


def version(spec: dict[str, Any], number: str = "1", **more: Any) -> dict[str, Any]:
    """A GetMicrovmImageVersion response: the configuration the service returns."""
    return {
        **copy.deepcopy(spec),
        "imageArn": ARN,
        "imageVersion": number,
        "state": "SUCCESSFUL",
        "status": "ACTIVE",
        "createdAt": NOW,
        **more,
    }


def written(state: str, number: str = "1") -> dict[str, Any]:
    """A CreateMicrovmImage/UpdateMicrovmImage response."""
    return {**image(state), **SPEC, "imageVersion": number, "updatedAt": NOW}


class StubbedProvider(StubbedClient, MicrovmImageProvider):
    """The provider with a stubbed ``lambda-microvms`` client and no pause between polls."""

    poll_seconds = 0.0


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[StubbedProvider, ModelStubber]]:
    with stubbed_api(StubbedProvider, REGION, monkeypatch) as stubbed:
        yield stubbed


def expect_get(stubber: ModelStubber, state: str, **more: Any) -> None:
    stubber.add_response("get_microvm_image", image(state, **more), {"imageIdentifier": ARN})


def expect_version(stubber: ModelStubber, spec: dict[str, Any], number: str = "1") -> None:
    stubber.add_response(
        "get_microvm_image_version",
        version(spec, number),
        {"imageIdentifier": ARN, "imageVersion": number},
    )


def expect_create(stubber: ModelStubber) -> None:
    """CreateMicrovmImage of ``SPEC`` named ``NAME`` (the suffix ``0a1b2c3d``), still building."""
    stubber.add_response(
        "create_microvm_image", written("CREATING"), {"name": NAME, "tags": TAGS, **SPEC}
    )


def test_create_sends_the_hooks_and_waits_for_the_build(
    api: tuple[StubbedProvider, ModelStubber],
) -> None:
    provider, stubber = api
    expect_create(stubber)
    expect_get(stubber, "CREATING")
    expect_get(stubber, "CREATED", latestActiveImageVersion="1")
    result = provider.create(copy.deepcopy(INPUTS))
    assert result.id == ARN
    assert result.outs == {**INPUTS, "arn": ARN, "imageName": NAME, "imageVersion": "1"}
    assert provider.regions == [REGION]


def test_a_failed_build_deletes_the_image_and_says_why(
    api: tuple[StubbedProvider, ModelStubber],
) -> None:
    provider, stubber = api
    expect_create(stubber)
    expect_get(stubber, "CREATE_FAILED", latestFailedImageVersion="1")
    stubber.add_response(
        "get_microvm_image_version",
        version(SPEC, state="FAILED", stateReason="FROM: pull access denied"),
        {"imageIdentifier": ARN, "imageVersion": "1"},
    )
    stubber.add_response(
        "delete_microvm_image",
        {"imageIdentifier": ARN, "state": "DELETING"},
        {"imageIdentifier": ARN},
    )
    with pytest.raises(ImageBuildError, match="create failed \\(version 1\\): FROM: pull"):
        provider.create(copy.deepcopy(INPUTS))


def test_a_build_that_never_ends_times_out(api: tuple[StubbedProvider, ModelStubber]) -> None:
    provider, stubber = api
    provider.timeout_seconds = 0.0
    stubber.add_response(
        "update_microvm_image", written("UPDATING", "2"), {"imageIdentifier": ARN, **SPEC}
    )
    expect_get(stubber, "UPDATING")
    with pytest.raises(ImageBuildError, match="still UPDATING after 0 s"):
        provider.update(ARN, copy.deepcopy(INPUTS), copy.deepcopy(INPUTS))


def test_read_returns_the_active_versions_configuration_and_nothing_when_gone(
    api: tuple[StubbedProvider, ModelStubber],
) -> None:
    provider, stubber = api
    off = copy.deepcopy(SPEC)
    off["hooks"]["microvmHooks"]["run"] = "DISABLED"
    expect_get(stubber, "CREATED", latestActiveImageVersion="3", tags={"other": "x"})
    expect_version(stubber, off, "3")
    stubber.add_client_error(
        "get_microvm_image",
        service_error_code="ResourceNotFoundException",
        expected_params={"imageIdentifier": ARN},
    )
    result = provider.read(ARN, copy.deepcopy(INPUTS))
    assert result.id == ARN
    assert result.outs is not None
    assert result.outs["image"] == off
    assert (result.outs["tags"], result.outs["imageVersion"]) == ({"other": "x"}, "3")
    gone = provider.read(ARN, copy.deepcopy(INPUTS))
    assert (gone.id, gone.outs) == (None, {})


def test_diff_is_quiet_when_the_live_version_matches(
    api: tuple[StubbedProvider, ModelStubber],
) -> None:
    provider, stubber = api
    # What the service fills in on its own does not count: a resolved base version, default
    # resources, the timeouts of hooks that are off, empty lists.
    live = copy.deepcopy(SPEC)
    live["baseImageVersion"] = "7"
    live["resources"] = [{"minimumMemoryInMiB": 2048}]
    live["hooks"]["microvmHooks"]["suspendTimeoutInSeconds"] = 30
    live["additionalOsCapabilities"] = []
    expect_get(stubber, "CREATED", latestActiveImageVersion="1")
    expect_version(stubber, live)
    result = provider.diff(ARN, copy.deepcopy(INPUTS), copy.deepcopy(INPUTS))
    assert (result.changes, result.replaces) == (False, [])


@pytest.mark.parametrize(
    "drift",
    [
        pytest.param(
            lambda s: s["hooks"]["microvmHooks"].__setitem__("run", "DISABLED"), id="run-off"
        ),
        pytest.param(lambda s: s.pop("hooks"), id="hooks-dropped"),
        pytest.param(lambda s: s["hooks"].__setitem__("port", 8080), id="hooks-port-moved"),
        pytest.param(
            lambda s: s.__setitem__("additionalOsCapabilities", ["ALL"]), id="capabilities"
        ),
        pytest.param(lambda s: s.__setitem__("environmentVariables", {"X": "y"}), id="environment"),
        pytest.param(
            lambda s: s.__setitem__("codeArtifact", {"uri": "s3://other/worker.zip"}),
            id="other-code",
        ),
    ],
)
def test_diff_finds_every_live_drift(api: tuple[StubbedProvider, ModelStubber], drift: Any) -> None:
    provider, stubber = api
    live = copy.deepcopy(SPEC)
    drift(live)
    expect_get(stubber, "CREATED", latestActiveImageVersion="1")
    expect_version(stubber, live)
    result = provider.diff(ARN, copy.deepcopy(INPUTS), copy.deepcopy(INPUTS))
    assert (result.changes, result.replaces) == (True, [])


def test_diff_replaces_only_for_a_new_region_or_name(
    api: tuple[StubbedProvider, ModelStubber],
) -> None:
    provider, _ = api
    moved = {**INPUTS, "access": AwsAccess("us-east-1").inputs()}
    renamed = {**INPUTS, "namePrefix": "other-image"}
    assert provider.diff(ARN, copy.deepcopy(INPUTS), moved).replaces == ["access"]
    assert provider.diff(ARN, copy.deepcopy(INPUTS), renamed).replaces == ["namePrefix"]
    # A new profile or role, code, hooks or role ARN: an in-place UpdateMicrovmImage.
    for news in (
        {**INPUTS, "access": AwsAccess(REGION, profile="deployer").inputs()},
        {**INPUTS, "image": {**SPEC, "buildRoleArn": ROLE.replace("1234567", "7654321")}},
    ):
        assert (provider.diff(ARN, copy.deepcopy(INPUTS), news).replaces) == []
    assert provider.regions == []


def test_update_writes_every_member_waits_then_tags(
    api: tuple[StubbedProvider, ModelStubber],
) -> None:
    provider, stubber = api
    olds = {**INPUTS, "tags": {**TAGS, "old": "x"}}
    news = {**INPUTS, "tags": {**TAGS, "sandboxkit-stack": "prod2"}}
    stubber.add_response(
        "update_microvm_image", written("UPDATING", "2"), {"imageIdentifier": ARN, **SPEC}
    )
    expect_get(stubber, "UPDATED", latestActiveImageVersion="2")
    stubber.add_response("untag_resource", {}, {"Resource": ARN, "TagKeys": ["old"]})
    stubber.add_response(
        "tag_resource", {}, {"Resource": ARN, "Tags": {"sandboxkit-stack": "prod2"}}
    )
    result = provider.update(ARN, olds, news)
    assert result.outs is not None
    assert (result.outs["arn"], result.outs["imageVersion"]) == (ARN, "2")


def test_delete_tolerates_a_missing_image_and_reports_an_image_in_use(
    api: tuple[StubbedProvider, ModelStubber],
) -> None:
    provider, stubber = api
    deleted = {"imageIdentifier": ARN, "state": "DELETING"}
    stubber.add_response("delete_microvm_image", deleted, {"imageIdentifier": ARN})
    stubber.add_client_error(
        "delete_microvm_image",
        service_error_code="ResourceNotFoundException",
        expected_params={"imageIdentifier": ARN},
    )
    stubber.add_client_error(
        "delete_microvm_image",
        service_error_code="ConflictException",
        service_message="MicroVMs are running",
        expected_params={"imageIdentifier": ARN},
    )
    provider.delete(ARN, copy.deepcopy(INPUTS))
    provider.delete(ARN, copy.deepcopy(INPUTS))
    with pytest.raises(ClientError, match="running"):
        provider.delete(ARN, copy.deepcopy(INPUTS))


def test_the_stubber_refuses_an_id_the_model_would(
    api: tuple[StubbedProvider, ModelStubber],
) -> None:
    # Stubber alone accepts both: the pattern is what the service checks.
    _, stubber = api
    with pytest.raises(PatternError, match="TaggableResource's pattern"):
        stubber.add_response("tag_resource", {}, {"Resource": "kit-image", "Tags": {}})
    with pytest.raises(PatternError, match="ImageName's pattern"):
        stubber.add_response("create_microvm_image", {**written("CREATING"), "name": "a b"}, None)
    with pytest.raises(PatternError, match=r"2 items, outside .* 0 to 1"):
        stubber.add_response(
            "create_microvm_image",
            written("CREATING"),
            {"name": NAME, **SPEC, "egressNetworkConnectors": [INTERNET, INTERNET]},
        )


def test_normalized_keeps_only_enabled_hooks_with_their_timeouts() -> None:
    assert normalized(SPEC)["hooks"] == {
        "port": 9000,
        "microvmHooks": {"run": "ENABLED", "runTimeoutInSeconds": 10},
        "microvmImageHooks": {"ready": "ENABLED", "readyTimeoutInSeconds": 300},
    }


def test_resource_registers_under_its_own_type_with_its_inputs(engine: Recorder) -> None:
    access = AwsAccess(REGION, profile="kit")

    def program() -> None:
        MicrovmImage("kit-image", image=SPEC, access=access, tags=TAGS)

    engine.run(program)
    (registered,) = [r for r in engine.resources if KIT_MICROVM_IMAGE.matches(r.type)]
    assert registered.inputs["image"] == SPEC
    assert registered.inputs["access"] == {"region": REGION, "profile": "kit"}
    with pytest.raises(ValueError, match="at most 55 characters"):
        MicrovmImage("x" * 56, image=SPEC, access=access, tags={})
    with pytest.raises(ValueError, match="letters, digits"):
        MicrovmImage("bad.name", image=SPEC, access=access, tags={})
