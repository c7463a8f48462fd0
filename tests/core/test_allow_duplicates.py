"""Allowlist entries that are one entry once normalised, and names holding invisible characters
(newcomer finding F5): exit 2 naming both indices and the normal form, like a target listed
twice; an invisible format character is refused, never dropped by IDNA's mapping."""

from __future__ import annotations

import pytest

from sandboxkit.egress_contract import parse_rule
from sandboxkit.profile import Egress
from settings_paths import refusal, with_value

KEY = "sandboxkit:profile.egress.allow"


def _refused(allow: list[str]) -> tuple[tuple[str, ...], str]:
    refused = refusal(with_value("profile.egress", {"mode": "allowlist", "allow": allow}))
    assert refused is not None, allow
    return refused.keys, refused.problems[0].expected


@pytest.mark.parametrize(
    ("allow", "normal"),
    [
        (["github.com:443", "GITHUB.com."], "github.com:443"),
        (["github.com", "\uff47\uff49\uff54\uff48\uff55\uff42.com"], "github.com:443"),
        (["xn--bcher-kva.de", "bücher.de"], "xn--bcher-kva.de:443"),
        (["*.example.com:8443", "*.Example.COM.:8443"], "*.example.com:8443"),
        (["140.82.112.3", "140.82.112.3:443"], "140.82.112.3:443"),
        (["[2001:4860::8888]", "[2001:4860:0:0::8888]:443"], "[2001:4860::8888]:443"),
        (["pypi.org", "pypi.org"], "pypi.org:443"),
    ],
)
def test_a_repeat_once_normalised_exits_2_naming_both_indices(
    allow: list[str], normal: str
) -> None:
    keys, expected = _refused(allow)
    assert keys == (f"{KEY}[1]",)
    assert expected == (
        f"each entry listed once: allow[0] {allow[0]!r} and allow[1] {allow[1]!r} are both "
        f"{normal} once normalised (case, trailing dot, IDNA A-label, default port 443); "
        "remove one"
    )


def test_the_same_name_on_two_ports_is_two_entries() -> None:
    egress = Egress.model_validate({"mode": "allowlist", "allow": ["pypi.org", "PyPI.org:80"]})
    assert egress.allow == (parse_rule("pypi.org:80"), parse_rule("pypi.org:443"))


@pytest.mark.parametrize(
    ("host", "code"),
    [
        ("github.com\u200b", "U+200B ZERO WIDTH SPACE"),
        ("git\u00adhub.com", "U+00AD SOFT HYPHEN"),
        ("\ufeffgithub.com", "U+FEFF ZERO WIDTH NO-BREAK SPACE"),
        ("git\u2060hub.com", "U+2060 WORD JOINER"),
        ("a\u200db.example.com", "U+200D ZERO WIDTH JOINER"),
        ("b\u00fccher\u200c.de", "U+200C ZERO WIDTH NON-JOINER"),
    ],
)
def test_an_invisible_format_character_is_refused_not_dropped(host: str, code: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_rule(host)
    assert str(caught.value) == (
        f"the name holds {code}, an invisible format character (Unicode category Cf); IDNA's "
        "UTS #46 mapping (unicode.org/reports/tr46, the one the idna library applies) deletes "
        "some such characters (U+200B, U+00AD, U+FEFF are 'ignored') and keeps others "
        "(U+200C, U+200D), so the name read would not be the name written; write the name "
        "without it, or its A-label (xn--...) where the character belongs to the name"
    )
    keys, expected = _refused([host])
    assert keys == (f"{KEY}[0]",) and code in expected
