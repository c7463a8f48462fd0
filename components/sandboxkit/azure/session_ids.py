"""Session identifiers for Azure Container Apps dynamic sessions, derived per tenant and
conversation with an HMAC (runtime helper for the caller's application; no Pulumi).

Why: the pool management API creates a session for any identifier it has not seen, and every
caller that holds an identifier shares that session's files and environment
(learn.microsoft.com/azure/container-apps/sessions#security, "Protect session identifiers").
An identifier built from guessable parts (a user id, a conversation number) lets one tenant
reach another's session. ``session_identifier`` makes identifiers that are

- unguessable without the key: HMAC-SHA256 keyed by a secret of at least 32 bytes;
- stable: the same key, tenant and conversation always give the same identifier, so a
  conversation keeps its session;
- separate: tenants and conversations never collide (inputs are length-prefixed, so
  ``("a:b", "c")`` and ``("a", "b:c")`` differ) and a different key gives unrelated ids;
- valid: ``sbx-`` plus 52 lower-case base32 characters (56 in all), within the API's rule of
  4 to 128 letters, digits and ``| - & ^ % $ # ( ) { } [ ] ; < >``
  (learn.microsoft.com/azure/container-apps/sessions-usage#identifiers).

Example::

    identifier = session_identifier(key, tenant="acme", conversation=conversation_id)
    requests.post(f"{endpoint}/code/execute", params={"identifier": identifier, ...})

Never let end users supply or see identifiers; rotate the key to orphan every session.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

PREFIX = "sbx-"
# 256-bit keys: as long as the HMAC-SHA256 output, so the key is never the weak link.
MIN_KEY_BYTES = 32
# Separates this use of the key from any other use of the same secret.
_DOMAIN = b"sandboxkit/azure-sessions/session-id/v1"
# The API's identifier rule (sessions-usage#identifiers): 4 to 128 of these characters.
API_IDENTIFIER = re.compile(r"^[A-Za-z0-9|\-&^%$#(){}\[\];<>]{4,128}$")


def _field(value: str) -> bytes:
    data = value.encode("utf-8")
    return len(data).to_bytes(8, "big") + data


def session_identifier(key: bytes, tenant: str, conversation: str) -> str:
    """The session identifier for one tenant's conversation.

    Args:
        key: the secret HMAC key, at least ``MIN_KEY_BYTES`` (32) bytes, from the caller's
            secret store (never from the sandbox or the end user).
        tenant: the authenticated tenant (or user) id; non-empty.
        conversation: the conversation (or agent run) id within the tenant; non-empty.

    Returns:
        ``"sbx-"`` followed by 52 lower-case base32 characters (``[a-z2-7]``), 56 in all.

    Raises:
        TypeError: when ``key`` is not bytes or ``tenant``/``conversation`` are not str.
        ValueError: when ``key`` is shorter than 32 bytes or ``tenant``/``conversation``
            are empty.
    """
    if not isinstance(key, bytes):
        raise TypeError(f"key: bytes expected, got {type(key).__name__}")
    if len(key) < MIN_KEY_BYTES:
        raise ValueError(f"key: at least {MIN_KEY_BYTES} bytes expected, got {len(key)}")
    for name, value in (("tenant", tenant), ("conversation", conversation)):
        if not isinstance(value, str):
            raise TypeError(f"{name}: str expected, got {type(value).__name__}")
        if not value:
            raise ValueError(f"{name}: a non-empty string expected")
    digest = hmac.new(key, _DOMAIN + _field(tenant) + _field(conversation), hashlib.sha256).digest()
    return PREFIX + base64.b32encode(digest).decode("ascii").rstrip("=").lower()
