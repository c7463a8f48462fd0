"""``python -m sandboxkit``."""

from sandboxkit.cli import main

main()
