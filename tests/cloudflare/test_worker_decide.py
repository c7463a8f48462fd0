"""The Python side of decide.mjs: the Worker's own egress code answers, over JSON lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandboxkit.cloudflare import decide
from sandboxkit.cloudflare.decide import Interception, WorkerDecideError, WorkerDecider, WorkerProbe

ALLOWLIST = json.dumps(
    {
        "mode": "allowlist",
        "allow": [
            {"host": "pythonhosted.org", "port": 443, "wildcard": True},
            {"host": "github.com", "port": 80, "wildcard": False},
        ],
    }
)


def dropped(host: str, port: int, shown: str | None = None) -> WorkerProbe:
    where = shown or f"{host}:{port}"
    reason = f"no interception for {where}; enableInternet false drops it"
    return WorkerProbe(host, port, False, "platform", reason, None)


def test_probes_take_the_platform_stage_then_the_gateway(worker_decider: WorkerDecider) -> None:
    probes = [
        ("a.b.c.pythonhosted.org", 443),
        ("pythonhosted.org", 443),
        ("github.com", 80),
        ("github.com", 443),
        ("GitHub.com.", 80),
        ("169.254.169.254", 80),
        ("64:ff9b::a9fe:a9fe", 80),
        ("github.com", 8443),
    ]
    assert worker_decider.probe(ALLOWLIST, probes) == [
        WorkerProbe(
            "a.b.c.pythonhosted.org",
            443,
            True,
            "gateway",
            "a.b.c.pythonhosted.org:443 matches *.pythonhosted.org:443",
            'interceptOutboundHttps("*.pythonhosted.org")',
        ),
        dropped("pythonhosted.org", 443),
        WorkerProbe(
            "github.com",
            80,
            True,
            "gateway",
            "github.com:80 matches github.com:80",
            'interceptOutboundHttp("github.com")',
        ),
        dropped("github.com", 443),
        WorkerProbe(
            "GitHub.com.",
            80,
            True,
            "gateway",
            "github.com:80 matches github.com:80",
            'interceptOutboundHttp("github.com")',
        ),
        dropped("169.254.169.254", 80),
        dropped("64:ff9b::a9fe:a9fe", 80, "[64:ff9b::a9fe:a9fe]:80"),
        WorkerProbe(
            "github.com",
            8443,
            False,
            "platform",
            "port 8443 is never intercepted (only 80 and 443 are); enableInternet false drops it",
            None,
        ),
    ]


def test_open_reaches_the_gateway_which_refuses_non_public(worker_decider: WorkerDecider) -> None:
    [metadata, nat64, public] = worker_decider.probe(
        '{"mode":"open"}',
        [("169.254.169.254", 80), ("[64:ff9b::a9fe:a9fe]", 443), ("pypi.org", 443)],
    )
    assert (metadata.admitted, metadata.stage, metadata.reason) == (
        False,
        "gateway",
        "169.254.169.254:80 is not a public address (169.254.0.0/16)",
    )
    assert (nat64.admitted, nat64.reason) == (
        False,
        "[64:ff9b::a9fe:a9fe]:443 is not a public address (::/8)",
    )
    assert (public.admitted, public.interception) == (True, 'interceptOutboundHttps("*")')


def test_the_gateway_alone_decides_urls(worker_decider: WorkerDecider) -> None:
    urls = ["https://pythonhosted.org/", "https://a.b.pythonhosted.org/", "http://github.com/"]
    assert worker_decider.decide(ALLOWLIST, urls) == [
        (False, "pythonhosted.org:443 is not in the allowlist"),
        (True, "a.b.pythonhosted.org:443 matches *.pythonhosted.org:443"),
        (True, "github.com:80 matches github.com:80"),
    ]


def test_interceptions_per_mode(worker_decider: WorkerDecider) -> None:
    assert worker_decider.interceptions(ALLOWLIST) == [
        Interception("interceptOutboundHttps", "*.pythonhosted.org"),
        Interception("interceptOutboundHttp", "github.com"),
    ]
    assert worker_decider.interceptions('{"mode":"deny","allow":[]}') == []
    assert worker_decider.interceptions('{"mode":"open"}') == [
        Interception("interceptAllOutboundHttp", None),
        Interception("interceptOutboundHttps", "*"),
    ]


def test_without_node_it_says_what_is_missing() -> None:
    with pytest.raises(WorkerDecideError) as caught, WorkerDecider(node="no-such-node-binary"):
        pass
    assert str(caught.value) == (
        "node (20 or later) is needed to run the Worker's egress code; "
        "no-such-node-binary is not on PATH"
    )


def test_without_npm_dependencies_it_names_the_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(decide.WORKER_DIR_ENV, str(tmp_path))
    with pytest.raises(WorkerDecideError) as caught, WorkerDecider():
        pass
    assert str(caught.value) == (
        f"the Worker's npm dependencies are missing: run `npm ci` in {tmp_path}"
    )


def test_outside_a_with_block_it_refuses() -> None:
    with pytest.raises(WorkerDecideError, match="is not running; use it in a with block"):
        WorkerDecider().interceptions('{"mode":"deny"}')


def test_a_process_that_stops_is_reported_with_its_output() -> None:
    # `false` takes decide.mjs as an argument, prints nothing and exits 1.
    with WorkerDecider(node="false") as stopped, pytest.raises(WorkerDecideError) as caught:
        stopped.interceptions('{"mode":"deny"}')
    assert str(caught.value) == "decide.mjs stopped: (no output)"


def test_an_error_answer_is_raised(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    script = tmp_path / "refuse.mjs"
    script.write_text(
        'import { createInterface } from "node:readline";\n'
        "for await (const _ of createInterface({ input: process.stdin })) {\n"
        '  console.error("refusing");\n'
        '  process.stdout.write(JSON.stringify({ error: "unknown op" }) + "\\n");\n'
        "}\n",
        encoding="utf-8",
    )
    monkeypatch.setattr(decide, "DECIDE_SCRIPT", script)
    with WorkerDecider() as refusing, pytest.raises(WorkerDecideError) as caught:
        refusing.contract()
    assert str(caught.value) == "decide.mjs refused the request: unknown op"
