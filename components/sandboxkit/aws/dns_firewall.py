"""The Route 53 Resolver DNS Firewall on the kit's VPC: the listed names resolve (through their
CNAME chains), every other name gets NXDOMAIN (not with ``open``), and the firewall fails
closed."""

from __future__ import annotations

import pulumi_aws as aws

# The ec2 resource modules themselves, not the package (``sdk_parts``).
from pulumi_aws.ec2.vpc import Vpc

from sandboxkit.aws.children import Children
from sandboxkit.aws.plan import EgressPlan

# DNS Firewall: allow the listed names first, then block every other name.
DNS_ALLOW_PRIORITY = 100
DNS_BLOCK_PRIORITY = 200
DNS_ASSOCIATION_PRIORITY = 101


def dns_firewall(
    kit: Children, plan: EgressPlan, vpc: Vpc, *, mutation_protection: bool
) -> aws.route53.ResolverFirewallRuleGroup:
    """``-dns-allowed``, ``-dns-all``, ``-dns-rules``, ``-dns-allow``, ``-dns-block`` (not
    ``open``), ``-dns-association`` (``MutationProtection`` ``ENABLED`` when
    ``mutation_protection``: the association cannot be removed, by anyone, the kit's own
    destroy included, until it is ``DISABLED`` again; Route 53 Resolver
    AssociateFirewallRuleGroup, terraform-provider-aws #21278) and ``-dns-config``.

    Returns:
        The rule group (``-dns-rules``), whose VPC's answers validate the firewall's
        destinations.
    """
    name, opts = kit.name, kit.opts
    allowed = aws.route53.ResolverFirewallDomainList(
        f"{name}-dns-allowed", domains=list(plan.dns_names), tags=kit.tags, opts=opts
    )
    everything = aws.route53.ResolverFirewallDomainList(
        f"{name}-dns-all", domains=["*"], tags=kit.tags, opts=opts
    )
    group = aws.route53.ResolverFirewallRuleGroup(f"{name}-dns-rules", tags=kit.tags, opts=opts)
    aws.route53.ResolverFirewallRule(
        f"{name}-dns-allow",
        firewall_rule_group_id=group.id,
        firewall_domain_list_id=allowed.id,
        action="ALLOW",
        priority=DNS_ALLOW_PRIORITY,
        # An allowed name resolves through its CNAME chain: only the first name in the chain is
        # checked (Route 53 CreateFirewallRule FirewallDomainRedirectionAction). With the
        # default INSPECT_REDIRECTION_DOMAIN an unlisted name in the chain met the block-all
        # rule and the allowed name got NXDOMAIN (terraform-provider-aws #37197). A query for
        # an unlisted name is still first in its own chain, so the block rule still answers it.
        firewall_domain_redirection_action="TRUST_REDIRECTION_DOMAIN",
        opts=opts,
    )
    if plan.mode != "open":
        aws.route53.ResolverFirewallRule(
            f"{name}-dns-block",
            firewall_rule_group_id=group.id,
            firewall_domain_list_id=everything.id,
            action="BLOCK",
            block_response="NXDOMAIN",
            priority=DNS_BLOCK_PRIORITY,
            opts=opts,
        )
    aws.route53.ResolverFirewallRuleGroupAssociation(
        f"{name}-dns-association",
        vpc_id=vpc.id,
        firewall_rule_group_id=group.id,
        priority=DNS_ASSOCIATION_PRIORITY,
        mutation_protection="ENABLED" if mutation_protection else "DISABLED",
        tags=kit.tags,
        opts=opts,
    )
    # Fail closed: if the DNS Firewall cannot answer, queries fail rather than bypass it.
    aws.route53.ResolverFirewallConfig(
        f"{name}-dns-config", resource_id=vpc.id, firewall_fail_open="DISABLED", opts=opts
    )
    return group
