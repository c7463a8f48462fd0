"""checkov on Pulumi: export the rendered stack to what checkov reads, run it, map findings back.

- ``mapping``: the one table from Pulumi type tokens to Terraform, ARM and Kubernetes types.
- ``exporters``: Terraform plan JSON, ARM template and Kubernetes manifests from a render.
- ``baseline``: the reviewed list of accepted findings, each with its reason.
- ``runner``: locating checkov in its own venv, running it offline, and parsing its results.
"""
