"""The sandbox-guard policies: one CrossGuard policy per rule of the kit's catalogue.

The rules (id, name, severity, description, remediation, config schema, levels) are
``sandboxkit.policy_rules.CATALOGUE``; their checks are the handlers the kit and every
registered target declare (``sandboxkit.kit_guard.declared_handlers``). This package only
adapts them to pulumi-policy: ``ALL_POLICIES`` for the pack, in catalogue order.

Import as a package (``policies`` beside ``__main__.py``, or under any name through
``importlib``): the modules import each other relatively.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, Policy

from sandboxkit.policy_rules import CATALOGUE, PolicyRule, Scope

from ._common import ResourceRule, StackRule

PACK_NAME = "sandbox-guard"
# Every policy is advisory unless the per-environment config (config/<env>.json) raises it.
DEFAULT_ENFORCEMENT = EnforcementLevel.ADVISORY
ALL_RULES: list[ResourceRule | StackRule] = [
    StackRule(rule) if rule.scope is Scope.STACK else ResourceRule(rule) for rule in CATALOGUE
]
ALL_POLICIES: list[Policy] = [rule.policy() for rule in ALL_RULES]
RULES_BY_NAME: dict[str, PolicyRule] = {rule.policy_name: rule for rule in CATALOGUE}

__all__ = ["ALL_POLICIES", "ALL_RULES", "DEFAULT_ENFORCEMENT", "PACK_NAME", "RULES_BY_NAME"]
