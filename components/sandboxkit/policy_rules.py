"""The sandbox-guard rule catalogue: every policy of the pack, each stated once, as an object.

A rule (``PolicyRule``) holds what a platform team reads and configures: its id, name,
severity, description, remediation, the JSON schema of its config (each threshold with its
``default``) and its default enforcement level per environment. Everything else reads it from
here:

- the targets' handlers (``sandboxkit.guard.Handler``/``StackHandler``) name the rule object
  they check, never its id as text, and say what they cover;
- the sandbox-guard pack (``policy-packs/sandbox-guard/policies``) builds one CrossGuard policy
  per rule, in catalogue order (``CATALOGUE``);
- ``sandboxkit.docgen`` writes the rule table of ``docs/policy-gate.md`` and the pack's
  per-environment config files from it, and fails its check when they drift.

Core layer: no pulumi-policy import (the pack adapts ``Severity`` and ``Level`` to its enums),
no target, no SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import Any

from sandboxkit.egress_contract import CONTRACT_SCHEMA
from sandboxkit.project import ENVIRONMENTS


class Severity(StrEnum):
    """How much a violation matters (pulumi-policy ``Severity``, SARIF ``security-severity``)."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"
    CRITICAL = "critical"


class Level(StrEnum):
    """A policy's enforcement level (pulumi-policy ``EnforcementLevel``): ``mandatory`` fails
    the run, ``advisory`` reports only, ``disabled`` does not run the policy."""

    ADVISORY = "advisory"
    MANDATORY = "mandatory"
    DISABLED = "disabled"


class Scope(StrEnum):
    """What one run of the policy reads: one resource (``resource``) or the whole stack
    (``stack``: every resource, whichever target created it)."""

    RESOURCE = "resource"
    STACK = "stack"


# SBX-K8S-009's config key: references outside the stack the organisation has checked.
ACCEPTED_REFERENCES = "acceptedExternalReferences"

# The shipped strictness: in prod a weakened hardened default fails the gate unless the
# organisation relaxes that policy by name; in dev and staging every finding is advisory.
DEFAULT_LEVELS: Mapping[str, Level] = MappingProxyType(
    {"dev": Level.ADVISORY, "staging": Level.ADVISORY, "prod": Level.MANDATORY}
)


@dataclass(frozen=True, eq=False)
class PolicyRule:
    """One sandbox-guard policy. Rules compare by identity: each is one object of the
    catalogue, which handlers and the pack hold.

    Attributes:
        id: ``SBX-<AREA>-NNN``; the CrossGuard policy name is the same in lower case.
        name: a short name for people (the SARIF rule's ``shortDescription``).
        severity: how much a violation matters.
        scope: a resource policy or a stack policy.
        description: "Checks that..." / "Prohibits..." (the full description).
        remediation: one sentence that says the fix.
        config_schema: JSON-schema properties of the policy's config, each with a ``default``
            (what ``--policy-pack-config`` may set besides ``enforcementLevel``).
        levels: the default enforcement level per environment (``sandboxkit:environment``:
            ``dev``, ``staging``, ``prod``), written to the pack's ``config/<env>.json``.
    """

    id: str
    name: str
    severity: Severity
    scope: Scope
    description: str
    remediation: str
    config_schema: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    levels: Mapping[str, Level] = field(default_factory=lambda: DEFAULT_LEVELS)

    def __post_init__(self) -> None:
        missing = [key for key, spec in self.config_schema.items() if "default" not in spec]
        if missing or set(self.levels) != set(ENVIRONMENTS):
            raise ValueError(
                f"{self.id}: every config property needs a default (missing: {missing}) and "
                f"a level for each of {', '.join(ENVIRONMENTS)} (got {sorted(self.levels)})"
            )

    @property
    def policy_name(self) -> str:
        """The CrossGuard policy name (``sbx-net-001``), the key of the pack config."""
        return self.id.lower()

    @property
    def area(self) -> str:
        """``net``, ``iam``, ``ses``, ``res``, ``log``, ``sec`` or ``k8s``, from the id."""
        return self.id.split("-")[1].lower()

    def default(self, key: str) -> Any:
        """The schema default of config property ``key``.

        Raises:
            KeyError: when the rule's config schema has no property ``key``.
        """
        return self.config_schema[key]["default"]


# --- NET: where sandbox code may connect ----------------------------------------------------------

