"""Settings, enforcement map and factory of the ``azure-sessions`` target (no SDK import here).

Azure Container Apps dynamic sessions run each session in its own Hyper-V sandbox, allocated
from a pre-warmed session pool. What the platform leaves to the buyer, and what this target
does about it:

- Egress is one switch (``sessionNetworkConfiguration.status``: ``EgressEnabled`` or
  ``EgressDisabled``). ``deny`` is ``EgressDisabled``; a per-host ``allowlist`` cannot be
  enforced and exits 2 (Microsoft documents no path that sends session egress through the
  environment's virtual network, so a firewall there would not see it).
- A session identifier nobody has used yet silently creates a session, and whoever holds an
  identifier shares that session's files and environment: callers derive identifiers with
  ``sandboxkit.azure.session_ids``.
- A managed identity visible to session code hands its tokens to untrusted code: only the
  ``None`` and ``Init`` lifecycles are accepted, never ``Main`` or ``All``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Annotated, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sandboxkit.azure.deployer import azure_policy
from sandboxkit.azure.plan import (
    COOLDOWN_CAP,
    DEFAULT_IDENTITY_LIFECYCLE,
    SAFE_IDENTITY_LIFECYCLES,
    SESSIONS_DOC,
    TARGET,
    SessionPoolSandboxArgs,
    check_allocation,
)
from sandboxkit.deployer import DeployerPolicy
from sandboxkit.dns_names import numeric_name_refusal
from sandboxkit.effective_egress import ResourceView
from sandboxkit.errors import ConfigError, FieldError, Problem
from sandboxkit.profile import SandboxProfile
from sandboxkit.targets import (
    Cap,
    EgressAcceptance,
    Enforcement,
    KitComponent,
    KitContext,
    TargetSettings,
    TargetSpec,
)
from sandboxkit.value_formats import ImageReference

MAX_SESSIONS_SOURCE = (
    f"{SESSIONS_DOC}: scaleConfiguration.maxConcurrentSessions (--max-sessions), maximum 600"
)
RETENTION_SOURCE = (
    "learn.microsoft.com/azure/azure-monitor/logs/data-retention-configure: workspace "
    "retentionInDays for the PerGB2018 tier is 30 to 730 days"
)
IDENTITY_SOURCE = (
    "learn.microsoft.com/azure/container-apps/sessions#use-managed-identity: with Main the "
    "session's code can create Entra tokens for the pool's identity"
)

PrincipalType = Literal["ServicePrincipal", "User", "Group"]
_UUID = Annotated[
    str,
    Field(pattern=r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"),
]
# Resource group names: letters, digits, '.', '_', '-', '(' and ')', 1 to 90, not ending in '.'.
_RESOURCE_GROUP = Annotated[str, Field(pattern=r"^[-\w.()]{0,89}[-\w()]$")]
# A registry login server: DNS labels (RFC 1123) and an optional port, as an image reference's
# registry part spells it (distribution/reference grammar: domain[:port]).
_REGISTRY_HOST = re.compile(
    r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)+(:[1-9][0-9]{0,4})?$",
    re.ASCII | re.IGNORECASE,
)
_USER_ASSIGNED_IDENTITY = (
    r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[-\w.()]+/providers/"
    r"Microsoft\.ManagedIdentity/userAssignedIdentities/[-\w]+$"
)
# Default target port for custom container sessions: a common unprivileged HTTP port.
DEFAULT_TARGET_PORT = 8080


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True, populate_by_name=True)


class Executor(_Strict):
    """One identity allowed to call the pool management endpoint.

    Attributes:
        principalId: the Entra object id (UUID) of the identity.
        principalType: ``ServicePrincipal`` (managed identities too), ``User`` or ``Group``.
    """

    principal_id: _UUID = Field(alias="principalId")
    principal_type: PrincipalType = Field(alias="principalType")


class IdentitySettings(_Strict):
    """``sandboxkit:azure-sessions.identity``: a user-assigned identity for the pool.

    Attributes:
        resourceId: ``/subscriptions/.../userAssignedIdentities/<name>``.
        lifecycle: ``None`` (image pull only; session code cannot reach it) or ``Init``
            (init phase only). ``Main`` and ``All`` are refused: session code could mint
            tokens for the identity.
        registryServer: registry host the identity pulls the custom container image from
            (e.g. ``example.azurecr.io``); custom containers only.
            A host name with an optional port, as Container Apps'
            ``registries[].server`` takes it: a URL (``https://...``), a path or an empty
            value is refused, never dropped.
    """

    resource_id: Annotated[str, Field(pattern=_USER_ASSIGNED_IDENTITY)] = Field(alias="resourceId")
    lifecycle: str = DEFAULT_IDENTITY_LIFECYCLE
    registry_server: str | None = Field(None, alias="registryServer")

    @field_validator("registry_server")
    @classmethod
    def _a_registry_host(cls, value: str | None) -> str:
        # Runs only on a value the stack wrote: an empty registryServer is a mistake, not "none".
        if value is None or not _REGISTRY_HOST.match(value):
            hint = (
                f"; drop the scheme: {value.split('://', 1)[1].split('/', 1)[0]}"
                if value is not None and "://" in value
                else ""
            )
            raise ValueError(
                "a registry host name with an optional port, e.g. example.azurecr.io (the "
                "login server Container Apps' registries[].server takes, no scheme or path), "
                f"or leave registryServer out{hint}"
            )
        numeric = numeric_name_refusal(value.partition(":")[0].lower())
        if numeric:
            raise ValueError(numeric)
        return value

    @field_validator("lifecycle")
    @classmethod
    def _not_reachable_from_sessions(cls, value: str) -> str:
        if value not in SAFE_IDENTITY_LIFECYCLES:
            raise ValueError(
                "None or Init; Main and All make the identity reachable from session code "
                f"(source: {IDENTITY_SOURCE})"
            )
        return value


class AzureSessionsSettings(TargetSettings):
    """``sandboxkit:azure-sessions`` settings.

    Attributes:
        subscriptionId: Azure subscription (UUID); required, never the ambient one.
        location: Azure region, e.g. ``westeurope``; required.
        resourceGroupName: resource group for every resource; required.
        createResourceGroup: create it (true) or use an existing one (false); required.
        containerType: ``PythonLTS`` (Microsoft's code interpreter) or ``CustomContainer``.
        image: the session image, an OCI image reference; required with ``CustomContainer``,
            refused otherwise.
        targetPort: port the custom container serves HTTP on (``CustomContainer`` only).
        executors: identities given the Session Executor role on this pool (at least one).
        identity: optional user-assigned identity; see ``IdentitySettings``.
    """

    subscription_id: _UUID = Field(alias="subscriptionId")
    location: Annotated[str, Field(pattern=r"^[a-z0-9]+$")]
    resource_group_name: _RESOURCE_GROUP = Field(alias="resourceGroupName")
    create_resource_group: bool = Field(alias="createResourceGroup")
    container_type: Literal["PythonLTS", "CustomContainer"] = Field(
        "PythonLTS", alias="containerType"
    )
    image: ImageReference | None = None
    target_port: Annotated[int, Field(ge=1, le=65535)] = Field(
        DEFAULT_TARGET_PORT, alias="targetPort"
    )
    # Lists from YAML become tuples (strict mode takes tuples only); items stay strict.
    executors: Annotated[tuple[Executor, ...], Field(strict=False)]
    identity: IdentitySettings | None = None

    @field_validator("executors")
    @classmethod
    def _at_least_one_executor(cls, value: tuple[Executor, ...]) -> tuple[Executor, ...]:
        # Explicit and non-empty: nobody gains access by default, and a pool nobody may call
        # is a misconfiguration rather than a locked door. Checked after the items (not as a
        # min_length, which counts only valid items) so one bad executor is one problem.
        if not value:
            raise ValueError(
                "at least one executor ({principalId: <uuid>, principalType: "
                "ServicePrincipal, User or Group}) given the Session Executor role"
            )
        return value

    @model_validator(mode="after")
    def _image_matches_type(self) -> AzureSessionsSettings:
        custom = self.container_type == "CustomContainer"
        if custom and self.image is None:
            raise FieldError(
                ".image", None, "an image reference with containerType CustomContainer"
            )
        if not custom and self.image is not None:
            raise FieldError(
                ".image", self.image, "no image with containerType PythonLTS (Microsoft's image)"
            )
        server = None if self.identity is None else self.identity.registry_server
        if not custom and server is not None:
            raise FieldError(
                ".identity.registryServer",
                server,
                "no registry server with containerType PythonLTS",
            )
        return self

    @model_validator(mode="after")
    def _identity_outside_a_created_group(self) -> AzureSessionsSettings:
        # A group this stack creates cannot already hold the pool's identity: absent, the pool
        # finds no identity; present, creating the group fails. Azure resource group names
        # are case-insensitive (learn.microsoft.com/azure/azure-resource-manager/management/
        # resource-name-rules#microsoftresources).
        if self.identity is None or not self.create_resource_group:
            return self
        group = identity_resource_group(self.identity.resource_id)
        if group.lower() == self.resource_group_name.lower():
            raise FieldError(
                ".identity.resourceId",
                self.identity.resource_id,
                f"an identity outside resource group {self.resource_group_name} while "
                "createResourceGroup is true (the stack creates that group, so it cannot "
                "already hold the identity); set createResourceGroup: false to deploy into "
                "the existing group that holds it, or use an identity in another group",
            )
        return self


def identity_resource_group(resource_id: str) -> str:
    """The resource group of a user-assigned identity's resource id
    (``/subscriptions/<id>/resourceGroups/<group>/providers/...``)."""
    return resource_id.split("/")[4]


def check_sessions(profile: SandboxProfile, settings: AzureSessionsSettings) -> None:
    """Refuse what a session pool cannot enforce.

    Raises:
        ConfigError: ``allowlist`` egress (the pool has only EgressEnabled/EgressDisabled),
            ``open`` egress (EgressEnabled excludes no non-public address), or a custom
            container size outside the allowed combinations.
    """
    mode = profile.egress.mode
    if mode == "allowlist":
        raise ConfigError(
            Problem(
                "sandboxkit:profile.egress.mode",
                mode,
                f"deny for target {TARGET}: a session pool's egress is one switch "
                "(sessionNetworkConfiguration.status EgressEnabled or EgressDisabled, source: "
                f"{SESSIONS_DOC}) and no Microsoft documentation routes session egress through "
                "the environment's virtual network, so no firewall could enforce host names. "
                "Use egress deny here, or a target with per-host egress: aws-microvm, "
                "gcp-cloudrun, kubernetes with fqdnPolicy cilium, or cloudflare",
            )
        )
    if mode == "open":
        raise ConfigError(
            Problem(
                "sandboxkit:profile.egress.mode",
                mode,
                f"deny for target {TARGET}: open egress admits public addresses only, and a "
                "session pool's EgressEnabled excludes no address (no Microsoft documentation "
                f"lists one it keeps sessions from, the metadata endpoint included; source: "
                f"{SESSIONS_DOC}), so it would be wider than open. Use egress deny here, or "
                "a target whose open mode shuts non-public ranges: aws-microvm, gcp-cloudrun, "
                "kubernetes or gcp-gke",
            )
        )
    if settings.container_type == "CustomContainer":
        problems = check_allocation(profile.limits.vcpu, profile.limits.memory_mib)
        if problems:
            raise ConfigError(*problems)


def sessions_enforcement(
    profile: SandboxProfile, settings: AzureSessionsSettings
) -> dict[str, Enforcement]:
    """Where each profile field is enforced on a session pool."""
    mode = profile.egress.mode
    custom = settings.container_type == "CustomContainer"
    pool = "ContainerAppsSessionPool"
    container = f"{pool} customContainerTemplate.containers[0].resources"
    fixed = "PythonLTS sessions have a size Microsoft fixes; use CustomContainer to set it"
    return {
        "egress.mode": Enforcement(
            "platform",
            f"{pool} sessionNetworkConfiguration.status "
            + ("EgressDisabled" if mode == "deny" else "EgressEnabled"),
        ),
        "limits.vcpu": Enforcement("platform", f"{container}.cpu")
        if custom
        else Enforcement("none", fixed),
        "limits.memoryMiB": Enforcement("platform", f"{container}.memory")
        if custom
        else Enforcement("none", fixed),
        "limits.execTimeoutSeconds": Enforcement(
            "none", "the pool has no per-request timeout; the caller's HTTP client must apply it"
        ),
        "limits.maxLifetimeSeconds": Enforcement(
            "none",
            "a Timed pool has no lifetime cap: a session kept busy lives on (OnContainerExit's "
            "maxAlivePeriodInSeconds caps life but drops the idle cooldown); rotate identifiers "
            "in the caller",
        ),
        "limits.idleTimeoutSeconds": Enforcement(
            "platform",
            f"{pool} dynamicPoolConfiguration.lifecycleConfiguration.cooldownPeriodInSeconds "
            "(lifecycleType Timed)",
        ),
        "pool.ready": Enforcement("platform", f"{pool} scaleConfiguration.readySessionInstances")
        if custom
        else Enforcement("none", "Microsoft keeps the PythonLTS warm pool; it takes no size"),
        "pool.maxConcurrent": Enforcement(
            "platform", f"{pool} scaleConfiguration.maxConcurrentSessions"
        ),
        "audit.logRetentionDays": Enforcement(
            "platform", "operationalinsights Workspace retentionInDays (session console logs)"
        ),
    }


def session_pool_args(
    profile: SandboxProfile, settings: AzureSessionsSettings, context: KitContext
) -> SessionPoolSandboxArgs:
    """Map the profile and ``sandboxkit:azure-sessions`` settings to component inputs."""
    args = SessionPoolSandboxArgs(
        subscription_id=settings.subscription_id,
        location=settings.location,
        resource_group_name=settings.resource_group_name,
        create_resource_group=settings.create_resource_group,
        object_name=context.object_name("sbx-", 27),
        container_type=settings.container_type,
        target_port=settings.target_port,
        vcpu=profile.limits.vcpu,
        memory_mib=profile.limits.memory_mib,
        cooldown_seconds=profile.limits.idle_timeout_seconds,
        max_concurrent=profile.pool.max_concurrent,
        pool_ready=profile.pool.ready,
        egress_enabled=profile.egress.mode == "open",
        log_retention_days=profile.audit.log_retention_days,
        executors=[(e.principal_id, e.principal_type) for e in settings.executors],
        tags=context.labels(),
    )
    if settings.image is not None:
        args["image"] = settings.image
    if settings.identity is not None:
        args["identity_resource_id"] = settings.identity.resource_id
        args["identity_lifecycle"] = settings.identity.lifecycle
        if settings.identity.registry_server is not None:
            args["registry_server"] = settings.identity.registry_server
    return args


class AzureSessionsTarget(TargetSpec[AzureSessionsSettings, SessionPoolSandboxArgs]):
    """The ``azure-sessions`` target."""

    name: ClassVar[str] = TARGET
    sdks: ClassVar[Mapping[str, float]] = {"pulumi_azure_native": 0.15}
    # A session pool's egress is EgressEnabled or EgressDisabled: no allowlist, and open would
    # reach non-public addresses too (``check_sessions``).
    accepts: ClassVar[EgressAcceptance | None] = EgressAcceptance(allowlist=False, open=False)
    settings_model = AzureSessionsSettings
    caps: ClassVar[tuple[Cap, ...]] = (
        COOLDOWN_CAP,
        Cap("pool.maxConcurrent", None, 600, MAX_SESSIONS_SOURCE),
        # Below 30 days is refused rather than raised: a stack asking for 7 days may be
        # honouring a data-minimisation rule, and silently keeping logs longer would break it.
        Cap("audit.logRetentionDays", 30, 730, RETENTION_SOURCE),
    )

    def plan(
        self, profile: SandboxProfile, settings: AzureSessionsSettings, context: KitContext
    ) -> SessionPoolSandboxArgs:
        """The ``SessionPoolSandbox`` inputs (see ``check_sessions``, ``session_pool_args``)."""
        check_sessions(profile, settings)
        return session_pool_args(profile, settings, context)

    def enforcement(
        self,
        profile: SandboxProfile,
        settings: AzureSessionsSettings,
        plan: SessionPoolSandboxArgs | None,
    ) -> dict[str, Enforcement]:
        """See ``sessions_enforcement``."""
        return sessions_enforcement(profile, settings)

    def deployer_policy(
        self,
        context: KitContext,
        settings: AzureSessionsSettings,
        resources: Sequence[ResourceView],
    ) -> DeployerPolicy:
        """The role assignments and resource providers of the rendered resources
        (``azure.deployer``)."""
        identity = settings.identity.resource_id if settings.identity is not None else None
        return azure_policy(
            self.name, settings.subscription_id, settings.resource_group_name, identity, resources
        )

    def component(self, plan: SessionPoolSandboxArgs) -> KitComponent:
        """The ``SessionPoolSandbox`` component in the settings' subscription and location."""
        from sandboxkit.azure.sessions import SessionPoolSandbox

        return SessionPoolSandbox(self.name, plan)


SPEC = AzureSessionsTarget()
