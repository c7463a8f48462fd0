"""``WorkerSandbox``: the sandboxkit Worker script with its Durable Object, secrets and limits.

Prerequisites: a Workers Paid account (Containers need it). The container application itself
(image, instance type, max instances) is not a pulumi-cloudflare 6 resource: apply the config
``sandboxkit cloudflare-config`` writes with ``npx wrangler deploy --config FILE``. See
docs/targets/cloudflare.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pulumi

# The resource modules themselves, not the package: an offline render then loads these two of
# pulumi-cloudflare's ~1,250 modules (``sdk_parts``).
from pulumi_cloudflare.workers_script import WorkersScript
from pulumi_cloudflare.workers_script_subdomain import WorkersScriptSubdomain

from sandboxkit.boundary import (
    DURABLE_OBJECT_BINDING,
    DURABLE_OBJECT_CLASS,
    JWT_SIGNING_KEY_BINDING,
    SANDBOX_ID_KEY_BINDING,
)
from sandboxkit.cloudflare.plan import (
    COMPATIBILITY_FLAGS,
    HEAD_SAMPLING_RATE,
    MAIN_MODULE,
    MIGRATION_TAG,
    WorkerSandboxArgs,
)

if TYPE_CHECKING:
    from pulumi_cloudflare import (
        WorkersScriptBindingArgsDict,
        WorkersScriptMigrationsArgsDict,
        WorkersScriptObservabilityArgsDict,
    )

CONTAINER_CONFIG_STATUS = (
    "generated, not deployed by Pulumi: write it with `sandboxkit cloudflare-config --stack "
    "<stack> --out wrangler.jsonc` and apply it with `npx wrangler deploy --config wrangler.jsonc`"
)


class WorkerSandbox(pulumi.ComponentResource):
    """The Worker script (Durable Object ``Sandbox`` with its SQLite migration, secrets,
    limits, observability) and its workers.dev switch.

    Children (``<name>`` is the component name): ``<name>-script`` (WorkersScript),
    ``<name>-subdomain`` (WorkersScriptSubdomain, workers.dev and preview URLs).

    Raises:
        ValueError: for a plain-text binding that collides with a fixed binding name.
        FileNotFoundError: when ``worker_module_path`` does not exist.
    """

    script_name: pulumi.Output[str]
    workers_dev_enabled: pulumi.Output[bool]
    instance_type: pulumi.Output[str]
    container_config: pulumi.Output[str]

    def __init__(
        self, name: str, args: WorkerSandboxArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("sandboxkit:index:WorkerSandbox", name, None, opts)
        fixed = {DURABLE_OBJECT_BINDING, JWT_SIGNING_KEY_BINDING, SANDBOX_ID_KEY_BINDING}
        clashes = sorted(fixed & set(args["plain_vars"]))
        if clashes:
            raise ValueError(f"plain_vars {clashes}: names other than {sorted(fixed)}")
        content = Path(args["worker_module_path"]).read_text(encoding="utf-8")
        child = pulumi.ResourceOptions(parent=self)

        plain: list[WorkersScriptBindingArgsDict] = [
            {"name": key, "type": "plain_text", "text": value}
            for key, value in args["plain_vars"].items()
        ]
        bindings: list[WorkersScriptBindingArgsDict] = [
            {
                "name": DURABLE_OBJECT_BINDING,
                "type": "durable_object_namespace",
                "class_name": DURABLE_OBJECT_CLASS,
            },
            {
                "name": JWT_SIGNING_KEY_BINDING,
                "type": "secret_text",
                "text": args["token_signing_key"].output(),
            },
            {
                "name": SANDBOX_ID_KEY_BINDING,
                "type": "secret_text",
                "text": args["sandbox_id_key"].output(),
            },
            *plain,
        ]
        migrations: WorkersScriptMigrationsArgsDict = {
            "new_tag": MIGRATION_TAG,
            "new_sqlite_classes": [DURABLE_OBJECT_CLASS],
        }
        observability: WorkersScriptObservabilityArgsDict = {
            "enabled": True,
            "head_sampling_rate": HEAD_SAMPLING_RATE,
            "logs": {
                "enabled": True,
                "invocation_logs": True,
                "persist": True,
                "head_sampling_rate": HEAD_SAMPLING_RATE,
            },
        }
        script = WorkersScript(
            f"{name}-script",
            account_id=args["account_id"],
            script_name=args["script_name"],
            content=content,
            main_module=MAIN_MODULE,
            compatibility_date=args["compatibility_date"],
            compatibility_flags=list(COMPATIBILITY_FLAGS),
            bindings=bindings,
            migrations=migrations,
            observability=observability,
            opts=child,
        )
        subdomain = WorkersScriptSubdomain(
            f"{name}-subdomain",
            account_id=args["account_id"],
            script_name=script.script_name,
            enabled=args["workers_dev"],
            previews_enabled=False,
            opts=child,
        )
        self.script_name = script.script_name
        self.workers_dev_enabled = subdomain.enabled
        self.instance_type = pulumi.Output.from_input(args["instance_type"])
        self.container_config = pulumi.Output.from_input(CONTAINER_CONFIG_STATUS)
        self.register_outputs(self.outputs())

    def outputs(self) -> dict[str, pulumi.Output[Any]]:
        """Stack outputs: scriptName, workersDevEnabled, instanceType, containerConfig."""
        return {
            "scriptName": self.script_name,
            "workersDevEnabled": self.workers_dev_enabled,
            "instanceType": self.instance_type,
            "containerConfig": self.container_config,
        }
