"""What a target's policy handlers are made of, and the input walkers their checks use.

The rule catalogue (``sandboxkit.policy_rules``) owns each policy's id, name, severity,
description, config schema and levels; the targets own the checks. A target declares them beside
its spec, in ``<folder>/guard.py``, as a module-level ``HANDLERS`` tuple of ``Handler`` and
``StackHandler`` records, each naming the catalogue rule it checks and what it covers; the
pack's policy for a rule runs every handler declared for it
(``sandboxkit.kit_guard.declared_handlers``).

This module imports neither pulumi-policy nor a cloud SDK: the kit and its tests read handlers
without the pack. Inputs reach a check as pulumi-policy proxies (``Mapping``/``Sequence``, never
``dict``/``list``), in the engine's wire form (camelCase keys), so every walker here tests against
the abstract types.

Unknown inputs. During ``pulumi preview`` an input computed from another resource's output is
unknown: pulumi's wire protocol sends a sentinel string in its place, and pulumi-policy 1.21's
proxy (``pulumi_policy.proxy``) raises ``UnknownValueError`` when a policy reads it; its
servicer then drops the whole policy for the resource and reports one *advisory* "can't run
policy ... during preview" diagnostic, whatever the policy's level, so a mandatory finding on
the known parts disappears with it. The pack therefore hands checks ``inputs(...)`` instead:
the same values, where reading an unknown raises this module's ``UnknownInputError`` (the offline
render's stand-in for a secret, ``sandboxkit.secrets.UNKNOWN_SECRET``, counts as unknown too:
the gate cannot read it either). The pack reports an ``UnknownInputError`` that escapes a check as a
"cannot verify" violation at the policy's own level (mandatory in prod), naming the resource
and the input path; ``judge_each`` lets a check judge the known elements of a list (egress
rules, peers) before it does, and ``walk_strings`` skips unknowns.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sandboxkit.boundary import LAUNCHER_MARKERS, TARGET_LABEL
from sandboxkit.effective_egress import ResourceView
from sandboxkit.policy_rules import PolicyRule, Scope
from sandboxkit.secrets import UNKNOWN_SECRET
from sandboxkit.targets import TARGET_MODULES, plain_number
from sandboxkit.type_tokens import TypeToken


class CheckContext(Protocol):
    """What a check reads besides the inputs (the pack's ``Context`` provides it).

    Attributes:
        name: the resource's logical name (empty for a stack check).
        urn: the resource's URN (empty for a stack check).
        resource_type: the resource's type token (empty for a stack check).
        target: the kit target that created the resource (its ``sandboxkit-target`` label), or
            ``None`` for a resource the kit did not label.
    """

    name: str
    urn: str
    resource_type: str

    @property
    def target(self) -> str | None:
        """The ``sandboxkit-target`` label of the resource, or ``None``."""

    def setting(self, key: str) -> Any:
        """The policy's threshold ``key`` from the pack config, else its schema default.

        Raises:
            KeyError: when the policy's config schema has no property ``key``.
        """
        ...


class StackResource(Protocol):
    """One resource of the stack as a stack check sees it: pulumi-policy's ``PolicyResource``
    in the pack, ``render.RenderedStackResource`` for the offline render."""

    @property
    def resource_type(self) -> str:
        """The type token."""
        ...

    @property
    def props(self) -> Mapping[str, Any]:
        """The inputs (camelCase keys)."""
        ...

    @property
    def urn(self) -> str:
        """The resource's URN."""
        ...

    @property
    def name(self) -> str:
        """The logical name."""
        ...

    @property
    def parent(self) -> StackResource | None:
        """The resource's parent (a component), ``None`` at the top of the stack."""
        ...


# --- Unknown inputs -----------------------------------------------------------------------------

# The sentinels pulumi's wire protocol puts where a preview does not know a value, one per
# kind (bool, number, string, array, asset, archive, object): pulumi/pulumi
# sdk/go/common/resource/plugin/rpc.go and pulumi-policy 1.21 ``proxy.py`` (``UNKNOWN_*``).
UNKNOWN_SENTINELS = frozenset(
    {
        "1c4a061d-8072-4f0a-a4cb-0ff528b18fe7",
        "3eeb2bf0-c639-47a8-9e75-3b44932eb421",
        "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
        "6a19a0b0-7e62-4c92-b797-7f8e31da9cc2",
        "030794c1-ac77-496b-92df-f27374a8bd58",
        "e48ece36-62e2-4504-bad9-02848725956a",
        "dd056dcd-154b-4c76-9bd3-c8f88648b5ff",
    }
)


def is_unknown(value: Any) -> bool:
    """Whether a raw input value is unknown to the gate: a preview's unknown sentinel, or the
    offline render's stand-in for a secret it cannot decrypt."""
    return isinstance(value, str) and (value in UNKNOWN_SENTINELS or value == UNKNOWN_SECRET)


@dataclass(frozen=True)
class Owner:
    """The resource whose inputs an ``inputs`` view wraps: type token, logical name, URN."""

    resource_type: str
    name: str
    urn: str


class UnknownInputError(Exception):
    """A check read inputs that are unknown, so it cannot give its verdict on them.

    Attributes:
        owner: the resource the inputs belong to.
        paths: dotted input paths (``spec.egress[0].to[0].ipBlock.cidr``), in reading order.
        secret: whether every one is the offline render's stand-in for a secret (else at least
            one is a preview's unknown).
    """

    def __init__(self, owner: Owner, paths: Sequence[str], secret: bool) -> None:
        super().__init__(f"{owner.name}: {', '.join(paths)} unknown")
        self.owner = owner
        self.paths = tuple(paths)
        self.secret = secret

    def joined(self, other: UnknownInputError) -> UnknownInputError:
        """One exception naming both's paths (``other`` from the same resource)."""
        paths = tuple(dict.fromkeys((*self.paths, *other.paths)))
        return UnknownInputError(self.owner, paths, self.secret and other.secret)


# What an egress reader raises on resources it cannot read: ``ValueError`` when it refuses
# them (a domain list holding "*", a firewall rule it does not model, a text that is no
# address), the others on an input of the wrong shape (a missing priority, a text where a list
# belongs). A check that meets one reports it (``unreadable_egress``), never passes the target.
EGRESS_READ_FAILURES: tuple[type[Exception], ...] = (
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
    IndexError,
)


def unreadable_egress(policy_id: str, subject: str, failure: Exception) -> str:
    """The finding of policy ``policy_id`` when ``subject``'s (a target's) egress reader raised
    ``failure`` (one of ``EGRESS_READ_FAILURES``): what sandbox code may reach is unknown, so
    the check cannot pass it. The text names the reader's refusal and the fix: plain config when
    the reader met the offline render's stand-in for a secret, else the component unchanged."""
    refusal = (
        str(failure)
        if isinstance(failure, ValueError)
        else (f"{type(failure).__name__}: {failure}")
    )
    if UNKNOWN_SECRET in refusal:
        fix = (
            "the reader met a Pulumi secret the offline render cannot read: give that input "
            "as plain config (it is not a credential)"
        )
    else:
        fix = (
            "deploy the target's component unchanged (SBX-NET-001 and SBX-NET-002 name inputs "
            "that widen egress)"
        )
    return (
        f"Cannot verify {policy_id} on {subject}: its egress reader cannot read what the "
        f"resources grant ({refusal}), so what sandbox code may reach is unknown; {fix}."
    )


def refuse_unknown(ctx: CheckContext, path: str, value: Any) -> None:
    """Raise ``UnknownInputError`` for ``ctx``'s resource when ``value``, read from inside an
    input (a JSON policy document's ``Resource``), is unknown to the gate (``is_unknown``).

    Raises:
        UnknownInputError: naming ``path`` (``policy.Statement[0].Resource``).
    """
    _known(value, Owner(ctx.resource_type, ctx.name, ctx.urn), path)


def _child_path(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _view(value: Any, owner: Owner, path: str) -> Any:
    if isinstance(value, Mapping):
        return _Inputs(value, owner, path)
    if isinstance(value, Sequence) and not isinstance(value, str):
        return _InputList(value, owner, path)
    return value


def _known(value: Any, owner: Owner, path: str) -> None:
    if is_unknown(value):
        raise UnknownInputError(owner, [path], value == UNKNOWN_SECRET)


def _read(value: Any, owner: Owner, path: str) -> Any:
    _known(value, owner, path)
    return _view(value, owner, path)


class _Inputs(Mapping[str, Any]):
    """A mapping of inputs; reading an unknown value raises ``UnknownInputError``."""

    def __init__(self, raw: Mapping[str, Any], owner: Owner, path: str) -> None:
        self._raw, self._owner, self._path = raw, owner, path

    def __getitem__(self, key: str) -> Any:
        return _read(self._raw[key], self._owner, _child_path(self._path, key))

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __contains__(self, key: object) -> bool:
        return key in self._raw


class _InputList(Sequence[Any]):
    """A list of inputs; reading an unknown element raises ``UnknownInputError``."""

    def __init__(self, raw: Sequence[Any], owner: Owner, path: str) -> None:
        self._raw, self._owner, self._path = raw, owner, path

    def __getitem__(self, index: Any) -> Any:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self._raw))[index]]
        position = index if index >= 0 else len(self._raw) + index
        return _read(self._raw[index], self._owner, _child_path(self._path, position))

    def __len__(self) -> int:
        return len(self._raw)


