"""The gcp-gke egress reader: the kubernetes reader on the same agent-sandbox objects.

The GKE cluster, node pools and network add no egress a sandbox pod can use beyond what the
sandbox namespace's objects admit (private nodes reach the internet through Cloud NAT only as the
NetworkPolicy lets pods), so the reader is ``sandboxkit.kubernetes.egress_reader.read_egress``
named for this target.
"""

from __future__ import annotations

from collections.abc import Sequence

from sandboxkit.effective_egress import EffectiveEgress, ResourceView
from sandboxkit.kubernetes import egress_reader

TARGET = "gcp-gke"


def read_egress(resources: Sequence[ResourceView]) -> EffectiveEgress:
    """See ``sandboxkit.kubernetes.egress_reader.read_egress``."""
    return egress_reader.read_egress(resources, TARGET)
