"""``SessionPoolSandbox``: an Azure Container Apps dynamic session pool, hardened.

Resources use pulumi-azure-native v3 (session pool and environment: REST API
2025-02-02-preview; workspace: 2023-09-01; role assignment: 2022-04-01). See
docs/targets/azure-sessions.md.
"""

from __future__ import annotations

import pulumi
import pulumi_azure_native as azure_native
from pulumi_azure_native import app, authorization, operationalinsights, resources

from sandboxkit.azure.plan import (
    COOLDOWN_CAP,
    DEFAULT_IDENTITY_LIFECYCLE,
    SAFE_IDENTITY_LIFECYCLES,
    SESSION_EXECUTOR_ROLE_ID,
    SessionPoolSandboxArgs,
    check_allocation,
)

# The pool container's name inside the custom container template.
CONTAINER_NAME = "sandbox"
# Custom container pools need a workload-profiles environment; the Consumption profile is
# the serverless one (no dedicated nodes to pay for or patch).
WORKLOAD_PROFILE = {"name": "Consumption", "workloadProfileType": "Consumption"}


def memory_quantity(memory_mib: int) -> str:
    """A Container Apps memory quantity in GiB: ``2Gi`` for 2048 MiB, ``0.5Gi`` for 512."""
    return f"{memory_mib / 1024:g}Gi"


