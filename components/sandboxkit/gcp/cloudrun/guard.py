"""The sandbox-guard checks of what the gcp-cloudrun target creates: the Cloud Run launcher
service, its invoker grants, the network firewall policy rules that filter its egress, and what
the launcher shares with its sandboxes (its filesystem, its identity's logging grants)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from sandboxkit.boundary import EVERYWHERE
from sandboxkit.gcp import guard as gcp_guard
from sandboxkit.gcp.cloudrun.egress_reader import dns_tunnels, rebinding_holes
from sandboxkit.gcp.cloudrun.plan import TEMPLATE_VARIABLE
from sandboxkit.gcp.type_tokens import (
    FIREWALL_RULE,
    FOLDER_BINDING,
    FOLDER_MEMBER,
    INVOKER_GRANTS,
    ORGANIZATION_BINDING,
    ORGANIZATION_MEMBER,
    PROJECT_BINDING,
    PROJECT_MEMBER,
    SERVICE,
)
from sandboxkit.guard import (
    EGRESS_READ_FAILURES,
    CheckContext,
    Handler,
    StackHandler,
    StackResource,
    dig,
    items,
    of_kind,
    resource_views,
    unreadable_egress,
)
from sandboxkit.guard_checks import (
    PortSpan,
    cidr_problems,
    container_size_problems,
    count_problems,
    entries_problems,
    inline_secrets,
    listed_variables,
    ports_problem,
    target_setting,
    time_problems,
    unpinned_images,
)
from sandboxkit.policy_rules import (
    ALLOWLIST_SPECIFIC,
    BOUNDED_POOLS,
    DIGEST_PINNED,
    EGRESS_ATTACHED,
    EGRESS_CLOSED,
    LAUNCHER_APART,
    LEAST_PRIVILEGE,
    NO_PUBLIC_INVOKER,
    PLAINTEXT_ENV,
    SIZE_LIMITS,
    TIME_LIMITS,
)
from sandboxkit.value_formats import same_image

GCP_PUBLIC_MEMBERS = ("allUsers", "allAuthenticatedUsers")
# Grants on a whole project, folder or organization (type -> what and the input naming it):
# Cloud Logging's write permission (logging.logEntries.create) is granted no lower than these
# (https://cloud.google.com/iam/docs/roles-permissions/logging).
WIDE_GRANTS = {
    PROJECT_MEMBER: ("project", "project"),
    PROJECT_BINDING: ("project", "project"),
    FOLDER_MEMBER: ("folder", "folder"),
    FOLDER_BINDING: ("folder", "folder"),
    ORGANIZATION_MEMBER: ("organization", "orgId"),
    ORGANIZATION_BINDING: ("organization", "orgId"),
}


# --- SBX-NET-001 -------------------------------------------------------------------------------


def _egress(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    egress = dig(props, "template.vpcAccess.egress")
    if dig(props, "template.vpcAccess") is None:
        yield (
            f"Cloud Run service {ctx.name} has no VPC access, so sandboxes launched with "
            "network on egress straight to the internet; set template.vpcAccess with Direct "
            "VPC egress ALL_TRAFFIC into the kit's VPC."
        )
    elif egress != "ALL_TRAFFIC":
        yield (
            f"Cloud Run service {ctx.name} routes only private ranges through the VPC "
            f"(vpcAccess.egress {egress}); set it to ALL_TRAFFIC so the VPC firewall policy "
            "sees every connection."
        )


def _firewall_span(port: Any) -> PortSpan:
    first, _, last = str(port).partition("-")
    if not first.isdigit() or not (last or first).isdigit():
        return str(port)
    return int(first), int(last or first)


def _firewall_spans(match: Any) -> list[PortSpan]:
    """Spans of a firewall match's ``layer4Configs`` (``ports`` such as ``"443"`` or
    ``"8000-8080"``; protocol ``all``, or no ports, admits every port)."""
    spans: list[PortSpan] = []
    for config in [c for c in items(dig(match, "layer4Configs")) if isinstance(c, Mapping)]:
        ports = items(config.get("ports"))
        if str(config.get("ipProtocol", "")).lower() == "all" or not ports:
            spans.append(None)
        else:
            spans.extend(_firewall_span(p) for p in ports)
    return spans or [None]


def _egress_allow(props: Mapping[str, Any]) -> bool:
    return props.get("direction") == "EGRESS" and props.get("action") == "allow"


def _firewall_rule_open(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if not _egress_allow(props):
        return
    wide = [c for c in items(dig(props, "match.destIpRanges")) if c in EVERYWHERE]
    if wide:
        yield (
            f"Firewall policy rule {ctx.name} allows egress to {wide[0]}, the rule "
            "sandboxkit:profile.egress.mode open renders; set sandboxkit:profile.egress.mode to "
            "deny or allowlist, so only the allowlisted FQDNs pass and the deny-all rule takes "
            "the rest."
        )
    else:
        what = f"Firewall policy rule {ctx.name}"
        yield from ports_problem(what, _firewall_spans(props.get("match")), ctx)


# --- SBX-NET-002 -------------------------------------------------------------------------------


def _firewall_rule_entries(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if not _egress_allow(props):
        return
    fqdns = [str(f) for f in items(dig(props, "match.destFqdns"))]
    yield from entries_problems("Firewall policy rule", ctx.name, fqdns)
    for cidr in items(dig(props, "match.destIpRanges")):
        yield from cidr_problems("Firewall policy rule", ctx.name, str(cidr), ())


# --- SBX-NET-005 -------------------------------------------------------------------------------


def _priority(rule: StackResource) -> float | None:
    """A firewall policy rule's priority (0 when unset), ``None`` when it is no number."""
    value = rule.props.get("priority", 0)
    return None if isinstance(value, bool) or not isinstance(value, int | float) else value


