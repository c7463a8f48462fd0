"""What every child of a ``MicrovmSandbox`` shares: its name prefix, tags, options, log groups
and IAM role pattern; the IAM policy document helpers.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pulumi
import pulumi_aws as aws

from sandboxkit.contract import STACK_LABEL


def policy_document(*statements: dict[str, Any]) -> dict[str, Any]:
    """An IAM policy document (version 2012-10-17) of ``statements``."""
    return {"Version": "2012-10-17", "Statement": list(statements)}


def trust_policy(service: str, *, tag_session: bool = False) -> str:
    """A role trust policy (JSON) letting the AWS ``service`` principal assume the role."""
    actions = ["sts:AssumeRole", "sts:TagSession"] if tag_session else "sts:AssumeRole"
    return json.dumps(
        policy_document({"Effect": "Allow", "Principal": {"Service": service}, "Action": actions})
    )


@dataclass
class Children:
    """The component's naming, tagging and options, handed to each part that adds children.

    Attributes:
        name: the component name; every child is ``<name>-<part>``.
        tags: the kit's tags, set on every child that takes tags.
        opts: parent (the component) and the explicit regional provider.
        log_retention_days: CloudWatch retention of every log group, days.
        log_groups: the log groups created so far, in creation order.
    """

    name: str
    tags: dict[str, str]
    opts: pulumi.ResourceOptions
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
        self, part: str, service: str, policy: pulumi.Input[str], *, tag_session: bool = False
    ) -> aws.iam.Role:
        """Role ``<name>-<part>-role`` for ``service`` with one inline policy ``-<part>-policy``."""
        role = aws.iam.Role(
            f"{self.name}-{part}-role",
            assume_role_policy=trust_policy(service, tag_session=tag_session),
            tags=self.tags,
            opts=self.opts,
        )
        aws.iam.RolePolicy(
            f"{self.name}-{part}-policy", role=role.id, policy=policy, opts=self.opts
        )
        return role
