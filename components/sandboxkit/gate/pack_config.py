"""The pack config: which level and properties each policy of the pack runs with.

A pack config file is the JSON object ``pulumi preview --policy-pack-config`` takes; the gate
reads ``config/<environment>.json`` from the pack folder unless given another file. It is
reconciled with what the pack reports (``GetAnalyzerInfo``) the way the Pulumi CLI does before
``Configure``, and each policy's properties are validated against that policy's schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
from google.protobuf import json_format

from sandboxkit.errors import ConfigError, Problem, did_you_mean
from sandboxkit.gate.analyzer import ENFORCEMENT_NAMES, ENFORCEMENT_VALUES
from sandboxkit.render import RenderedStack
from sandboxkit.stackfile import read_json_file
from sandboxkit.targets import plain_number

CONTRACT_POLICY = "sbx-net-008"
"""The stack policy whose ``contracts`` property ``stack_pack_config`` sets from the stack."""


def environment_config_path(pack: Path, environment: str) -> Path:
    """The pack config file of an environment: ``<pack>/config/<environment>.json``."""
    return pack / "config" / f"{environment}.json"


def read_pack_config(path: Path) -> dict[str, Any]:
    """A pack config file (the file ``pulumi preview --policy-pack-config`` takes).

    Returns:
        Its JSON object as written (``policy_config`` checks names, levels and properties).

    Raises:
        ConfigError: when the file is missing, not UTF-8 JSON within ``read_json_file``'s
            bounds, or not a JSON object.
    """
    document = read_json_file(path)
    if not isinstance(document, dict):
        raise ConfigError(Problem(str(path), document, "a JSON object of policy levels"))
    return document


def contracts_config(rendered: RenderedStack) -> dict[str, dict[str, Any]]:
    """SBX-NET-008's ``contracts`` config for a rendered stack: each listed target's egress
    contract (``StackSpec.contract``) in its JSON form (``EgressContract.to_config``), by
    target name in the stack's order."""
    spec = rendered.spec
    return {target: spec.contract(target).to_config() for target in spec.targets}


def stack_pack_config(rendered: RenderedStack, path: Path) -> dict[str, Any]:
    """The pack config file at ``path`` for one stack: SBX-NET-008's ``contracts`` property set
    from the rendered stack (``contracts_config``), whatever the file says, and its level
    kept (a level string becomes ``enforcementLevel``). ``sandboxkit check`` runs the pack with
    it; ``sandboxkit pack-config`` writes it for ``pulumi preview --policy-pack-config``.

    Raises:
        ConfigError: when the file is missing or not a JSON object (``read_pack_config``).
    """
    document = read_pack_config(path)
    entry = document.get(CONTRACT_POLICY, {})
    if isinstance(entry, str):
        entry = {"enforcementLevel": entry}
    if not isinstance(entry, dict):
        return document  # policy_config names the bad entry
    return {**document, CONTRACT_POLICY: {**entry, "contracts": contracts_config(rendered)}}


# Levels by how much they enforce: a config that moves a policy down this order weakens the gate.
_LEVEL_RANK = {"disabled": 0, "advisory": 1, "mandatory": 2, "remediate": 2}