EGRESS_CLOSED = PolicyRule(
    id="SBX-NET-001",
    name="Sandbox egress is not open to the internet",
    severity=Severity.CRITICAL,
    scope=Scope.RESOURCE,
    description=(
        "Prohibits sandbox egress paths that reach the whole internet, and egress rules on "
        "ports beyond the allowed ones."
    ),
    remediation=(
        "Set sandboxkit:profile.egress.mode to deny, or to allowlist with the hosts sandboxes need "
        "on the allowed ports, and keep the kit's egress controls in place."
    ),
    config_schema={
        "allowedPorts": {
            "type": "array",
            "items": {
                "type": "integer",
                "minimum": 1,
                "maximum": 65535,
            },
            "uniqueItems": True,
            "default": [443, 80, 53],
            "description": (
                "TCP/UDP ports sandbox egress rules may open: NetworkPolicy, CiliumNetworkPolicy "
                "and FQDNNetworkPolicy egress rules, security group egress rules and firewall "
                "policy allow rules (a connector's security group may open them to any address: "
                "the firewall behind it filters by name)."
            ),
        },
    },
)

ALLOWLIST_SPECIFIC = PolicyRule(
    id="SBX-NET-002",
    name="Allowlist entries are specific public hosts",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Prohibits allowlist entries that cover everything, a whole top-level domain, or a "
        "private, loopback, link-local or metadata address, and firewall pass rules matching "
        "any name, a wildcard's apex or every address."
    ),
    remediation=(
        "List each public host sandboxes need as host[:port] in sandboxkit:profile.egress.allow; "
        "never a wildcard over everything or an internal address."
    ),
)

DEFAULT_DENY = PolicyRule(
    id="SBX-NET-003",
    name="Egress firewalls deny by default",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Checks that egress firewalls drop what no rule allows, and that what enforces egress "
        "(the firewall's rule order and default action, the dataplane, the kit's code) is the "
        "kit's."
    ),
    remediation=(
        "Set sandboxkit:profile.egress.mode to deny or allowlist (open renders no resolved-IP "
        "validation) and keep the kit's firewall defaults: STRICT_ORDER with aws:drop_established, "
        "aws:forward_to_sfe, resolved-IP validation in the kit's FirewallPolicyDocument, ALLOWLIST "
        "domain rule groups, ADVANCED_DATAPATH on GKE, and the kit's Worker module unchanged with "
        "compatibility flag global_fetch_strictly_public."
    ),
)

DNS_FAIL_CLOSED = PolicyRule(
    id="SBX-NET-004",
    name="DNS firewall fails closed",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Checks that the Route 53 Resolver DNS Firewall in front of sandboxes blocks queries when "
        "it cannot evaluate them (firewallFailOpen DISABLED)."
    ),
    remediation="Set firewallFailOpen to DISABLED on the VPC's ResolverFirewallConfig.",
)

EGRESS_ATTACHED = PolicyRule(
    id="SBX-NET-005",
    name="Every sandbox runtime has an egress control attached",
    severity=Severity.CRITICAL,
    scope=Scope.STACK,
    description=(
        "Checks that every sandbox runtime in the stack has its egress controls deployed with it."
    ),
    remediation=(
        "Deploy sandboxes through the kit's target components, which create the egress controls "
        "with the runtime."
    ),
)

NAMES_BY_NAME = PolicyRule(
    id="SBX-NET-006",
    name="Egress names are matched by name, not only by resolved address",
    severity=Severity.HIGH,
    scope=Scope.STACK,
    description=(
        "Prohibits egress that admits a name only by the addresses the name resolves to (Cloud "
        "NGFW FQDN objects, and any target whose egress reader says 'resolved address only'): "
        "every site sharing those addresses passes, and so does plain TCP to them naming no "
        "host (no TLS SNI, no HTTP Host). A target whose reader refuses its resources is "
        "reported as not verifiable."
    ),
    remediation=(
        "Use a target that checks the allowed name itself at L7, or accept matching by resolved "
        "address in the pack config (sbx-net-006 advisory)."
    ),
)