def inputs(raw: Mapping[str, Any], owner: Owner) -> Mapping[str, Any]:
    """``raw`` inputs (plain values, unknowns as their sentinels) as checks read them: reading
    an unknown value raises ``UnknownInputError`` naming ``owner`` and the value's path."""
    return _Inputs(raw, owner, "")


def judge_each(elements: Any, judge: Callable[[int, Any], Iterable[str]]) -> Iterator[str]:
    """``judge(index, element)``'s sentences for every element of a sequence input, each
    element judged on its own: the findings on known elements all come first, then one
    ``UnknownInputError`` naming every unknown the other elements read (the pack reports it as
    "cannot verify"). A non-sequence gives nothing.

    Raises:
        UnknownInputError: when judging any element read an unknown (after the other findings).
    """
    if not isinstance(elements, Sequence) or isinstance(elements, str):
        return
    unknown: UnknownInputError | None = None
    for index in range(len(elements)):
        try:
            yield from judge(index, elements[index])
        except UnknownInputError as found:
            unknown = found if unknown is None else unknown.joined(found)
    if unknown is not None:
        raise unknown


Check = Callable[[Mapping[str, Any], CheckContext], Iterable[str]]
StackCheck = Callable[[Sequence[StackResource], CheckContext], Iterable[tuple[str, str | None]]]


