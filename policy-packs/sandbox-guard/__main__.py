"""The sandbox-guard CrossGuard pack. Only builds the pack: PolicyPack serves until killed.

Started by the Pulumi CLI (``pulumi preview --policy-pack policy-packs/sandbox-guard``) through
``python -m pulumi.policy <engine> <this folder>``, which prints the gRPC port on stdout. The
per-environment files in ``config/`` raise levels from the advisory default.
"""

from policies import ALL_POLICIES, DEFAULT_ENFORCEMENT, PACK_NAME
from pulumi_policy import PolicyPack

PolicyPack(name=PACK_NAME, policies=ALL_POLICIES, enforcement_level=DEFAULT_ENFORCEMENT)