class SessionPoolSandbox(pulumi.ComponentResource):
    """Resource group (optional), Log Analytics workspace, Container Apps environment, a
    dynamic session pool and its Session Executor role assignments.

    Children (``<name>`` is the component name):
        ``<name>-provider`` (azure-native, pinned to the subscription and location),
        ``<name>-resource-group`` (if created), ``<name>-logs``, ``<name>-environment``,
        ``<name>-pool``, ``<name>-executor-<n>`` (one per executor, n from 0).

    Raises:
        ValueError: for an empty executor list, a cooldown outside 300 to 3600 seconds
            (``COOLDOWN_SOURCE``), a custom container without an image or with a size outside
            the allowed combinations, or an identity lifecycle other than ``None``/``Init``.
    """

    pool_management_endpoint: pulumi.Output[str]
    pool_name: pulumi.Output[str]
    environment_name: pulumi.Output[str]
    workspace_name: pulumi.Output[str]
    workspace_id: pulumi.Output[str]

    def __init__(
        self, name: str, args: SessionPoolSandboxArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("sandboxkit:index:SessionPoolSandbox", name, None, opts)
        custom = args["container_type"] == "CustomContainer"
        if not args["executors"]:
            raise ValueError("executors: at least one (principal id, principal type)")
        if not COOLDOWN_CAP.admits(args["cooldown_seconds"]):
            raise ValueError(
                f"cooldown_seconds {args['cooldown_seconds']}: {COOLDOWN_CAP.describe()} "
                f"(source: {COOLDOWN_CAP.source})"
            )
        if custom and "image" not in args:
            raise ValueError("image: required with container_type CustomContainer")
        size_problems = check_allocation(args["vcpu"], args["memory_mib"]) if custom else []
        if size_problems:
            raise ValueError(
                f"vcpu {args['vcpu']} / memory_mib {args['memory_mib']}: "
                + "; ".join(p.expected for p in size_problems)
            )
        lifecycle = args.get("identity_lifecycle", DEFAULT_IDENTITY_LIFECYCLE)
        if lifecycle not in SAFE_IDENTITY_LIFECYCLES:
            raise ValueError(f"identity_lifecycle {lifecycle!r}: None or Init, never Main or All")

        tags = dict(args["tags"])
        object_name = args["object_name"]
        provider = azure_native.Provider(
            f"{name}-provider",
            subscription_id=args["subscription_id"],
            location=args["location"],
            opts=pulumi.ResourceOptions(parent=self),
        )
        child = pulumi.ResourceOptions(parent=self, provider=provider)

        group_name: pulumi.Input[str] = args["resource_group_name"]
        if args["create_resource_group"]:
            group = resources.ResourceGroup(
                f"{name}-resource-group",
                resource_group_name=args["resource_group_name"],
                location=args["location"],
                tags=tags,
                opts=child,
            )
            group_name = group.name

        workspace = operationalinsights.Workspace(
            f"{name}-logs",
            workspace_name=f"{object_name}-logs",
            resource_group_name=group_name,
            location=args["location"],
            sku={"name": "PerGB2018"},
            retention_in_days=args["log_retention_days"],
            tags=tags,
            opts=child,
        )
        keys = operationalinsights.get_shared_keys_output(
            resource_group_name=group_name,
            workspace_name=workspace.name,
            opts=pulumi.InvokeOutputOptions(parent=self, provider=provider),
        )
        environment = app.ManagedEnvironment(
            f"{name}-environment",
            environment_name=f"{object_name}-env",
            resource_group_name=group_name,
            location=args["location"],
            app_logs_configuration={
                "destination": "log-analytics",
                "log_analytics_configuration": {
                    "customer_id": workspace.customer_id,
                    "shared_key": pulumi.Output.secret(keys.primary_shared_key),
                },
            },
            workload_profiles=[
                {
                    "name": WORKLOAD_PROFILE["name"],
                    "workload_profile_type": WORKLOAD_PROFILE["workloadProfileType"],
                }
            ],
            tags=tags,
            opts=child,
        )
        identity, identity_settings = self._identity(args)
        pool = app.ContainerAppsSessionPool(
            f"{name}-pool",
            session_pool_name=f"{object_name}-pool",
            resource_group_name=group_name,
            location=args["location"],
            environment_id=environment.id,
            pool_management_type="Dynamic",
            container_type=args["container_type"],
            dynamic_pool_configuration={
                "lifecycle_configuration": {
                    "lifecycle_type": "Timed",
                    "cooldown_period_in_seconds": args["cooldown_seconds"],
                }
            },
            scale_configuration=self._scale(args, custom),
            session_network_configuration={
                "status": "EgressEnabled" if args["egress_enabled"] else "EgressDisabled"
            },
            custom_container_template=self._container_template(args) if custom else None,
            identity=identity,
            managed_identity_settings=identity_settings,
            tags=tags,
            opts=child,
        )
        for index, (principal_id, principal_type) in enumerate(args["executors"]):
            authorization.RoleAssignment(
                f"{name}-executor-{index}",
                principal_id=principal_id,
                principal_type=principal_type,
                role_definition_id=(
                    f"/subscriptions/{args['subscription_id']}/providers/"
                    f"Microsoft.Authorization/roleDefinitions/{SESSION_EXECUTOR_ROLE_ID}"
                ),
                scope=pool.id,
                description="sandboxkit: call this session pool's management endpoint",
                opts=child,
            )

        self.pool_management_endpoint = pool.pool_management_endpoint
        self.pool_name = pool.name
        self.environment_name = environment.name
        self.workspace_name = workspace.name
        self.workspace_id = workspace.id
        self.register_outputs(self.outputs())

    def outputs(self) -> dict[str, pulumi.Output[str]]:
        """Stack outputs: poolManagementEndpoint, poolName, environmentName, workspaceName,
        workspaceId."""
        return {
            "poolManagementEndpoint": self.pool_management_endpoint,
            "poolName": self.pool_name,
            "environmentName": self.environment_name,
            "workspaceName": self.workspace_name,
            "workspaceId": self.workspace_id,
        }

    @staticmethod
    def _scale(args: SessionPoolSandboxArgs, custom: bool) -> app.ScaleConfigurationArgsDict:
        scale: app.ScaleConfigurationArgsDict = {"max_concurrent_sessions": args["max_concurrent"]}
        if custom:
            # Microsoft sizes the PythonLTS warm pool itself; only custom pools take a count.
            scale["ready_session_instances"] = args["pool_ready"]
        return scale

    @staticmethod
    def _container_template(args: SessionPoolSandboxArgs) -> app.CustomContainerTemplateArgsDict:
        template: app.CustomContainerTemplateArgsDict = {
            "containers": [
                {
                    "name": CONTAINER_NAME,
                    "image": args["image"],
                    "resources": {
                        "cpu": args["vcpu"],
                        "memory": memory_quantity(args["memory_mib"]),
                    },
                }
            ],
            "ingress": {"target_port": args["target_port"]},
        }
        if "registry_server" in args:
            template["registry_credentials"] = {
                "server": args["registry_server"],
                "identity": args["identity_resource_id"],
            }
        return template

    @staticmethod
    def _identity(
        args: SessionPoolSandboxArgs,
    ) -> tuple[
        app.ManagedServiceIdentityArgsDict | None, list[app.ManagedIdentitySettingArgsDict] | None
    ]:
        if "identity_resource_id" not in args:
            return None, None
        resource_id = args["identity_resource_id"]
        return (
            {"type": "UserAssigned", "user_assigned_identities": [resource_id]},
            [
                {
                    "identity": resource_id,
                    "lifecycle": args.get("identity_lifecycle", DEFAULT_IDENTITY_LIFECYCLE),
                }
            ],
        )
