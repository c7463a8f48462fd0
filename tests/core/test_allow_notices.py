"""Allowlist entries the contract rewrites (case, trailing dot, spaces, non-ASCII names, long
IPv6 forms) are named in a notice, never changed silently (a repeat once normalised exits 2:
``test_allow_duplicates``)."""

from __future__ import annotations

from pathlib import Path

from sandboxkit.config import ConfigSource
from sandboxkit.egress_contract import normalisation_notices
from sandboxkit.render import render_source

KEY = "sandboxkit:profile.egress.allow"


def test_each_rewritten_entry_is_named_with_what_it_became() -> None:
    entries = [
        "PyPI.org.",
        " pypi.org:443",
        "Bücher.de",
        "files.pythonhosted.org",
        "[2001:4860:0:0::8888]:443",
        "*.Example.com",
    ]
    assert normalisation_notices(entries, KEY) == [
        f"{KEY}[0] 'PyPI.org.' is read as 'pypi.org' (lower-cased, trailing dot dropped)",
        f"{KEY}[1] ' pypi.org:443' is read as 'pypi.org' (surrounding spaces dropped)",
        f"{KEY}[2] 'Bücher.de' is read as 'xn--bcher-kva.de', its IDNA A-label (what DNS and "
        "the clouds' rules match); write 'xn--bcher-kva.de' so the stack says what is enforced",
        f"{KEY}[4] '[2001:4860:0:0::8888]:443' is read as '2001:4860::8888' (address written "
        "in compressed form)",
        f"{KEY}[5] '*.Example.com' is read as '*.example.com' (lower-cased)",
    ]


def test_entries_written_as_read_and_refused_entries_get_no_notice() -> None:
    written = ["pypi.org", "*.pythonhosted.org:443", "203.0.113.7:8443", "[2001:4860::8888]"]
    assert normalisation_notices(written, KEY) == []
    # Refusals are the parser's to report (exit 2); not a list: nothing to say.
    assert normalisation_notices(["10.0.0.1", 5, "*"], KEY) == []
    assert normalisation_notices("pypi.org", KEY) == []


def test_preview_warns_about_a_rewritten_entry(project_dir: Path) -> None:
    values = {
        "environment": "dev",
        "targets": ["kubernetes"],
        "profile": {"egress": {"mode": "allowlist", "allow": ["PyPI.org", "pypi.org:80"]}},
        "kubernetes": {
            "context": "kind-test",
            "image": "example.com/sandbox:1",
            "fqdnPolicy": "cilium",
            "resolver": {"image": "example.com/resolver@sha256:" + "a" * 64},
        },
    }
    # A stack named dev: sandboxkit.yaml maps it to the environment the values give.
    rendered = render_source(project_dir, "dev", ConfigSource(values=values))
    assert [w for w in rendered.warnings if KEY in w] == [
        f"{KEY}[0] 'PyPI.org' is read as 'pypi.org' (lower-cased)",
    ]
