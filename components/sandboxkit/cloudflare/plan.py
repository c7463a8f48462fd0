"""What ``WorkerSandbox`` is built from: its inputs, as the ``cloudflare`` spec plans them, and
the fixed parts of the Worker script that the generated wrangler config repeats.

No SDK and no settings here: the component imports this module and nothing of the spec.
"""

from __future__ import annotations

from typing import Any, TypedDict

from sandboxkit.boundary import DURABLE_OBJECT_CLASS
from sandboxkit.secrets import SecretValue

# The Worker's module name as uploaded.
MAIN_MODULE = "index.js"
# The Durable Object migrations, in wrangler's shape (``migrations[]``: ``tag`` and the steps):
# an append-only ledger. wrangler reads the script's current ``migration_tag`` and uploads only
# the migrations after it, as ``{old_tag, new_tag, steps}``; none once the last is applied. A tag
# removed or renamed here makes wrangler replay every migration against the live script, which
# the API refuses (code 10074; a tagless one on a tagged script: "Migration tag precondition
# failed; current tag is v1", code 10079, cloudflare/workers-sdk#705). Add a migration by
# appending one with a new tag. Source:
# developers.cloudflare.com/durable-objects/reference/durable-objects-migrations/
MIGRATIONS: tuple[dict[str, Any], ...] = (
    {"tag": "v1", "newSqliteClasses": [DURABLE_OBJECT_CLASS]},
)
# Every request and every log line is kept: the Worker's logs are the sandboxes' audit trail.
HEAD_SAMPLING_RATE = 1
# The egress gateway re-issues allowed requests with the global fetch(). Without this flag a
# fetch to a hostname in the Worker's own zone goes straight to that zone's origin, "ignoring
# any Workers mapped to the URL and also bypassing Cloudflare security settings" (WAF, Access):
# a sandbox could reach an Access-protected or tunnel-backed origin past its gate. Source:
# workerd src/workerd/io/compatibility-date.capnp (globalFetchStrictlyPublic),
# developers.cloudflare.com/workers/configuration/compatibility-flags/#global-fetch-strictly-public
COMPATIBILITY_FLAGS = ("global_fetch_strictly_public",)
# The Worker's egress gateway is reached through ctx.exports, which compatibility dates from
# 2025-11-17 on enable; the default is the date the Worker's tests and the kit's decider
# (``decide.WorkerDecider``) run it with.
MIN_COMPATIBILITY_DATE = "2025-11-17"
# The newest date the workerd the kit ships (package-lock.json, node_modules/workerd
# 1.20260730.1: a workerd release supports dates up to the one in its version) runs: the
# Worker's tests cannot run it at a later date, and Cloudflare refuses a date still in the
# future at upload. A fixed bound, not today's date, so one stack file validates the same on
# every day; it moves with the workerd version (a test ties the two).
MAX_COMPATIBILITY_DATE = "2026-07-30"
DEFAULT_COMPATIBILITY_DATE = "2026-07-01"


class WorkerSandboxArgs(TypedDict, total=False):
    """Inputs of ``WorkerSandbox``; ``spec.worker_sandbox_args`` builds them from a profile."""

    account_id: str
    """Cloudflare account id (32 hex characters)."""
    script_name: str
    """Worker script name (lower-case letters, digits, hyphens; at most 63)."""
    worker_module_path: str
    """Path of the Worker's ES module, read at deploy time and uploaded as ``index.js``."""
    compatibility_date: str
    """Workers runtime compatibility date, ``YYYY-MM-DD``."""
    token_signing_key: SecretValue
    """HS256 key of the client tokens the Worker verifies; bound as secret_text
    ``JWT_SIGNING_KEY``."""
    sandbox_id_key: SecretValue
    """HMAC key naming sandboxes; bound as secret_text ``SANDBOX_ID_KEY``."""
    plain_vars: dict[str, str]
    """Plain-text bindings, name -> text (``EGRESS_POLICY``, the three ``*_SECONDS`` and the
    token checks ``JWT_ISSUER``, ``JWT_AUDIENCE``, ``JWT_MAX_LIFETIME_SECONDS``)."""
    workers_dev: bool
    """Expose the Worker on workers.dev (false: only routes or custom domains reach it)."""
    instance_type: str
    """Container instance type (``containers[0].instance_type``)."""
    image: str
    """The sandbox container image, an OCI reference (``containers[0].image``)."""
    max_instances: int
    """Containers at most (``containers[0].max_instances``, ``pool.maxConcurrent``)."""
    routes: list[dict[str, Any]]
    """Routes and custom domains, in the component's camelCase shape (``pattern`` with
    ``customDomain``, ``zoneName`` or ``zoneId``; ``spec.WorkerRoute``)."""
