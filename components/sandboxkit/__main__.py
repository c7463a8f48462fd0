"""``python -m sandboxkit``."""

from sandboxkit.launch import main

main()