SANDBOX_DNS_FILTERED = PolicyRule(
    id="SBX-NET-007",
    name="Sandbox DNS answers only the names the allowlist lets resolve",
    severity=Severity.HIGH,
    scope=Scope.STACK,
    description=(
        "Prohibits DNS paths that let sandbox pods resolve any name (a DNS tunnel): a Cilium DNS "
        "rule matching every name, sandbox DNS to kube-dns or to every pod, an L4-only rule on "
        "port 53 that voids a Cilium L7 DNS rule, and a kit resolver that forwards every name "
        "upstream."
    ),
    remediation=(
        "Send sandbox DNS only to the kit's resolver, through the Cilium policy's DNS rule listing "
        "the allowlisted names (the kubernetes and gcp-gke targets do)."
    ),
)

MATCHES_CONTRACT = PolicyRule(
    id="SBX-NET-008",
    name="Every target's egress is the stack's egress contract",
    severity=Severity.CRITICAL,
    scope=Scope.STACK,
    description=(
        "Checks, with each target's egress reader over the resources its component created and "
        "those the project's program adds outside every component, that no target grants what "
        "the egress contract cannot express (a wildcard admitting its apex or one label only, a "
        "name on every port, a name matched only as the client claims it) and, for the "
        "contracts in the policy's config (sandboxkit check fills them from the stack's "
        "profile), that every probe derived from the entries (the name, one and two labels "
        "below, the apex, another port, the metadata address and its NAT64 form), each over its "
        "protocol (TLS, or HTTP on port 80, to a name; TCP to an address; and per name entry "
        "plain TCP naming no host, which no name entry admits), is admitted exactly when the "
        "contract admits it. A target the stack lists without a contract in "
        "the config is reported as having none (run sandboxkit pack-config), and a target whose "
        "reader refuses its resources as not verifiable, never skipped. Prohibits control-plane "
        "entries on a resolver port (53, 853: a DNS channel) and, with egress deny, on a port "
        "beyond controlPlanePorts."
    ),
    remediation=(
        "Deploy each target's component unchanged for the stack's profile; sandboxkit preview "
        "--explain-egress shows each target's answer per probe."
    ),
    config_schema={
        "contracts": {
            "type": "object",
            "default": {},
            "additionalProperties": CONTRACT_SCHEMA,
            "description": (
                "Each target's egress contract, by target name: the profile's egress mode and "
                "allow entries, and the target's control-plane entries (host:port). sandboxkit "
                "check sets it from the stack, and sandboxkit pack-config writes it for the Pulumi "
                "CLI; a target without one is a finding (run pack-config), never a pass."
            ),
        },
        "controlPlanePorts": {
            "type": "array",
            "items": {
                "type": "integer",
            },
            "default": [443],
            "description": (
                "Ports a deny stack's control-plane hosts may be reached on: HTTPS, what an agent "
                "platform's API serves. A control-plane entry on another port is reported; one on "
                "a resolver port (53, 853) is reported in every mode."
            ),
        },
    },
)

CONTROL_PLANE_BOUNDED = PolicyRule(
    id="SBX-NET-009",
    name="The cluster's control plane faces a bounded set of networks",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Checks that a GKE cluster's control plane has no public endpoint unless the stack "
        "acknowledges it with a reason (sandboxkit:gcp-gke.publicEndpointReason), that its master "
        "authorized networks number at most GKE's 50 (GKE API v1 "
        "MasterAuthorizedNetworksConfig.cidr_blocks) and that their union, not each entry, holds "
        "at most the configured number of public addresses: splitting a wide block into many "
        "narrow ones passes a per-entry cap."
    ),
    remediation=(
        "Keep sandboxkit:gcp-gke.privateEndpoint true (or give publicEndpointReason) and list only "
        "the few networks that administer the cluster in masterAuthorizedNetworks."
    ),
    config_schema={
        "maxAuthorizedIpv4Addresses": {
            "type": "integer",
            "default": 16777216,
            "description": (
                "Most public IPv4 addresses the union of a cluster's authorized networks may hold: "
                "2^24, one /8, the widest single entry the kit's config takes. Private-use (RFC "
                "1918) blocks are not counted."
            ),
        },
        "minAuthorizedIpv6Prefix": {
            "type": "integer",
            "default": 32,
            "description": (
                "The union of a cluster's IPv6 authorized networks may hold at most as many "
                "addresses as one block of this prefix length (32: a /32, the widest single IPv6 "
                "entry the kit's config takes)."
            ),
        },
    },
)


# --- IAM: what sandbox identities may do, and who may reach sandboxes -----------------------------

