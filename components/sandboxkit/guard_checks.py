"""Violation sentences that several targets' policy handlers share, one section per policy.

What a policy says about more than one target's resources (a port beyond the allowed ones, an
allowlist entry that is not a specific public host, ...) is written once here, so every target
says it the same way. Each function yields full sentences and reads its policy's thresholds
through ``ctx.setting`` (the keys of that policy's config schema in the sandbox-guard pack).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from sandboxkit import targets
from sandboxkit.addresses import non_public_reach
from sandboxkit.boundary import EVERYWHERE
from sandboxkit.dns_names import channel_refusal
from sandboxkit.egress_contract import parse_rule
from sandboxkit.guard import CheckContext, dig, items, number, numbers
from sandboxkit.policy_rules import ACCEPTED_REFERENCES
from sandboxkit.value_formats import pinned_by_digest

# --- SBX-NET-001: egress ports ------------------------------------------------------------------

# The ports one egress rule admits: (first, last), None for every port, or a port name (a
# named port, whose number the policy cannot know).
PortSpan = tuple[int, int] | str | None


def _beyond(spans: Sequence[PortSpan], ctx: CheckContext) -> list[str]:
    """The spans that reach a port outside the policy's ``allowedPorts``, as words."""
    allowed = {int(p) for p in ctx.setting("allowedPorts")}
    found = []
    for span in spans:
        if span is None:
            found.append("every port")
        elif isinstance(span, str):
            found.append(f"named port {span}")
        elif any(port not in allowed for port in range(span[0], span[1] + 1)):
            first, last = span
            found.append(f"port {first}" if first == last else f"ports {first}-{last}")
    return found


def ports_problem(what: str, spans: Sequence[PortSpan], ctx: CheckContext) -> Iterator[str]:
    """One sentence when egress rule ``what`` (e.g. ``Security group sg egress rule 0``)
    admits ``spans`` beyond SBX-NET-001's ``allowedPorts``; nothing when every span is allowed."""
    beyond = _beyond(spans, ctx)
    if any(span is None or span == (0, 65535) for span in spans):
        # No allowedPorts entry admits every port: the cause is the mode, not a missing port.
        yield (
            f"{what} admits egress on every port, which the kit renders for "
            "sandboxkit:profile.egress.mode open only; set sandboxkit:profile.egress.mode to "
            "deny or allowlist, or restore the kit's rule with its ports (sbx-net-001's "
            "allowedPorts lists single ports, never every port)."
        )
    elif beyond:
        # aws-microvm opens its control-plane hosts' ports too (controlPlaneHosts).
        hosts = (
            " and sandboxkit:aws-microvm.controlPlaneHosts" if ctx.target == "aws-microvm" else ""
        )
        yield (
            f"{what} admits egress on {', '.join(beyond)}, beyond ports "
            f"{numbers(ctx.setting('allowedPorts'))}; allow only hosts on those ports in "
            f"sandboxkit:profile.egress.allow{hosts}, or add the port to sbx-net-001's "
            "allowedPorts in the pack config."
        )


# --- SBX-NET-002: allowlist entries -------------------------------------------------------------


