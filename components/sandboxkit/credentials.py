"""What a credential looks like: the shapes SBX-SEC-002 finds in resource inputs, and the
redaction every problem message applies before it shows a value the stack wrote.

One table for both, so a value the gate would call a credential is never printed by a refusal.
"""

from __future__ import annotations

import re

CREDENTIAL_SHAPES: dict[str, re.Pattern[str]] = {
    "an AWS access key id": re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),
    "a private key": re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    "a GitHub token": re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b"),
    "a Slack token": re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"),
    "a Google API key": re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"),
    "an API secret key": re.compile(r"\bsk-[A-Za-z0-9_-]{20,}"),
    "a JSON Web Token": re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"),
}
"""Label (``"a GitHub token"``) -> the pattern a credential of that kind matches."""

# scheme://userinfo@host...: the userinfo (user:password) of a URL is a credential whatever it
# holds (RFC 3986 section 3.2.1 deprecates a password there for this reason); without a scheme,
# user:password@host (a user name alone before @ is an e-mail address's shape, not redacted).
# A scheme is tried only from the start of a run of scheme characters (the lookbehind), its
# first letter found by skipping the digits and + . - before it: the same leftmost match as
# trying every letter, in time linear in the text (tried from every letter, a long run without
# "://" was scanned again from each: 500,000 letters took over a minute).
_USERINFO = re.compile(
    r"(?P<head>(?<![A-Za-z0-9+.-])[0-9+.-]*[A-Za-z][A-Za-z0-9+.-]*://)[^/?#@\s]+@"
    r"|^[^/?#@\s:]+:[^/?#@\s]+@"
)


def credential_kind(text: str) -> str | None:
    """The label of the first ``CREDENTIAL_SHAPES`` entry ``text`` holds, else ``None``."""
    return next((label for label, shape in CREDENTIAL_SHAPES.items() if shape.search(text)), None)


def redacted(text: str) -> str:
    """``text`` safe to print: a URL's userinfo replaced by ``***``
    (``https://***@agents.example.com/api``, ``***@host`` for ``user:password@host``), then,
    when what is left still holds a credential shape, the whole text replaced by
    ``[value not shown: looks like <label>]``."""
    shown = _USERINFO.sub(lambda m: f"{m['head'] or ''}***@", text)
    kind = credential_kind(shown)
    return f"[value not shown: looks like {kind}]" if kind is not None else shown
