"""Google Cloud targets: gcp-cloudrun (Cloud Run sandboxes) and gcp-gke (GKE Agent Sandbox)."""
