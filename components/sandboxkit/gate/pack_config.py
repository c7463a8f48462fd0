"""The pack config: which level and properties each policy of the pack runs with.

A pack config file is the JSON object ``pulumi preview --policy-pack-config`` takes; the gate
reads ``config/<environment>.json`` from the pack folder unless given another file. It is
reconciled with what the pack reports (``GetAnalyzerInfo``) the way the Pulumi CLI does before
``Configure``, and each policy's properties are validated against that policy's schema.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jsonschema
from google.protobuf import json_format

from sandboxkit.errors import ConfigError, Problem
from sandboxkit.explain import contracts_config
from sandboxkit.gate.analyzer import ENFORCEMENT_NAMES, ENFORCEMENT_VALUES
from sandboxkit.render import RenderedStack

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
        ConfigError: when the file is missing or not a JSON object.
    """
    try:
        document = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(
            Problem(str(path), "unreadable", f"a JSON object of policy levels ({exc})")
        ) from None
    if not isinstance(document, dict):
        raise ConfigError(Problem(str(path), document, "a JSON object of policy levels"))
    return document


def stack_pack_config(rendered: RenderedStack, path: Path) -> dict[str, Any]:
    """The pack config file at ``path`` for one stack: SBX-NET-008's ``contracts`` property set
    from the rendered stack (``explain.contracts_config``), whatever the file says, and its level
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
        schemas[name] = {"type": "object", **schema}
        defaults = {k: v["default"] for k, v in properties.items() if "default" in v}
        result[name] = (ENFORCEMENT_NAMES[policy.enforcementLevel], defaults)
    problems: list[Problem] = []

    def level_of(key: str, value: Any) -> str | None:
        if value in ENFORCEMENT_VALUES:
            return str(value)
        problems.append(Problem(f"{origin}: {key}", value, "advisory, mandatory or disabled"))
        return None

    if "all" in document:
        level = level_of("all", document["all"])
        if level is not None:
            result = {name: (level, props) for name, (_, props) in result.items()}
    for key, value in document.items():
        if key == "all":
            continue
        if key not in policies:
            problems.append(Problem(f"{origin}: {key}", value, "a policy of the pack or 'all'"))
            continue
        level, props = result[key]
        if isinstance(value, dict):
            overrides = {k: v for k, v in value.items() if k != "enforcementLevel"}
            props = {**props, **overrides}
            if "enforcementLevel" in value:
                level = level_of(key, value["enforcementLevel"]) or level
        else:
            level = level_of(key, value) or level
        try:
            jsonschema.validate(props, schemas[key])
        except jsonschema.ValidationError as exc:
            problems.append(Problem(f"{origin}: {key}", props, exc.message))
        result[key] = (level, props)
    if problems:
        raise ConfigError(*problems)
    return result
