"""Session identifiers derived per tenant and conversation (sandboxkit.azure.session_ids)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandboxkit.azure.session_ids import API_IDENTIFIER, session_identifier

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
names = st.text(min_size=1, max_size=200)


def test_known_answer_pins_the_derivation() -> None:
    # A change to the encoding would silently move every caller to new, empty sessions.
    assert session_identifier(KEY, "acme", "conv-1") == (
        "sbx-y5w27qtwc4ywbbnw56arj43aonywbvbsakyhux5a6lipihbukdaq"
    )


@given(tenant=names, conversation=names)
def test_format_fits_the_api_rule(tenant: str, conversation: str) -> None:
    identifier = session_identifier(KEY, tenant, conversation)
    assert re.fullmatch(r"sbx-[a-z2-7]{52}", identifier)
    assert API_IDENTIFIER.fullmatch(identifier)


@given(tenant=names, conversation=names)
def test_stable_for_the_same_inputs(tenant: str, conversation: str) -> None:
    assert session_identifier(KEY, tenant, conversation) == session_identifier(
        KEY, tenant, conversation
    )


@given(a=st.tuples(names, names), b=st.tuples(names, names))
def test_distinct_tenants_or_conversations_never_collide(
    a: tuple[str, str], b: tuple[str, str]
) -> None:
    if a != b:
        assert session_identifier(KEY, *a) != session_identifier(KEY, *b)


def test_field_boundaries_are_unambiguous() -> None:
    assert session_identifier(KEY, "a:b", "c") != session_identifier(KEY, "a", "b:c")
    assert session_identifier(KEY, "ab", "c") != session_identifier(KEY, "a", "bc")
    assert session_identifier(KEY, "t", "c") != session_identifier(KEY, "c", "t")


@given(tenant=names, conversation=names)
def test_another_key_gives_an_unrelated_identifier(tenant: str, conversation: str) -> None:
    assert session_identifier(KEY, tenant, conversation) != session_identifier(
        OTHER_KEY, tenant, conversation
    )


@pytest.mark.parametrize(
    ("key", "tenant", "conversation", "error", "message"),
    [
        (b"short", "t", "c", ValueError, "key: at least 32 bytes expected, got 5"),
        (bytes(31), "t", "c", ValueError, "key: at least 32 bytes expected, got 31"),
        ("x" * 32, "t", "c", TypeError, "key: bytes expected, got str"),
        (KEY, "", "c", ValueError, "tenant: a non-empty string expected"),
        (KEY, "t", "", ValueError, "conversation: a non-empty string expected"),
        (KEY, 7, "c", TypeError, "tenant: str expected, got int"),
        (KEY, "t", None, TypeError, "conversation: str expected, got NoneType"),
    ],
)
def test_bad_input_is_refused(
    key: object, tenant: object, conversation: object, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=f"^{re.escape(message)}$"):
        session_identifier(key, tenant, conversation)  # type: ignore[arg-type]
