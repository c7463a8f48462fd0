"""``WorkerSandbox``: the sandboxkit Worker script with its Durable Object, container
application, secrets, limits and routes.

Prerequisites: a Workers Paid account (Containers need it), the sandbox image in a registry
Cloudflare pulls from (``wrangler containers push``), and wrangler 4 where ``pulumi up`` runs
(``wrangler_script.wrangler_command``): the script is uploaded by ``wrangler deploy``, which
alone sends the container link and the migrations by tag (``wrangler_script``). See
docs/targets/cloudflare.md.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi

from sandboxkit.boundary import (
    DURABLE_OBJECT_BINDING,
    JWT_SIGNING_KEY_BINDING,
    SANDBOX_ID_KEY_BINDING,
)
from sandboxkit.cloudflare.plan import WorkerSandboxArgs
from sandboxkit.cloudflare.wrangler import script_inputs
from sandboxkit.cloudflare.wrangler_script import WranglerScript

# Where the stack's Cloudflare API token lives (pulumi-cloudflare's provider key, kept so a
# program that adds pulumi-cloudflare resources shares it); handed to wrangler and used by the
# refresh's reads.
API_TOKEN_CONFIG = ("cloudflare", "apiToken")


class WorkerSandbox(pulumi.ComponentResource):
    """The Worker script (Durable Object ``Sandbox`` with its SQLite migration, container
    application, secrets, limits, observability, routes, workers.dev and preview URL switches).

    Children (``<name>`` is the component name): ``<name>-script`` (``WranglerScript``, deployed
    by wrangler). wrangler alone writes the workers.dev and preview URL switches (its config's
    ``workers_dev`` and ``preview_urls``, the script's ``workersDev`` and ``previewUrls``
    inputs, which the policy pack and checkov read): a second writer (pulumi-cloudflare's
    ``WorkersScriptSubdomain``) would undo what the other set on each ``pulumi up``.

    Raises:
        ValueError: for a plain-text binding that collides with a fixed binding name.
        FileNotFoundError: when ``worker_module_path`` does not exist.
    """

    script_name: pulumi.Output[str]
    workers_dev_enabled: pulumi.Output[bool]
    instance_type: pulumi.Output[str]

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
        secrets = {
            JWT_SIGNING_KEY_BINDING: args["token_signing_key"].output(),
            SANDBOX_ID_KEY_BINDING: args["sandbox_id_key"].output(),
        }
        token = pulumi.Config(API_TOKEN_CONFIG[0]).get_secret(API_TOKEN_CONFIG[1])
        script = WranglerScript(
            f"{name}-script", script_inputs(args, content, secrets), token, opts=child
        )
        self.script_name = script.script_name
        self.workers_dev_enabled = script.workers_dev
        self.instance_type = pulumi.Output.from_input(args["instance_type"])
        self.register_outputs(self.outputs())

    def outputs(self) -> dict[str, pulumi.Output[Any]]:
        """Stack outputs: scriptName, workersDevEnabled, instanceType."""
        return {
            "scriptName": self.script_name,
            "workersDevEnabled": self.workers_dev_enabled,
            "instanceType": self.instance_type,
        }
