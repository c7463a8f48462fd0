"""The gate's output formats: ``text`` for people, ``json_document`` for scripts and ``sarif``
for code scanning. Each reads only ``sandboxkit.gate.results``; no other module of the gate
imports them."""
