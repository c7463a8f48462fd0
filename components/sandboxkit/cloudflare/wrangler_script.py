"""``WranglerScript``: the Worker script, its container application and routes, uploaded by
``wrangler deploy``.

One tool owns the upload. pulumi-cloudflare 6.23.1's ``WorkersScript`` has no ``containers``
argument, so its update drops the container link ``wrangler deploy`` sets; and it sends its
migration as ``new_tag`` without ``old_tag`` on every update, which the API refuses once the
script carries that tag ("Migration tag precondition failed; current tag is v1", code 10079;
cloudflare/workers-sdk#705, #6953; wrangler-legacy#1992). wrangler reads the live script's
``migration_tag`` (``GET /accounts/{account}/workers/services/{script}``) and uploads only the
migrations after it as ``{old_tag, new_tag, steps}``, none once the last is applied
(developers.cloudflare.com/durable-objects/reference/durable-objects-migrations/), and it
creates or modifies the Containers application bound to the Durable Object, after the Worker
is live and not transactionally: a rollout error can follow a Worker already serving
(developers.cloudflare.com/containers/deploy/), so a failed deploy is re-run by the next
``pulumi up``, which deploys again. This dynamic resource runs it:

- create and update: ``wrangler deploy --config wrangler.json --secrets-file secrets.json`` in
  a private temporary folder holding the module, the config (``wrangler.wrangler_config``) and
  the secret_text bindings (mode 0600, removed afterwards);
- delete: ``wrangler delete NAME --force``, which also deletes the script's container
  applications; a script already gone is not an error;
- read (``pulumi refresh``): the live script through the Cloudflare API (``live_script``): gone
  when the script is, else the last deployed inputs with the live migration tag, container
  application, workers.dev and preview URL switches, routes and custom domains in their place;
- diff: the desired inputs against the last deployed ones, or against the live ones after a
  refresh, so drift found by ``read`` is deployed again by the next ``pulumi up``; a new
  ``accountId`` or ``scriptName`` replaces the script (a script cannot move or be renamed),
  anything else is an update. A token change alone deploys nothing.

Credentials: the API token reaches wrangler as ``CLOUDFLARE_API_TOKEN`` in its environment,
never its arguments: the ``apiToken`` input (the stack's secret ``cloudflare:apiToken``) when
set, else the deployer's own ``CLOUDFLARE_API_TOKEN``
(developers.cloudflare.com/workers/wrangler/system-environment-variables/). The token stays a
Pulumi secret in the outputs too (``additional_secret_outputs``): ``pulumi destroy`` hands the
provider the outputs only, and ``wrangler delete`` needs it. Secrets are struck from any wrangler
output an error quotes.
The image must be in a registry Cloudflare pulls from first (``wrangler containers push``;
developers.cloudflare.com/containers/image-management/).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pulumi
import pulumi.dynamic

from sandboxkit.cloudflare.live_script import NOT_FOUND_CODES, read_live
from sandboxkit.cloudflare.plan import MAIN_MODULE
from sandboxkit.cloudflare.wrangler import secret_texts, wrangler_config

# Inputs whose change needs a new script: a script lives in one account under one name.
REPLACING_INPUTS = ("accountId", "scriptName")
# Inputs that say who calls the API, not what is deployed.
CREDENTIAL_INPUTS = ("apiToken",)
# The wrangler the kit's tests run (the Worker package's pinned devDependency, wrangler 4.164),
# installed by `npm ci` in the Worker's folder; else a wrangler on PATH.
KIT_WRANGLER = Path(__file__).resolve().parent / "worker" / "node_modules" / ".bin" / "wrangler"
# A deploy builds nothing (no_bundle, a prebuilt image) but waits on the API and the
# container application's rollout start: at most 15 minutes.
DEPLOY_TIMEOUT_SECONDS = 900.0
# How wrangler quotes the API's codes for a script that does not exist.
_NOT_FOUND_CODES = tuple(f"[code: {code}]" for code in NOT_FOUND_CODES)
# wrangler asks nothing in CI mode and sends no usage metrics.
_WRANGLER_ENV = {"CI": "true", "WRANGLER_SEND_METRICS": "false"}


class WranglerError(RuntimeError):
    """``wrangler`` is missing or a ``wrangler`` command failed (message quotes its output,
    secrets struck out)."""


def wrangler_command() -> list[str]:
    """The wrangler to run: ``KIT_WRANGLER`` when installed, else ``wrangler`` on PATH.

    Raises:
        WranglerError: when neither exists.
    """
    if KIT_WRANGLER.exists():
        return [str(KIT_WRANGLER)]
    found = shutil.which("wrangler")
    if found is None:
        raise WranglerError(
            "wrangler not found: run `npm ci` in components/sandboxkit/cloudflare/worker (the "
            "kit's pinned wrangler 4) or install wrangler 4 on PATH (Node >= 22)"
        )
    return [found]


def _redacted(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[secret]")
    return text


class WranglerScriptProvider(pulumi.dynamic.ResourceProvider):
    """Create, read, diff, update and delete one Worker script through ``wrangler`` (read
    through the Cloudflare API).

    Inputs: ``wrangler.script_inputs`` plus ``apiToken`` (secret, or ``None`` for the
    environment's ``CLOUDFLARE_API_TOKEN``). Outputs: the inputs (``apiToken`` a secret). The
    id is ``<accountId>/<scriptName>``.

    Attributes:
        command: the wrangler command line prefix; ``None`` for ``wrangler_command()``.
        timeout_seconds: longest wait for one wrangler command, seconds.
    """

    command: Sequence[str] | None = None
    timeout_seconds = DEPLOY_TIMEOUT_SECONDS

    def _run(self, props: Mapping[str, Any], args: Sequence[str], cwd: Path) -> str:
        """Run ``wrangler ARGS`` in ``cwd`` with the token and account in its environment;
        its standard output.

        Raises:
            WranglerError: for a non-zero exit or a timeout.
        """
        env = {**os.environ, **_WRANGLER_ENV, "CLOUDFLARE_ACCOUNT_ID": str(props["accountId"])}
        token = props.get("apiToken")
        if token:
            env["CLOUDFLARE_API_TOKEN"] = str(token)
        argv = [*(self.command or wrangler_command()), *args]
        verb = " ".join(args[:2]) if args[0] == "containers" else args[0]
        secrets = [*secret_texts(props).values(), env.get("CLOUDFLARE_API_TOKEN", "")]
        try:
            ran = subprocess.run(
                argv,
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=self.timeout_seconds,
                check=False,
            )
        except subprocess.TimeoutExpired as error:
            raise WranglerError(
                f"wrangler {verb} for {props['scriptName']} still running after "
                f"{self.timeout_seconds:.0f} s"
            ) from error
        if ran.returncode != 0:
            output = _redacted(ran.stdout + ran.stderr, secrets)
            raise WranglerError(
                f"wrangler {verb} for {props['scriptName']} exited {ran.returncode}:\n{output}"
            )
        return ran.stdout

    def _deploy(self, props: Mapping[str, Any]) -> None:
        with tempfile.TemporaryDirectory(prefix="sandboxkit-wrangler-") as folder:
            work = Path(folder)
            (work / MAIN_MODULE).write_text(str(props["content"]), encoding="utf-8")
            config = work / "wrangler.json"
            config.write_text(json.dumps(wrangler_config(props, MAIN_MODULE), indent=2))
            secrets = work / "secrets.json"
            secrets.touch(mode=0o600)
            secrets.write_text(json.dumps(secret_texts(props)))
            self._run(
                props,
                ["deploy", "--config", str(config), "--secrets-file", str(secrets)],
                work,
            )

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        """``wrangler deploy``: the first upload carries every migration (no ``old_tag``).

        Raises:
            WranglerError: when wrangler is missing or the deploy fails.
        """
        self._deploy(props)
        return pulumi.dynamic.CreateResult(f"{props['accountId']}/{props['scriptName']}", props)

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        """The live script (``live_script.read_live``): no id when it is gone, so Pulumi
        creates it again.

        Raises:
            CloudflareApiError: when the API refuses a read (401 or 403 name the token's
                missing permission group).
        """
        live = read_live(props)
        if live is None:
            return pulumi.dynamic.ReadResult(None, {})
        return pulumi.dynamic.ReadResult(id_, live)

    def diff(
        self, id_: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.DiffResult:
        """Replace for a new account or script name; update when any other input differs
        from the last deployed (or, after a refresh, live) one, the token excepted."""
        replaces = [key for key in REPLACING_INPUTS if olds.get(key) != news.get(key)]
        keys = (set(olds) | set(news)) - set(CREDENTIAL_INPUTS) - {"__provider"}
        changed = any(olds.get(key) != news.get(key) for key in keys)
        return pulumi.dynamic.DiffResult(
            changes=changed, replaces=replaces, delete_before_replace=False
        )

    def update(
        self, id_: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        """``wrangler deploy`` again: wrangler sends only the migrations after the live tag.

        Raises:
            WranglerError: when the deploy fails (the previous version keeps serving).
        """
        self._deploy(news)
        return pulumi.dynamic.UpdateResult(news)

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        """``wrangler delete NAME --force``, then ``wrangler containers delete ID`` for each of
        the script's container applications (by name, from ``wrangler containers list
        --json``): wrangler's own delete leaves them "running and billing" when it cannot ask.

        Raises:
            WranglerError: when wrangler fails for another reason than a script already gone.
        """
        with tempfile.TemporaryDirectory(prefix="sandboxkit-wrangler-") as folder:
            work = Path(folder)
            try:
                self._run(props, ["delete", str(props["scriptName"]), "--force"], work)
            except WranglerError as error:
                if not any(code in str(error) for code in _NOT_FOUND_CODES):
                    raise
            names = {str(container["name"]) for container in props["containers"]}
            listed = json.loads(self._run(props, ["containers", "list", "--json"], work))
            for application in listed:
                if application.get("name") in names:
                    self._run(props, ["containers", "delete", str(application["id"])], work)


class WranglerScript(pulumi.dynamic.Resource, module="cloudflare", name="WranglerScript"):
    """A Worker script deployed by wrangler (see the module docstring).

    Outputs: the inputs (``wrangler.script_inputs``, ``apiToken`` a secret); ``script_name``
    is the script's name once it is deployed; ``workers_dev`` whether it is on workers.dev
    (the ``workersDev`` output: deployed by wrangler, live after a refresh). wrangler is the
    one writer of the workers.dev and preview URL switches (its config's ``workers_dev`` and
    ``preview_urls``).
    """

    def __init__(
        self,
        name: str,
        inputs: Mapping[str, Any],
        api_token: pulumi.Input[str] | None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """Register the script ``name`` with ``inputs`` (``wrangler.script_inputs``) and the
        API token wrangler gets (a Pulumi secret, or ``None`` for the environment's)."""
        super().__init__(
            WranglerScriptProvider(),
            name,
            {**inputs, "apiToken": api_token},
            pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(additional_secret_outputs=["apiToken"])
            ),
        )
        script = str(inputs["scriptName"])
        self.script_name: pulumi.Output[str] = self.id.apply(lambda _: script)
        # Pulumi sets one attribute per input key; "workersDev" is not a Python name.
        self.workers_dev: pulumi.Output[bool] = self.__dict__["workersDev"]
