"""The azure-sessions reader: the pool's network status, and the component's renders against
the egress contract."""

from __future__ import annotations

from typing import Any

import pytest

from sandboxkit.azure.egress_reader import NETWORK_DOC, read_egress
from sandboxkit.effective_egress import ResourceView, compare, contract_probes, derive_probes
from sandboxkit.egress_contract import EgressContract
from sandboxkit.render import Recorder
from support import build_target, udp_of

POOL = "azure-native:app:ContainerAppsSessionPool"
SETTINGS = {
    "subscriptionId": "00000000-0000-0000-0000-000000000000",
    "location": "westeurope",
    "resourceGroupName": "sandboxes",
    "createResourceGroup": True,
    "executors": [{"principalId": "11111111-1111-1111-1111-111111111111", "principalType": "User"}],
}


def pool(**props: Any) -> ResourceView:
    return ResourceView.of(POOL, "pool", props)


def test_egress_disabled_grants_nothing() -> None:
    effective = read_egress([pool(sessionNetworkConfiguration={"status": "EgressDisabled"})])
    assert (effective.connect, effective.resolve) == ((), ())
    assert effective.admits("169.254.169.254", 80, "http").admitted is False
    assert effective.resolves("x.attacker.example").admitted is False


@pytest.mark.parametrize(
    "props",
    [
        {"sessionNetworkConfiguration": {"status": "EgressEnabled"}},
        {"sessionNetworkConfiguration": {}},
        {},
        {"sessionNetworkConfiguration": {"status": "egressdisabled"}},
    ],
)
def test_anything_but_egress_disabled_opens_everything(props: dict[str, Any]) -> None:
    effective = read_egress([pool(**props)])
    for host, port in (("151.101.0.223", 8443), ("2606:4700::1111", 22), ("a.example.com", 25)):
        verdict = effective.admits(host, port, "tls")
        assert verdict.admitted is True
        assert {g.source for g in verdict.grants} == {NETWORK_DOC}
    assert effective.resolves("x.attacker.example").admitted is True


def test_a_pool_of_a_versioned_type_token_is_read() -> None:
    # A review's input: pulumi-azure-native declares each API version's token as an alias of
    # the pool; a pool created under one was not read, so its EgressEnabled passed.
    versioned = "azure-native:app/v20240202preview:ContainerAppsSessionPool"
    enabled = {"sessionNetworkConfiguration": {"status": "EgressEnabled"}}
    effective = read_egress([ResourceView.of(versioned, "pool", enabled)])
    assert [(g.host, g.resource) for g in effective.connect] == [
        ("0.0.0.0/0", f"{versioned} pool"),
        ("::/0", f"{versioned} pool"),
    ] * 2  # TCP, then UDP
    other = ResourceView.of("azure-native:app:ContainerApp", "app", enabled)
    assert read_egress([other]).connect == ()


def views(engine: Recorder, mode: str) -> list[ResourceView]:
    resources = build_target(engine, "azure-sessions", SETTINGS, {"egress": {"mode": mode}})
    return [ResourceView.of(r.type, r.name, r.inputs) for r in resources if r.custom]


def test_deny_matches_the_contract(engine: Recorder) -> None:
    effective = read_egress(views(engine, "deny"))
    assert compare(effective, EgressContract("deny"), derive_probes(())) == ()


def test_enabled_egress_is_wider_than_open_so_the_target_refuses_open() -> None:
    # Microsoft lists no address a session with egress enabled cannot reach, so the metadata
    # address and its NAT64 form count as reachable: wider than open mode allows. That is why
    # the target refuses open (tests/azure/test_azure_sessions.py::test_open_egress_is_refused).
    effective = read_egress([pool(sessionNetworkConfiguration={"status": "EgressEnabled"})])
    differences = compare(effective, EgressContract("open"), derive_probes(()))
    assert [(str(d.probe), d.question, d.direction) for d in differences] == [
        ("169.254.169.254:80", "connect", "wider"),
        ("[64:ff9b::a9fe:a9fe]:80", "connect", "wider"),
    ]


def test_disabled_egress_grants_no_udp_and_enabled_egress_udp_everywhere() -> None:
    disabled = read_egress([pool(sessionNetworkConfiguration={"status": "EgressDisabled"})])
    enabled = read_egress([pool(sessionNetworkConfiguration={"status": "EgressEnabled"})])
    assert udp_of(disabled) == ()
    assert [g.host for g in udp_of(enabled)] == ["0.0.0.0/0", "::/0"]
    assert enabled.admits("203.0.113.7", 443, "udp")
    deny = EgressContract("deny")
    differences = compare(enabled, deny, contract_probes(deny, enabled))
    (difference,) = [
        d for d in differences if (str(d.probe), d.probe.protocol) == ("1.0.0.0:8443", "udp")
    ]
    assert difference.describe().startswith(
        "wider: 1.0.0.0:8443 over udp (grant of azure-native:app:ContainerAppsSessionPool pool) "
        "is admitted by 0.0.0.0/0 on every port (udp only), address"
    )
