"""``CloudRunSandbox``: a Cloud Run service that launches sandboxes, walled in per host.

See docs/targets/gcp-cloudrun.md and ``sandboxkit.gcp.cloudrun.spec`` for the sources.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pulumi
import pulumi_gcp as gcp

# The compute resource modules themselves, not the package (``sdk_parts``).
from pulumi_gcp.compute.network_firewall_policy import NetworkFirewallPolicy
from pulumi_gcp.compute.network_firewall_policy_association import (
    NetworkFirewallPolicyAssociation,
)
from pulumi_gcp.compute.network_firewall_policy_rule import NetworkFirewallPolicyRule

from sandboxkit.boundary import NON_PUBLIC_IPV4, NON_PUBLIC_IPV6
from sandboxkit.gcp.cloudrun.plan import MAX_OBJECT_NAME, TEMPLATE_VARIABLE, CloudRunSandboxArgs
from sandboxkit.gcp.common import (
    audit_log_bucket,
    check_object_name,
    private_network,
    service_account,
)
from sandboxkit.gcp.dns import response_policy

# Project roles of the launcher's service account: none. The launcher writes its audit record of
# each sandbox run (caller, command, exit code) as a JSON line on stdout, which Cloud Run sends
# to Cloud Logging as a container log of this service without any role
# (https://cloud.google.com/run/docs/logging "Container logs"). roles/logging.logWriter would be
# wider than that: its logging.logEntries.create is checked on the project (or folder,
# organization, billing account) receiving the entries, the lowest level it can be granted
# (https://cloud.google.com/iam/docs/roles-permissions/logging; entries.write "logName"), so
# the launcher could write into any log of the project under any monitored resource. It reaches
# sandboxes through the `sandbox` CLI in its own container: no Cloud Run, storage or secret
# roles either. The Cloud Run service agent, not this account, pulls the images.
LAUNCHER_ROLES: tuple[str, ...] = ()

# Sandbox templates need launch stage ALPHA (pulumi-gcp cloudrunv2.Service example "Cloudrunv2
# Service Sandbox Templates"; the launcher flag alone takes BETA), and the service always has
# templates.
LAUNCH_STAGE = "ALPHA"
INGRESS = {
    "internal": "INGRESS_TRAFFIC_INTERNAL_ONLY",
    "internal-and-cloud-load-balancing": "INGRESS_TRAFFIC_INTERNAL_LOAD_BALANCER",
}
# Firewall policy rule priorities: lower numbers win. The non-public denies come before every
# allow, the allows from ALLOW_FIRST_PRIORITY up, the catch-all deny far above them, so no
# allow can outrank the non-public denies or be shadowed by the catch-all.
DENY_NON_PUBLIC_PRIORITY = 900
ALLOW_FIRST_PRIORITY = 1000
DENY_ALL_PRIORITY = 65000
# Destinations one rule takes: 100 FQDNs, 5000 IP ranges (pulumi-gcp 10.2
# compute.NetworkFirewallPolicyRule match.dest_fqdns / dest_ip_ranges); longer lists take
# further rules, "allow-fqdn-443-2" and on.
MAX_DESTINATIONS = {"fqdn": 100, "ipv4": 5000}


def _ports(port: int | None) -> list[dict[str, Any]]:
    if port is None:
        return [{"ip_protocol": "all"}]
    return [{"ip_protocol": "tcp", "ports": [str(port)]}]


class CloudRunSandbox(pulumi.ComponentResource):
    """A sandbox-launcher Cloud Run service, its identity, its egress network and its logs.

    The launcher container gets ``TEMPLATE_VARIABLE`` naming ``sandbox_template``; every
    sandbox it starts runs a template's image, never the launcher's filesystem.

    Children (``<name>`` is the component name):
        ``<name>-service-account`` (holding no role: ``LAUNCHER_ROLES`` is empty),
        ``<name>-network``, ``<name>-subnet``, ``<name>-router`` and ``<name>-nat`` (egress
        ``allowlist`` or ``open`` only), ``<name>-firewall-policy``,
        ``<name>-firewall-association``, the rules ``<name>-deny-all-ipv4`` and
        ``<name>-deny-all-ipv6``, with ``<name>-deny-non-public-ipv4/6`` ahead of every allow
        (allowlist and open), plus ``<name>-allow-fqdn-<port>[-<n>]`` and
        ``<name>-allow-ipv4-<port>[-<n>]`` (allowlist; ``-<n>`` from the second rule of a list
        longer than ``MAX_DESTINATIONS``) or ``<name>-allow-public-ipv4/6`` (open),
        ``<name>-dns-policy`` and ``<name>-dns-<rule>`` per response policy rule (``deny``
        and ``allowlist``; see ``sandboxkit.gcp.dns``), ``<name>-service``,
        ``<name>-invoker-<n>`` per invoker, ``<name>-log-bucket`` and ``<name>-log-sink``.

    Raises:
        ValueError: an object name that cannot prefix GCP names, slots or instance counts out
            of range, a wildcard or IPv6 allowlist entry, a public invoker, or templates that
            leave out ``sandbox_template`` or run the launcher's image.
    """

    service_uri: pulumi.Output[str]
    service_account_email: pulumi.Output[str]
    network_name: pulumi.Output[str]
    firewall_policy_name: pulumi.Output[str]

    def __init__(
        self, name: str, args: CloudRunSandboxArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("sandboxkit:index:CloudRunSandbox", name, None, opts)
        object_name = args["object_name"]
        check_object_name(object_name, MAX_OBJECT_NAME)
        if not args["slots"] >= 1 or not args["max_instances"] >= 1:
            raise ValueError("slots and max_instances: at least 1")
        if not 0 <= args["min_instances"] <= args["max_instances"]:
            raise ValueError(f"min_instances {args['min_instances']}: from 0 to max_instances")
        if any(rule.kind == "wildcard" for rule in args["egress_rules"]):
            raise ValueError("egress_rules: exact names only (Cloud NGFW FQDN objects)")
        if any(rule.kind == "ip" and ":" in rule.host for rule in args["egress_rules"]):
            raise ValueError("egress_rules: IPv4 addresses only (the subnet is IPv4-only)")
        if any(
            p.split(":")[0] not in ("user", "group", "serviceAccount") for p in args["invokers"]
        ):
            raise ValueError("invokers: user:, group: or serviceAccount: principals only")
        if args["sandbox_template"] not in [t["name"] for t in args["templates"]]:
            raise ValueError(f"templates: none named {args['sandbox_template']!r}")
        if any(t["image"] == args["image"] for t in args["templates"]):
            raise ValueError("templates: an image other than the launcher's")

        self._args = args
        project, region = args["project"], args["region"]
        labels = dict(args["labels"])
        child = pulumi.ResourceOptions(parent=self)

        account, grants = service_account(
            name,
            "service-account",
            project=project,
            account_id=f"{object_name}-run",
            display_name="sandboxkit Cloud Run sandbox launcher",
            description="Runs the sandbox launcher; holds no project role.",
            roles=LAUNCHER_ROLES,
            opts=child,
        )
        network, subnet = private_network(
            name,
            project=project,
            region=region,
            object_name=f"{object_name}-run",
            description="sandboxkit: Direct VPC egress of the sandbox launcher, and nothing else",
            subnet_cidr=args["subnet_cidr"],
            private_ip_google_access=False,
            # Egress deny has no NAT: private addresses have no way out.
            nat=args["egress_mode"] != "deny",
            # The kit's policy decides before any VPC firewall rule someone adds later.
            network_firewall_policy_enforcement_order="BEFORE_CLASSIC_FIREWALL",
            # With egress deny there is no route out at all, whatever the firewall says.
            delete_default_routes_on_create=args["egress_mode"] == "deny",
            opts=child,
        )

        policy = NetworkFirewallPolicy(
            f"{name}-firewall-policy",
            project=project,
            name=f"{object_name}-run-egress",
            description="sandboxkit: sandbox egress; deny all but the profile's allowlist",
            opts=child,
        )
        association = NetworkFirewallPolicyAssociation(
            f"{name}-firewall-association",
            project=project,
            name=f"{object_name}-run-egress",
            attachment_target=network.id,
            firewall_policy=policy.name,
            opts=child,
        )
        rules = self._egress_rules(name, project, policy.name, child)
        # Sandbox DNS resolves the allowlist only: every other name is answered inside Cloud
        # DNS, never recursed to its owner's name servers (no DNS tunnel).
        dns = response_policy(
            name,
            project=project,
            policy_name=f"{object_name}-run-dns",
            network=network.id,
            rules=args["dns_rules"],
            opts=child,
        )

        template: Any = {
            "service_account": account.email,
            "execution_environment": "EXECUTION_ENVIRONMENT_GEN2",
            "max_instance_request_concurrency": args["slots"],
            "timeout": f"{args['request_timeout_seconds']}s",
            "scaling": {
                "min_instance_count": args["min_instances"],
                "max_instance_count": args["max_instances"],
            },
            "vpc_access": {
                "network_interfaces": [{"network": network.id, "subnetwork": subnet.id}],
                "egress": "ALL_TRAFFIC",
            },
            "labels": labels,
            "containers": [
                {
                    "image": args["image"],
                    "sandbox_launcher": True,
                    "envs": [{"name": TEMPLATE_VARIABLE, "value": args["sandbox_template"]}],
                    "ports": {"container_port": args["port"]},
                    "resources": {
                        "limits": {
                            "cpu": str(args["instance_vcpu"]),
                            "memory": f"{args['instance_memory_mib']}Mi",
                        }
                    },
                }
            ],
            "sandboxes": {"templates": list(args["templates"])},
        }
        service = gcp.cloudrunv2.Service(
            f"{name}-service",
            project=project,
            location=region,
            name=f"{object_name}-launcher",
            description="sandboxkit sandbox launcher",
            launch_stage=LAUNCH_STAGE,
            ingress=INGRESS[args["ingress"]],
            invoker_iam_disabled=False,
            deletion_protection=args["deletion_protection"],
            labels=labels,
            template=template,
            # Egress and DNS walls and the account's roles exist before the first sandbox starts.
            opts=pulumi.ResourceOptions(
                parent=self, depends_on=[association, *rules, *dns, *grants]
            ),
        )
        for index, principal in enumerate(args["invokers"]):
            gcp.cloudrunv2.ServiceIamMember(
                f"{name}-invoker-{index}",
                project=project,
                location=region,
                name=service.name,
                role="roles/run.invoker",
                member=principal,
                opts=child,
            )

        service_name = f"{object_name}-launcher"
        subnet_name = f"{object_name}-run"
        audit_log_bucket(
            name,
            project=project,
            region=region,
            bucket_id=f"{object_name}-run-audit",
            retention_days=args["log_retention_days"],
            log_filter=(
                f'(resource.type="cloud_run_revision" AND '
                f'resource.labels.service_name="{service_name}") OR '
                f'(resource.type="gce_subnetwork" AND '
                f'resource.labels.subnetwork_name="{subnet_name}") OR '
                f'(resource.type="nat_gateway" AND '
                f'resource.labels.gateway_name="{object_name}-run-nat")'
            ),
            opts=child,
        )

        self.service_uri = service.uri
        self.service_account_email = account.email
        self.network_name = network.name
        self.firewall_policy_name = policy.name
        self.register_outputs(self.outputs())

    def outputs(self) -> dict[str, pulumi.Output[str]]:
        """Stack outputs: serviceUri, serviceAccountEmail, networkName, firewallPolicyName."""
        return {
            "serviceUri": self.service_uri,
            "serviceAccountEmail": self.service_account_email,
            "networkName": self.network_name,
            "firewallPolicyName": self.firewall_policy_name,
        }

    def _egress_rules(
        self,
        name: str,
        project: str,
        policy: pulumi.Input[str],
        opts: pulumi.ResourceOptions,
    ) -> list[NetworkFirewallPolicyRule]:
        """Denies of the non-public ranges at ``DENY_NON_PUBLIC_PRIORITY`` (``allowlist`` and
        ``open``), allow rules from the profile (priorities from ``ALLOW_FIRST_PRIORITY`` up),
        then the catch-all denies at ``DENY_ALL_PRIORITY``. Rules log every match.

        DNS takes no firewall rule: Cloud Run resolves names through the metadata server,
        which firewall rules never block (https://cloud.google.com/firewall/docs/firewalls
        "Always allowed traffic"); the response policy (``sandboxkit.gcp.dns``) decides which
        names resolve, for sandboxes and for the FQDN objects alike.
        """
        specs: list[tuple[str, str, int, Any]] = []
        mode = self._args["egress_mode"]
        if mode != "deny":
            # Ahead of every allow: an allowed name that resolves to a private, link-local or
            # loopback address (DNS rebinding) reaches nothing there.
            for family, non_public in (("ipv4", NON_PUBLIC_IPV4), ("ipv6", NON_PUBLIC_IPV6)):
                specs.append(
                    (
                        f"deny-non-public-{family}",
                        "deny",
                        DENY_NON_PUBLIC_PRIORITY + (family == "ipv6"),
                        {"dest_ip_ranges": list(non_public), "layer4_configs": _ports(None)},
                    )
                )
        if mode == "allowlist":
            by_port: dict[tuple[str, int], list[str]] = defaultdict(list)
            for rule in self._args["egress_rules"]:
                if rule.kind == "name":
                    by_port[("fqdn", rule.port)].append(rule.host)
                else:
                    by_port[("ipv4", rule.port)].append(rule.cidr)
            priority = ALLOW_FIRST_PRIORITY
            for (kind, port), hosts in sorted(by_port.items()):
                field = "dest_fqdns" if kind == "fqdn" else "dest_ip_ranges"
                size = MAX_DESTINATIONS[kind]
                for part, start in enumerate(range(0, len(hosts), size), start=1):
                    rule_name = f"allow-{kind}-{port}" + (f"-{part}" if part > 1 else "")
                    chunk = sorted(hosts)[start : start + size]
                    match = {field: chunk, "layer4_configs": _ports(port)}
                    specs.append((rule_name, "allow", priority, match))
                    priority += 1
        elif mode == "open":
            for family, everything in (("ipv4", "0.0.0.0/0"), ("ipv6", "::/0")):
                specs.append(
                    (
                        f"allow-public-{family}",
                        "allow",
                        ALLOW_FIRST_PRIORITY + (family == "ipv6"),
                        # Every TCP port (no ports: all of them), never UDP: no contract
                        # admits UDP; the deny-all rules below take it.
                        {
                            "dest_ip_ranges": [everything],
                            "layer4_configs": [{"ip_protocol": "tcp"}],
                        },
                    )
                )
        for family, everything in (("ipv4", "0.0.0.0/0"), ("ipv6", "::/0")):
            specs.append(
                (
                    f"deny-all-{family}",
                    "deny",
                    DENY_ALL_PRIORITY + (family == "ipv6"),
                    {"dest_ip_ranges": [everything], "layer4_configs": _ports(None)},
                )
            )
        return [
            NetworkFirewallPolicyRule(
                f"{name}-{rule_name}",
                project=project,
                firewall_policy=policy,
                rule_name=rule_name,
                description=f"sandboxkit: {action} egress ({rule_name})",
                direction="EGRESS",
                action=action,
                priority=priority,
                match=match,
                enable_logging=True,
                opts=opts,
            )
            for rule_name, action, priority, match in specs
        ]
