"""The sandbox-guard policies: one module per area, ``ALL_POLICIES`` for the pack.

Import as a package (``policies`` beside ``__main__.py``, or under any name through
``importlib``): the modules import each other relatively.
"""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, Policy

from . import iam, k8s, log, net, res, sec, ses
from ._common import ResourceRule, Rule, StackRule

PACK_NAME = "sandbox-guard"
# Every policy is advisory unless the per-environment config (config/<env>.json) raises it.
DEFAULT_ENFORCEMENT = EnforcementLevel.ADVISORY
AREAS = (net, iam, ses, res, log, sec, k8s)
ALL_RULES: list[ResourceRule | StackRule] = [rule for area in AREAS for rule in area.RULES]
ALL_POLICIES: list[Policy] = [rule.policy() for rule in ALL_RULES]
RULES_BY_NAME: dict[str, Rule] = {r.rule.name: r.rule for r in ALL_RULES}

__all__ = ["ALL_POLICIES", "ALL_RULES", "DEFAULT_ENFORCEMENT", "PACK_NAME", "RULES_BY_NAME"]