LEAST_PRIVILEGE = PolicyRule(
    id="SBX-IAM-001",
    name="No admin, owner, editor or wildcard permissions",
    severity=Severity.CRITICAL,
    scope=Scope.RESOURCE,
    description=(
        "Prohibits admin, owner, editor and wildcard grants to the identities the kit creates."
    ),
    remediation=(
        "Grant only the named actions on the named resources the sandbox launcher needs; never a "
        "wildcard action or an administrator role."
    ),
)

NO_GUEST_IDENTITY = PolicyRule(
    id="SBX-IAM-002",
    name="No guest-visible identity without an explicit override",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Prohibits credentials that sandbox code can read, unless the resource is named in the "
        "policy's allowedGuestIdentities."
    ),
    remediation=(
        "Give sandboxes no identity (no sandboxkit:aws-microvm.executionRolePolicy, no identity "
        "lifecycle Main or All); if one is truly needed, grant it least privilege and name the "
        "resource in the pack config's allowedGuestIdentities."
    ),
    config_schema={
        "allowedGuestIdentities": {
            "type": "array",
            "items": {
                "type": "string",
            },
            "default": [],
            "description": (
                "Logical names of resources allowed to expose an identity to sandbox code (an "
                "explicit, reviewed override)."
            ),
        },
    },
)

NO_PUBLIC_INVOKER = PolicyRule(
    id="SBX-IAM-003",
    name="Cloud Run has no public invoker",
    severity=Severity.CRITICAL,
    scope=Scope.RESOURCE,
    description=(
        "Prohibits allUsers or allAuthenticatedUsers on Cloud Run services and turning off the "
        "invoker IAM check."
    ),
    remediation=(
        "Grant roles/run.invoker to the named caller service account only, and keep "
        "invokerIamDisabled false."
    ),
)

EXECUTOR_NAMED = PolicyRule(
    id="SBX-IAM-004",
    name="Session pools grant the executor role to named principals on the pool only",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Checks that the Azure ContainerApps Session Executor role is assigned to a named "
        "principal and scoped to one session pool, not a resource group or subscription."
    ),
    remediation=(
        "Assign the Session Executor role to the caller's own principal id "
        "(sandboxkit:azure-sessions.executors) with the session pool's resource id as scope."
    ),
)

SOURCE_PINNED = PolicyRule(
    id="SBX-IAM-005",
    name="Service roles are assumable for their own account only",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Checks that every IAM role trust policy letting an AWS service principal assume the role "
        "carries an aws:SourceAccount or aws:SourceArn condition, so the service cannot be made to "
        "assume it on another account's behalf (confused deputy)."
    ),
    remediation=(
        "Add a condition pinning aws:SourceAccount to the role's own account, and aws:SourceArn to "
        "the service's resources where the service documents the key."
    ),
)


# --- SES: sessions belong to the client they were made for ----------------------------------------

SERVER_CHOSEN_IDS = PolicyRule(
    id="SBX-SES-001",
    name="Session identifiers are not client-chosen",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Checks that a Worker routing requests to sandbox Durable Objects holds a secret key to "
        "derive object ids (an HMAC of tenant and session), so a client cannot pick or guess "
        "another tenant's sandbox, and a key to verify client tokens with, so the tenant and "
        "session a request may touch come from verified claims, not its path."
    ),
    remediation=(
        "Bind the kit's session-id key and token signing key as secret_text bindings, derive "
        "Durable Object ids from the first and take tenant and session scope from tokens verified "
        "with the second, never from a raw client-supplied id."
    ),
    config_schema={
        "sessionKeyBindings": {
            "type": "array",
            "items": {
                "type": "string",
            },
            "default": ["SESSION_KEY", "HMAC", "ID_KEY"],
            "description": "Name fragments of the secret binding holding the id key.",
        },
        "credentialKeyBindings": {
            "type": "array",
            "items": {
                "type": "string",
            },
            "default": ["JWT", "SIGNING_KEY"],
            "description": (
                "Name fragments of the secret binding holding the key client tokens are verified "
                "with."
            ),
        },
    },
)

