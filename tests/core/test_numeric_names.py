"""Numeric names (newcomer finding F3): a host whose last label is a number is an IPv4 address in
another spelling, by the WHATWG URL Standard's "ends in a number" rule (url.spec.whatwg.org,
host parsing), so it is refused wherever the kit takes a host, never read as a DNS name.

Oracles: glibc's ``inet_aton`` (``socket.inet_aton``) and node's WHATWG ``URL``, the parsers a
target's worker, launcher or Worker dials through."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from sandboxkit.addresses import address_of
from sandboxkit.dns_names import numeric_name_refusal
from sandboxkit.egress_contract import destination_of, parse_rule
from settings_paths import refusal, with_value

HEX_METADATA = "0xa9.0xfe.0xa9.0xfe"


def _decimal() -> st.SearchStrategy[str]:
    return st.integers(0, 2**32 - 1).map(str)


def _hex() -> st.SearchStrategy[str]:
    digits = st.text(alphabet="0123456789abcdefABCDEF", max_size=8)
    return st.tuples(st.sampled_from(["0x", "0X"]), digits).map("".join)


def _octal() -> st.SearchStrategy[str]:
    return st.text(alphabet="01234567", min_size=1, max_size=11).map(lambda d: f"0{d}")


NUMBER = st.one_of(_decimal(), _hex(), _octal())
LABEL = st.from_regex(r"[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)


@given(front=st.lists(LABEL | NUMBER, max_size=3), last=NUMBER, port=st.sampled_from(["", ":443"]))
def test_a_host_ending_in_any_number_form_is_refused_as_numeric(
    front: list[str], last: str, port: str
) -> None:
    host = ".".join([*front, last])
    assume(address_of(host) is None)  # dotted decimal is an IP entry, judged as an address
    with pytest.raises(ValueError, match="is a numeric name: its last label is a number"):
        parse_rule(host + port)
    with pytest.raises(ValueError, match="IP entry in dotted decimal"):
        parse_rule(f"*.{host}{port}")
    assert destination_of(host) is None


@given(
    front=st.lists(LABEL, min_size=1, max_size=3),
    last=st.from_regex(r"0x[0-9a-f]*[g-z][0-9a-z]*|[0-9]+[a-z][a-z0-9]*", fullmatch=True),
)
def test_a_last_label_that_is_not_a_number_is_a_name(front: list[str], last: str) -> None:
    host = ".".join([*front, last])
    assert numeric_name_refusal(host) is None
    assert destination_of(host) == host


@given(parts=st.lists(NUMBER, min_size=1, max_size=4))
def test_the_address_named_is_the_one_inet_aton_reads(parts: list[str]) -> None:
    host = ".".join(parts)
    try:
        expected = socket.inet_ntoa(socket.inet_aton(host))
    except OSError:
        expected = None
    message = numeric_name_refusal(host.lower())
    # Refused whatever inet_aton makes of it (it refuses a bare 0x, which URL parsers read as 0).
    assert message is not None
    if expected is not None:
        assert f"read it as the IPv4 address {expected}, " in message
        assert f"dotted decimal ({expected}), or a DNS name" in message


NODE_CASES = [
    HEX_METADATA,
    "0x8c.0x52.0x70.0x03",
    "0251.0376.0251.0376",
    "127.1",
    "0x7f.1",
    "2370793475",
    "0x",
    "1.2.3.0x",
    "example.0x10",
    "example.0x1g",
    "example.08",
]


@pytest.mark.skipif(shutil.which("node") is None, reason="node is installed by .ci/run")
def test_what_node_url_parses_as_an_address_is_refused_naming_that_address() -> None:
    script = (
        "const out = {};"
        "for (const h of JSON.parse(process.argv[1])) {"
        "  try { out[h] = new URL(`http://${h}/`).hostname; } catch { out[h] = null; } }"
        "console.log(JSON.stringify(out));"
    )
    done = subprocess.run(
        ["node", "-e", script, json.dumps(NODE_CASES)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    parsed: dict[str, str | None] = json.loads(done.stdout)
    assert parsed["example.0x1g"] == "example.0x1g"
    for host, hostname in parsed.items():
        message = numeric_name_refusal(host)
        if hostname == host:
            assert message is None, host
        elif hostname is None:
            assert message is not None and "refusing it as one out of range" in message, host
        else:
            assert message is not None and f"the IPv4 address {hostname}, " in message, host


def test_the_metadata_address_in_hex_is_refused_with_its_dotted_form() -> None:
    with pytest.raises(ValueError) as caught:
        parse_rule(HEX_METADATA)
    assert str(caught.value) == (
        "0xa9.0xfe.0xa9.0xfe is a numeric name: its last label is a number, so URL parsers and "
        "inet_aton read it as the IPv4 address 169.254.169.254, not as a DNS name "
        "(url.spec.whatwg.org, host parsing: the ends-in-a-number checker); write the address "
        "as an IP entry in dotted decimal (169.254.169.254), or a DNS name"
    )


# Every setting that takes a host, set to the hex form from prod (all targets): exit 2 naming it.
@pytest.mark.parametrize(
    ("path", "value", "key"),
    [
        (
            "profile.egress",
            {"mode": "allowlist", "allow": [HEX_METADATA]},
            "profile.egress.allow[0]",
        ),
        (
            "aws-microvm.controlPlaneHosts",
            [f"{HEX_METADATA}:443"],
            "aws-microvm.controlPlaneHosts[0]",
        ),
        ("aws-microvm.controlPlaneUrl", f"https://{HEX_METADATA}/a", "aws-microvm.controlPlaneUrl"),
        ("gcp-cloudrun.cnameTargets", [HEX_METADATA], "gcp-cloudrun.cnameTargets[0]"),
        (
            "cloudflare.routes",
            [{"pattern": HEX_METADATA, "customDomain": True}],
            "cloudflare.routes[0].pattern",
        ),
        (
            "cloudflare.routes",
            [{"pattern": "sandbox.example.com/*", "zoneName": "0x7f.1"}],
            "cloudflare.routes[0].zoneName",
        ),
        (
            "azure-sessions.identity",
            {
                "resourceId": "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups"
                "/rg/providers/Microsoft.ManagedIdentity/userAssignedIdentities/pull",
                "registryServer": f"{HEX_METADATA}:5000",
            },
            "azure-sessions.identity.registryServer",
        ),
    ],
)
def test_every_host_setting_refuses_a_numeric_name_naming_its_key(
    path: str, value: object, key: str
) -> None:
    refused = refusal(with_value(path, value))
    assert refused is not None
    assert refused.keys == (f"sandboxkit:{key}",)
    assert "is a numeric name" in refused.problems[0].expected
    assert "IP entry in dotted decimal" in refused.problems[0].expected
