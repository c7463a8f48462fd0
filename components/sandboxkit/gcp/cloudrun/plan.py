"""What ``CloudRunSandbox`` is built from: its inputs, as the ``gcp-cloudrun`` spec plans them.

No SDK and no settings here: the component imports this module and nothing of the spec.
"""

from __future__ import annotations

from typing import Any, TypedDict

from sandboxkit.egress_contract import EgressRule
from sandboxkit.gcp.response_policy import ResponseRule

# The launcher's environment variable naming the template it starts every sandbox from (the
# name only, no secret): the launcher passes it to the sandbox CLI, so no sandbox mounts the
# launcher's own filesystem.
TEMPLATE_VARIABLE = "SANDBOXKIT_SANDBOX_TEMPLATE"
# The longest object name, the prefix of the target's cloud names: ``<object_name>-run`` is a
# service account id (6 to 30 characters, IAM projects.serviceAccounts.create accountId).
MAX_OBJECT_NAME = 22


class CloudRunSandboxArgs(TypedDict, total=False):
    """Inputs of ``CloudRunSandbox``; ``spec.cloudrun_args`` builds them from profile + settings."""

    project: str
    """Project id of every resource."""
    deletion_protection: bool
    """Cloud Run deletion protection on the launcher service (``deletion_protection``)."""
    """Project id of every child."""
    region: str
    """Region of the service, subnet, router and log bucket."""
    object_name: str
    """Prefix of cloud resource names: a lower-case letter, then letters, digits, hyphens
    (at most 22, so ``<object_name>-run`` fits a service account id)."""
    image: str
    """Launcher image."""
    port: int
    """Launcher HTTP port."""
    instance_vcpu: int
    """vCPU of one instance (the launcher container's CPU limit)."""
    instance_memory_mib: int
    """MiB of one instance (the launcher container's memory limit)."""
    slots: int
    """Sandboxes per instance: the request concurrency."""
    min_instances: int
    """Instances kept warm."""
    max_instances: int
    """Instances at most."""
    request_timeout_seconds: int
    """Request timeout, seconds (at most 3600)."""
    sandbox_template: str
    """Name of the template every sandbox starts from; one of ``templates``. The launcher gets
    it in ``TEMPLATE_VARIABLE``."""
    templates: tuple[dict[str, Any], ...]
    """Sandbox templates as the service's ``template.sandboxes.templates`` takes them (name,
    image, commands, args, working_dir; never env): at least ``sandbox_template``, each image
    other than ``image``."""
    ingress: str
    """``internal`` or ``internal-and-cloud-load-balancing``."""
    invokers: tuple[str, ...]
    """Principals granted ``roles/run.invoker``; never ``allUsers`` or ``allAuthenticatedUsers``."""
    subnet_cidr: str
    """Private range of the Direct VPC egress subnet."""
    egress_mode: str
    """``deny``, ``allowlist`` or ``open``."""
    egress_rules: tuple[EgressRule, ...]
    """Allowlist entries: exact names and IPv4 addresses (no wildcards, no IPv6)."""
    dns_rules: tuple[ResponseRule, ...]
    """The sandbox network's response policy rules (``response_policy.response_rules``);
    empty for egress ``open``, which gets no response policy."""
    log_retention_days: int
    """Days the audit log bucket keeps logs."""
    labels: dict[str, str]
    """The kit's labels, set on every child that takes labels."""
