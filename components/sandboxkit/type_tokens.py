"""Pulumi resource type tokens, and the one rule that says whether a rendered type is one.

A type token is ``<package>:<module>:<type>`` (``aws:lambda/function:Function``). Two providers
put an API version into the module: pulumi-azure-native declares every resource once per API
version beside the default (``azure-native:app/v20240202preview:ContainerAppsSessionPool`` is
the ``2024-02-02-preview`` API of ``azure-native:app:ContainerAppsSessionPool``), and
pulumi-kubernetes names each kind by API group and version
(``kubernetes:networking.k8s.io/v1:NetworkPolicy``; the core group is ``core``). Either way it
is the same resource, so it is the same kind to every check and reader: ``TypeToken.matches``
compares tokens with the version left out (``without_version``). Every other provider's module
has no version segment (``gcp:cloudrunv2/service:Service`` is a module name, not an API
version).

Each target holds its tokens once, in ``<target folder>/type_tokens.py``; its catalog, its
policy handlers, its stack checks, its egress reader and the checkov export all match rendered
types through ``TypeToken.matches``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

# Packages whose type tokens carry an API version in the module segment: azure-native
# ("app/v20240202preview", https://www.pulumi.com/registry/packages/azure-native/version-guide/)
# and kubernetes ("apps/v1", "extensions.agents.x-k8s.io/v1beta1").
VERSIONED_PACKAGES = frozenset({"azure-native", "kubernetes"})
# An API version segment: v1, v2beta1, v1alpha1, v20240202preview, v20230501.
_API_VERSION = re.compile(r"v[0-9]+[a-z0-9]*")
# The wildcard of a check that reads every resource (SBX-SEC-002's credential scan).
_EVERY = "*"


@functools.lru_cache(maxsize=4096)
def without_version(resource_type: str) -> str:
    """``resource_type`` without its API version: the resource kind every version shares.

    ``azure-native:app/v20240202preview:ContainerAppsSessionPool`` and
    ``azure-native:app:ContainerAppsSessionPool`` both give
    ``azure-native:app:ContainerAppsSessionPool``; ``kubernetes:apps/v1:Deployment`` gives
    ``kubernetes:apps:Deployment``. A token of any other package, or one not of three segments,
    is returned as it is.
    """
    package, colon, rest = resource_type.partition(":")
    module, colon_2, name = rest.rpartition(":")
    if not colon or not colon_2 or package not in VERSIONED_PACKAGES:
        return resource_type
    group, slash, version = module.rpartition("/")
    if slash and _API_VERSION.fullmatch(version):
        module = group
    return f"{package}:{module}:{name}"


@dataclass(frozen=True)
class TypeToken:
    """One resource type a target creates or reads, as its provider SDK declares it.

    Attributes:
        token: the type token (``azure-native:app:ContainerAppsSessionPool``), as the SDK
            registers it by default; ``"*"`` (``EVERY_TYPE``) stands for every type.

    Raises:
        ValueError: for a token that is not ``<package>:<module>:<type>`` (or ``"*"``).
    """

    token: str
    _kind: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.token != _EVERY and (self.token.count(":") < 2 or "" in self.token.split(":")):
            raise ValueError(
                f"type token {self.token!r}: give <package>:<module>:<type>, e.g. "
                "aws:lambda/function:Function"
            )
        object.__setattr__(self, "_kind", without_version(self.token))

    def __str__(self) -> str:
        return self.token

    @property
    def name(self) -> str:
        """The type's own name, the token's last segment (``ContainerAppsSessionPool``)."""
        return self.token.rpartition(":")[2]

    def matches(self, resource_type: str) -> bool:
        """Whether a rendered resource of ``resource_type`` is of this type, any API version
        (``without_version``); ``EVERY_TYPE`` matches every type."""
        return self.token == _EVERY or without_version(resource_type) == self._kind


EVERY_TYPE = TypeToken(_EVERY)
"""The type of a check that reads every resource, whatever its type."""


class Typed(Protocol):
    """Something with a type token: a rendered resource's view (``type``)."""

    @property
    def type(self) -> str: ...


_R = TypeVar("_R", bound=Typed)


def of_type(resources: Iterable[_R], *tokens: TypeToken) -> list[_R]:
    """The ``resources`` whose ``type`` matches one of ``tokens``, in their order."""
    return [r for r in resources if any(t.matches(r.type) for t in tokens)]