def _refuse_scope(rule: PolicyRule, scope: Scope, record: str) -> None:
    if not isinstance(rule, PolicyRule):
        raise TypeError(
            f"{record} names {rule!r}: name the catalogue's rule object "
            "(sandboxkit.policy_rules), not its id"
        )
    if rule.scope is not scope:
        raise ValueError(
            f"{record} for {rule.id}, a {rule.scope} policy: its check would never run; "
            f"declare a {'Handler' if rule.scope is Scope.RESOURCE else 'StackHandler'}"
        )


@dataclass(frozen=True)
class Handler:
    """One check a target contributes to one resource policy of the pack.

    Attributes:
        rule: the catalogue's rule (``sandboxkit.policy_rules``, a resource policy); the check
            runs with its severity, enforcement level and config.
        types: the resource types the check reads, from the target's ``type_tokens.py``
            (``TypeToken.matches``: any API version of each), or ``type_tokens.EVERY_TYPE``.
        check: ``(props, ctx) -> sentences``: one full sentence per violation, saying what is
            wrong and the fix; nothing for a resource that complies.
        covers: what the check reads, for people (``"session pools: container CPU and
            memory"``); the pack's description and ``docs/policy-gate.md`` list it.

    Raises:
        TypeError: when ``rule`` is not a catalogue rule (an id as text), or a type is text
            instead of a ``TypeToken``.
        ValueError: when ``rule`` is a stack policy.
    """

    rule: PolicyRule
    types: tuple[TypeToken, ...]
    check: Check
    covers: str

    def __post_init__(self) -> None:
        _refuse_scope(self.rule, Scope.RESOURCE, "Handler")
        for token in self.types:
            if not isinstance(token, TypeToken):
                raise TypeError(
                    f"Handler for {self.rule.id} names type {token!r}: name the target's "
                    "TypeToken (its type_tokens.py), whose match takes in every API version"
                )

    @property
    def policy(self) -> str:
        """The rule's id (``SBX-NET-001``)."""
        return self.rule.id

    def applies_to(self, resource_type: str) -> bool:
        """Whether the check reads resources of ``resource_type``."""
        return any(token.matches(resource_type) for token in self.types)


