"""The ``local`` target's component: the egress gateway's policy as a resource.

``sandboxkit run`` needs no cloud: it runs a command from the stack's plan. The component
records what that run will enforce as one resource, ``EgressGatewayPolicy``, so the offline
render, ``--explain-egress`` and the policy gate read the local target like every other one
(``local/egress_reader.py``). On ``pulumi up`` its dynamic provider writes the policy, as
JSON, to the file the stack names (``policyFile``, under the user's state folder), which is
what an operator audits on the host; ``pulumi destroy`` removes it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulumi
import pulumi.dynamic

from sandboxkit.local.plan import LocalPlan

COMPONENT_TYPE = "sandboxkit:index:LocalSandbox"


def policy_inputs(plan: LocalPlan) -> dict[str, Any]:
    """The ``EgressGatewayPolicy`` inputs of ``plan`` (camelCase, JSON values); no
    ``resolver`` when the host's is used."""
    contract = plan["contract"]
    limits = plan["limits"]
    resolver = {} if plan["resolver"] is None else {"resolver": "{}:{}".format(*plan["resolver"])}
    return {
        "mode": contract.mode,
        "allow": [str(rule) for rule in contract.rules],
        **resolver,
        "proxyPort": plan["proxy_port"],
        "limits": {
            "vcpu": limits.vcpu,
            "memoryMiB": limits.memory_mib,
            "maxProcesses": limits.pids,
            "execTimeoutSeconds": limits.timeout_seconds,
            "workdirSizeMiB": limits.workdir_mib,
            "tmpSizeMiB": limits.tmp_mib,
        },
        "auditLog": plan["audit_log"],
        "retentionDays": plan["retention_days"],
        # What the command's environment holds, judged by SBX-SEC-001/002 as every target's is.
        "environment": dict(plan["environment"]),
        "labels": dict(plan["labels"]),
    }


def _policy_file(props: Mapping[str, Any]) -> Path:
    return Path(str(props["policyFile"])).expanduser()


class EgressGatewayPolicyProvider(pulumi.dynamic.ResourceProvider):
    """Writes the policy file on create and update, removes it on delete."""

    def _write(self, props: Mapping[str, Any]) -> None:
        path = _policy_file(props)
        path.parent.mkdir(parents=True, exist_ok=True)
        document = {k: v for k, v in props.items() if not k.startswith("__")}
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(document, indent=2, sort_keys=True) + "\n")
        os.replace(temporary, path)

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        """Write the file; its path is the id."""
        self._write(props)
        return pulumi.dynamic.CreateResult(str(_policy_file(props)), props)

    def diff(
        self, _id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.DiffResult:
        """Changed inputs update the file; a new ``policyFile`` replaces it."""
        keys = set(olds) | set(news)
        changed = sorted(k for k in keys if not k.startswith("__") and olds.get(k) != news.get(k))
        replaces = ["policyFile"] if "policyFile" in changed else []
        return pulumi.dynamic.DiffResult(
            changes=bool(changed), replaces=replaces, delete_before_replace=True
        )

    def update(
        self, _id: str, _olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        """Rewrite the file."""
        self._write(news)
        return pulumi.dynamic.UpdateResult(news)

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        """Remove the file (already gone is fine)."""
        _policy_file(props).unlink(missing_ok=True)


class EgressGatewayPolicy(pulumi.dynamic.Resource, module="local", name="EgressGatewayPolicy"):
    """The egress gateway's policy of one stack (type token
    ``pulumi-python:dynamic/local:EgressGatewayPolicy``); inputs from ``policy_inputs`` plus
    ``policyFile``."""

    def __init__(
        self, name: str, props: Mapping[str, Any], opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(EgressGatewayPolicyProvider(), name, dict(props), opts)


class LocalSandbox(pulumi.ComponentResource):
    """The ``local`` target's component (``sandboxkit:index:LocalSandbox``).

    Children: ``<name>-egress-policy`` (``EgressGatewayPolicy``).
    Outputs: ``policyFile`` (where ``pulumi up`` writes the policy), ``auditLog``.
    """

    def __init__(self, name: str, plan: LocalPlan) -> None:
        super().__init__(COMPONENT_TYPE, name, None, None)
        self._plan = plan
        self.policy_file = str(Path(plan["audit_log"]).with_name("local-egress-policy.json"))
        self.policy = EgressGatewayPolicy(
            f"{name}-egress-policy",
            {**policy_inputs(plan), "policyFile": self.policy_file},
            pulumi.ResourceOptions(parent=self),
        )
        self.register_outputs({})

    def outputs(self) -> Mapping[str, Any]:
        """``policyFile`` and ``auditLog``, as the plan writes them (``~`` unexpanded)."""
        return {"policyFile": self.policy_file, "auditLog": self._plan["audit_log"]}
