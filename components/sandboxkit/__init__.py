"""sandboxkit: hardened sandbox stacks for AI-agent code on every major cloud.

One cloud-neutral sandbox profile (egress, limits, lifetimes, warm pools, audit) is read from
Pulumi stack config, validated, and enforced by a component per target. See README.md.
"""

__version__ = "0.1.0"