@dataclass(frozen=True)
class StackHandler:
    """One check a target contributes to one stack policy of the pack.

    Attributes:
        rule: the catalogue's rule (a stack policy).
        check: ``(resources, ctx) -> (sentence, urn or None)`` for each violation, over every
            resource of the stack (whichever target created it).
        covers: what the check reads, for people (``"each SandboxTemplate: a NetworkPolicy
            over its pods"``).

    Raises:
        TypeError: when ``rule`` is not a catalogue rule (an id as text).
        ValueError: when ``rule`` is a resource policy.
    """

    rule: PolicyRule
    check: StackCheck
    covers: str

    def __post_init__(self) -> None:
        _refuse_scope(self.rule, Scope.STACK, "StackHandler")

    @property
    def policy(self) -> str:
        """The rule's id (``SBX-NET-005``)."""
        return self.rule.id


@dataclass(frozen=True)
class SecretSink:
    """Where one resource type stores secrets by design: SBX-SEC-002 (credentials in plain
    inputs) does not read there. A target declares its sinks in its folder's ``guard.py``
    (``SECRET_SINKS``).

    Attributes:
        type: the resource type (any API version of it).
        inputs: top-level inputs that are secret stores (a Kubernetes Secret's ``data``).
        holds: for an input that mixes secrets and plain values, ``(props, path) -> bool``:
            whether the string at ``path`` (``bindings[0].text``) is one the resource stores
            as a secret; ``None`` when ``inputs`` say it all.
    """

    type: TypeToken
    inputs: tuple[str, ...] = ()
    holds: Callable[[Mapping[str, Any], str], bool] | None = None

    def stores(self, props: Mapping[str, Any], path: str) -> bool:
        """Whether the string at input ``path`` (``data.token``, ``bindings[1].text``) is in
        this sink."""
        if re.split(r"[.\[]", path, maxsplit=1)[0] in self.inputs:
            return True
        return self.holds is not None and self.holds(props, path)


def of_kind(resources: Sequence[StackResource], *tokens: TypeToken) -> list[StackResource]:
    """The resources of one of ``tokens`` (``TypeToken.matches``: any API version), in stack
    order."""
    return [r for r in resources if any(t.matches(r.resource_type) for t in tokens)]


# The type of the stack's own resource, the root of every parent chain when the engine hands
# it to a stack policy.
STACK_TYPE = "pulumi:pulumi:Stack"


def owner_of(resource: StackResource) -> str:
    """Who owns a resource of the stack: the name of its top-level ancestor below the stack's
    own resource (``STACK_TYPE``). That is the target whose component created it
    (``sandboxkit.program`` names each target's component after the target), or for what the
    project's program created outside every component, that resource's own top ancestor.

    The one rule of ownership by parents: the gate's stack checks ask it of pulumi-policy's
    resources, the render (``RenderedStack.target_of``, the checkov export, explain-egress)
    of ``render.RenderedStackResource``. The per-resource checks, which see no parent, read
    the kit's label instead (``labelled_target``).
    """
    while resource.parent is not None and resource.parent.resource_type != STACK_TYPE:
        resource = resource.parent
    return resource.name


def target_views(resources: Sequence[StackResource], target: str) -> list[ResourceView]:
    """The resources ``target``'s egress reader reads (the ``resource_views`` of those
    resources), what ``preview --explain-egress`` reads: those ``target``'s component created
    and those the project's program created outside every target's component, which may
    change any target's path; none when the stack holds no component of ``target``."""
    owners = [owner_of(r) for r in resources]
    if target not in owners:
        return []
    return resource_views(
        [
            r
            for r, owner in zip(resources, owners, strict=True)
            if owner == target or owner not in TARGET_MODULES
        ]
    )


def resource_views(resources: Sequence[StackResource], prefix: str = "") -> list[ResourceView]:
    """The stack's resources whose type starts with ``prefix``, as the egress readers read them
    (``sandboxkit.effective_egress.ResourceView``), in stack order.

    An asset or archive (function code) stays as opaque text naming its kind
    (``[FileArchive]``), so its resource is still read: no reader judges the code, and a
    resource left out would hide what its other inputs grant. Secrets the offline render cannot
    read stay opaque text too (no reader judges a secret's value).

    Raises:
        UnknownInputError: when a resource holds an input unknown during preview: the readers
            read whole resources.
    """
    views = []
    for resource in resources:
        if not resource.resource_type.startswith(prefix):
            continue
        props = _with_opaque_secrets(resource.props)
        views.append(ResourceView.of(resource.resource_type, resource.name, props))
    return views


