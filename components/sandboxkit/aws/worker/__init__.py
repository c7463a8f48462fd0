"""In-guest worker for sandboxkit's AWS Lambda MicroVM target.

``main`` fetches one job from the agent platform, runs its commands and reports back (see
:mod:`.main` for the run-hook payload, the control-plane protocol and exit statuses); ``build``
packs the worker into the MicroVM image's code artifact. Run it with ``python -m`` on this package.
"""
