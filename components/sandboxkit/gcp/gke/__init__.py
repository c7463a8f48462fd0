"""The gcp-gke target: GKE Agent Sandbox on a private cluster with a gVisor node pool."""
