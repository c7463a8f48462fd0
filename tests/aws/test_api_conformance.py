"""What the shipped prod stack would send to AWS, sent to botocore's Stubber with the model's
patterns (``ModelStubber``): the image the kit's provider creates and the RunMicrovm the
launcher makes with the rendered environment. The worker calls no AWS API (standard library
only), which the last test holds it to."""

from __future__ import annotations

import ast
import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from stubbed_api import SUFFIX, StubbedClient, stubbed_api

from model_stubber import ModelStubber
from sandboxkit.aws.launcher import handler
from sandboxkit.aws.microvm_image import MicrovmImageProvider
from sandboxkit.aws.worker import build as worker_build
from support import named, shipped_render

T = "aws-microvm"
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def client(service: str) -> Any:
    return boto3.Session(
        aws_access_key_id="stub", aws_secret_access_key="stub", region_name="eu-west-1"
    ).client(service)


@pytest.fixture
def prod(project_dir: Path) -> dict[str, Any]:
    rendered = shipped_render(project_dir, "prod")
    mine = [r for r in rendered.resources if rendered.target_of(r) == T]
    return {
        "image": dict(named(mine, f"{T}-image").inputs),
        "env": dict(named(mine, f"{T}-launcher").inputs["environment"]["variables"]),
    }


class StubbedImageProvider(StubbedClient, MicrovmImageProvider):
    """The image provider with a stubbed ``lambda-microvms`` client."""


def test_the_rendered_image_is_a_valid_create_microvm_image(
    prod: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    props = {k: copy.deepcopy(prod["image"][k]) for k in ("namePrefix", "image", "tags", "access")}
    name = f"{props['namePrefix']}-{SUFFIX}"
    arn = f"arn:aws:lambda:eu-west-1:123456789012:microvm-image:{name}"
    spec = props["image"]
    with stubbed_api(StubbedImageProvider, "eu-west-1", monkeypatch) as (provider, stubber):
        stubber.add_response(
            "create_microvm_image",
            {
                "imageArn": arn,
                "name": name,
                "state": "CREATING",
                "createdAt": NOW,
                "baseImageArn": spec["baseImageArn"],
                "buildRoleArn": spec["buildRoleArn"],
                "codeArtifact": spec["codeArtifact"],
                "imageVersion": "1",
            },
            {"name": name, "tags": props["tags"], **spec},
        )
        stubber.add_response(
            "get_microvm_image",
            {"imageArn": arn, "name": name, "state": "CREATED", "createdAt": NOW},
            {"imageIdentifier": arn},
        )
        assert provider.create(props).id == arn


def test_the_rendered_launcher_makes_a_valid_run_microvm(prod: dict[str, Any]) -> None:
    env = {**prod["env"], "AWS_REGION": "eu-west-1"}
    config = handler.load_config(env)
    params = handler.build_run_microvm_params(config, "sess_1", "job_1", "sbxw1.x.y")
    api = client("lambda-microvms")
    with ModelStubber(api) as stubber:
        stubber.add_response(
            "run_microvm",
            {
                "microvmId": "microvm-0a1b2c3d",
                "state": "PENDING",
                "endpoint": "https://microvm-0a1b2c3d.lambda-microvm.eu-west-1.on.aws",
                "imageArn": config.image_arn,
                "imageVersion": "1",
                "maximumDurationInSeconds": config.max_duration_seconds,
                "startedAt": NOW,
            },
            params,
        )
        api.run_microvm(**params)
    assert params["ingressNetworkConnectors"] == [env["INGRESS_CONNECTOR_ARN"]]
    assert params["egressNetworkConnectors"] == [env["CONNECTOR_ARN"]]


def test_the_worker_calls_no_aws_api() -> None:
    folder = Path(worker_build.__file__).parent
    imported = set()
    for path in folder.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    assert not imported & {"boto3", "botocore", "aiobotocore", "urllib3", "requests"}
