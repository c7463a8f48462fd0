"""The Worker's copies of names that cross the kit/Worker boundary equal sandboxkit.boundary's.

``worker/src/index.js`` cannot import Python, so it keeps copies; the Worker itself reports them
(the decider's ``contract``), so these tests read what the running code uses, not its text.
"""

from __future__ import annotations

import json
import re
from ipaddress import IPv4Network

from sandboxkit import boundary
from sandboxkit.addresses import registry_rows
from sandboxkit.cloudflare.decide import WorkerDecider
from sandboxkit.cloudflare.plan import COMPATIBILITY_FLAGS
from sandboxkit.cloudflare.spec import MAX_TOKEN_LIFETIME_SECONDS, WORKER_MODULE


def test_binding_names_are_the_contracts(worker_decider: WorkerDecider) -> None:
    assert worker_decider.contract()["bindings"] == {
        "sandbox": boundary.DURABLE_OBJECT_BINDING,
        "tokenKey": boundary.JWT_SIGNING_KEY_BINDING,
        "tokenIssuer": boundary.JWT_ISSUER_BINDING,
        "tokenAudience": boundary.JWT_AUDIENCE_BINDING,
        "tokenMaxLifetime": boundary.JWT_MAX_LIFETIME_BINDING,
        "sandboxIdKey": boundary.SANDBOX_ID_KEY_BINDING,
        "egressPolicy": boundary.EGRESS_POLICY_BINDING,
        "idleTimeout": boundary.IDLE_TIMEOUT_BINDING,
        "maxLifetime": boundary.MAX_LIFETIME_BINDING,
        "execTimeout": boundary.EXEC_TIMEOUT_BINDING,
    }


def test_the_durable_object_class_is_exported_under_the_contracts_name(
    worker_decider: WorkerDecider,
) -> None:
    assert worker_decider.contract()["classes"] == sorted(
        [boundary.DURABLE_OBJECT_CLASS, "EgressGateway"]
    )


def test_non_public_blocks_are_the_contracts(worker_decider: WorkerDecider) -> None:
    copies = worker_decider.contract()
    assert copies["nonPublicIpv4"] == list(boundary.NON_PUBLIC_IPV4)
    assert copies["nonPublicIpv6"] == list(boundary.NON_PUBLIC_IPV6)


def test_public_rows_inside_non_public_ipv4_blocks_are_the_registrys(
    worker_decider: WorkerDecider,
) -> None:
    # An ISATAP identifier's IPv4 address is judged by its own row (sandboxkit.addresses).
    blocks = [IPv4Network(text) for text in boundary.NON_PUBLIC_IPV4]
    public_inside = [
        str(row.network)
        for row in registry_rows()
        if isinstance(row.network, IPv4Network)
        and row.public
        and any(row.network.subnet_of(block) for block in blocks)
    ]
    assert worker_decider.contract()["publicInsideNonPublicIpv4"] == public_inside


def test_internal_suffixes_are_the_contracts(worker_decider: WorkerDecider) -> None:
    assert worker_decider.contract()["internalSuffixes"] == list(boundary.INTERNAL_SUFFIXES)


def test_the_workers_token_lifetime_bound_is_the_kits(worker_decider: WorkerDecider) -> None:
    limits = worker_decider.contract()["tokenLimits"]
    # The settings refuse more (test_cloudflare_target's tokenMaxLifetimeSeconds rows).
    assert limits["maxLifetimeSeconds"] == MAX_TOKEN_LIFETIME_SECONDS


def test_the_worker_reads_bindings_only_through_its_bindings_table() -> None:
    # A literal env.NAME or env["NAME"] would be a copy the tests above cannot see; `name` is
    # readSecret's and readSeconds' parameter, which callers pass from BINDINGS.
    source = WORKER_MODULE.read_text(encoding="utf-8")
    assert re.findall(r"\benv\.[A-Z_]+", source) == []
    subscripts = set(re.findall(r"\benv\[([^\]]+)\]", source))
    assert subscripts == {"name", "BINDINGS.sandbox", "BINDINGS.egressPolicy"}
    assert set(re.findall(r"read(?:Secret|Seconds)\(env, ([^,)]+)", source)) == {
        "name",
        "BINDINGS.sandboxIdKey",
        "BINDINGS.tokenKey",
        "BINDINGS.tokenMaxLifetime",
    }


def test_the_worker_tests_run_with_the_flags_the_kit_deploys() -> None:
    helpers = WORKER_MODULE.parents[1] / "test-support" / "helpers.mjs"
    found = re.search(r"export const COMPATIBILITY_FLAGS = (\[[^\]]*\]);", helpers.read_text())
    assert found is not None
    assert tuple(json.loads(found.group(1))) == COMPATIBILITY_FLAGS
