"""What every child of a ``MicrovmSandbox`` shares: its name prefix, tags, options, log groups
and IAM role pattern; the IAM policy document helpers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from sandboxkit.boundary import STACK_LABEL, TRUSTED_ACCOUNTS_TAG


def policy_document(*statements: dict[str, Any]) -> dict[str, Any]:
    """An IAM policy document (version 2012-10-17) of ``statements``."""
    return {"Version": "2012-10-17", "Statement": list(statements)}


@dataclass(frozen=True)
class SourceContext:
    """How a role's trust policy ties the service's ``sts:AssumeRole`` to this account: the
    confused-deputy guard (IAM user guide, "The confused deputy problem": ``aws:SourceAccount``
    and ``aws:SourceArn`` in the trust policy of a role a service assumes).

    Attributes:
        documented: the service's own documentation says it sets these keys when it assumes
            a role; then the condition is ``StringEquals`` (and ``ArnLike``), which fails
            closed. Otherwise ``StringEqualsIfExists``: a mismatching account is refused
            whenever the service sends one, and a service that sends none can still assume
            the role, so an undocumented key cannot break the deployment.
        source_arn: ``aws:SourceArn`` pattern, ``{region}`` and ``{account}`` filled in; or
            ``None`` when the service documents no ARN shape for it.
        source: where the support is documented, or why it is assumed.
    """

    documented: bool
    source_arn: str | None
    source: str


def trust_policy(
    service: str,
    account: str,
    region: str,
    context: SourceContext,
    *,
    tag_session: bool = False,
) -> str:
    """A role trust policy (JSON) letting the AWS ``service`` principal assume the role only on
    behalf of ``account`` (and, with a ``source_arn``, of that account's matching resources
    in ``region``)."""
    actions = ["sts:AssumeRole", "sts:TagSession"] if tag_session else "sts:AssumeRole"
    suffix = "" if context.documented else "IfExists"
    condition: dict[str, Any] = {f"StringEquals{suffix}": {"aws:SourceAccount": account}}
    if context.source_arn is not None:
        pattern = context.source_arn.format(region=region, account=account)
        condition[f"ArnLike{suffix}"] = {"aws:SourceArn": pattern}
    return json.dumps(
        policy_document(
            {
                "Effect": "Allow",
                "Principal": {"Service": service},
                "Action": actions,
                "Condition": condition,
            }
        )
    )


@dataclass
class Children:
    """The component's naming, tagging and options, handed to each part that adds children.

    Attributes:
        name: the component name; every child is ``<name>-<part>``.
        tags: the kit's tags, set on every child that takes tags.
        opts: parent (the component) and the explicit regional provider.
        account: the AWS account id the provider deploys into (``sts:GetCallerIdentity``).
        region: the provider's region.
        log_retention_days: CloudWatch retention of every log group, days.
        log_groups: the log groups created so far, in creation order.
    """

    name: str
    tags: dict[str, str]
    opts: pulumi.ResourceOptions
    account: pulumi.Output[str]
    region: str
    log_retention_days: int
    log_groups: list[aws.cloudwatch.LogGroup] = field(default_factory=list)

    def after(self, *depends_on: pulumi.Resource) -> pulumi.ResourceOptions:
        """``opts``, depending on ``depends_on`` too."""
        if not depends_on:
            return self.opts
        return pulumi.ResourceOptions.merge(
            self.opts, pulumi.ResourceOptions(depends_on=list(depends_on))
        )

    def log_group(self, part: str) -> aws.cloudwatch.LogGroup:
        """Log group ``<name>-<part>`` at ``/sandboxkit/<stack>/<name>/<part>``."""
        group = aws.cloudwatch.LogGroup(
            f"{self.name}-{part}",
            name=f"/sandboxkit/{self.tags[STACK_LABEL]}/{self.name}/{part}",
            retention_in_days=self.log_retention_days,
            tags=self.tags,
            opts=self.opts,
        )
        self.log_groups.append(group)
        return group

    def role(
        self,
        part: str,
        service: str,
        context: SourceContext,
        policy: pulumi.Input[str],
        *,
        tag_session: bool = False,
    ) -> tuple[aws.iam.Role, aws.iam.RolePolicy]:
        """Role ``<name>-<part>-role`` for ``service``, assumable for this account only
        (``context``), and its one inline policy ``-<part>-policy``.

        Returns:
            The role and the policy. A resource that makes the service use the role must
            depend on the policy too (``after(policy)``): ``role.arn`` alone exists before
            the permissions do, and IAM does not order them.
        """
        region = self.region
        role = aws.iam.Role(
            f"{self.name}-{part}-role",
            assume_role_policy=self.account.apply(
                lambda account: trust_policy(
                    service, account, region, context, tag_session=tag_session
                )
            ),
            tags=self.tags,
            opts=self.opts,
        )
        grant = aws.iam.RolePolicy(
            f"{self.name}-{part}-policy", role=role.id, policy=policy, opts=self.opts
        )
        return role, grant


def trusted_tags(tags: dict[str, str], accounts: tuple[str, ...]) -> dict[str, str]:
    """``tags`` plus ``TRUSTED_ACCOUNTS_TAG`` naming ``accounts`` (12-digit ids joined by
    ``-``) when there are any: what SBX-SEC-004 reads on the launcher and the image."""
    return {**tags, TRUSTED_ACCOUNTS_TAG: "-".join(accounts)} if accounts else tags