AUTHENTICATED_WORKER = PolicyRule(
    id="SBX-SES-002",
    name="Worker requests are authenticated",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Checks that a sandbox Worker holds the secret it authenticates every request with, and is "
        "not exposed on workers.dev unless the organisation allows it."
    ),
    remediation=(
        "Bind the bearer or JWT key as a secret_text binding and keep the workers.dev subdomain "
        "disabled (sandboxkit:cloudflare.workersDev false)."
    ),
    config_schema={
        "authBindings": {
            "type": "array",
            "items": {
                "type": "string",
            },
            "default": ["AUTH", "TOKEN", "JWT"],
            "description": "Name fragments of the secret binding that authenticates callers.",
        },
        "allowWorkersDev": {
            "type": "boolean",
            "default": False,
            "description": "Allow the workers.dev subdomain for sandbox Workers.",
        },
        "maxTokenLifetimeSeconds": {
            "type": "integer",
            "default": 900,
            "description": (
                "Longest exp - iat a sandbox Worker accepts on a client token "
                "(JWT_MAX_LIFETIME_SECONDS), seconds: 15 minutes, the access-token lifetime "
                "OWASP's JSON Web Token Cheat Sheet gives as its example and the kit's default; a "
                "stolen token opens a tenant's sandboxes until it expires."
            ),
        },
    },
)

SIGNED_WEBHOOKS = PolicyRule(
    id="SBX-SES-003",
    name="Webhooks are signature-checked",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Checks that a sandbox launcher function is given the webhook signing secret it verifies "
        "every webhook with, accepts a signed webhook only within a short replay window, and that "
        "the key it signs worker credentials with is replaced within a bounded age."
    ),
    remediation=(
        "Pass the launcher the webhook secret's reference (a Secrets Manager ARN), keep the kit's "
        "signature check and keep replayWindowSeconds and workerCredentialKeyMaxAgeDays within the "
        "pack's ceilings."
    ),
    config_schema={
        "webhookSecretVariables": {
            "type": "array",
            "items": {
                "type": "string",
            },
            "default": ["WEBHOOK_SECRET"],
            "description": "Name fragments of the launcher variable naming the secret.",
        },
        "maxReplayWindowSeconds": {
            "type": "integer",
            "default": 300,
            "description": (
                "Longest webhook timestamp skew a launcher accepts (REPLAY_WINDOW_SECONDS), "
                "seconds: five minutes, the tolerance of Stripe's (docs.stripe.com/webhooks, "
                "'Prevent replay attacks') and Slack's "
                "(api.slack.com/authentication/verifying-requests-from-slack) signed requests; a "
                "captured webhook can be replayed for that long."
            ),
        },
        "maxCredentialKeyAgeDays": {
            "type": "integer",
            "default": 90,
            "description": (
                "Longest life of the key that signs worker credentials (the "
                "sandboxkit-max-age-days tag of its secret), days: 90, the rotation period of CIS "
                "AWS Foundations Benchmark v3.0.0 control 1.14 for access keys."
            ),
        },
    },
)

LAUNCHER_APART = PolicyRule(
    id="SBX-SES-004",
    name="Sandboxes share neither the launcher's filesystem nor its identity's reach",
    severity=Severity.HIGH,
    scope=Scope.STACK,
    description=(
        "Checks that a Cloud Run sandbox launcher starts sandboxes from a template of a separate "
        "image (a sandbox without one mounts the launcher container's root filesystem at /), that "
        "the launcher is told the template in SANDBOXKIT_SANDBOX_TEMPLATE, and that the launcher's "
        "service account holds no Cloud Logging role on a whole project, folder or organization."
    ),
    remediation=(
        "Set sandboxkit:gcp-cloudrun.sandboxImage (the kit renders the template and tells the "
        "launcher its name) and drop project-wide logging grants to the launcher's account: its "
        "audit record goes to stdout."
    ),
)


# --- RES: every sandbox is bounded in CPU, memory, time and number --------------------------------

SIZE_LIMITS = PolicyRule(
    id="SBX-RES-001",
    name="Every sandbox has CPU and memory limits within bounds",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Checks that every sandbox container sets CPU and memory limits, no larger than the "
        "organisation's maximum per sandbox."
    ),
    remediation=(
        "Set sandboxkit:profile.limits.vcpu and memoryMiB within the pack's maxVcpu and "
        "maxMemoryMiB and keep the kit's container limits."
    ),
    config_schema={
        "maxVcpu": {
            "type": "number",
            "default": 8,
            "description": "vCPU per sandbox.",
        },
        "maxMemoryMiB": {
            "type": "number",
            "default": 32768,
            "description": "MiB per sandbox.",
        },
    },
)