def _services_without_deny_all(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    rules = of_kind(resources, FIREWALL_RULE)
    egress_rules = [r for r in rules if r.props.get("direction") == "EGRESS"]
    deny_all = [
        r
        for r in egress_rules
        if r.props.get("action") == "deny"
        and set(items(dig(r.props, "match.destIpRanges"))) & set(EVERYWHERE)
    ]
    allows = [r for r in egress_rules if r.props.get("action") == "allow"]
    unordered = [r.name for r in [*deny_all, *allows] if _priority(r) is None]
    deny_order = [p for r in deny_all if (p := _priority(r)) is not None]
    allow_order = [p for r in allows if (p := _priority(r)) is not None]
    for service in of_kind(resources, SERVICE):
        if unordered:
            yield (
                f"Cannot tell whether the deny-all egress rule for Cloud Run service "
                f"{service.name} comes after every allow rule: the priority of "
                f"{', '.join(unordered)} is not a number; give each rule a numeric priority.",
                service.urn,
            )
        elif not deny_all:
            yield (
                f"Cloud Run service {service.name} has no deny-all egress rule in a network "
                "firewall policy; add one (0.0.0.0/0, action deny) after the allow rules.",
                service.urn,
            )
        elif allow_order and min(deny_order) <= max(allow_order):
            yield (
                f"The deny-all egress rule for Cloud Run service {service.name} is evaluated "
                "before an allow rule; give it a larger priority number than every allow rule.",
                service.urn,
            )


# --- SBX-IAM-003 -------------------------------------------------------------------------------


def _invoker_check_off(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    if props.get("invokerIamDisabled") is True:
        yield (
            f"Cloud Run service {ctx.name} disables the invoker IAM check, so anyone can call "
            "it; set invokerIamDisabled to false."
        )


def _public_member(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    members = [props.get("member"), *items(props.get("members"))]
    public = [m for m in members if m in GCP_PUBLIC_MEMBERS]
    if public:
        yield (
            f"{ctx.name} grants {props.get('role')} to {public[0]}; grant it to the named "
            "caller service account only."
        )


# --- SBX-RES-001..003 --------------------------------------------------------------------------


def _limits(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    containers = items(dig(props, "template.containers"))
    yield from container_size_problems("Cloud Run service", containers, "resources.limits", ctx)


def _timeout(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    # The request timeout bounds each sandbox run the launcher serves (gcp-cloudrun's map).
    timeout = dig(props, "template.timeout")
    label = f"Cloud Run service {ctx.name}"
    yield from time_problems(ctx, label, "template.timeout", timeout, "execTimeoutSeconds")


def _scale(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    yield from count_problems(
        f"Cloud Run service {ctx.name}",
        "template.scaling.maxInstanceCount",
        dig(props, "template.scaling.maxInstanceCount"),
        ctx.setting("maxConcurrentSandboxes"),
        "maxConcurrent",
    )


# --- SBX-SEC-001, SBX-SEC-003 ------------------------------------------------------------------


def _env(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    for container in items(dig(props, "template.containers")):
        variables = listed_variables(dig(container, "envs"))
        yield from inline_secrets("Cloud Run service", ctx.name, variables, ctx)


def _images(props: Mapping[str, Any], ctx: CheckContext) -> Iterator[str]:
    # The launcher container runs sandboxkit:gcp-cloudrun.image; the templates run sandboxImage
    # (the kit's own template) or a templates[] entry's image.
    containers = [dig(entry, "image") for entry in items(dig(props, "template.containers"))]
    templates = [dig(e, "image") for e in items(dig(props, "template.sandboxes.templates"))]
    launcher = target_setting(ctx, "image")
    yield from unpinned_images("Cloud Run service", ctx.name, containers, launcher)
    sandboxes = launcher and f"{launcher.removesuffix('.image')}.sandboxImage or templates[].image"
    yield from unpinned_images("Cloud Run service", ctx.name, templates, sandboxes)


def _dns_doors(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    # Read by the target's egress reader: names resolved past a closed firewall (a DNS
    # tunnel), and allowed names its rules would admit at a non-public address (rebinding).
    services = {s.name: s.urn for s in of_kind(resources, SERVICE)}
    views = resource_views(resources, "gcp:")
    try:
        tunnels, holes = dns_tunnels(views), rebinding_holes(views)
    except EGRESS_READ_FAILURES as failure:
        # What the reader cannot read it cannot clear: each service's sandboxes stay unverified.
        for name, urn in services.items():
            yield unreadable_egress(EGRESS_ATTACHED.id, f"Cloud Run service {name}", failure), urn
        return
    for name in tunnels:
        yield (
            f"Cloud Run service {name} lets its sandboxes resolve every name while their "
            "egress is closed (no Cloud DNS response policy answering '*.' on its network), so "
            "data leaves in DNS queries; deploy the kit's component, which binds one.",
            services.get(name),
        )
    reported: set[tuple[str, str]] = set()
    for hole in holes:
        if (hole.service, hole.name) in reported:
            continue
        reported.add((hole.service, hole.name))
        yield (
            f"Firewall policy rule {hole.rule} admits {hole.name} even when it resolves to "
            f"{hole.address} (Cloud NGFW programs whatever the name resolves to), so its owner "
            f"can point Cloud Run service {hole.service}'s sandboxes at non-public addresses; "
            "deny the non-public ranges at a priority ahead of every allow rule.",
            services.get(hole.service),
        )


# --- SBX-SES-004 -------------------------------------------------------------------------------


def _launchers(
    resources: Sequence[StackResource],
) -> Iterator[tuple[StackResource, list[Mapping[str, Any]]]]:
    """Each Cloud Run service with its ``sandboxLauncher`` containers (services without one
    start no sandboxes)."""
    for service in of_kind(resources, SERVICE):
        containers = items(dig(service.props, "template.containers"))
        launchers = [
            c for c in containers if isinstance(c, Mapping) and c.get("sandboxLauncher") is True
        ]
        if launchers:
            yield service, launchers


def _template_problems(service: StackResource, launchers: list[Mapping[str, Any]]) -> Iterator[str]:
    templates = [
        t
        for t in items(dig(service.props, "template.sandboxes.templates"))
        if isinstance(t, Mapping)
    ]
    if not templates:
        yield (
            f"Cloud Run service {service.name} launches sandboxes without a sandbox template, so "
            "every sandbox mounts the launcher container's root filesystem read-only at / and "
            "its code reads everything the launcher image holds; add template.sandboxes."
            "templates with a separate sandbox image (sandboxkit:gcp-cloudrun.sandboxImage)."
        )
        return
    launcher_images = [str(c.get("image")) for c in launchers if isinstance(c.get("image"), str)]
    for template in templates:
        image = template.get("image")
        # One image by any name: a digest names the content, a host in another case or with
        # its default port the same registry (sandboxkit.value_formats.same_image).
        same = next((i for i in launcher_images if same_image(str(image), i)), None)
        if isinstance(image, str) and same is not None:
            shown = image if image == same else f"{image} (the launcher's {same})"
            yield (
                f"Sandbox template {template.get('name')} of Cloud Run service {service.name} "
                f"runs the launcher's own image {shown}, so its sandboxes read "
                "everything the launcher holds; give it a separate sandbox image."
            )
    names = sorted(str(t.get("name")) for t in templates)
    for launcher in launchers:
        told = [
            e.get("value")
            for e in items(launcher.get("envs"))
            if isinstance(e, Mapping) and e.get("name") == TEMPLATE_VARIABLE
        ]
        if not told or (isinstance(told[0], str) and told[0] not in names):
            yield (
                f"The launcher of Cloud Run service {service.name} is not told which template "
                f"to start sandboxes from ({TEMPLATE_VARIABLE} "
                f"{'is unset' if not told else f'names {told[0]}'}), so it may start them on "
                f"its own filesystem; set {TEMPLATE_VARIABLE} to one of its templates "
                f"({', '.join(names)})."
            )


def _sandboxes_apart(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    # A template-less sandbox "mounts the host container's root file system as read-only at
    # /" (https://cloud.google.com/run/docs/reference/sandbox-cli).
    for service, launchers in _launchers(resources):
        for message in _template_problems(service, launchers):
            yield message, service.urn


def _members(props: Mapping[str, Any]) -> list[Any]:
    return [props.get("member"), *items(props.get("members"))]


def _launcher_log_writers(
    resources: Sequence[StackResource], ctx: CheckContext
) -> Iterator[tuple[str, str | None]]:
    # Unknown emails (an account created in the same update, under preview) match nothing.
    accounts = {
        f"serviceAccount:{dig(service.props, 'template.serviceAccount')}": service.name
        for service, _ in _launchers(resources)
        if isinstance(dig(service.props, "template.serviceAccount"), str)
    }
    for grant in resources:
        scope = [
            (label, grant.props.get(key))
            for token, (label, key) in WIDE_GRANTS.items()
            if token.matches(grant.resource_type)
        ]
        role = str(grant.props.get("role", ""))
        if not scope or not role.startswith("roles/logging."):
            continue
        ((label, where),) = scope
        for member in _members(grant.props):
            if member in accounts:
                yield (
                    f"IAM grant {grant.name} gives {role} on {label} {where} to the account of "
                    f"Cloud Run sandbox launcher {accounts[member]}, so whoever takes over the "
                    f"launcher writes entries into any log of that {label}, under any resource "
                    "(and can forge other services' records); drop the grant and write the "
                    "launcher's audit record to stdout, which Cloud Run sends to Cloud Logging "
                    "without a role.",
                    grant.urn,
                )


SECRET_SINKS = gcp_guard.SECRET_SINKS

HANDLERS = (
    *gcp_guard.HANDLERS,
    Handler(
        EGRESS_CLOSED,
        (SERVICE,),
        _egress,
        "Cloud Run services: vpcAccess.egress ALL_TRAFFIC through the firewall",
    ),
    Handler(
        EGRESS_CLOSED,
        (FIREWALL_RULE,),
        _firewall_rule_open,
        "firewall policy rules: no allow to 0.0.0.0/0, only allowed ports",
    ),
    Handler(
        ALLOWLIST_SPECIFIC,
        (FIREWALL_RULE,),
        _firewall_rule_entries,
        "firewall policy rules: Cloud NGFW FQDNs and ranges are specific public hosts",
    ),
    StackHandler(
        EGRESS_ATTACHED,
        _services_without_deny_all,
        "each Cloud Run sandbox: a deny-all egress rule after every allow rule, non-public ranges "
        "denied ahead of every allowed name",
    ),
    StackHandler(
        EGRESS_ATTACHED,
        _dns_doors,
        "each Cloud Run sandbox network: a Cloud DNS response policy answering every unlisted name",
    ),
    Handler(
        LEAST_PRIVILEGE,
        INVOKER_GRANTS,
        gcp_guard.broad_role,
        "Cloud Run invoker grants: no basic or admin role",
    ),
    Handler(
        NO_PUBLIC_INVOKER,
        (SERVICE,),
        _invoker_check_off,
        "Cloud Run services: invokerIamDisabled off",
    ),
    Handler(
        NO_PUBLIC_INVOKER,
        INVOKER_GRANTS,
        _public_member,
        "Cloud Run invoker grants: no allUsers or allAuthenticatedUsers",
    ),
    Handler(SIZE_LIMITS, (SERVICE,), _limits, "Cloud Run containers: CPU and memory limits"),
    Handler(TIME_LIMITS, (SERVICE,), _timeout, "Cloud Run services: request timeout"),
    Handler(BOUNDED_POOLS, (SERVICE,), _scale, "Cloud Run services: maximum instances"),
    Handler(PLAINTEXT_ENV, (SERVICE,), _env, "Cloud Run containers: plain environment variables"),
    Handler(
        DIGEST_PINNED,
        (SERVICE,),
        _images,
        "Cloud Run containers and sandbox templates: image digests",
    ),
    StackHandler(
        LAUNCHER_APART,
        _sandboxes_apart,
        "each Cloud Run sandbox launcher: sandbox templates, none of its own image",
    ),
    StackHandler(
        LAUNCHER_APART,
        _launcher_log_writers,
        "the launcher's service account: no Cloud Logging role on a project, folder or "
        "organization",
    ),
)
