"""Entry point ``pulumi up`` runs (Pulumi.yaml ``main: components/``).

A project's own program replaces this file (or points ``main`` elsewhere) and keeps the gate by
building the components through ``sandboxkit.program.run`` (docs/programs.md).
"""

from sandboxkit.program import run

run()