def _strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The policy's schema as the kit validates it: no property the schema does not name (a
    misspelt threshold would otherwise be ignored and its default used), and no negative number
    where the schema sets no minimum (every threshold of the pack is a count, a size or a
    duration)."""
    properties = {
        name: (
            {"minimum": 0, **prop}
            if prop.get("type") in ("integer", "number") and "minimum" not in prop
            else dict(prop)
        )
        for name, prop in schema.get("properties", {}).items()
    }
    return {"type": "object", **schema, "properties": properties, "additionalProperties": False}


def _schema_problems(
    where: str, props: Mapping[str, Any], schema: Mapping[str, Any]
) -> list[Problem]:
    known = list(schema.get("properties", {}))
    problems = []
    for error in jsonschema.Draft7Validator(schema).iter_errors(props):
        if error.validator == "additionalProperties":
            for name in sorted(set(props) - set(known)):
                hint = did_you_mean(name, known)
                problems.append(
                    Problem(
                        f"{where}.{name}",
                        props[name],
                        f"a property of the policy{hint}; known: {', '.join(known) or 'none'}",
                    )
                )
            continue
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        problems.append(Problem(f"{where}{path}", error.instance, _schema_expected(error)))
    return problems


_SCHEMA_TYPES = {
    "integer": "a whole number",
    "number": "a number",
    "string": "text",
    "boolean": "true or false",
    "array": "a list",
    "object": "a mapping",
}


def _schema_expected(error: jsonschema.ValidationError) -> str:
    """What a schema keyword accepts, said as the kit says it (``a number at least 0``), not
    jsonschema's sentence about the value (``-1 is less than the minimum of 0``)."""
    # Bounds arrive as protobuf doubles (1.0): said as written (1).
    value = error.validator_value
    bound = plain_number(value)
    kind = _SCHEMA_TYPES.get(str(error.schema.get("type")), "a number")
    said = {
        "minimum": f"{kind} at least {bound}",
        "maximum": f"{kind} at most {bound}",
        "exclusiveMinimum": f"{kind} greater than {bound}",
        "exclusiveMaximum": f"{kind} less than {bound}",
        "type": " or ".join(_SCHEMA_TYPES.get(str(t), str(t)) for t in _as_list(value)),
        "enum": "one of " + ", ".join(map(str, _as_list(value))),
        "minItems": f"a list of at least {bound} item(s)",
        "maxItems": f"a list of at most {bound} item(s)",
        "minLength": f"text of at least {bound} characters",
        "uniqueItems": "a list that names each item once",
    }
    return said.get(str(error.validator), error.message)


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def lowered_levels(
    info: Any,
    config: Mapping[str, tuple[str, dict[str, Any]]],
    reference: Mapping[str, tuple[str, dict[str, Any]]] | None = None,
) -> tuple[str, ...]:
    """``"SBX-NET-001: mandatory -> advisory"`` for each policy ``config`` runs at a lower level
    than the pack's own or than ``reference`` (the environment's own pack config, when another
    file is given), sorted; the gate prints them, so ``{"all": "advisory"}`` never weakens it
    unseen. A disabled policy is left out: the gate lists those apart (``disabled``)."""
    lowered = []
    for policy in info.policies:
        before = ENFORCEMENT_NAMES[policy.enforcementLevel]
        if reference is not None and _LEVEL_RANK[reference[policy.name][0]] > _LEVEL_RANK[before]:
            before = reference[policy.name][0]
        level = config[policy.name][0]
        if level != "disabled" and _LEVEL_RANK[level] < _LEVEL_RANK[before]:
            lowered.append(f"{policy.name.upper()}: {before} -> {level}")
    return tuple(sorted(lowered))


def policy_config(
    info: Any, document: Mapping[str, Any], origin: str
) -> dict[str, tuple[str, dict[str, Any]]]:
    """Reconcile a pack config file the way the Pulumi CLI does before ``Configure``.

    Each policy starts at the level the pack reports and its schema defaults; ``all`` sets every
    level; a policy's own entry (a level, or an object with ``enforcementLevel`` and properties)
    wins. Properties are validated against the policy's schema.

    Args:
        info: the pack's ``AnalyzerInfo`` (the answer to ``GetAnalyzerInfo``).
        document: the pack config file's JSON object (``read_pack_config``).
        origin: where the document came from, to name in problems (its path).

    Returns:
        policy name -> (level name, properties).

    Raises:
        ConfigError: for an unknown policy name or level, or properties the schema rejects.
    """
    policies = {p.name: p for p in info.policies}
    result: dict[str, tuple[str, dict[str, Any]]] = {}
    schemas: dict[str, dict[str, Any]] = {}
    for name, policy in policies.items():
        schema = json_format.MessageToDict(policy.configSchema)
        properties = schema.get("properties", {})
        schemas[name] = _strict_schema(schema)
        defaults = {k: v["default"] for k, v in properties.items() if "default" in v}
        result[name] = (ENFORCEMENT_NAMES[policy.enforcementLevel], defaults)
    problems: list[Problem] = []

    def level_of(key: str, value: Any) -> str | None:
        if isinstance(value, str) and value in ENFORCEMENT_VALUES and value != "remediate":
            return value
        # remediate is for policies that rewrite resources; the pack's only validate, and the
        # engine would run them as mandatory: the level written would not be the level run.
        why = (
            " (remediate is for policies that fix resources; this pack's only validate, so "
            "write mandatory)"
            if value == "remediate"
            else ""
        )
        problems.append(Problem(f"{origin}: {key}", value, f"advisory, mandatory or disabled{why}"))
        return None

    if "all" in document:
        level = level_of("all", document["all"])
        if level is not None:
            result = {name: (level, props) for name, (_, props) in result.items()}
    for key, value in document.items():
        if key == "all":
            continue
        if key not in policies:
            hint = did_you_mean(key, policies)
            problems.append(
                Problem(f"{origin}: {key}", value, f"a policy of the pack or 'all'{hint}")
            )
            continue
        level, props = result[key]
        if isinstance(value, dict):
            overrides = {k: v for k, v in value.items() if k != "enforcementLevel"}
            props = {**props, **overrides}
            if "enforcementLevel" in value:
                level = level_of(key, value["enforcementLevel"]) or level
        else:
            level = level_of(key, value) or level
        problems += _schema_problems(f"{origin}: {key}", props, schemas[key])
        result[key] = (level, props)
    if problems:
        raise ConfigError(*problems)
    return result
