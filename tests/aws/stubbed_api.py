"""A kit dynamic provider (``dynamic_api.ApiProvider``) whose every client is one botocore
client of its service, behind ``ModelStubber``: each call it makes is checked against the
service model (names, types, required members, patterns and bounds), offline. The random
suffix of the names it creates is ``SUFFIX``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import boto3
import pytest

from model_stubber import ModelStubber
from sandboxkit.aws import dynamic_api
from sandboxkit.aws.dynamic_api import ApiProvider
from sandboxkit.aws.plan import AwsAccess

# The 8 hex digits ``dynamic_api.unique_name`` appends, fixed for the test.
SUFFIX = "0a1b2c3d"


class StubbedClient(ApiProvider):
    """Mixed in before a provider class: every client it asks for is ``stubbed``, and
    ``regions`` lists the region of each ``access`` it asked one for."""

    def __init__(self, client: Any) -> None:
        super().__init__()
        self.stubbed = client
        self.regions: list[str] = []

    def client(self, access: AwsAccess) -> Any:
        self.regions.append(access.region)
        return self.stubbed


_Provider = TypeVar("_Provider", bound=StubbedClient)


@contextmanager
def stubbed_api(
    provider: type[_Provider], region: str, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[_Provider, ModelStubber]]:
    """``provider`` with a stubbed client of its ``service`` in ``region`` and the stubber,
    names suffixed ``SUFFIX``; on leaving, every response queued must have been asked for."""
    monkeypatch.setattr(dynamic_api.secrets, "token_hex", lambda n: SUFFIX)
    client = boto3.Session(
        aws_access_key_id="stub", aws_secret_access_key="stub", region_name=region
    ).client(provider.service)
    with ModelStubber(client) as stubber:
        yield provider(client), stubber
        stubber.assert_no_pending_responses()
