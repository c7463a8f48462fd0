"""Names and ranges that cross a boundary: between the kit's components, the policy pack, the
launcher, the worker and the Cloudflare Worker.

Each name is defined here once. The components write them, the policy pack reads them (it
imports this module), and code that cannot import Python keeps a copy under a test that fails
when the copies differ (``tests/core/test_boundary.py``): the Worker's JavaScript
(``cloudflare/worker/src/index.js``) and the launcher's standalone Lambda code
(``aws/launcher/handler.py``).

The egress refusal kinds live in modules of their own, read by the allowlist parser and the
policy pack alike: ``sandboxkit.addresses`` (which addresses are public: IANA's registries and
the IPv6 forms of IPv4 addresses; the source of ``NON_PUBLIC_IPV4`` / ``NON_PUBLIC_IPV6``) and
``sandboxkit.dns_names`` (internal names, wildcard-DNS services, shared hosting, public suffixes).
"""

from __future__ import annotations

from typing import Final

from sandboxkit.addresses import exclusion_blocks

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
# The label of the kit's DNS resolver pods (kubernetes, gcp-gke): the only DNS peer of sandboxes.
RESOLVER_POD_LABEL: Final = "sandboxkit-resolver"
# Cluster resolvers on a link-local address of every node, which the resolver's NetworkPolicy
# names as a /32 on port 53 (a pod selector never matches them, tektoncd/operator #4000):
# NodeLocal DNSCache's default (kubernetes cluster/addons/dns/nodelocaldns README) and the GCE
# metadata server, which serves Cloud DNS for GKE and the VPC resolver
# (https://cloud.google.com/dns/docs/vpc-name-res-order). The pack admits exactly these.
LINK_LOCAL_RESOLVERS: Final = {
    "node-local-dns": "169.254.20.10",
    "metadata-server": "169.254.169.254",
}
# The node label of gcp-gke's system pool: the one node pool without GKE Sandbox, where no
# sandbox pod can land (they select the gVisor label), for kube-dns, the controller and resolver.
NODE_POOL_LABEL: Final = "sandboxkit-node-pool"
SYSTEM_NODE_POOL: Final = "system"

# --- Cloudflare Worker bindings (the header comment of worker/src/index.js) -------------------
DURABLE_OBJECT_CLASS: Final = "Sandbox"
DURABLE_OBJECT_BINDING: Final = "SANDBOX"
# Client credentials: HS256 JWTs the Worker verifies with JWT_SIGNING_KEY (secret_text), whose
# iss and aud must equal JWT_ISSUER and JWT_AUDIENCE and whose exp - iat is at most
# JWT_MAX_LIFETIME_SECONDS (plain_text); the claim format is in docs/targets/cloudflare.md.
JWT_SIGNING_KEY_BINDING: Final = "JWT_SIGNING_KEY"
JWT_ISSUER_BINDING: Final = "JWT_ISSUER"
JWT_AUDIENCE_BINDING: Final = "JWT_AUDIENCE"
JWT_MAX_LIFETIME_BINDING: Final = "JWT_MAX_LIFETIME_SECONDS"
SANDBOX_ID_KEY_BINDING: Final = "SANDBOX_ID_KEY"
# JSON: {"mode": "deny"|"allowlist"|"open", "allow": [{"host", "port", "wildcard"}]}.
EGRESS_POLICY_BINDING: Final = "EGRESS_POLICY"
# The container image the wrangler config runs (``sandboxkit cloudflare-config``): no Pulumi
# resource holds a Containers application, so the Worker carries its image for the gate
# (SBX-SEC-003) as plain text.
CONTAINER_IMAGE_BINDING: Final = "CONTAINER_IMAGE"
IDLE_TIMEOUT_BINDING: Final = "IDLE_TIMEOUT_SECONDS"
MAX_LIFETIME_BINDING: Final = "MAX_LIFETIME_SECONDS"
EXEC_TIMEOUT_BINDING: Final = "EXEC_TIMEOUT_SECONDS"
# The plain-text bindings the Worker reads as seconds, in the order it validates them.
WORKER_SECONDS_BINDINGS: Final = (IDLE_TIMEOUT_BINDING, MAX_LIFETIME_BINDING, EXEC_TIMEOUT_BINDING)

