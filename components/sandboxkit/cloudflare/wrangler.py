"""The wrangler config for the part pulumi-cloudflare 6 cannot create: the container application.

pulumi-cloudflare 6.23 has no Containers resource (its only container input is
``WorkerVersion.containers[].class_name``, which attaches an existing application). The config
below carries the container (image, instance type, max instances) together with everything
wrangler would otherwise reset on ``wrangler deploy``: the same script name, module, Durable
Object binding and migration, plain-text bindings, observability and workers.dev switch as
the Pulumi ``WorkersScript``. Secrets are absent on purpose: wrangler keeps the secret
bindings Pulumi set.
"""

from __future__ import annotations

from typing import Any

from sandboxkit.boundary import DURABLE_OBJECT_BINDING, DURABLE_OBJECT_CLASS
from sandboxkit.cloudflare.plan import (
    COMPATIBILITY_FLAGS,
    HEAD_SAMPLING_RATE,
    MIGRATION_TAG,
    WorkerSandboxArgs,
)


def wrangler_config(
    plan: WorkerSandboxArgs, image: str, max_instances: int, main: str
) -> dict[str, Any]:
    """The wrangler config (JSON shape of ``wrangler.jsonc``) for one stack.

    Built from the same plan as the Pulumi ``WorkersScript``, so the two cannot disagree.

    Args:
        plan: the ``WorkerSandbox`` inputs the ``cloudflare`` spec planned.
        image: the container image (``sandboxkit:cloudflare.image``).
        max_instances: containers at most (``pool.maxConcurrent``).
        main: path of the Worker module relative to the config file's folder.

    Returns:
        A JSON-serialisable mapping; ``containers[0].instance_type`` is the plan's (the
        smallest named instance type covering ``limits.vcpu`` and ``limits.memoryMiB``).
    """
    return {
        "name": plan["script_name"],
        "account_id": plan["account_id"],
        "main": main,
        "compatibility_date": plan["compatibility_date"],
        "compatibility_flags": list(COMPATIBILITY_FLAGS),
        "workers_dev": plan["workers_dev"],
        "preview_urls": False,
        "observability": {
            "enabled": True,
            "head_sampling_rate": HEAD_SAMPLING_RATE,
            "logs": {
                "enabled": True,
                "invocation_logs": True,
                "head_sampling_rate": HEAD_SAMPLING_RATE,
            },
        },
        "durable_objects": {
            "bindings": [{"name": DURABLE_OBJECT_BINDING, "class_name": DURABLE_OBJECT_CLASS}]
        },
        "migrations": [{"tag": MIGRATION_TAG, "new_sqlite_classes": [DURABLE_OBJECT_CLASS]}],
        "containers": [
            {
                "class_name": DURABLE_OBJECT_CLASS,
                "image": image,
                "instance_type": plan["instance_type"],
                "max_instances": max_instances,
            }
        ],
        "vars": dict(plan["plain_vars"]),
    }
