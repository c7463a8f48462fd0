"""The sandbox-guard checks of what the aws-microvm target creates: the launcher function, its
IAM and its logs here, the egress controls in ``egress_guard.py``."""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sandboxkit.aws import egress_guard
from sandboxkit.aws.type_tokens import (
    FIREWALL,
    FIREWALL_LOGGING,
    FUNCTION,
    LOG_GROUP,
    MICROVM_IMAGES,
    POLICY,
    POLICY_ATTACHMENT,
    ROLE,
    ROLE_POLICY,
    SECRET,
    SECRET_VERSION,
)
from sandboxkit.boundary import (
    LAUNCHER_EXEC_TIMEOUT_SECONDS,
    LAUNCHER_EXECUTION_ROLE_ARN,
    LAUNCHER_IDLE_TIMEOUT_SECONDS,
    LAUNCHER_MAX_DURATION_SECONDS,
    LAUNCHER_REPLAY_WINDOW_SECONDS,
    MAX_AGE_TAG,
    TRUSTED_ACCOUNTS_TAG,
)
from sandboxkit.guard import (
    CheckContext,
    Handler,
    SecretSink,
    StackHandler,
    StackResource,
    dig,
    items,
    launcher_env,
    of_kind,
    refuse_unknown,
)
from sandboxkit.guard import (
    number as shown,
)
from sandboxkit.guard_checks import (
    count_problems,
    identity_allowed,
    inline_secrets,
    mapped_variables,
    matching,
    retention_problems,
    seconds_of,
    time_problems,
)
from sandboxkit.policy_rules import (
    AUDIT_LOGS,
    BOUNDED_POOLS,
    LEAST_PRIVILEGE,
    NO_GUEST_IDENTITY,
    PLAINTEXT_ENV,
    RETENTION,
    SIGNED_WEBHOOKS,
    SOURCE_PINNED,
    TIME_LIMITS,
    TRUSTED_SOURCES,
)

# AWS managed policies that amount to administrator rights.
AWS_ADMIN_POLICIES = ("AdministratorAccess", "PowerUserAccess", "IAMFullAccess")


# --- SBX-IAM-001 -------------------------------------------------------------------------------


def _statements(document: Any) -> list[Mapping[str, Any]]:
    if isinstance(document, str):
        try:
            document = json.loads(document)
        except ValueError:
            return []
    if not isinstance(document, Mapping):
        return []
    statements = document.get("Statement", [])
    if isinstance(statements, Mapping):
        return [statements]
    return [s for s in items(statements) if isinstance(s, Mapping)]


def _listed(value: Any) -> list[Any]:
    return [value] if isinstance(value, str) else items(value)


def _wildcard_actions(document: Any) -> list[str]:
    found: list[str] = []
    for statement in _statements(document):
        if statement.get("Effect", "Allow") != "Allow":
            continue
        if "NotAction" in statement:
            found.append("NotAction")
        for action in _listed(statement.get("Action", [])):
            # IAM matches * and ? anywhere: "s3:Get*" and "iam:?ut*" grant families too.
            if "*" in str(action) or "?" in str(action):
                found.append(str(action))
    return found


@functools.cache
def escalation_methods() -> dict[str, frozenset[str]]:
    """Known AWS privilege-escalation methods: name -> the actions (lower case) that together
    let a principal gain more rights (``iam:CreateAccessKey`` alone; ``iam:PassRole`` with
    ``lambda:CreateFunction`` and ``lambda:InvokeFunction``; ...).

    Source: cloudsplaining's ``PRIVILEGE_ESCALATION_METHODS`` (Salesforce, maintained on PyPI):
    Rhino Security Labs' "AWS IAM Privilege Escalation - Methods and Mitigation" plus DataDog's
    pathfinding.cloud paths. Imported on first use (about 0.5 s).
    """
    from cloudsplaining.shared.constants import PRIVILEGE_ESCALATION_METHODS

    return {
        name: frozenset(action.lower() for action in actions)
        for name, actions in PRIVILEGE_ESCALATION_METHODS.items()
    }


def escalations(document: Any, ctx: CheckContext, path: str) -> list[str]:
    """The escalation methods (``escalation_methods``) whose every action the policy document
    at input ``path`` allows on a wide resource (``*`` anywhere, or ``NotResource``), each as
    ``Method (action, ...)``, sorted. Wildcard actions are left to the wildcard check.

    Raises:
        UnknownInputError: when a statement's ``Resource`` is unknown to the gate (a secret the
            offline render cannot read): whether it is wide decides the verdict.
    """
    allowed: set[str] = set()
    for index, statement in enumerate(_statements(document)):
        if statement.get("Effect", "Allow") != "Allow":
            continue
        resources = _listed(statement.get("Resource", []))
        for number, resource in enumerate(resources):
            where = f"{path}.Statement[{index}].Resource"
            refuse_unknown(
                ctx,
                where if isinstance(statement.get("Resource"), str) else f"{where}[{number}]",
                resource,
            )
        if "NotResource" in statement or any("*" in str(r) for r in resources):
            actions = _listed(statement.get("Action", []))
            allowed |= {str(a).lower() for a in actions if not set("*?") & set(str(a))}
    return sorted(
        f"{name} ({', '.join(sorted(actions))})"
        for name, actions in escalation_methods().items()
        if actions <= allowed
    )


