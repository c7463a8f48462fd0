"""Cloud names derived from the stack name: valid on every target and unique per stack.

A Pulumi stack name is 1-100 of ``A-Z a-z 0-9 _ . -`` (the Pulumi CLI's rule: "stack names are
limited to 100 characters and may only contain alphanumeric, hyphens, underscores, or periods",
pulumi/pulumi ``pkg/backend/diy`` reference store). The clouds take much less: lower-case letters,
digits and hyphens, and at most 22 characters for the Cloud Run base name, 24 for GKE's, 27 for
Azure's, 50 for the Kubernetes objects, 63 for a label value or a Worker script name (each
target's plan says whose limit). ``derived_name`` maps the first onto the second.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

STACK_NAME_RULE: Final = "1 to 100 of the letters, digits, '-', '_' and '.' (Pulumi's rule)"
_STACK_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}")
# Lower-case letters, digits and hyphens, first and last a letter or digit: a DNS-1123 label,
# a GCP resource name or label value, an Azure Container Apps name and a Worker script name alike.
_CLOUD_NAME = re.compile(r"[a-z0-9]([a-z0-9-]*[a-z0-9])?")
_DIGEST_LENGTH: Final = 8  # hex digits of SHA-256: 32 bits, for names that had to change


def is_stack_name(stack: str) -> bool:
    """Whether the Pulumi CLI accepts ``stack`` as a stack name (``STACK_NAME_RULE``)."""
    return _STACK_NAME.fullmatch(stack) is not None


def derived_name(prefix: str, stack: str, max_length: int) -> str:
    """``<prefix><stack>`` as a cloud name of at most ``max_length`` characters.

    Unchanged when it already is one (lower-case letters, digits, hyphens; first and last a
    letter or digit). Otherwise the stack name is lower-cased, each run of other characters
    becomes one hyphen, it is cut to fit and ``-<8 hex digits of SHA-256 of the stack name>`` is
    appended, so stacks that differ only in case, punctuation or past the cut keep apart.

    Args:
        prefix: starts with a lower-case letter and ends with ``-`` (``sbx-``, ``sandboxkit-``),
            or is empty.
        stack: any stack name (``is_stack_name``).
        max_length: the cloud's limit for this name, in characters.

    Raises:
        ValueError: when ``max_length`` leaves no room for the prefix and the digest.
    """
    plain = prefix + stack
    if len(plain) <= max_length and _CLOUD_NAME.fullmatch(plain):
        return plain
    digest = hashlib.sha256(stack.encode()).hexdigest()[:_DIGEST_LENGTH]
    room = max_length - len(prefix) - len(digest) - 1
    if room < 0:
        raise ValueError(f"max_length {max_length}: too short for {prefix!r} and a digest")
    body = re.sub(r"[^a-z0-9]+", "-", stack.lower()).strip("-")[:room].rstrip("-")
    return f"{prefix}{body}-{digest}" if body else f"{prefix}{digest}"
