"""``sdk_parts``: an offline render imports only the SDK modules it names, and renders exactly
what the whole SDK renders. This test process has imported the SDKs already (partly:
tests/conftest.py installs the partial packages before collection), so what happens to a fresh
interpreter is asked of one (a single process for every fact below)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pulumi_cloudflare
import pulumi_gcp
import pytest

from sandboxkit import sdk_parts

PROJECT_DIR = Path(__file__).resolve().parents[2]
COMPONENTS = PROJECT_DIR / "components"

FRESH_INTERPRETER = """
import json, sys
from pathlib import Path
from sandboxkit.render import render_stack

facts = {}
rendered = render_stack(Path(sys.argv[1]), "prod")
facts["resources"] = [r.display() for r in rendered.resources]
for prefix in ("pulumi_cloudflare", "pulumi_gcp.compute", "pulumi_aws.ec2"):
    facts[prefix] = sorted(m for m in sys.modules if m == prefix or m.startswith(prefix + "."))
package = sys.modules["pulumi_cloudflare"]
facts["init_ran_after_render"] = "__getattr__" not in vars(package)
compute = sys.modules["pulumi_gcp.compute"]
facts["compute_init_ran_after_render"] = "__getattr__" not in vars(compute)
# The SDK's own lazy top-level package hands out the module installed here.
import pulumi_gcp
facts["compute_is_the_parents"] = pulumi_gcp.compute is compute

from pulumi_cloudflare.workers_script import WorkersScript
# A name that is not one of its modules: the package's own __init__ runs, in place.
access = package.AccessApplication
facts["init_ran_on_a_name"] = "__getattr__" not in vars(package)
facts["same_object_in_place"] = sys.modules["pulumi_cloudflare"] is package
its_module = sys.modules["pulumi_cloudflare.access_application"]
facts["name_from_its_module"] = access is its_module.AccessApplication
facts["earlier_class_kept"] = package.WorkersScript is WorkersScript
try:
    package.NoSuchName
except AttributeError as error:
    facts["missing_name"] = str(error)

# Each partial package whole (its own __init__ run in place by a name that is no module of
# it), then prod rendered again: what the whole SDKs render.
import pulumi_aws
pulumi_gcp.compute.Network, pulumi_aws.ec2.Vpc
facts["inits_ran"] = [
    "__getattr__" not in vars(sys.modules[name])
    for name in ("pulumi_cloudflare", "pulumi_gcp.compute", "pulumi_aws.ec2")
]
whole = render_stack(Path(sys.argv[1]), "prod")
facts["whole_resources"] = [r.display() for r in whole.resources]
print(json.dumps(facts))
"""


@pytest.fixture(scope="module")
def fresh() -> dict[str, Any]:
    """What a fresh interpreter that renders prod offline reports (``FRESH_INTERPRETER``)."""
    result = subprocess.run(
        [sys.executable, "-c", FRESH_INTERPRETER, str(PROJECT_DIR)],
        env={**os.environ, "PYTHONPATH": str(COMPONENTS), "PYTHONWARNINGS": "ignore"},
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    facts: dict[str, Any] = json.loads(result.stdout)
    return facts


def test_a_render_loads_only_the_sdk_modules_the_kit_names(fresh: dict[str, Any]) -> None:
    # The Worker script, workers.dev switch included, is wrangler's (a dynamic resource): no
    # resource module of pulumi-cloudflare loads, only the package's partial root.
    assert fresh["pulumi_cloudflare"] == ["pulumi_cloudflare"]
    assert fresh["init_ran_after_render"] is False
    assert fresh["pulumi_gcp.compute"] == [
        "pulumi_gcp.compute",
        "pulumi_gcp.compute._inputs",
        "pulumi_gcp.compute.network",
        "pulumi_gcp.compute.network_firewall_policy",
        "pulumi_gcp.compute.network_firewall_policy_association",
        "pulumi_gcp.compute.network_firewall_policy_rule",
        "pulumi_gcp.compute.outputs",
        "pulumi_gcp.compute.router",
        "pulumi_gcp.compute.router_nat",
        "pulumi_gcp.compute.subnetwork",
    ]
    assert fresh["compute_init_ran_after_render"] is False
    assert fresh["pulumi_aws.ec2"] == [
        "pulumi_aws.ec2",
        "pulumi_aws.ec2._enums",
        "pulumi_aws.ec2._inputs",
        "pulumi_aws.ec2.eip",
        "pulumi_aws.ec2.flow_log",
        "pulumi_aws.ec2.internet_gateway",
        "pulumi_aws.ec2.nat_gateway",
        "pulumi_aws.ec2.outputs",
        "pulumi_aws.ec2.route",
        "pulumi_aws.ec2.route_table",
        "pulumi_aws.ec2.route_table_association",
        "pulumi_aws.ec2.security_group",
        "pulumi_aws.ec2.subnet",
        "pulumi_aws.ec2.vpc",
    ]
    assert fresh["compute_is_the_parents"] is True


def test_the_partial_render_is_the_whole_sdks_render(fresh: dict[str, Any]) -> None:
    assert fresh["inits_ran"] == [True, True, True]
    assert len(fresh["resources"]) > 100
    assert fresh["resources"] == fresh["whole_resources"]


def test_a_name_that_is_no_module_runs_the_packages_init_in_place(fresh: dict[str, Any]) -> None:
    assert fresh["init_ran_after_render"] is False
    assert fresh["init_ran_on_a_name"] is True
    assert fresh["same_object_in_place"] is True
    assert fresh["name_from_its_module"] is True
    assert fresh["earlier_class_kept"] is True
    assert fresh["missing_name"] == "module 'pulumi_cloudflare' has no attribute 'NoSuchName'"


def test_an_imported_or_missing_package_is_left_alone() -> None:
    sdk_parts.import_parts_only("pulumi_cloudflare")
    assert sys.modules["pulumi_cloudflare"] is pulumi_cloudflare
    compute = sys.modules["pulumi_gcp.compute"]
    sdk_parts.import_parts_only("pulumi_gcp.compute")
    assert sys.modules["pulumi_gcp.compute"] is compute is pulumi_gcp.compute
    # A subpackage whose parent is imported: the parent put its own lazy module there.
    lazy = sys.modules["pulumi_gcp.bigquery"]
    sdk_parts.import_parts_only("pulumi_gcp.bigquery")
    assert sys.modules["pulumi_gcp.bigquery"] is lazy
    sdk_parts.import_parts_only("no_such_sdk_package")
    assert "no_such_sdk_package" not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        __import__("no_such_sdk_package")