TIME_LIMITS = PolicyRule(
    id="SBX-RES-002",
    name="Every sandbox has lifetime and timeout limits within caps",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Checks that every sandbox has a hard lifetime (and, where the platform has one, an idle "
        "or request timeout) no longer than the organisation's maximum and the target's own cap."
    ),
    remediation=(
        "Set sandboxkit:profile.limits.maxLifetimeSeconds (and idleTimeoutSeconds) within the "
        "pack's maxLifetimeSeconds and the target's cap."
    ),
    config_schema={
        "maxLifetimeSeconds": {
            "type": "integer",
            "default": 28800,
            "description": "Longest a sandbox may live, seconds.",
        },
    },
)

BOUNDED_POOLS = PolicyRule(
    id="SBX-RES-003",
    name="Sandbox pools are bounded",
    severity=Severity.MEDIUM,
    scope=Scope.RESOURCE,
    description=(
        "Checks that the number of sandboxes that can run at once, and the warm pool, have an "
        "upper bound no larger than the organisation's maximum."
    ),
    remediation=(
        "Set sandboxkit:profile.pool.maxConcurrent and ready within the pack's "
        "maxConcurrentSandboxes and maxReadySandboxes."
    ),
    config_schema={
        "maxConcurrentSandboxes": {
            "type": "integer",
            "default": 1000,
            "description": "Most sandboxes at once per pool.",
        },
        "maxReadySandboxes": {
            "type": "integer",
            "default": 100,
            "description": "Most warm sandboxes per pool.",
        },
    },
)

QUOTA_ATTACHED = PolicyRule(
    id="SBX-RES-004",
    name="Every sandbox namespace has a pod quota",
    severity=Severity.MEDIUM,
    scope=Scope.STACK,
    description=(
        "Checks that every namespace holding a SandboxTemplate has a ResourceQuota that bounds its "
        "pods, so claims cannot grow without limit."
    ),
    remediation=(
        "Deploy the kit's ResourceQuota (pods = maxConcurrent + ready) in each sandbox namespace."
    ),
)


# --- LOG: audit and flow logs exist and are kept long enough --------------------------------------

RETENTION = PolicyRule(
    id="SBX-LOG-001",
    name="Audit and flow logs are kept long enough",
    severity=Severity.MEDIUM,
    scope=Scope.RESOURCE,
    description=(
        "Checks that audit, flow and launcher logs are kept for at least the organisation's "
        "minimum retention."
    ),
    remediation=(
        "Set sandboxkit:profile.audit.logRetentionDays to at least the pack's minimumRetentionDays."
    ),
    config_schema={
        "minimumRetentionDays": {
            "type": "integer",
            "default": 30,
            "description": "Fewest days audit and flow logs are kept.",
        },
    },
)

AUDIT_LOGS = PolicyRule(
    id="SBX-LOG-002",
    name="Audit and flow logs exist",
    severity=Severity.MEDIUM,
    scope=Scope.STACK,
    description=(
        "Checks that every sandbox platform in the stack sends its audit and flow logs somewhere."
    ),
    remediation="Deploy sandboxes through the kit's targets, which create the log sinks.",
)


# --- SEC: secrets never travel as plain text; sandbox images are the ones reviewed ----------------

PLAINTEXT_ENV = PolicyRule(
    id="SBX-SEC-001",
    name="No secret in plain environment variables or bindings",
    severity=Severity.CRITICAL,
    scope=Scope.RESOURCE,
    description=(
        "Prohibits environment variables and plain-text bindings whose name says they hold a "
        "secret (token, password, key) and whose value is written inline instead of referencing a "
        "secret store."
    ),
    remediation=(
        "Keep the secret in the platform's secret store (Secrets Manager, Secret Manager, Key "
        "Vault or container-app secret, Kubernetes Secret, Worker secret binding) and pass only a "
        "reference."
    ),
    config_schema={
        "secretNamePatterns": {
            "type": "array",
            "items": {
                "type": "string",
            },
            "default": ["SECRET", "TOKEN", "PASSWORD", "PASSWD", "_KEY", "APIKEY", "CREDENTIAL"],
            "description": "Name fragments that mark a variable as a secret.",
        },
        "referenceSuffixes": {
            "type": "array",
            "items": {
                "type": "string",
            },
            "default": ["_ARN", "_ID", "_NAME", "_REF", "_URI", "_PATH", "_FILE"],
            "description": "Name endings of variables that hold a reference to a secret.",
        },
    },
)