# --- aws-microvm launcher environment (aws/launcher/handler.py reads these) -------------------
LAUNCHER_IMAGE_ARN: Final = "IMAGE_ARN"
LAUNCHER_CONNECTOR_ARN: Final = "CONNECTOR_ARN"
LAUNCHER_INGRESS_CONNECTOR_ARN: Final = "INGRESS_CONNECTOR_ARN"
LAUNCHER_WEBHOOK_SECRET_ARN: Final = "WEBHOOK_SECRET_ARN"
LAUNCHER_CREDENTIAL_KEY_SECRET_ARN: Final = "CREDENTIAL_KEY_SECRET_ARN"
LAUNCHER_MAX_DURATION_SECONDS: Final = "MAX_DURATION_SECONDS"
LAUNCHER_IDLE_TIMEOUT_SECONDS: Final = "IDLE_TIMEOUT_SECONDS"
LAUNCHER_EXEC_TIMEOUT_SECONDS: Final = "EXEC_TIMEOUT_SECONDS"
LAUNCHER_REPLAY_WINDOW_SECONDS: Final = "REPLAY_WINDOW_SECONDS"
LAUNCHER_CONTROL_PLANE_URL: Final = "CONTROL_PLANE_URL"
LAUNCHER_EXECUTION_ROLE_ARN: Final = "EXECUTION_ROLE_ARN"
# The tag on the launcher function and the MicroVM image naming the AWS accounts whose layers
# and base images the stack trusts (its own included), joined by "-" (SBX-SEC-004).
TRUSTED_ACCOUNTS_TAG: Final = "sandboxkit-trusted-accounts"
# The tag on the worker-credential key's secret giving its longest life, days (SBX-SES-003).
MAX_AGE_TAG: Final = "sandboxkit-max-age-days"
# A Lambda function whose environment has both of these starts MicroVMs: the pack finds the
# launcher by them.
LAUNCHER_MARKERS: Final = (LAUNCHER_IMAGE_ARN, LAUNCHER_CONNECTOR_ARN)
# The AWS-managed connector that gives a MicroVM the open internet; no kit MicroVM runs with it
# (only the image build has it: aws/image.py BUILD_EGRESS_CONNECTOR).
INTERNET_EGRESS_CONNECTOR: Final = "INTERNET_EGRESS"

# --- Egress ------------------------------------------------------------------------------------
# DNS (RFC 1035 section 4.2) and DNS over TLS (RFC 7858 section 3.1): a host reached on these
# ports is a resolver, a DNS channel to anywhere, whatever its name.
RESOLVER_PORTS: Final = (53, 853)
# Destinations that mean "everywhere": never an allowlist entry, and what SBX-NET-001 looks for.
EVERYWHERE: Final = ("0.0.0.0/0", "::/0")
EVERYTHING_ENTRIES: Final = frozenset({"*", *EVERYWHERE, "0.0.0.0", "::"})

# Addresses a sandbox must never reach even with egress open: what ``open`` mode takes out of
# 0.0.0.0/0 and ::/0 (NetworkPolicy ``except``, Cloud NGFW deny rules). Derived from the kit's
# copy of IANA's registries (``sandboxkit.addresses.exclusion_blocks``: every block that is not
# globally reachable, multicast, IPv6 outside 2000::/3, and every IPv6 prefix that embeds an
# IPv4 address: NAT64 64:ff9b::/96 and 64:ff9b:1::/48, IPv4-mapped, IPv4-compatible and SIIT,
# all inside ::/8, 6to4 2002::/16, Teredo inside 2001::/23), each block whole, sorted.
NON_PUBLIC_IPV4: Final = tuple(str(block) for block in exclusion_blocks(4))
NON_PUBLIC_IPV6: Final = tuple(str(block) for block in exclusion_blocks(6))
# Answers a resolver the kit runs must drop (DNS-rebinding defence: any name can resolve to a
# private address; a name list is only a first line): A and AAAA records inside these blocks.
RESOLVER_DROP_RANGES: Final = NON_PUBLIC_IPV4 + NON_PUBLIC_IPV6

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