def network_of(cidr: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    """The network of a CIDR or address text, or ``None`` if it is neither."""
    try:
        return ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return None


def non_public_overlap(cidr: str, excepted: Iterable[str] = ()) -> list[str]:
    """Non-public ranges that ``cidr`` reaches and ``excepted`` does not take out, each as
    ``block (registry name)``: the egress contract's judgement (``sandboxkit.addresses``)."""
    network = network_of(cidr)
    if network is None:
        return []
    holes = [n for n in map(network_of, excepted) if n is not None]
    parts = non_public_reach(network, holes)
    return list(dict.fromkeys(f"{part.row.network} ({part.row.name})" for part in parts))


def _entry_problem(entry: str) -> str | None:
    try:
        parse_rule(entry)
    except ValueError as exc:
        return str(exc)
    return None


def entries_problems(kind: str, name: str, entries: Sequence[str]) -> Iterator[str]:
    """A sentence for each allowlist entry (``host[:port]``, ``*.domain``) of ``kind`` ``name``
    that the kit's own allowlist model (``sandboxkit.egress_contract.parse_rule``) refuses."""
    for entry in entries:
        problem = _entry_problem(entry)
        if problem:
            yield (
                f"{kind} {name} allows '{entry}': {problem}. Replace it with the exact "
                "public hosts sandboxes need."
            )


def cidr_problems(kind: str, name: str, cidr: str, excepted: Sequence[str]) -> Iterator[str]:
    """One sentence when ``cidr`` (less the ``excepted`` ranges) reaches a non-public range, or
    is the single address of a listed DNS resolver or platform endpoint
    (``sandboxkit.dns_names.channel_refusal``); destinations that mean everywhere are left to
    SBX-NET-001."""
    if cidr in EVERYWHERE:
        return  # SBX-NET-001 judges destinations that mean everything.
    network = network_of(cidr)
    channel = (
        channel_refusal(network.network_address.compressed)
        if network is not None and network.num_addresses == 1
        else None
    )
    if channel:
        yield (
            f"{kind} {name} allows {cidr}: {channel}. Replace it with the exact public hosts "
            "sandboxes need."
        )
        return
    reached = non_public_overlap(cidr, excepted)
    if reached:
        yield (
            f"{kind} {name} allows {cidr}, which reaches non-public range(s) "
            f"{', '.join(reached)}; allow only public host addresses."
        )


# --- SBX-IAM-002: guest-visible identities ------------------------------------------------------


def identity_allowed(ctx: CheckContext) -> bool:
    """Whether the resource is named in SBX-IAM-002's ``allowedGuestIdentities`` (an explicit,
    reviewed override)."""
    return ctx.name in ctx.setting("allowedGuestIdentities")


# --- SBX-K8S-009: what the stack uses but does not create ---------------------------------------


def outside_the_stack(ctx: CheckContext, reference: str, what: str, unseen: str, fix: str) -> str:
    """The "cannot verify" sentence for ``reference``, an object the stack uses but another
    owner created (an existing RuntimeClass or GKE cluster), so no check reads its settings;
    empty when the organisation accepts it on purpose (listed in SBX-K8S-009's
    ``acceptedExternalReferences``).

    Args:
        reference: how the pack config names the object (``RuntimeClass/gvisor``,
            ``projects/<project>/locations/<region>/clusters/<name>``).
        what: the object and what uses it, as words.
        unseen: what the gate would check on it, as words.
        fix: how to let the kit create it instead.
    """
    if reference in ctx.setting(ACCEPTED_REFERENCES):
        return ""
    return (
        f"Cannot verify {what}: it lives outside the stack, so the gate cannot see {unseen}; "
        f"{fix}, or, once you have checked it, accept it on purpose by listing {reference} in "
        f"{ACCEPTED_REFERENCES} of sbx-k8s-009 in the pack config."
    )


# --- SBX-RES-001..003: sizes, times and counts ---------------------------------------------------

_BINARY = {"Ki": 1 / 1024, "Mi": 1, "Gi": 1024, "Ti": 1024 * 1024}
_DECIMAL = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def cpu_of(value: Any) -> float | None:
    """vCPU of a Kubernetes/Cloud Run/Azure CPU value (``500m``, ``2``, ``0.5``)."""
    text = str(value)
    try:
        return float(text[:-1]) / 1000 if text.endswith("m") else float(text)
    except ValueError:
        return None


def mib_of(value: Any) -> float | None:
    """MiB of a memory quantity (``512Mi``, ``2Gi``, ``1G``, ``250Mb``, bytes)."""
    match = re.fullmatch(r"([0-9.]+)\s*([KMGT]i|[kMGT])?[bB]?", str(value).strip())
    if not match:
        return None
    amount, unit = float(match.group(1)), match.group(2)
    if unit in _BINARY:
        return amount * _BINARY[unit]
    return amount * _DECIMAL.get(unit or "", 1) / (1024 * 1024)


def seconds_of(value: Any) -> float | None:
    """The number in a number or a duration text such as ``300s`` (also counts like ``"60"``)."""
    text = str(value).removesuffix("s")
    try:
        return float(text)
    except ValueError:
        return None


def size_problems(kind: str, name: str, cpu: Any, memory: Any, ctx: CheckContext) -> Iterator[str]:
    """SBX-RES-001 on one container's CPU and memory limits (``None`` when unset), against the
    policy's ``maxVcpu`` and ``maxMemoryMiB``."""
    vcpu, mib = cpu_of(cpu) if cpu is not None else None, None
    if memory is not None:
        mib = mib_of(memory)
    if vcpu is None:
        yield f"{kind} {name} sets no CPU limit; set one from sandboxkit:profile.limits.vcpu."
    elif vcpu > ctx.setting("maxVcpu"):
        yield (
            f"{kind} {name} allows {number(vcpu)} vCPU, above the maximum of "
            f"{number(ctx.setting('maxVcpu'))}; lower sandboxkit:profile.limits.vcpu."
        )
    if mib is None:
        yield (
            f"{kind} {name} sets no memory limit; set one from sandboxkit:profile.limits.memoryMiB."
        )
    elif mib > ctx.setting("maxMemoryMiB"):
        yield (
            f"{kind} {name} allows {number(mib)} MiB, above the maximum of "
            f"{number(ctx.setting('maxMemoryMiB'))}; lower sandboxkit:profile.limits.memoryMiB."
        )


def container_size_problems(
    kind: str, containers: Iterable[Any], limits_path: str, ctx: CheckContext
) -> Iterator[str]:
    """SBX-RES-001 on each container's limits, found at the dotted ``limits_path`` of the
    container (``resources.limits`` on Kubernetes and Cloud Run, ``resources`` on a session
    pool), each named ``<resource> container <container name>``."""
    for container in containers:
        limits = dig(container, limits_path, {}) or {}
        label = f"{ctx.name} container {dig(container, 'name')}"
        yield from size_problems(kind, label, limits.get("cpu"), limits.get("memory"), ctx)


def kit_cap(target: str | None, profile_field: str) -> Any:
    """The kit's ``Cap`` for a target's profile field, or ``None`` (unknown target, no cap).

    The checks reuse the kit's own caps (``TargetSpec.caps``, each with its source) rather than
    restating them.
    """
    if target not in targets.TARGET_MODULES:
        return None
    return next((c for c in targets.get_target(target).caps if c.field == profile_field), None)


def time_problems(ctx: CheckContext, label: str, field: str, value: Any, key: str) -> Iterator[str]:
    """SBX-RES-002: violations of ``label``'s ``field`` (seconds) against the policy's
    ``maxLifetimeSeconds`` and the kit's cap for profile field ``limits.<key>`` on the
    resource's target."""
    seconds = seconds_of(value) if value is not None else None
    if seconds is None:
        yield f"{label} has no {field}; set it from sandboxkit:profile.limits.{key}."
        return
    limit = ctx.setting("maxLifetimeSeconds")
    if seconds > limit:
        yield (
            f"{label} sets {field} to {number(seconds)} s, above the maximum of {number(limit)} s; "
            f"lower sandboxkit:profile.limits.{key}."
        )
    cap = kit_cap(ctx.target, f"limits.{key}")
    if cap is not None and not cap.admits(seconds):
        yield (
            f"{label} sets {field} to {number(seconds)} s; target {ctx.target} accepts "
            f"{cap.describe()} (source: {cap.source}). Set sandboxkit:profile.limits.{key} "
            "within it."
        )


def count_problems(label: str, field: str, value: Any, limit: float, key: str) -> Iterator[str]:
    """SBX-RES-003: one sentence when ``label``'s ``field`` (a number of sandboxes) is unset or
    above ``limit`` (the policy's ``maxConcurrentSandboxes`` or ``maxReadySandboxes``)."""
    count = seconds_of(value) if value is not None else None
    if count is None:
        yield f"{label} has no {field}, so the pool is unbounded; set it."
    elif count > limit:
        yield (
            f"{label} sets {field} to {number(count)}, above the maximum of {number(limit)}; lower "
            f"sandboxkit:profile.pool.{key}."
        )


# --- SBX-LOG-001: retention --------------------------------------------------------------------


def retention_problems(
    kind: str, name: str, days: Any, ctx: CheckContext, never_expires: bool
) -> Iterator[str]:
    """SBX-LOG-001 on a log store keeping logs ``days`` days (``None`` or 0 when unset, which
    means forever when ``never_expires``), against the policy's ``minimumRetentionDays``."""
    minimum = ctx.setting("minimumRetentionDays")
    if days is None or days == 0:
        if not never_expires:
            yield (
                f"{kind} {name} sets no retention; set it to at least {number(minimum)} days from "
                "sandboxkit:profile.audit.logRetentionDays."
            )
        return
    if days < minimum:
        yield (
            f"{kind} {name} keeps logs {number(days)} days, fewer than {number(minimum)}; raise "
            "sandboxkit:profile.audit.logRetentionDays."
        )


# --- SBX-SEC-001, SBX-SEC-003: plain secrets and unpinned images --------------------------------


def _secret_named(name: str, ctx: CheckContext) -> bool:
    upper = name.upper()
    if any(upper.endswith(s) for s in ctx.setting("referenceSuffixes")):
        return False
    return any(p in upper for p in ctx.setting("secretNamePatterns"))


# One variable or binding: (its name, the mapping that holds its value, the value's key there).
Variable = tuple[str, Mapping[str, Any], str]


def inline_secrets(
    kind: str, name: str, variables: Iterable[Variable], ctx: CheckContext
) -> Iterator[str]:
    """SBX-SEC-001: a sentence for each variable of ``kind`` ``name`` whose name says it holds
    a secret (the policy's ``secretNamePatterns``, not one of its ``referenceSuffixes``) and
    whose value is written inline rather than an ARN. Only those values are read, so an unknown
    value of any other variable decides nothing."""
    for variable, holder, key in variables:
        if not _secret_named(variable, ctx):
            continue
        value = holder.get(key)
        if value is not None and not (isinstance(value, str) and value.startswith("arn:")):
            yield (
                f"{kind} {name} sets {variable} inline, where anyone who can read the "
                "configuration reads the secret; move it to a secret store and pass a reference."
            )


def listed_variables(entries: Any, value_key: str = "value") -> list[Variable]:
    """``Variable``s of a list of ``{name, value}`` entries (container ``env``)."""
    return [(str(e.get("name")), e, value_key) for e in items(entries) if isinstance(e, Mapping)]


def mapped_variables(variables: Any) -> list[Variable]:
    """``Variable``s of a name -> value mapping (Lambda ``environment.variables``)."""
    return [(str(k), variables, k) for k in variables] if isinstance(variables, Mapping) else []


def unpinned_images(
    kind: str, name: str, images: Sequence[Any], setting: str | None = None
) -> Iterator[str]:
    """SBX-SEC-003: a sentence for each image reference of ``kind`` ``name`` without a
    ``@sha256:<64 hex>`` digest (``sandboxkit.value_formats.pinned_by_digest``), naming
    ``setting`` (``sandboxkit:kubernetes.image``), where the stack wrote the image, when given."""
    where = f" in {setting}" if setting else ""
    # Unknown values (an image from another resource's output) are not strings: not judged.
    for image in images:
        if isinstance(image, str) and not pinned_by_digest(image):
            yield (
                f"{kind} {name} runs image {image} by tag, which can be moved to other "
                f"content; pin it by digest{where} (image@sha256:<64 hex digits>)."
            )


def target_setting(ctx: CheckContext, key: str) -> str | None:
    """``sandboxkit:<target>.<key>`` for a resource a kit target labelled, else ``None``: the
    stack setting a finding on the kit's own resource comes from."""
    return f"sandboxkit:{ctx.target}.{key}" if ctx.target in targets.TARGET_MODULES else None


# --- SBX-SES-001..003: secrets named by fragments -------------------------------------------------


def matching(names: Sequence[str], fragments: Sequence[str]) -> list[str]:
    """The ``names`` that contain one of ``fragments`` (a policy's configured name fragments,
    e.g. ``WEBHOOK_SECRET``), case-insensitively."""
    return [n for n in names if any(p.upper() in n.upper() for p in fragments)]
