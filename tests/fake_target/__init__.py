"""A seventh target, ``flyio`` (Fly.io Machines), written the way docs/adding-a-target.md says:
one folder, plus one registry line (``targets.TARGET_MODULES``) that its test adds. It proves
a new target renders, is read by checkov's export (or says why not), is checked by the policy
pack's generic rules and is explained by ``sandboxkit preview`` without any central edit."""
