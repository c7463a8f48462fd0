"""The gcp-cloudrun target: a Cloud Run sandbox launcher behind a per-host egress firewall."""