NO_CREDENTIALS = PolicyRule(
    id="SBX-SEC-002",
    name="No credential in any plain input",
    severity=Severity.CRITICAL,
    scope=Scope.RESOURCE,
    description=(
        "Prohibits values shaped like credentials (cloud access keys, private keys, API tokens, "
        "JWTs) in any resource input other than a secret store."
    ),
    remediation=(
        "Remove the credential from the stack config or program, rotate it, and set it with pulumi "
        "config set --secret so it reaches only a secret store."
    ),
)

DIGEST_PINNED = PolicyRule(
    id="SBX-SEC-003",
    name="Sandbox images pinned by digest",
    severity=Severity.MEDIUM,
    scope=Scope.RESOURCE,
    description=(
        "Checks that every image a sandbox runs is pinned by digest (image@sha256:<64 hex>), so "
        "a moved tag cannot change what runs."
    ),
    remediation=(
        "Reference each sandbox image by its digest (image@sha256:<64 hex digits>), as the "
        "registry reports it after the push."
    ),
)

TRUSTED_SOURCES = PolicyRule(
    id="SBX-SEC-004",
    name="Launcher code and base images come from trusted accounts",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Checks that every Lambda layer of a MicroVM launcher (code that runs beside both HMAC "
        "keys) and every MicroVM base image comes from AWS itself or from an account the stack "
        "names as trusted (sandboxkit:aws-microvm.trustedAccounts and assumeRole's account, tagged "
        "sandboxkit-trusted-accounts on the resource)."
    ),
    remediation=(
        "Use layers and base images from your own account or AWS, or list the account that "
        "publishes them in sandboxkit:aws-microvm.trustedAccounts once you trust it."
    ),
)


# --- K8S: sandbox pods are hardened ---------------------------------------------------------------

READ_ONLY_ROOT = PolicyRule(
    id="SBX-K8S-001",
    name="Sandbox containers have a read-only root filesystem",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Checks that every sandbox container mounts its root filesystem read-only, so code cannot "
        "persist changes to the image."
    ),
    remediation=(
        "Set securityContext.readOnlyRootFilesystem: true and give the sandbox an emptyDir for "
        "scratch space."
    ),
)

NO_CAPABILITIES = PolicyRule(
    id="SBX-K8S-002",
    name="Sandbox containers drop all capabilities",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Checks that every sandbox container drops ALL Linux capabilities and adds none back."
    ),
    remediation="Set securityContext.capabilities to drop [ALL] with no add list.",
)

NON_ROOT = PolicyRule(
    id="SBX-K8S-003",
    name="Sandbox containers run unprivileged as non-root",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Checks that sandbox containers run as a non-root user, are not privileged and cannot "
        "escalate privileges."
    ),
    remediation=(
        "Set runAsNonRoot: true with a non-zero runAsUser, privileged: false and "
        "allowPrivilegeEscalation: false."
    ),
)

SANDBOXED_RUNTIME = PolicyRule(
    id="SBX-K8S-004",
    name="Sandbox pods run under a sandboxed runtime",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Checks that sandbox pods name a sandboxed RuntimeClass (gVisor or Kata) and that GKE node "
        "pools for them run gVisor."
    ),
    remediation=(
        "Set runtimeClassName to a gVisor or Kata runtime class "
        "(sandboxkit:kubernetes.runtimeClass) and sandbox_config GVISOR on the node pool."
    ),
    config_schema={
        "allowedRuntimeClasses": {
            "type": "array",
            "items": {
                "type": "string",
            },
            "default": ["gvisor", "kata", "kata-qemu", "kata-clh", "kata-fc"],
            "description": "RuntimeClass names that provide a sandbox.",
        },
    },
)

HOST_ISOLATION = PolicyRule(
    id="SBX-K8S-005",
    name="Sandbox pods share nothing with the host",
    severity=Severity.HIGH,
    scope=Scope.RESOURCE,
    description=(
        "Prohibits host network, PID and IPC namespaces, host ports and hostPath volumes in "
        "sandbox pods."
    ),
    remediation="Set hostNetwork, hostPID and hostIPC to false and use emptyDir volumes only.",
)

SECCOMP = PolicyRule(
    id="SBX-K8S-006",
    name="Sandbox pods use a seccomp profile",
    severity=Severity.MEDIUM,
    scope=Scope.RESOURCE,
    description=(
        "Checks that sandbox pods run with the RuntimeDefault (or a Localhost) seccomp profile."
    ),
    remediation="Set securityContext.seccompProfile.type to RuntimeDefault on the pod.",
)

