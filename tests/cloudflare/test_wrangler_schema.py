"""The generated wrangler config against wrangler itself: its own JSON schema
(``config-schema.json`` of the installed wrangler package) and ``wrangler deploy --dry-run``,
for every shipped and example stack that lists the cloudflare target."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest

from sandboxkit.cloudflare.decide import worker_dir
from support import invoke_cli, kit_program

ROOT = Path(__file__).resolve().parents[2]
WRANGLER = worker_dir() / "node_modules" / "wrangler"
STACKS = [("prod", ROOT), ("try-cloudflare", None)]


@pytest.fixture(scope="module")
def configs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """stack -> the wrangler.jsonc ``sandboxkit cloudflare-config`` wrote for it."""
    examples = tmp_path_factory.mktemp("examples")
    shutil.copy(ROOT / "Pulumi.yaml", examples / "Pulumi.yaml")
    kit_program(examples)
    (examples / "stacks").mkdir()
    shutil.copy(
        ROOT / "docs" / "examples" / "cloudflare.yaml",
        examples / "stacks" / "Pulumi.try-cloudflare.yaml",
    )
    out_dir = tmp_path_factory.mktemp("wrangler")
    written = {}
    for stack, root in STACKS:
        out = out_dir / stack / "wrangler.jsonc"
        out.parent.mkdir()
        ran = invoke_cli(
            "cloudflare-config",
            "--stack",
            stack,
            "--out",
            str(out),
            "--project-dir",
            str(root or examples),
            cwd=ROOT,
        )
        assert ran.returncode == 0, ran.stderr
        written[stack] = out
    return written


def _schema() -> dict[str, object]:
    schema = json.loads((WRANGLER / "config-schema.json").read_text())
    assert isinstance(schema, dict)
    return schema


@pytest.mark.parametrize("stack", [stack for stack, _ in STACKS])
def test_the_config_validates_against_wranglers_own_schema(
    configs: dict[str, Path], stack: str
) -> None:
    schema = _schema()
    config = json.loads(configs[stack].read_text())
    jsonschema.validate(config, schema, cls=jsonschema.Draft7Validator)
    # The schema is wrangler's, not a loose one: a misspelt key fails it.
    with pytest.raises(jsonschema.ValidationError, match="'max_instance' was unexpected"):
        broken = {**config, "containers": [{**config["containers"][0], "max_instance": 1}]}
        broken["containers"][0].pop("max_instances")
        jsonschema.validate(broken, schema, cls=jsonschema.Draft7Validator)


def test_every_route_shape_validates_against_wranglers_schema(
    configs: dict[str, Path],
) -> None:
    # The example stack has a custom domain; the other shapes the routes setting renders.
    config = json.loads(configs["try-cloudflare"].read_text())
    assert config["routes"] == [{"pattern": "sandbox.example.com", "custom_domain": True}]
    config["routes"] += [
        {"pattern": "sandbox.example.net", "custom_domain": True, "zone_name": "example.net"},
        {"pattern": "*.example.com/run/*", "zone_name": "example.com"},
        {"pattern": "api.example.org/sandbox*", "zone_id": "f" * 32},
    ]
    schema = _schema()
    jsonschema.validate(config, schema, cls=jsonschema.Draft7Validator)
    with pytest.raises(jsonschema.ValidationError):
        wrong = {**config, "routes": [{"pattern": "x.example.com/*", "zone": "example.com"}]}
        jsonschema.validate(wrong, schema, cls=jsonschema.Draft7Validator)


def test_wrangler_deploy_dry_run_accepts_the_prod_config(
    configs: dict[str, Path], tmp_path: Path
) -> None:
    # wrangler 4.164 asks for Node >= 22 and warns on Node 20; --dry-run still builds and checks
    # the config, bindings and containers without uploading anything.
    env = {**os.environ, "WRANGLER_SEND_METRICS": "false", "CI": "1"}
    ran = subprocess.run(
        [
            "node",
            str(WRANGLER / "wrangler-dist" / "cli.js"),
            "deploy",
            "--dry-run",
            "--config",
            str(configs["prod"]),
            "--outdir",
            str(tmp_path / "out"),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "env.SANDBOX (Sandbox)" in ran.stdout
    assert "Durable Object" in ran.stdout
    assert "--dry-run: exiting now." in ran.stdout
    assert (
        "sandboxkit-prod-sandbox (registry.cloudflare.com/00000000000000000000000000000000/"
        "agent-python-sandbox@sha256:f3489ae353880d468484dec67df602fb8d5393913d56c97ded44835a7e9f1d38)"
        in ran.stdout
    )
