"""What the identity running ``pulumi up`` needs, derived from what a stack renders.

Each target maps every resource type its component creates to the permission that creating,
reading, updating and deleting it needs (a target folder's ``deployer.py``); ``granted`` turns a
render into the union of those entries and refuses a type the mapping lacks, so a component
cannot start creating a new resource type without the deployer's permission for it (the test of
``sandboxkit deployer-policy`` renders every shipped and example stack). The document each
target prints (``TargetSpec.deployer_policy``) is the cloud's own shape: an IAM policy, GCP
roles and APIs, Azure role assignments, a Cloudflare token's permission groups, a Kubernetes
ClusterRole.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from sandboxkit.effective_egress import ResourceView
from sandboxkit.type_tokens import TypeToken

# Type tokens the engine handles itself: component resources (no cloud call) and provider
# instances (credentials, no API object).
NO_CLOUD_OBJECT_PREFIXES = ("sandboxkit:", "pulumi:providers:")

GrantT = TypeVar("GrantT")


class MissingGrantError(LookupError):
    """A rendered resource type has no entry in its target's deployer mapping: a kit bug (the
    component creates something the printed policy would not allow), never the user's."""


@dataclass(frozen=True)
class DeployerPolicy:
    """What ``sandboxkit deployer-policy`` prints for one target of one stack.

    Attributes:
        target: the target name.
        document: the JSON document in the cloud's own shape (see each target's
            ``deployer.py``), printed as is.
        apply: one sentence: how to give the document to the deployer identity.
    """

    target: str
    document: Mapping[str, Any]
    apply: str


def cloud_types(resources: Iterable[ResourceView]) -> list[str]:
    """The sorted type tokens of ``resources`` that are cloud objects (no components, no
    provider instances)."""
    return sorted({r.type for r in resources if not r.type.startswith(NO_CLOUD_OBJECT_PREFIXES)})


def grant_of(grants: Mapping[TypeToken, GrantT], resource_type: str) -> tuple[GrantT] | None:
    """``(grant,)`` of the entry of ``grants`` whose type ``resource_type`` is (any API
    version of it: ``TypeToken.matches``), ``None`` when no entry is."""
    for token, grant in grants.items():
        if token.matches(resource_type):
            return (grant,)
    return None


def granted(
    target: str, grants: Mapping[TypeToken, GrantT], resources: Sequence[ResourceView]
) -> dict[str, GrantT]:
    """Rendered type token -> grant for every cloud object type in ``resources``, sorted by
    type (``grant_of``: any API version of a type takes its entry).

    Raises:
        MissingGrantError: naming the target and each rendered type ``grants`` lacks.
    """
    found = {t: grant_of(grants, t) for t in cloud_types(resources)}
    missing = [t for t, grant in found.items() if grant is None]
    if missing:
        raise MissingGrantError(
            f"{target}: no deployer permission mapped for {', '.join(missing)} "
            f"(add it to the target's deployer.py)"
        )
    return {t: grant[0] for t, grant in found.items() if grant is not None}


def union(values: Iterable[Iterable[str]]) -> list[str]:
    """The distinct strings of ``values``, sorted."""
    return sorted({item for group in values for item in group})


@dataclass(frozen=True)
class RbacGrant:
    """The Kubernetes RBAC a Pulumi resource type needs (``rbac.authorization.k8s.io/v1``).

    Attributes:
        resource: the object's API resource (plural, lower case: ``networkpolicies``).
        reads: other resources the provider reads while it waits for the object to be ready
            (a Deployment's ReplicaSets and Pods; pulumi-kubernetes' await logic), as
            ``(apiGroup, resource)``.
    """

    resource: str
    reads: tuple[tuple[str, str], ...] = ()


# Pulumi's Kubernetes provider reads (get), creates, updates (patch: server-side apply, or
# update) and deletes each object it owns, and lists/watches while it awaits readiness and
# deletion.
MANAGE_VERBS = ("create", "delete", "get", "list", "patch", "update", "watch")
READ_VERBS = ("get", "list", "watch")


def api_group(type_token: str) -> str:
    """The API group of a pulumi-kubernetes type token: ``networking.k8s.io`` for
    ``kubernetes:networking.k8s.io/v1:NetworkPolicy``, ``""`` (the core group) for
    ``kubernetes:core/v1:Namespace``."""
    group = type_token.split(":")[1].rpartition("/")[0]
    return "" if group == "core" else group


def cluster_role(name: str, grants: Mapping[str, RbacGrant]) -> dict[str, Any]:
    """A ClusterRole (JSON, ``kubectl apply -f`` takes it) with one rule per API group for the
    objects of ``grants`` (type token -> grant) and one read rule per group for what the
    provider awaits on. Cluster-wide: a stack creates Namespaces and, on plain Kubernetes, a
    RuntimeClass, which no namespaced Role can grant."""
    manage: dict[str, set[str]] = {}
    read: dict[str, set[str]] = {}
    for type_token, grant in grants.items():
        manage.setdefault(api_group(type_token), set()).add(grant.resource)
        for group, resource in grant.reads:
            read.setdefault(group, set()).add(resource)
    rules = [
        {"apiGroups": [group], "resources": sorted(resources), "verbs": list(MANAGE_VERBS)}
        for group, resources in sorted(manage.items())
    ]
    for group, resources in sorted(read.items()):
        extra = sorted(resources - manage.get(group, set()))
        if extra:
            rules.append({"apiGroups": [group], "resources": extra, "verbs": list(READ_VERBS)})
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name},
        "rules": rules,
    }
