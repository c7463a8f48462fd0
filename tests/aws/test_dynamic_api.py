"""What the kit's dynamic providers share (``dynamic_api``), checked for each of them."""

from __future__ import annotations

import base64

import dill
import pytest
from pulumi.dynamic.dynamic import serialize_provider

from sandboxkit.aws.dynamic_api import ApiProvider
from sandboxkit.aws.firewall_policy import FirewallPolicyProvider
from sandboxkit.aws.microvm_image import MicrovmImageProvider


@pytest.mark.parametrize("provider", [FirewallPolicyProvider, MicrovmImageProvider])
def test_the_serialized_provider_names_the_kits_class_and_carries_no_code(
    provider: type[ApiProvider],
) -> None:
    # The engine runs dynamic providers in a process that unpickles __provider; by reference,
    # that process imports the provider's module from the stack's own environment.
    blob = serialize_provider(provider())
    restored = dill.loads(base64.b64decode(blob))
    assert type(restored) is provider
    assert len(blob) < 200
