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
# The all-zero subscription: never a real one.
MOCK_AZURE_SUBSCRIPTION = "00000000-0000-0000-0000-000000000000"

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


def _aws_lambda_arn(kind: str) -> OutputRule:
    # Lambda MicroVM images and network connectors: arn:aws:lambda:<region>:<account>:<kind>:<name>
    def rule(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
        name = args.inputs.get("name", resource_id)
        return {
            "arn": f"arn:aws:lambda:{MOCK_AWS_REGION}:{MOCK_AWS_ACCOUNT}:{kind}:{name}",
            "name": name,
        }

    return rule


def _aws_log_group(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    name = args.inputs.get("name", resource_id)
    return {
        "arn": f"arn:aws:logs:{MOCK_AWS_REGION}:{MOCK_AWS_ACCOUNT}:log-group:{name}",
        "name": name,
    }


def _aws_network_firewall(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    # One endpoint per subnet mapping, as Network Firewall reports in firewallStatuses.
    attachments = [
        {"subnetId": m.get("subnetId"), "endpointId": f"vpce-{_short_hash(str(m))}"}
        for m in args.inputs.get("subnetMappings") or []
    ]
    return {
        **_aws_arn(args, resource_id),
        "firewallStatuses": [{"syncStates": [{"attachments": [a]} for a in attachments]}],
    }


def _aws_http_api(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    api_id = _short_hash(resource_id)[:10]
    return {
        **_aws_arn(args, resource_id),
        "apiEndpoint": f"https://{api_id}.execute-api.{MOCK_AWS_REGION}.amazonaws.com",
        "executionArn": f"arn:aws:execute-api:{MOCK_AWS_REGION}:{MOCK_AWS_ACCOUNT}:{api_id}",
    }


def _aws_function(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    outputs = _aws_arn(args, resource_id)
    outputs["invokeArn"] = (
        f"arn:aws:apigateway:{MOCK_AWS_REGION}:lambda:path/2015-03-31/functions/"
        f"{outputs['arn']}/invocations"
    )
    return outputs


def _kubernetes_metadata(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    metadata = dict(args.inputs.get("metadata") or {})
    metadata.setdefault("name", resource_id)
    return {"metadata": metadata}


def _azure_name(args: MockResourceArgs) -> str:
    # azure-native takes a resource's name as "<resource>Name" (workspaceName,
    # sessionPoolName); a resource group's own name is resourceGroupName.
    keys = [k for k in args.inputs if k.endswith("Name") and k != "resourceGroupName"]
    for key in (*keys, "resourceGroupName", "name"):
        if isinstance(args.inputs.get(key), str):
            return str(args.inputs[key])
    return args.name


def _azure_id(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    state: dict[str, Any] = {
        "id": f"/subscriptions/{MOCK_AZURE_SUBSCRIPTION}/mock/{args.name}",
        "name": _azure_name(args),
    }
    identity = args.inputs.get("identity")
    if isinstance(identity, dict) and isinstance(identity.get("userAssignedIdentities"), list):
        # Inputs list user-assigned identity ids; Azure answers with a map keyed by id.
        assigned: dict[str, dict[str, Any]] = {
            key: {} for key in identity["userAssignedIdentities"]
        }
        state["identity"] = {**identity, "userAssignedIdentities": assigned}
    return state


def _azure_workspace(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    return {**_azure_id(args, resource_id), "customerId": MOCK_AZURE_SUBSCRIPTION}


def _azure_session_pool(args: MockResourceArgs, resource_id: str) -> dict[str, Any]:
    name = _azure_name(args)
    group = args.inputs.get("resourceGroupName", "mock-group")
    location = args.inputs.get("location", "westeurope")
    endpoint = (
        f"https://{location}.dynamicsessions.io/subscriptions/{MOCK_AZURE_SUBSCRIPTION}"
        f"/resourceGroups/{group}/sessionPools/{name}"
    )
    # The ARM id policies read (e.g. an executor role scoped to this pool, not wider).
    pool_id = (
        f"/subscriptions/{MOCK_AZURE_SUBSCRIPTION}/resourceGroups/{group}"
        f"/providers/Microsoft.App/sessionPools/{name}"
    )
    return {**_azure_id(args, resource_id), "id": pool_id, "poolManagementEndpoint": endpoint}


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
    "aws:lambdamicrovms/image:Image": _aws_lambda_arn("microvm-image"),
    "aws:lambda/coreNetworkConnector:CoreNetworkConnector": _aws_lambda_arn("network-connector"),
    "aws:cloudwatch/logGroup:LogGroup": _aws_log_group,
    "aws:networkfirewall/firewall:Firewall": _aws_network_firewall,
    "aws:apigatewayv2/api:Api": _aws_http_api,
    "aws:lambda/function:Function": _aws_function,
    "kubernetes:": _kubernetes_metadata,
    "azure-native:": _azure_id,
    "azure-native:operationalinsights:Workspace": _azure_workspace,
    "azure-native:app:ContainerAppsSessionPool": _azure_session_pool,
    "gcp:serviceaccount/account:Account": _gcp_service_account,
    "gcp:cloudrunv2/service:Service": _gcp_cloud_run_service,
    "gcp:container/cluster:Cluster": _gke_cluster,
}

# Invoke token -> plausible result, for data-source calls whose result feeds an input.
CALL_RULES: dict[str, Callable[[MockCallArgs], dict[str, Any]]] = {
    "azure-native:operationalinsights:getSharedKeys": lambda _: {
        "primarySharedKey": "mock-primary-shared-key",
        "secondarySharedKey": "mock-secondary-shared-key",
    },
}


class CloudMocks(Mocks):
    """Pulumi mocks returning inputs plus plausible provider-computed attributes."""

    def new_resource(self, args: MockResourceArgs) -> tuple[str, dict[str, Any]]:
        """Return ``(id, state)``; the id is stable for a given type and name (a rule's ``id``
        when it gives one)."""
        resource_id = f"{args.name}-{_short_hash(args.typ + args.name)}"
        state = dict(args.inputs)
        matches = [prefix for prefix in OUTPUT_RULES if args.typ.startswith(prefix)]
        if matches:
            state.update(OUTPUT_RULES[max(matches, key=len)](args, resource_id))
        # A rule that knows the provider's id form (Azure resource ids) supplies it.
        return str(state.get("id", resource_id)), state

    def call(self, args: MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        """Invokes return their arguments, plus ``CALL_RULES``' result for known tokens."""
        rule = CALL_RULES.get(args.token)
        # An empty failure list, not None: Pulumi's mock monitor iterates it.
        return {**dict(args.args), **(rule(args) if rule else {})}, []