def _with_opaque_secrets(value: Any) -> Any:
    """``value`` as plain dicts and lists, secrets the gate cannot read kept as their stand-in
    text and assets or archives as ``[<kind>]``; an input unknown during preview still raises
    ``UnknownInputError``."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if not isinstance(value, Mapping | Sequence):
        return f"[{type(value).__name__}]"
    keys: Iterable[Any] = list(value) if isinstance(value, Mapping) else range(len(value))
    plain: dict[Any, Any] = {}
    for key in keys:
        try:
            plain[key] = _with_opaque_secrets(value[key])
        except UnknownInputError as unknown:
            if not unknown.secret:
                raise
            plain[key] = UNKNOWN_SECRET
    return plain if isinstance(value, Mapping) else list(plain.values())


# Thresholds and inputs arrive as protobuf doubles (1000 as 1000.0): print them as the kit does.
number = plain_number


def numbers(values: Iterable[Any]) -> str:
    """Numbers as a comma-separated list for a message (``443, 80, 53``)."""
    return ", ".join(number(v) for v in values)


def dig(value: Any, path: str, default: Any = None) -> Any:
    """The value at a dotted path of mappings (``spec.podTemplate.spec``), else ``default``."""
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return default
        value = value[part]
    return value


def items(value: Any) -> list[Any]:
    """A sequence input as a list (strings and absent values give ``[]``)."""
    if isinstance(value, Sequence) and not isinstance(value, str):
        return list(value)
    return []


def labels_of(props: Mapping[str, Any]) -> Mapping[str, Any]:
    """The kit's labels/tags of a resource, wherever its provider keeps them."""
    for path in ("metadata.labels", "tags", "labels"):
        found = dig(props, path)
        if isinstance(found, Mapping):
            return found
    return {}


def labelled_target(props: Mapping[str, Any]) -> str | None:
    """The kit target that created the resource, from its labels (``TARGET_LABEL``): what a
    per-resource check, which sees no parent, knows of ownership (``owner_of`` otherwise);
    ``None`` for a resource without the label."""
    value = labels_of(props).get(TARGET_LABEL)
    return value if isinstance(value, str) else None


def walk_strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every known string in a nested input as ``(dotted path, text)``; unknown values are
    skipped (a value computed from another resource, or a secret, is not text the stack
    wrote)."""
    if isinstance(value, str):
        yield path, value
        return
    if isinstance(value, Mapping):
        keys: Iterable[Any] = list(value)
    elif isinstance(value, Sequence):
        keys = range(len(value))
    else:
        return
    for key in keys:
        try:
            child = value[key]
        except UnknownInputError:
            continue
        yield from walk_strings(child, _child_path(path, key))


def sandbox_pod_spec(props: Mapping[str, Any]) -> Mapping[str, Any]:
    """The pod spec of a SandboxTemplate or Sandbox (``spec.podTemplate.spec``)."""
    found = dig(props, "spec.podTemplate.spec", {})
    return found if isinstance(found, Mapping) else {}


def containers_of(pod_spec: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """Containers and init containers of a pod spec."""
    return [
        c
        for c in items(pod_spec.get("containers")) + items(pod_spec.get("initContainers"))
        if isinstance(c, Mapping)
    ]


def launcher_env(props: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The environment of a MicroVM launcher function, or ``None`` for any other function."""
    variables = dig(props, "environment.variables", {}) or {}
    if isinstance(variables, Mapping) and all(k in variables for k in LAUNCHER_MARKERS):
        return variables
    return None


def plain_binding_entries(props: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """A Worker's ``plain_text`` binding entries (``{type, name, text}``), in order."""
    return [
        b
        for b in items(props.get("bindings"))
        if isinstance(b, Mapping) and b.get("type") == "plain_text"
    ]


def plain_bindings(props: Mapping[str, Any]) -> dict[str, Any]:
    """A Worker's ``plain_text`` bindings as name -> text (the kit's runtime settings)."""
    return {str(b.get("name")): b.get("text") for b in plain_binding_entries(props)}
