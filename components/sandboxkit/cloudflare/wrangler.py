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

import os
from pathlib import Path
from typing import Any

from sandboxkit.cloudflare.plan import HEAD_SAMPLING_RATE, MIGRATION_TAG
from sandboxkit.cloudflare.spec import (
    SPEC,
    WORKER_MODULE,
    CloudflareSettings,
    instance_type_for,
    script_name,
    worker_vars,
)
from sandboxkit.config import load_stack, read_stack_file
from sandboxkit.contract import (
    DURABLE_OBJECT_BINDING,
    DURABLE_OBJECT_CLASS,
)
from sandboxkit.errors import ConfigError, Problem
from sandboxkit.profile import SandboxProfile
from sandboxkit.project import stack_file


def wrangler_config(
    profile: SandboxProfile, settings: CloudflareSettings, stack: str, main: str
) -> dict[str, Any]:
    """The wrangler config (JSON shape of ``wrangler.jsonc``) for one stack.

    Args:
        profile: the validated sandbox profile.
        settings: the validated ``sandboxkit:cloudflare`` settings.
        stack: the stack name (default script name ``sandboxkit-<stack>``).
        main: path of the Worker module relative to the config file's folder.

    Returns:
        A JSON-serialisable mapping; ``containers[0].instance_type`` is the smallest named
        instance type covering ``limits.vcpu`` and ``limits.memoryMiB``, ``max_instances``
        is ``pool.maxConcurrent``.

    Raises:
        ConfigError: for an IP allowlist entry or a profile beyond the largest instance type.
    """
    return {
        "name": script_name(settings, stack),
        "account_id": settings.account_id,
        "main": main,
        "compatibility_date": settings.compatibility_date,
        "workers_dev": settings.workers_dev,
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
                "image": settings.image,
                "instance_type": instance_type_for(
                    profile.limits.vcpu, profile.limits.memory_mib
                ).name,
                "max_instances": profile.pool.max_concurrent,
            }
        ],
        "vars": worker_vars(profile),
    }


def stack_wrangler_config(project_dir: Path, stack: str, out: Path) -> dict[str, Any]:
    """The wrangler config of ``stack``, validated exactly as the Pulumi program validates it.

    Args:
        project_dir: folder with Pulumi.yaml.
        stack: stack name; it must list target ``cloudflare``.
        out: where the config will be written (``.json`` or ``.jsonc``); ``main`` is made
            relative to its folder.

    Raises:
        ConfigError: a missing stack file, bad stack config, a stack without ``cloudflare``,
            or ``out`` not ending in ``.json`` or ``.jsonc``.
    """
    if out.suffix not in (".json", ".jsonc"):
        raise ConfigError(
            Problem("--out", str(out), "a file ending in .jsonc or .json (wrangler reads suffixes)")
        )
    path = stack_file(project_dir, stack)
    if not path.is_file():
        raise ConfigError(Problem("--stack", stack, f"a stack with a file at {path}"))
    spec = load_stack(read_stack_file(path), stack)
    if SPEC.name not in spec.targets:
        raise ConfigError(
            Problem(
                "sandboxkit:targets",
                list(spec.targets),
                f"a list including {SPEC.name} (cloudflare-config writes that target's config)",
            )
        )
    settings = spec.settings[SPEC.name]
    assert isinstance(settings, CloudflareSettings)
    main = os.path.relpath(WORKER_MODULE, out.resolve().parent)
    return wrangler_config(spec.profile, settings, stack, main)