# The kit's name for the policy it creates from sandboxkit:aws-microvm.executionRolePolicy
# (``image.execution_role``: the ``execution`` role's ``-execution-policy``).
_EXECUTION_POLICY_SUFFIX = "-execution-policy"


def _escalation_sentence(what: str, methods: list[str], name: str = "") -> str:
    source = (
        " (written in sandboxkit:aws-microvm.executionRolePolicy)"
        if name.endswith(_EXECUTION_POLICY_SUFFIX)
        else ""
    )
    return (
        f"{what} lets its holder escalate privileges on every resource: {'; '.join(methods)}; "
        f"scope these actions to the named resources the role needs, or remove them{source}."
    )


def _policy_document(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    document = props.get("policy")
    wild = _wildcard_actions(document)
    if wild:
        yield (
            f"IAM policy {ctx.name} allows {', '.join(wild)}; list the exact actions the role "
            "needs instead of a wildcard."
        )
    methods = escalations(document, ctx, "policy")
    if methods:
        yield _escalation_sentence(f"IAM policy {ctx.name}", methods, ctx.name)


def _admin_arns(arns: Any) -> list[str]:
    return [str(a) for a in items(arns) if str(a).rsplit("/", 1)[-1] in AWS_ADMIN_POLICIES]


def _attachment(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    for arn in _admin_arns([props.get("policyArn")]):
        yield f"{ctx.name} attaches {arn}; attach a policy with only the actions the role needs."


def _role(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    for arn in _admin_arns(props.get("managedPolicyArns")):
        yield f"Role {ctx.name} carries {arn}; attach a policy with only the actions it needs."
    for index, inline in enumerate(items(props.get("inlinePolicies"))):
        wild = _wildcard_actions(dig(inline, "policy"))
        if wild:
            yield (
                f"Role {ctx.name} has an inline policy allowing {', '.join(wild)}; list the "
                "exact actions instead of a wildcard."
            )
        methods = escalations(dig(inline, "policy"), ctx, f"inlinePolicies[{index}].policy")
        if methods:
            yield _escalation_sentence(f"Role {ctx.name}'s inline policy {index}", methods)


# --- SBX-IAM-002 -------------------------------------------------------------------------------


def _pass_role(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    for statement in _statements(props.get("policy")):
        if "iam:PassRole" in _listed(statement.get("Action", [])) and not identity_allowed(ctx):
            yield (
                f"IAM policy {ctx.name} lets the launcher pass an execution role to MicroVMs, "
                "which the guest can read (the role sandboxkit:aws-microvm.executionRolePolicy "
                "creates); run MicroVMs without one (leave executionRolePolicy out) or name "
                "this resource in sbx-iam-002's allowedGuestIdentities."
            )


def _execution_role(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    variables = launcher_env(props) or {}
    if variables.get(LAUNCHER_EXECUTION_ROLE_ARN) and not identity_allowed(ctx):
        yield (
            f"Launcher function {ctx.name} starts MicroVMs with an execution role, whose "
            "credentials the guest reads through IMDSv2 (sandboxkit:aws-microvm."
            "executionRolePolicy); leave executionRolePolicy out, or name this resource in "
            "sbx-iam-002's allowedGuestIdentities after granting it least privilege."
        )


# --- SBX-IAM-005 -------------------------------------------------------------------------------

# The global condition keys that tie a service's AssumeRole to the account (and resource) it
# acts for (IAM user guide, "The confused deputy problem"; global condition keys
# aws:SourceAccount and aws:SourceArn). Condition keys are case-insensitive.
SOURCE_KEYS = ("aws:sourceaccount", "aws:sourcearn")


def _services(principal: Any) -> list[str]:
    if not isinstance(principal, Mapping):
        return []
    return [str(s) for s in _listed(principal.get("Service", []))]


def _source_keys(condition: Any) -> set[str]:
    if not isinstance(condition, Mapping):
        return set()
    return {
        str(key).lower()
        for operator in condition.values()
        if isinstance(operator, Mapping)
        for key in operator
        if str(key).lower() in SOURCE_KEYS
    }


def _confused_deputy(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    for statement in _statements(props.get("assumeRolePolicy")):
        if statement.get("Effect", "Allow") != "Allow":
            continue
        services = _services(statement.get("Principal"))
        if services and not _source_keys(statement.get("Condition")):
            yield (
                f"Role {ctx.name} lets {', '.join(services)} assume it without an "
                "aws:SourceAccount or aws:SourceArn condition, so the service could be made to "
                "use it on another account's behalf; pin aws:SourceAccount to this account "
                "(and aws:SourceArn where the service documents it) in the trust policy."
            )


# --- SBX-SES-003 -------------------------------------------------------------------------------


def _webhook_secret(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    variables = launcher_env(props)
    if variables is None:
        return
    if not matching(list(variables), ctx.setting("webhookSecretVariables")):
        yield (
            f"Launcher function {ctx.name} is not given a webhook signing secret, so it cannot "
            "verify webhooks; pass the secret's ARN in its environment and verify each "
            "signature."
        )


def _replay_window(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    variables = launcher_env(props)
    if variables is None or variables.get(LAUNCHER_REPLAY_WINDOW_SECONDS) is None:
        return  # the launcher's own default (300 s) applies
    seconds = seconds_of(variables.get(LAUNCHER_REPLAY_WINDOW_SECONDS))
    ceiling = ctx.setting("maxReplayWindowSeconds")
    if seconds is None or seconds > ceiling:
        yield (
            f"Launcher function {ctx.name} accepts webhooks up to "
            f"{variables.get(LAUNCHER_REPLAY_WINDOW_SECONDS)} s old "
            f"({LAUNCHER_REPLAY_WINDOW_SECONDS}), beyond the ceiling of {shown(ceiling)} s, so a "
            "captured webhook can be replayed that long; lower "
            "sandboxkit:aws-microvm.replayWindowSeconds."
        )


def _credential_key_age(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    tags = props.get("tags")
    if not isinstance(tags, Mapping) or MAX_AGE_TAG not in tags:
        return  # not the kit's worker-credential key
    days = seconds_of(tags.get(MAX_AGE_TAG))
    ceiling = ctx.setting("maxCredentialKeyAgeDays")
    if days is None or days > ceiling:
        yield (
            f"Secret {ctx.name} lets the worker-credential signing key live "
            f"{tags.get(MAX_AGE_TAG)} days ({MAX_AGE_TAG}), beyond the ceiling of "
            f"{shown(ceiling)} days; lower sandboxkit:aws-microvm.workerCredentialKeyMaxAgeDays "
            "and replace the key within it."
        )


# --- SBX-SEC-004 -------------------------------------------------------------------------------

# The account field of a MicroVM base image ARN AWS manages (``arn:aws:lambda:<region>:aws:...``).
AWS_OWNED = "aws"


def _trusted(props: Mapping[str, Any]) -> set[str]:
    tags = props.get("tags")
    text = tags.get(TRUSTED_ACCOUNTS_TAG) if isinstance(tags, Mapping) else None
    return {AWS_OWNED, *(text.split("-") if isinstance(text, str) and text else ())}


def _untrusted(what: str, arn: Any, trusted: set[str], setting: str) -> Iterator[str]:
    parts = arn.split(":") if isinstance(arn, str) else []
    account = parts[4] if len(parts) > 4 else ""
    if isinstance(arn, str) and account not in trusted:
        yield (
            f"{what} {arn} from account {account or '(none)'}, which the stack does not "
            f"trust; use one from your own account or AWS in sandboxkit:aws-microvm.{setting}, "
            "or list the account in sandboxkit:aws-microvm.trustedAccounts once you trust it."
        )


def _launcher_layers(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if launcher_env(props) is None:
        return
    trusted = _trusted(props)
    for layer in items(props.get("layers")):
        what = f"Launcher function {ctx.name} runs layer"
        yield from _untrusted(what, layer, trusted, "launcherLayers")


def _base_image(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    # The kit's MicrovmImage holds the service's request under ``image``; the provider's Image
    # takes it at the top.
    arn = dig(props, "image.baseImageArn") or props.get("baseImageArn")
    what = f"MicroVM image {ctx.name} builds on base image"
    yield from _untrusted(what, arn, _trusted(props), "baseImageArn")


# --- SBX-RES-002, SBX-RES-003 ------------------------------------------------------------------


def _launcher_limits(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    variables = launcher_env(props)
    if variables is None:
        return
    label = f"Launcher function {ctx.name}"
    for variable, key in (
        (LAUNCHER_MAX_DURATION_SECONDS, "maxLifetimeSeconds"),
        (LAUNCHER_IDLE_TIMEOUT_SECONDS, "idleTimeoutSeconds"),
        (LAUNCHER_EXEC_TIMEOUT_SECONDS, "execTimeoutSeconds"),
    ):
        yield from time_problems(ctx, label, variable, variables.get(variable), key)


def _launcher_concurrency(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if launcher_env(props) is None:
        return
    yield from count_problems(
        f"Launcher function {ctx.name}",
        "reservedConcurrentExecutions",
        props.get("reservedConcurrentExecutions"),
        ctx.setting("maxConcurrentSandboxes"),
        "maxConcurrent",
    )


# --- SBX-LOG-001 -------------------------------------------------------------------------------


def _log_group(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    # CloudWatch keeps logs forever when retentionInDays is unset or 0.
    yield from retention_problems("Log group", ctx.name, props.get("retentionInDays"), ctx, True)


# --- SBX-LOG-002 -------------------------------------------------------------------------------


def _firewalls_without_logs(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    logged = {
        str(dest.get("logType"))
        for config in of_kind(resources, FIREWALL_LOGGING)
        for dest in items(dig(config.props, "loggingConfiguration.logDestinationConfigs"))
    }
    for firewall in of_kind(resources, FIREWALL):
        missing = sorted({"FLOW", "ALERT"} - logged)
        if missing:
            yield (
                f"Network Firewall {firewall.name} sends no {' or '.join(missing)} logs; add a "
                "LoggingConfiguration with FLOW and ALERT destinations.",
                firewall.urn,
            )


# --- SBX-SEC-001 -------------------------------------------------------------------------------


def _function_env(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    variables = mapped_variables(dig(props, "environment.variables"))
    yield from inline_secrets("Lambda function", ctx.name, variables, ctx)


def _image_env(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    # pulumi-aws's Image at the top level, the kit's MicrovmImage under "image".
    variables = mapped_variables(
        props.get("environmentVariables", dig(props, "image.environmentVariables"))
    )
    yield from inline_secrets("MicroVM image", ctx.name, variables, ctx)


# A secret version holds the secret: SBX-SEC-002 does not read its value.
SECRET_SINKS = (SecretSink(SECRET_VERSION, ("secretString", "secretBinary")),)

HANDLERS = (
    *egress_guard.HANDLERS,
    Handler(
        LEAST_PRIVILEGE,
        (ROLE_POLICY, POLICY),
        _policy_document,
        "IAM policies and role policies: no wildcard action, no privilege escalation",
    ),
    Handler(
        LEAST_PRIVILEGE,
        (POLICY_ATTACHMENT,),
        _attachment,
        "IAM policy attachments: no admin managed policy",
    ),
    Handler(
        LEAST_PRIVILEGE,
        (ROLE,),
        _role,
        "IAM roles: no admin managed policy; inline policies without wildcard actions or "
        "privilege escalation",
    ),
    Handler(
        NO_GUEST_IDENTITY,
        (ROLE_POLICY,),
        _pass_role,
        "IAM role policies: iam:PassRole of an execution role",
    ),
    Handler(
        NO_GUEST_IDENTITY,
        (FUNCTION,),
        _execution_role,
        "the launcher function: MicroVMs started without an execution role (EXECUTION_ROLE_ARN) "
        "unless allowedGuestIdentities names it",
    ),
    Handler(
        SOURCE_PINNED,
        (ROLE,),
        _confused_deputy,
        "IAM role trust policies: aws:SourceAccount or aws:SourceArn on service principals",
    ),
    Handler(
        SIGNED_WEBHOOKS,
        (FUNCTION,),
        _webhook_secret,
        "the launcher function: its webhook signing secret",
    ),
    Handler(
        TIME_LIMITS,
        (FUNCTION,),
        _launcher_limits,
        "the launcher function: timeout and MicroVM lifetime",
    ),
    Handler(
        BOUNDED_POOLS,
        (FUNCTION,),
        _launcher_concurrency,
        "the launcher function: reserved concurrency",
    ),
    Handler(RETENTION, (LOG_GROUP,), _log_group, "CloudWatch log groups: retention"),
    StackHandler(AUDIT_LOGS, _firewalls_without_logs, "each Network Firewall: FLOW and ALERT logs"),
    Handler(
        PLAINTEXT_ENV, (FUNCTION,), _function_env, "Lambda functions: plain environment variables"
    ),
    Handler(
        PLAINTEXT_ENV,
        MICROVM_IMAGES,
        _image_env,
        "MicroVM images: plain environment variables",
    ),
    Handler(
        SIGNED_WEBHOOKS, (FUNCTION,), _replay_window, "the launcher function: its replay window"
    ),
    Handler(
        SIGNED_WEBHOOKS, (SECRET,), _credential_key_age, "the worker credential key secret: its age"
    ),
    Handler(
        TRUSTED_SOURCES,
        (FUNCTION,),
        _launcher_layers,
        "the launcher function: its layers' accounts",
    ),
    Handler(
        TRUSTED_SOURCES,
        MICROVM_IMAGES,
        _base_image,
        "MicroVM images: the base image's account",
    ),
)
