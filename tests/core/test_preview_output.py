"""What ``sandboxkit preview`` prints: outputs that follow the stack, placeholders named, and
tables that fit the width (plain text when not a terminal)."""

from __future__ import annotations

import io
import re
from pathlib import Path

from rich.console import Console

from sandboxkit.cli import _print_text, print_table
from sandboxkit.config import ConfigSource, read_stack_file
from sandboxkit.egress_contract import parse_rule
from sandboxkit.explain import explain_stack, explanation_document
from sandboxkit.project import stack_file
from sandboxkit.render import placeholder_paths, render_source
from support import render_values, shipped_render, stack_values

BOX_DRAWING = re.compile("[\u2500-\u257f]")
ANSI = "\x1b["


def test_aws_outputs_carry_the_stacks_region_and_differ_per_stack(project_dir: Path) -> None:
    dev = shipped_render(project_dir, "dev")
    values = stack_values(project_dir, "dev")
    values["aws-microvm"] = {
        **values["aws-microvm"],
        "region": "eu-central-1",
        "availabilityZones": ["eu-central-1a"],
    }
    secrets = read_stack_file(stack_file(project_dir, "dev")).secret_paths
    central = render_source(project_dir, "dev", ConfigSource(values, secrets))
    prod = shipped_render(project_dir, "prod")
    dev_aws = dev.outputs["aws-microvm"]
    central_aws = central.outputs["aws-microvm"]
    assert re.fullmatch(
        r"https://[0-9a-f]{10}\.execute-api\.eu-west-1\.amazonaws\.com/launch",
        dev_aws["webhookUrl"],
    )
    assert re.fullmatch(
        r"https://[0-9a-f]{10}\.execute-api\.eu-central-1\.amazonaws\.com/launch",
        central_aws["webhookUrl"],
    )
    # API Gateway ids are random per API: two stacks never share one.
    assert dev_aws["webhookUrl"] != prod.outputs["aws-microvm"]["webhookUrl"]
    for key in ("imageArn", "connectorArn", "firewallArn"):
        assert dev_aws[key].split(":")[3] == "eu-west-1", key
        assert central_aws[key].split(":")[3] == "eu-central-1", key


def test_cloud_run_uri_is_the_deterministic_form_in_the_stacks_region(project_dir: Path) -> None:
    values = stack_values(project_dir, "staging")
    values["gcp-cloudrun"] = {**values["gcp-cloudrun"], "region": "europe-west4"}
    rendered = render_values(project_dir, "staging", values)
    uri = rendered.outputs["gcp-cloudrun"]["serviceUri"]
    assert re.fullmatch(r"https://sbx-staging-launcher-\d{12}\.europe-west4\.run\.app", uri)


def test_placeholders_are_exactly_the_outputs_the_mock_cloud_made_up(project_dir: Path) -> None:
    rendered = shipped_render(project_dir, "dev")
    assert rendered.placeholders == (
        "aws-microvm.webhookUrl",
        "aws-microvm.launcherFunctionName",
        "aws-microvm.imageArn",
        "aws-microvm.connectorArn",
        "aws-microvm.firewallArn",
    )
    # Names the stack's own settings give are real: kubernetes' names, the log group names.
    assert not [p for p in rendered.placeholders if p.startswith("kubernetes.")]


def test_placeholder_paths_walk_lists_and_match_inside_text() -> None:
    outputs = {"a": {"url": "https://x-1a2b.example/launch", "names": ["plain", "id-1a2b"]}}
    assert placeholder_paths(outputs, {"1a2b"}) == ("a.url", "a.names[1]")
    assert placeholder_paths(outputs, set()) == ()


def plain_console(width: int) -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, width=width, no_color=True, color_system=None), buffer


def test_preview_text_piped_is_plain_and_its_tables_fit_the_width(project_dir: Path) -> None:
    console, buffer = plain_console(80)
    _print_text(shipped_render(project_dir, "dev"), console)
    text = buffer.getvalue()
    assert not BOX_DRAWING.search(text)
    assert ANSI not in text
    start = text.index("Enforcement map")
    table = text[start : text.index("Outputs")].splitlines()
    assert max(map(len, table)) <= 80
    assert table[1].split() == ["target", "field", "value", "enforced"]
    assert table[2] == "    where"
    assert table[3].split() == ["kubernetes", "egress.mode", "allowlist", "platform"]
    assert table[4].startswith("    NetworkPolicy for IP entries;")
    assert "placeholders (the cloud computes these at deploy time" in text
    assert "  sandboxkit:index:AgentSandbox  kubernetes\n" in text


def test_a_terminal_gets_a_table_at_its_own_width(project_dir: Path) -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, width=120, force_terminal=True, color_system=None)
    _print_text(shipped_render(project_dir, "dev"), console)
    lines = buffer.getvalue().splitlines()
    assert any(BOX_DRAWING.search(line) for line in lines)
    start = next(i for i, line in enumerate(lines) if "Enforcement map" in line)
    assert max(map(len, lines[start:])) <= 120


def test_plain_table_puts_the_long_column_under_its_row_wrapped() -> None:
    console, buffer = plain_console(30)
    print_table(
        console,
        ("probe", "verdict", "how"),
        [("[::1]:443", "[red]refused[/]", "one two three four five six seven eight nine")],
        below=2,
        title="T",
    )
    assert buffer.getvalue().splitlines() == [
        "T",
        "probe      verdict",
        "    how",
        "[::1]:443  refused",
        "    one two three four five",
        "    six seven eight nine",
    ]


def test_every_explained_probe_names_its_protocol_and_plain_tcp_passes_by_address_only(
    project_dir: Path,
) -> None:
    # The shipped stacks' --explain-egress --json: each probe has a protocol, each name entry
    # (control-plane hosts too) a plain-TCP probe the contract refuses, which a target admits
    # only where it matches names by resolved address (staging's gcp-cloudrun: Cloud NGFW).
    admitted = []
    for stack in ("dev", "staging", "prod"):
        for target in explanation_document(explain_stack(shipped_render(project_dir, stack))):
            probes = target["probes"]
            assert {p["protocol"] for p in probes} <= {"tls", "http", "tcp", "udp"}
            listed = [*target["entries"], *target["controlPlane"]]
            names = [e for e in listed if parse_rule(e).kind != "ip"]
            plain = [p for p in probes if p["kind"] == "plain-tcp"]
            assert [p["origin"] for p in plain] == names
            for probe in plain:
                assert (probe["protocol"], probe["connect"]["contract"]) == ("tcp", False)
                if probe["connect"]["target"]:
                    assert probe["connect"]["enforced"] == ["resolved address only"]
                    admitted.append((stack, target["target"], probe["probe"]))
    assert admitted == [
        ("staging", "gcp-cloudrun", "files.pythonhosted.org:443"),
        ("staging", "gcp-cloudrun", "pypi.org:443"),
    ]
