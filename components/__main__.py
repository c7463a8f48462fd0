"""Entry point ``pulumi up`` runs (Pulumi.yaml ``main: components/``)."""

import sys

from sandboxkit.errors import ConfigError
from sandboxkit.program import main

try:
    main()
except ConfigError as exc:
    print(f"sandboxkit: invalid input\n{exc}", file=sys.stderr)
    sys.exit(2)
