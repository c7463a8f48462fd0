"""``python -m`` entry point of the worker; exits with :func:`.main.main`'s status."""

from .main import main

raise SystemExit(main())
