"""The Worker as wrangler deploys it: the ``WranglerScript`` inputs and the wrangler config.

wrangler owns the script upload (``wrangler_script.WranglerScript`` runs ``wrangler deploy``):
pulumi-cloudflare 6.23 has no Containers resource and its ``WorkersScript`` has no
``containers`` argument, so a Pulumi-side upload would drop the container link wrangler sets,
and it sends its one migration without ``old_tag`` on every update, which the API refuses once
the script carries that tag. The inputs below keep the ``WorkersScript`` shape (camelCase
``bindings``, ``content``, ``compatibilityFlags``, ``observability``) that the egress reader and
the policy pack read, plus the container, routes and the migration ledger; ``wrangler_config``
turns them into wrangler's config, which ``sandboxkit cloudflare-config`` also writes for review.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sandboxkit.boundary import DURABLE_OBJECT_BINDING, DURABLE_OBJECT_CLASS
from sandboxkit.cloudflare.plan import (
    COMPATIBILITY_FLAGS,
    HEAD_SAMPLING_RATE,
    MAIN_MODULE,
    MIGRATIONS,
    WorkerSandboxArgs,
)


def script_inputs(
    plan: WorkerSandboxArgs, content: str, secret_texts: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``WranglerScript`` inputs of ``plan`` (camelCase, as the engine records them).

    Args:
        plan: the ``WorkerSandbox`` inputs the ``cloudflare`` spec planned.
        content: the Worker module's text (uploaded as ``MAIN_MODULE``, unbundled).
        secret_texts: secret_text bindings, name -> text (Pulumi secrets in the component;
            empty for a config written for review).

    Returns:
        ``accountId``, ``scriptName``, ``content``, ``mainModule``, ``compatibilityDate``,
        ``compatibilityFlags``, ``bindings`` (durable object namespace, secret_text, then
        plain_text; the ``WorkersScript`` shape), ``migrations`` (``plan.MIGRATIONS``),
        ``observability``, ``workersDev``, ``previewUrls`` (false), ``containers`` (one:
        ``name`` ``<script>-sandbox``, ``className``, ``image``, ``instanceType``,
        ``maxInstances``) and ``routes``.
    """
    bindings: list[dict[str, Any]] = [
        {
            "name": DURABLE_OBJECT_BINDING,
            "type": "durable_object_namespace",
            "className": DURABLE_OBJECT_CLASS,
        },
        *(
            {"name": name, "type": "secret_text", "text": text}
            for name, text in secret_texts.items()
        ),
        *(
            {"name": name, "type": "plain_text", "text": text}
            for name, text in plan["plain_vars"].items()
        ),
    ]
    return {
        "accountId": plan["account_id"],
        "scriptName": plan["script_name"],
        "content": content,
        "mainModule": MAIN_MODULE,
        "compatibilityDate": plan["compatibility_date"],
        "compatibilityFlags": list(COMPATIBILITY_FLAGS),
        "bindings": bindings,
        "migrations": [dict(migration) for migration in MIGRATIONS],
        "observability": {
            "enabled": True,
            "headSamplingRate": HEAD_SAMPLING_RATE,
            "logs": {
                "enabled": True,
                "invocationLogs": True,
                "persist": True,
                "headSamplingRate": HEAD_SAMPLING_RATE,
            },
        },
        "workersDev": plan["workers_dev"],
        "previewUrls": False,
        "containers": [
            {
                # wrangler's own default name, stated: the provider deletes it by this name.
                "name": f"{plan['script_name']}-{DURABLE_OBJECT_CLASS.lower()}",
                "className": DURABLE_OBJECT_CLASS,
                "image": plan["image"],
                "instanceType": plan["instance_type"],
                "maxInstances": plan["max_instances"],
            }
        ],
        "routes": [dict(route) for route in plan["routes"]],
    }


def _snake(key: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in key)


def _snake_keys(value: Mapping[str, Any]) -> dict[str, Any]:
    return {_snake(key): member for key, member in value.items()}


def secret_texts(inputs: Mapping[str, Any]) -> dict[str, str]:
    """The secret_text bindings of ``WranglerScript`` inputs, name -> text (for wrangler's
    ``--secrets-file``, never its config)."""
    return {
        str(b["name"]): str(b["text"]) for b in inputs["bindings"] if b.get("type") == "secret_text"
    }


def wrangler_config(inputs: Mapping[str, Any], main: str) -> dict[str, Any]:
    """The wrangler config (JSON shape of ``wrangler.jsonc``, wrangler 4's ``config-schema.json``)
    of ``WranglerScript`` inputs.

    Secrets are absent: ``wrangler deploy --secrets-file`` uploads them with the version, and
    wrangler keeps secret bindings it is not given (``keep_bindings: secret_text``). ``vars``
    are the plain_text bindings (wrangler deletes other vars on deploy). ``no_bundle``: the
    module is uploaded byte for byte (the egress reader and SBX-NET-003 judge its digest).

    Args:
        inputs: ``script_inputs`` (or a ``WranglerScript``'s recorded inputs).
        main: path of the Worker module relative to the config file's folder.

    Returns:
        A JSON-serialisable mapping; ``routes`` only when the inputs have any (wrangler's
        ``CustomDomainRoute``, ``ZoneNameRoute`` and ``ZoneIdRoute`` shapes).
    """
    bindings = inputs["bindings"]
    observability = inputs["observability"]
    config: dict[str, Any] = {
        "name": inputs["scriptName"],
        "account_id": inputs["accountId"],
        "main": main,
        "no_bundle": True,
        "compatibility_date": inputs["compatibilityDate"],
        "compatibility_flags": list(inputs["compatibilityFlags"]),
        "workers_dev": inputs["workersDev"],
        "preview_urls": inputs["previewUrls"],
        "observability": {
            **_snake_keys({k: v for k, v in observability.items() if k != "logs"}),
            "logs": _snake_keys(observability["logs"]),
        },
        "durable_objects": {
            "bindings": [
                {"name": b["name"], "class_name": b["className"]}
                for b in bindings
                if b["type"] == "durable_object_namespace"
            ]
        },
        "migrations": [_snake_keys(migration) for migration in inputs["migrations"]],
        "containers": [_snake_keys(container) for container in inputs["containers"]],
        "vars": {b["name"]: b["text"] for b in bindings if b["type"] == "plain_text"},
    }
    if inputs["routes"]:
        config["routes"] = [_snake_keys(route) for route in inputs["routes"]]
    return config
