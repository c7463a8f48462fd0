"""Target ``azure-sessions``: Azure Container Apps dynamic sessions (Hyper-V sandboxes)."""