RESTRICTED_NAMESPACE = PolicyRule(
    id="SBX-K8S-007",
    name="Sandbox namespaces enforce Pod Security restricted",
    severity=Severity.MEDIUM,
    scope=Scope.RESOURCE,
    description=(
        "Checks that namespaces the kit creates enforce the Pod Security Standard restricted, so "
        "no pod there can drop the walls."
    ),
    remediation="Label the namespace pod-security.kubernetes.io/enforce: restricted.",
)

CLAIMS_LOCKED = PolicyRule(
    id="SBX-K8S-008",
    name="Sandbox claims cannot inject environment or volumes",
    severity=Severity.MEDIUM,
    scope=Scope.RESOURCE,
    description=(
        "Checks that SandboxTemplates disallow environment variables and volume claim templates "
        "supplied by claims, so a caller cannot change what a sandbox sees."
    ),
    remediation="Set envVarsInjectionPolicy and volumeClaimTemplatesPolicy to Disallowed.",
)

OUTSIDE_THE_STACK = PolicyRule(
    id="SBX-K8S-009",
    name="What the sandboxes run on but the stack does not create is accepted on purpose",
    severity=Severity.HIGH,
    scope=Scope.STACK,
    description=(
        "Checks that every object the sandboxes depend on but the stack does not create (a "
        "referenced RuntimeClass, whose handler decides the sandbox; an existing GKE cluster, "
        "whose settings decide network policy, private nodes and workload identity; an existing "
        "namespace, whose Pod Security label and other NetworkPolicies decide what its pods may "
        "do) is one the organisation accepts on purpose: the gate cannot see its settings, so it "
        "reports 'cannot verify' for it."
    ),
    remediation=(
        "Let the kit create the object (runtimeClass.create: true, createNamespace: true, no "
        "existingCluster), or check it yourself and list it in acceptedExternalReferences."
    ),
    config_schema={
        ACCEPTED_REFERENCES: {
            "type": "array",
            "items": {
                "type": "string",
                "pattern": (
                    "^((RuntimeClass|Namespace)/[a-z0-9]([-a-z0-9]*[a-z0-9])?|projects/[^/]+/locations/[^/]+/clusters/[^/]+)$"
                ),
            },
            "default": [],
            "description": (
                "Objects outside the stack the organisation has checked and accepts: "
                "RuntimeClass/<name> for a RuntimeClass the kubernetes target references, "
                "Namespace/<name> for an existing namespace sandboxes run in (createNamespace: "
                "false), projects/<project>/locations/<region>/clusters/<name> for a gcp-gke "
                "existingCluster."
            ),
        },
    },
)


CATALOGUE: tuple[PolicyRule, ...] = (
    EGRESS_CLOSED,
    ALLOWLIST_SPECIFIC,
    DEFAULT_DENY,
    DNS_FAIL_CLOSED,
    EGRESS_ATTACHED,
    NAMES_BY_NAME,
    SANDBOX_DNS_FILTERED,
    MATCHES_CONTRACT,
    CONTROL_PLANE_BOUNDED,
    LEAST_PRIVILEGE,
    NO_GUEST_IDENTITY,
    NO_PUBLIC_INVOKER,
    EXECUTOR_NAMED,
    SOURCE_PINNED,
    SERVER_CHOSEN_IDS,
    AUTHENTICATED_WORKER,
    SIGNED_WEBHOOKS,
    LAUNCHER_APART,
    SIZE_LIMITS,
    TIME_LIMITS,
    BOUNDED_POOLS,
    QUOTA_ATTACHED,
    RETENTION,
    AUDIT_LOGS,
    PLAINTEXT_ENV,
    NO_CREDENTIALS,
    DIGEST_PINNED,
    TRUSTED_SOURCES,
    READ_ONLY_ROOT,
    NO_CAPABILITIES,
    NON_ROOT,
    SANDBOXED_RUNTIME,
    HOST_ISOLATION,
    SECCOMP,
    RESTRICTED_NAMESPACE,
    CLAIMS_LOCKED,
    OUTSIDE_THE_STACK,
)


def rule_of(rule_id: str) -> PolicyRule:
    """The catalogue's rule ``rule_id`` (``SBX-NET-001``).

    Raises:
        KeyError: when no rule has that id.
    """
    return _BY_ID[rule_id]


_BY_ID = {rule.id: rule for rule in CATALOGUE}
