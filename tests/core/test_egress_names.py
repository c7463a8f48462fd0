"""Names in the egress contract: normal form, the kit's lists, and each refused kind."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from sandboxkit import dns_names
from sandboxkit.dns_names import (
    OPEN_CHILD_CATEGORIES,
    PSL_VERSION,
    ListedDomain,
    name_refusal,
    normalize_name,
    open_child_names,
    registrable_domain,
    shared_hosting,
    wildcard_dns,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("PyPI.org.", "pypi.org"),
        ("Bücher.DE", "xn--bcher-kva.de"),
        ("xn--bcher-kva.de", "xn--bcher-kva.de"),
        ("ＥＸＡＭＰＬＥ.com", "example.com"),  # noqa: RUF001 - UTS 46 maps full-width letters
    ],
)
def test_normal_form(text: str, expected: str) -> None:
    assert normalize_name(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("a_b.example.com", "letters, digits and hyphens"),
        ("xn--zz.com", "xn--zz is not a valid A-label"),
        ("a" * 64 + ".com", "letters, digits and hyphens"),
        (".".join(["abcdefghi"] * 26), "letters, digits and hyphens"),  # 259 characters
    ],
)
def test_normal_form_refuses(text: str, fragment: str) -> None:
    with pytest.raises(ValueError) as caught:
        normalize_name(text)
    assert fragment in str(caught.value)


def test_the_lists_load_with_a_source_per_line() -> None:
    hosting, rebinding = shared_hosting(), wildcard_dns()
    assert len(hosting) == 47 and len(rebinding) == 10
    assert all(d.source.startswith("https://") for d in hosting + rebinding)
    assert ListedDomain(
        "storage.googleapis.com",
        True,
        "https://cloud.google.com/storage/docs/request-endpoints",
        "Google Cloud Storage buckets, path-style and virtual-hosted",
    ) in hosting  # fmt: skip
    assert {d.pattern for d in hosting} >= {
        "s3.amazonaws.com", "storage.googleapis.com", "blob.core.windows.net", "r2.dev",
        "github.io", "pages.dev", "netlify.app", "vercel.app", "web.app", "firebaseapp.com",
        "azurewebsites.net", "herokuapp.com", "cloudfront.net", "workers.dev", "ngrok.io",
        "ngrok-free.app", "trycloudflare.com", "loca.lt",
    }  # fmt: skip
    assert {d.pattern for d in rebinding} >= {
        "nip.io", "sslip.io", "xip.io", "traefik.me", "localtest.me", "lvh.me"
    }  # fmt: skip


def test_a_label_pattern_matches_within_one_label() -> None:
    regional = ListedDomain("s3.*.amazonaws.com", True, "https://example.org", "S3")
    assert regional.matches("s3.eu-west-1.amazonaws.com")
    assert not regional.matches("s3.a.b.amazonaws.com")
    assert regional.at_or_below("bucket.s3.eu-west-1.amazonaws.com")
    assert regional.above("amazonaws.com") and regional.above("eu-west-1.amazonaws.com")
    assert not regional.above("s3.eu-west-1.amazonaws.com")


@pytest.mark.parametrize(
    ("host", "wildcard", "fragment"),
    [
        # Shared hosting: every S3 endpoint form, GCS, a wildcard above or below one.
        ("s3.amazonaws.com", True, "s3.amazonaws.com is shared hosting"),
        ("s3.eu-west-1.amazonaws.com", True, "s3.*.amazonaws.com is shared hosting"),
        ("s3-us-west-2.amazonaws.com", True, "s3-*.amazonaws.com is shared hosting"),
        ("s3.dualstack.eu-west-1.amazonaws.com", True, "is shared hosting"),
        ("s3-website.eu-west-1.amazonaws.com", True, "s3-*.*.amazonaws.com is shared hosting"),
        ("amazonaws.com", True, "*.amazonaws.com covers names anyone can publish"),
        ("bucket.s3.amazonaws.com", True, "s3.amazonaws.com is shared hosting"),
        ("storage.googleapis.com", True, "storage.googleapis.com is shared hosting"),
        ("googleapis.com", True, "storage.googleapis.com is shared hosting"),
        ("blob.core.windows.net", True, "Azure Blob Storage accounts"),
        ("r2.dev", True, "Cloudflare R2 public bucket URLs"),
        ("github.io", True, "GitHub Pages"),
        ("ngrok-free.app", True, "ngrok free endpoints"),
        ("trycloudflare.com", True, "Cloudflare Quick Tunnels"),
        # Path-style object storage: the exact name serves anyone's bucket.
        ("storage.googleapis.com", False, "storage.googleapis.com serves anyone's content by path"),
        ("s3.amazonaws.com", False, "s3.amazonaws.com serves anyone's content by path"),
        ("s3.eu-west-1.amazonaws.com", False, "serves anyone's content by path"),
        ("nyc3.digitaloceanspaces.com", False, "serves anyone's content by path"),
        # Wildcard-DNS services: any name under one, and a wildcard over one.
        ("169.254.169.254.nip.io", False, "is a name of nip.io, a wildcard-DNS service"),
        ("10-0-0-1.sslip.io", False, "is a name of sslip.io"),
        ("app.lvh.me", False, "127.0.0.1 for every name"),
        ("nip.io", True, "*.nip.io covers names of nip.io"),
        ("7f000001.c0a80001.rbndr.us", False, "DNS rebinding"),
        # Public suffixes, ICANN and private sections, and names above one.
        ("co.uk", True, "co.uk is a public suffix in the Public Suffix List"),
        ("blogspot.com", True, "blogspot.com is a public suffix"),
        ("compute.amazonaws.com", True, "covers names anyone can publish"),
        ("kawasaki.jp", True, "kawasaki.jp is a public suffix"),
        # Internal names come first.
        ("metadata.google.internal", False, "internal or metadata name"),
    ],
)
def test_each_refused_kind(host: str, wildcard: bool, fragment: str) -> None:
    found = name_refusal(normalize_name(host), wildcard=wildcard)
    assert found is not None and fragment in found


@pytest.mark.parametrize(
    ("host", "wildcard"),
    [
        ("pythonhosted.org", True),
        ("example.com", True),
        ("my-bucket.s3.amazonaws.com", False),
        ("my-bucket.s3.eu-west-1.amazonaws.com", False),
        ("example.github.io", False),
        ("www.googleapis.com", False),
        ("github.com", True),
        ("raw.githubusercontent.com", False),
        ("city.kawasaki.jp", True),  # a PSL exception rule: registrable, one owner
    ],
)
def test_acceptable_entries_are_not_refused(host: str, wildcard: bool) -> None:
    assert name_refusal(normalize_name(host), wildcard=wildcard) is None


def test_the_public_suffix_message_names_the_list_version() -> None:
    assert name_refusal("co.uk", wildcard=True) == (
        "*.co.uk covers names anyone can register: co.uk is a public suffix in the Public "
        f"Suffix List (version {PSL_VERSION}); list each exact name sandboxes need, or a "
        "wildcard over a domain one owner controls"
    )
    assert PSL_VERSION.startswith("20")


def test_registrable_domain() -> None:
    assert registrable_domain("files.pythonhosted.org") == "pythonhosted.org"
    assert registrable_domain("user.github.io") == "user.github.io"
    assert registrable_domain("github.io") is None


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """Every socket operation that could reach a network raises, and is recorded."""
    attempts: list[str] = []

    def refuse(name: str) -> object:
        def raiser(*args: object, **kwargs: object) -> object:
            attempts.append(name)
            raise OSError(f"network disabled in this test ({name})")

        return raiser

    monkeypatch.setattr(socket.socket, "connect", refuse("connect"))
    monkeypatch.setattr(socket.socket, "connect_ex", refuse("connect_ex"))
    monkeypatch.setattr(socket, "getaddrinfo", refuse("getaddrinfo"))
    monkeypatch.setattr(socket, "create_connection", refuse("create_connection"))
    yield attempts


def test_the_public_suffix_list_loads_and_judges_with_networking_off(
    no_network: list[str],
) -> None:
    # Build the list and the names above its rules afresh, with every network call refusing.
    fresh_psl = dns_names._psl.__wrapped__()
    above = dns_names._names_above_suffixes.__wrapped__()
    assert fresh_psl.is_public("github.io") and fresh_psl.is_public("co.uk")
    assert "amazonaws.com" in above and "pythonhosted.org" not in above
    assert name_refusal("github.io", wildcard=True) is not None
    assert no_network == []


# --- parents where anyone can create a child name (data/open-child-names.txt) -----------------


def test_the_open_child_names_list_loads_with_a_category_and_source_per_line() -> None:
    listed = open_child_names()
    assert all("://" in d.source for d in listed)
    by_category = {c: {d.pattern for d in listed if d.category == c} for c in OPEN_CHILD_CATEGORIES}
    assert by_category == {
        "cloud-label": {
            "*.cloudapp.azure.com", "trafficmanager.net", "*.azurecontainerapps.io",
            "awsapprunner.com",
        },
        "request-catcher": {
            "webhook.site", "requestcatcher.com", "m.pipedream.net", "free.beeceptor.com",
            "requestrepo.com",
        },
        "out-of-band": {
            "interact.sh", "oast.pro", "oast.live", "oast.site", "oast.online", "oast.fun",
            "oast.me", "burpcollaborator.net", "oastify.com", "dnslog.cn", "ceye.io",
            "canarytokens.com",
        },
        "app-host": {"modal.run", "koyeb.app", "app.github.dev", "pinggy.link"},
    }  # fmt: skip
    # Each line is a refusal of its own: no earlier kind (PSL, shared hosting ...) already
    # refuses a wildcard over it, so the list is not decoration.
    for domain in listed:
        parent = domain.pattern.replace("*", "eastus")
        found = name_refusal(parent, wildcard=True)
        assert found is not None and "covers names anyone can create" in found, parent


@pytest.mark.parametrize(
    ("entry", "parent", "category"),
    [
        # The four of issue 30 ...
        ("*.cloudapp.azure.com", "*.cloudapp.azure.com", "a cloud's shared domain"),
        ("*.webhook.site", "webhook.site", "a request and webhook catcher"),
        ("*.interact.sh", "interact.sh", "an out-of-band testing service"),
        ("*.modal.run", "modal.run", "a shared application host"),
        # ... and beyond them, at, above and below a parent.
        ("*.eastus.cloudapp.azure.com", "*.cloudapp.azure.com", "a cloud's shared domain"),
        ("*.azure.com", "*.cloudapp.azure.com", "a cloud's shared domain"),
        ("*.trafficmanager.net", "trafficmanager.net", "a cloud's shared domain"),
        ("*.pipedream.net", "m.pipedream.net", "a request and webhook catcher"),
        ("*.oast.fun", "oast.fun", "an out-of-band testing service"),
        ("*.x.oastify.com", "oastify.com", "an out-of-band testing service"),
        ("*.app.github.dev", "app.github.dev", "a shared application host"),
        # The catcher's own name serves anyone's catcher by path.
        ("webhook.site", "webhook.site", "a request and webhook catcher"),
    ],
)
def test_wildcards_over_open_child_names_are_refused_as_one_kind(
    entry: str, parent: str, category: str
) -> None:
    wildcard = entry.startswith("*.")
    found = name_refusal(entry.removeprefix("*."), wildcard=wildcard)
    assert found is not None
    assert found.startswith(f"{entry} ") and "anyone can create" in found
    assert f": {parent} is {category}" in found
    assert "list each exact name sandboxes need" in found


@pytest.mark.parametrize(
    "host",
    [
        "myvm.eastus.cloudapp.azure.com",
        "0c8e-token.webhook.site",
        "abc123.oast.fun",
        "me--app-web.modal.run",
        "eoabc.m.pipedream.net",
        "pipedream.net",
    ],
)
def test_exact_names_below_an_open_parent_stay_allowed(host: str) -> None:
    assert name_refusal(host, wildcard=False) is None


def test_a_wildcard_over_an_open_parent_exits_2_naming_entry_reason_and_fix(
    tmp_path: pytest.TempPathFactory,
) -> None:
    from pathlib import Path

    from typer.testing import CliRunner

    from sandboxkit import cli

    project = Path(str(tmp_path))
    (project / "Pulumi.yaml").write_text("name: sandboxkit\nruntime: python\n")
    (project / "Pulumi.t.yaml").write_text(
        "config:\n  sandboxkit:environment: dev\n  sandboxkit:targets: [kubernetes]\n"
        "  sandboxkit:profile:\n    egress:\n      mode: allowlist\n"
        "      allow: ['pypi.org:443', '*.interact.sh:443']\n"
    )
    result = CliRunner().invoke(cli.app, ["preview", "--stack", "t", "--project-dir", str(project)])
    assert result.exit_code == 2, result.output
    assert "sandboxkit:profile.egress.allow[1]: got '*.interact.sh:443'" in result.stderr
    assert "an out-of-band testing service" in result.stderr
    assert "list each exact name sandboxes need" in result.stderr
    assert "Traceback" not in result.stderr
