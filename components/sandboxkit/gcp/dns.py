"""The sandbox network's Cloud DNS response policy as Pulumi resources.

``sandboxkit.gcp.response_policy`` decides the rules (and explains why); this module creates
them: a ``dns.ResponsePolicy`` bound to the network and one ``dns.ResponsePolicyRule`` per rule.
"""

from __future__ import annotations

from collections.abc import Sequence

import pulumi
import pulumi_gcp as gcp

from sandboxkit.gcp.response_policy import (
    BYPASS,
    CATCH_ALL,
    REFUSAL_TEXT,
    REFUSAL_TTL_SECONDS,
    ResponseRule,
)

# The catch-all's answer: one TXT record at the catch-all's own name (local data must carry the
# rule's dnsName), so A and AAAA queries get no address.
REFUSAL_DATA: gcp.dns.ResponsePolicyRuleLocalDataArgsDict = {
    "local_datas": [
        {
            "name": CATCH_ALL,
            "type": "TXT",
            "ttl": REFUSAL_TTL_SECONDS,
            "rrdatas": [f'"{REFUSAL_TEXT}"'],
        }
    ]
}


def response_policy(
    name: str,
    *,
    project: str,
    policy_name: str,
    network: pulumi.Input[str],
    rules: Sequence[ResponseRule],
    opts: pulumi.ResourceOptions,
) -> list[pulumi.CustomResource]:
    """A response policy on ``network`` holding ``rules``; nothing when ``rules`` is empty.

    Children: ``<name>-dns-policy`` (``response_policy_name`` ``policy_name``) and
    ``<name>-dns-<rule_name>`` per rule: a bypass sets ``behavior: bypassResponsePolicy``, the
    catch-all ``local_data`` ``REFUSAL_DATA``. Returns the policy and its rules, for callers
    to depend on (sandboxes must not start before their DNS is walled in).
    """
    if not rules:
        return []
    policy = gcp.dns.ResponsePolicy(
        f"{name}-dns-policy",
        project=project,
        response_policy_name=policy_name,
        description="sandboxkit: sandbox DNS resolves the egress allowlist only",
        networks=[{"network_url": network}],
        opts=opts,
    )
    children: list[pulumi.CustomResource] = [policy]
    for rule in rules:
        children.append(
            gcp.dns.ResponsePolicyRule(
                f"{name}-dns-{rule.rule_name}",
                project=project,
                response_policy=policy.response_policy_name,
                rule_name=rule.rule_name,
                dns_name=rule.dns_name,
                behavior=BYPASS if rule.bypass else None,
                local_data=None if rule.bypass else REFUSAL_DATA,
                opts=opts,
            )
        )
    return children
