"""Webhook-driven launcher Lambda that starts one Lambda MicroVM per agent session.

The handler lives in :mod:`sandboxkit.aws.launcher.handler` (Lambda handler string
``sandboxkit.aws.launcher.handler.handler``).
"""
