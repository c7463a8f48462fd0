"""Names and ranges that cross a boundary: between the kit's components, the policy pack, the
launcher, the worker and the Cloudflare Worker.

Each name is defined here once. The components write them, the policy pack reads them (it
imports this module), and code that cannot import Python keeps a copy under a test that fails
when the copies differ (``tests/core/test_contract.py``): the Worker's JavaScript
(``cloudflare/worker/src/index.js``) and the launcher's standalone Lambda code
(``aws/launcher/handler.py``).
"""

from __future__ import annotations

from typing import Final

# --- Labels and tags -------------------------------------------------------------------------
# Set on every child that takes labels or tags (``KitContext.labels``). Keys and values are
# lower-case letters, digits and hyphens, valid as AWS tags, GCP labels, Azure tags and
# Kubernetes labels alike.
MANAGED_BY_LABEL: Final = "managed-by"
MANAGED_BY_VALUE: Final = "sandboxkit"
STACK_LABEL: Final = "sandboxkit-stack"
ENVIRONMENT_LABEL: Final = "sandboxkit-environment"
# The target that created a resource; the policy pack attributes resources by it.
TARGET_LABEL: Final = "sandboxkit-target"

# The label every sandbox pod carries; the kit's NetworkPolicy selects pods by it.
SANDBOX_POD_LABEL: Final = "sandboxkit-sandbox"

# --- Cloudflare Worker bindings (the header comment of worker/src/index.js) -------------------
DURABLE_OBJECT_CLASS: Final = "Sandbox"
DURABLE_OBJECT_BINDING: Final = "SANDBOX"
AUTH_TOKEN_BINDING: Final = "AUTH_TOKEN"
SANDBOX_ID_KEY_BINDING: Final = "SANDBOX_ID_KEY"
# JSON: {"mode": "deny"|"allowlist"|"open", "allow": [{"host", "port", "wildcard"}]}.
EGRESS_POLICY_BINDING: Final = "EGRESS_POLICY"
IDLE_TIMEOUT_BINDING: Final = "IDLE_TIMEOUT_SECONDS"
MAX_LIFETIME_BINDING: Final = "MAX_LIFETIME_SECONDS"
EXEC_TIMEOUT_BINDING: Final = "EXEC_TIMEOUT_SECONDS"
# The plain-text bindings the Worker reads as seconds, in the order it validates them.
WORKER_SECONDS_BINDINGS: Final = (IDLE_TIMEOUT_BINDING, MAX_LIFETIME_BINDING, EXEC_TIMEOUT_BINDING)

# --- aws-microvm launcher environment (aws/launcher/handler.py reads these) -------------------
LAUNCHER_IMAGE_ARN: Final = "IMAGE_ARN"
LAUNCHER_CONNECTOR_ARN: Final = "CONNECTOR_ARN"
LAUNCHER_WEBHOOK_SECRET_ARN: Final = "WEBHOOK_SECRET_ARN"
LAUNCHER_WORKER_KEY_SECRET_ARN: Final = "WORKER_KEY_SECRET_ARN"
LAUNCHER_MAX_DURATION_SECONDS: Final = "MAX_DURATION_SECONDS"
LAUNCHER_IDLE_TIMEOUT_SECONDS: Final = "IDLE_TIMEOUT_SECONDS"
LAUNCHER_EXEC_TIMEOUT_SECONDS: Final = "EXEC_TIMEOUT_SECONDS"
LAUNCHER_REPLAY_WINDOW_SECONDS: Final = "REPLAY_WINDOW_SECONDS"
LAUNCHER_CONTROL_PLANE_URL: Final = "CONTROL_PLANE_URL"
LAUNCHER_EXECUTION_ROLE_ARN: Final = "EXECUTION_ROLE_ARN"
# A Lambda function whose environment has both of these starts MicroVMs: the pack finds the
# launcher by them.
LAUNCHER_MARKERS: Final = (LAUNCHER_IMAGE_ARN, LAUNCHER_CONNECTOR_ARN)
# The AWS-managed connector that gives a MicroVM the open internet; the kit never uses it.
INTERNET_EGRESS_CONNECTOR: Final = "INTERNET_EGRESS"

# --- Egress ------------------------------------------------------------------------------------
# Destinations that mean "everywhere": never an allowlist entry, and what SBX-NET-001 looks for.
EVERYWHERE: Final = ("0.0.0.0/0", "::/0")
EVERYTHING_ENTRIES: Final = frozenset({"*", *EVERYWHERE, "0.0.0.0", "::"})

# Addresses a sandbox must never reach even with egress open: RFC 1918, carrier-grade NAT
# (RFC 6598, used for some pod and service ranges), link-local (the metadata server), loopback.
NON_PUBLIC_IPV4: Final = (
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "100.64.0.0/10",
    "169.254.0.0/16",
    "127.0.0.0/8",
)
NON_PUBLIC_IPV6: Final = ("fc00::/7", "fe80::/10", "::1/128")

# Names that resolve to cloud metadata services or cluster-internal addresses: a sandbox that
# reaches them can read credentials or the cluster's services. RFC 6762 (.local), RFC 6761
# (.localhost), GCE (metadata.google.internal, .internal), EC2 (*.ec2.internal), Kubernetes
# (.svc, and kubernetes.default through the pod search path).
INTERNAL_SUFFIXES: Final = (
    ".internal",
    ".local",
    ".localhost",
    ".localdomain",
    ".svc",
    ".goog",
    ".home.arpa",
    ".default",
)
