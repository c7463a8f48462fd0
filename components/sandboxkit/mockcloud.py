"""Plausible cloud outputs for the offline render: ids, ARNs, URLs a real provider would return.

``CloudMocks.new_resource`` returns the resource's inputs plus the attributes below, so
``.apply`` callbacks and stack outputs see realistic values. A target that needs another
attribute adds a function to ``OUTPUT_RULES`` keyed by the resource type token.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from pulumi.runtime import MockCallArgs, MockResourceArgs, Mocks

# A documentation account id (AWS uses 123456789012 in its examples); never a real account.
MOCK_AWS_ACCOUNT = "123456789012"
MOCK_AWS_REGION = "us-east-1"

OutputRule = Callable[[MockResourceArgs, str], dict[str, Any]]


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _aws_arn(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    # aws:lambda/function:Function -> service "lambda", kind "function"
    module = args.typ.split(":")[1].split("/")[0].rstrip("_")
    kind = args.typ.split(":")[2].lower()
    name = args.inputs.get("name", resource_id)
    return {
        "arn": f"arn:aws:{module}:{MOCK_AWS_REGION}:{MOCK_AWS_ACCOUNT}:{kind}/{name}",
        "name": name,
    }


def _kubernetes_metadata(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    metadata = dict(args.inputs.get("metadata") or {})
    metadata.setdefault("name", resource_id)
    return {"metadata": metadata}


def _azure_id(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    return {
        "id": f"/subscriptions/00000000-0000-0000-0000-000000000000/mock/{args.name}",
        "name": args.inputs.get("name", args.name),
    }


MOCK_GCP_PROJECT = "example-project"
# A documentation-range address and a placeholder certificate: the cluster is never reached.
MOCK_GKE_ENDPOINT = "192.0.2.10"
MOCK_GKE_CA = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCm1vY2sKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo="


def _gcp_service_account(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    project = args.inputs.get("project", MOCK_GCP_PROJECT)
    account_id = args.inputs.get("accountId", resource_id)
    return {"email": f"{account_id}@{project}.iam.gserviceaccount.com"}


def _gcp_cloud_run_service(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    name = args.inputs.get("name", resource_id)
    return {"uri": f"https://{name}-{_short_hash(name)}-uc.a.run.app"}


def _gke_cluster(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    return {
        "endpoint": MOCK_GKE_ENDPOINT,
        "masterAuth": {"clusterCaCertificate": MOCK_GKE_CA},
    }


# Type-token prefix -> extra output attributes. The longest matching prefix wins.
OUTPUT_RULES: dict[str, OutputRule] = {
    "aws:": _aws_arn,
    "kubernetes:": _kubernetes_metadata,
    "azure-native:": _azure_id,
    "gcp:serviceaccount/account:Account": _gcp_service_account,
    "gcp:cloudrunv2/service:Service": _gcp_cloud_run_service,
    "gcp:container/cluster:Cluster": _gke_cluster,
}


class CloudMocks(Mocks):
    """Pulumi mocks returning inputs plus plausible provider-computed attributes."""

    def new_resource(self, args: MockResourceArgs) -> tuple[str, dict[str, Any]]:
        """Return ``(id, state)``; the id is stable for a given type and name."""
        resource_id = f"{args.name}-{_short_hash(args.typ + args.name)}"
        state = dict(args.inputs)
        matches = [prefix for prefix in OUTPUT_RULES if args.typ.startswith(prefix)]
        if matches:
            state.update(OUTPUT_RULES[max(matches, key=len)](args, resource_id))
        return resource_id, state

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """Invokes return their arguments and no failures (Pulumi's mock monitor iterates the
        failures, so they are an empty list, never ``None``)."""
        return dict(args.args), []
