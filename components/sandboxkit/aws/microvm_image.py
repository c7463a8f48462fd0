"""``MicrovmImage``: the Lambda MicroVM image, lifecycle hooks included, owned through the API.

pulumi-aws 7.51.1's ``aws.lambdamicrovms.Image`` has no ``hooks`` input, while the API's
``CreateMicrovmImage`` and ``UpdateMicrovmImage`` take ``hooks`` (``port``, ``microvmHooks``,
``microvmImageHooks``; botocore ``lambda-microvms`` 2025-09-09). A hook left ``DISABLED`` is
never called, and ``RunMicrovm.runHookPayload`` is "delivered as the request body of the /run
lifecycle hook", so an image without the run hook leaves the kit's worker waiting forever. This
dynamic resource owns the whole image through the API: ``CreateMicrovmImage``,
``GetMicrovmImage`` with ``GetMicrovmImageVersion`` (the configuration lives on the version),
``UpdateMicrovmImage`` (PUT semantics: every member again, a new version is built),
``DeleteMicrovmImage``, ``TagResource`` and ``UntagResource``.

Its diff compares the live configuration of the active version with the desired one, so a
member any writer changed (hooks switched off, ``additionalOsCapabilities: ["ALL"]`` or
environment variables added) is put back by the next ``pulumi up``, and ``pulumi preview``
shows it. Only a new name prefix (the name is fixed at creation) or region replaces the image;
every other member is updated in place (``UpdateMicrovmImage`` takes them all).

Create and update wait for the build: ``CREATED``/``UPDATED`` or a clear error naming the
failed version's ``stateReason`` and the build's log group (a failed create deletes the image,
which Pulumi would otherwise not know about).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

import pulumi
import pulumi.dynamic

from sandboxkit.aws.dynamic_api import (
    ApiProvider,
    NameRule,
    drop_empty,
    dynamic_inputs,
    replaced_inputs,
    unique_name,
    unless_missing,
    update_tags,
    whole_numbers,
)
from sandboxkit.aws.plan import AwsAccess

# ImageName: [a-zA-Z0-9-_]+, 1 to 64 characters.
NAME_RULE = NameRule(
    "MicroVM image", re.compile(r"^[A-Za-z0-9_-]+$"), 64, "letters, digits, '-' and '_'"
)
# The request members the kit writes, in the API's names (CreateMicrovmImageRequest minus name,
# tags and clientToken). UpdateMicrovmImage takes every one of them.
SPEC_MEMBERS = (
    "baseImageArn",
    "buildRoleArn",
    "codeArtifact",
    "description",
    "egressNetworkConnectors",
    "hooks",
    "logging",
    "cpuConfigurations",
)
# Members the kit leaves unset whose presence on the live image weakens it: drift when a live
# version has them (the service fills baseImageVersion, resources and kmsKeyIdentifier itself,
# so those are not compared).
_UNSET_MEMBERS = ("additionalOsCapabilities", "environmentVariables")
_HOOK_STATES = ("run", "resume", "suspend", "terminate", "ready", "validate")
# A build takes minutes (a Dockerfile, the application's start, the snapshot); poll every 10 s
# for at most 30 minutes.
POLL_SECONDS = 10.0
BUILD_TIMEOUT_SECONDS = 1800.0
_DONE = {"create": ("CREATED", "CREATE_FAILED"), "update": ("UPDATED", "UPDATE_FAILED")}


class ImageBuildError(RuntimeError):
    """A MicroVM image build ended ``CREATE_FAILED``/``UPDATE_FAILED`` or did not end in time."""


def _hooks_normalized(hooks: Mapping[str, Any]) -> dict[str, Any]:
    # The timeout of a hook that is not ENABLED means nothing; absent means DISABLED.
    result: dict[str, Any] = {"port": hooks.get("port")}
    for group in ("microvmHooks", "microvmImageHooks"):
        members = hooks.get(group) or {}
        states = {
            key: value
            for key, value in members.items()
            if key in _HOOK_STATES and value == "ENABLED"
        }
        timeouts = {
            key: value
            for key, value in members.items()
            if key.endswith("TimeoutInSeconds") and key.removesuffix("TimeoutInSeconds") in states
        }
        result[group] = {**states, **timeouts}
    return result


def normalized(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The compared part of an image configuration (desired, or a live version's): the kit's
    members and the weakening ones it leaves unset, empty members dropped at every level,
    hooks reduced to the enabled ones with their timeouts."""
    kept = {k: spec[k] for k in (*SPEC_MEMBERS, *_UNSET_MEMBERS) if k in spec}
    if isinstance(kept.get("hooks"), Mapping):
        kept["hooks"] = _hooks_normalized(kept["hooks"])
    if kept.get("description") == "":
        del kept["description"]
    return dict(drop_empty(kept))


class MicrovmImageProvider(ApiProvider):
    """Create, read, diff, update and delete one MicroVM image through the API.

    Inputs (camel case): ``namePrefix``, ``image`` (the ``SPEC_MEMBERS`` in the API's shape),
    ``tags`` (map), ``access`` (``AwsAccess.inputs``). Outputs: the inputs plus ``arn``,
    ``imageName``, ``imageVersion`` (the active version). The id is the image's ARN.

    Attributes:
        poll_seconds: pause between two ``GetMicrovmImage`` calls while a build runs.
        timeout_seconds: longest wait for a build, seconds.
    """

    service = "lambda-microvms"
    poll_seconds = POLL_SECONDS
    timeout_seconds = BUILD_TIMEOUT_SECONDS

    def _wait(self, client: Any, arn: str, action: str) -> dict[str, Any]:
        """Poll ``GetMicrovmImage`` until the build of ``action`` ends; the final image.

        Raises:
            ImageBuildError: for a failed build (with the failed version's ``stateReason``) or
                one still running after ``timeout_seconds``.
        """
        done, failed = _DONE[action]
        deadline = time.monotonic() + self.timeout_seconds
        while True:
            image = dict(client.get_microvm_image(imageIdentifier=arn))
            if image["state"] == done:
                return image
            if image["state"] == failed:
                version = image.get("latestFailedImageVersion")
                reason = "no reason given"
                if version is not None:
                    failure = client.get_microvm_image_version(
                        imageIdentifier=arn, imageVersion=version
                    )
                    reason = failure.get("stateReason") or reason
                raise ImageBuildError(
                    f"MicroVM image {image['name']} {action} failed (version {version}): "
                    f"{reason}; the build's log group holds its output"
                )
            if time.monotonic() >= deadline:
                raise ImageBuildError(
                    f"MicroVM image {image['name']} still {image['state']} after "
                    f"{self.timeout_seconds:.0f} s"
                )
            time.sleep(self.poll_seconds)

    def _live(self, client: Any, arn: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """``GetMicrovmImage`` and, when it has an active version, that version's
        configuration (``GetMicrovmImageVersion``); ``{}`` for none."""
        image = dict(client.get_microvm_image(imageIdentifier=arn))
        version = image.get("latestActiveImageVersion")
        if version is None:
            return image, {}
        live = client.get_microvm_image_version(imageIdentifier=arn, imageVersion=version)
        return image, dict(live)

    @staticmethod
    def _outs(props: Mapping[str, Any], image: Mapping[str, Any]) -> dict[str, Any]:
        return {
            **props,
            "arn": image["imageArn"],
            "imageName": image["name"],
            "imageVersion": image.get("latestActiveImageVersion"),
        }

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        """CreateMicrovmImage named ``namePrefix`` plus a random suffix, then wait for the build.

        Raises:
            ImageBuildError: when the build fails (the image is deleted first) or times out.
        """
        client = self.client_of(props)
        created = client.create_microvm_image(
            name=unique_name(props["namePrefix"]),
            tags=dict(props["tags"]),
            **whole_numbers(props["image"]),
        )
        arn = created["imageArn"]
        try:
            image = self._wait(client, arn, "create")
        except ImageBuildError:
            client.delete_microvm_image(imageIdentifier=arn)
            raise
        return pulumi.dynamic.CreateResult(arn, self._outs(props, image))

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        """The live image: its active version's configuration and its tags; no id when gone."""
        client = self.client_of(props)
        found = unless_missing(lambda: self._live(client, id_))
        if found is None:
            return pulumi.dynamic.ReadResult(None, {})
        image, version = found
        live = {k: version[k] for k in (*SPEC_MEMBERS, *_UNSET_MEMBERS) if k in version}
        outs = {**self._outs(props, image), "image": live, "tags": dict(image.get("tags") or {})}
        return pulumi.dynamic.ReadResult(id_, outs)

    def diff(
        self, id_: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.DiffResult:
        """Replace for a new name prefix or region; update when the desired configuration,
        tags or access differ from the last applied ones, or the active version's live
        configuration differs from the desired one (GetMicrovmImage, GetMicrovmImageVersion)."""
        replaces = replaced_inputs(olds, news)
        if replaces:
            return pulumi.dynamic.DiffResult(changes=True, replaces=replaces)
        changed = any(olds.get(k) != news.get(k) for k in ("tags", "access"))
        changed = changed or normalized(olds["image"]) != normalized(news["image"])
        if not changed:
            _, version = self._live(self.client_of(news), id_)
            changed = normalized(version) != normalized(news["image"])
        return pulumi.dynamic.DiffResult(changes=changed, replaces=[])

    def update(
        self, id_: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        """UpdateMicrovmImage with every member, wait for the new version, then the tags.

        Raises:
            ImageBuildError: when the new version's build fails or times out (the previous
                version stays active).
        """
        client = self.client_of(news)
        client.update_microvm_image(imageIdentifier=id_, **whole_numbers(news["image"]))
        image = self._wait(client, id_, "update")
        update_tags(
            olds.get("tags") or {},
            news["tags"],
            lambda keys: client.untag_resource(Resource=id_, TagKeys=keys),
            lambda tags: client.tag_resource(Resource=id_, Tags=tags),
        )
        return pulumi.dynamic.UpdateResult(self._outs(news, image))

    def delete(self, id_: str, props: dict[str, Any]) -> None:
        """DeleteMicrovmImage (idempotent in the API; a missing image is not an error here
        either)."""
        client = self.client_of(props)
        unless_missing(lambda: client.delete_microvm_image(imageIdentifier=id_))


class MicrovmImage(pulumi.dynamic.Resource, module="lambdamicrovms", name="MicrovmImage"):
    """A Lambda MicroVM image whose whole configuration the kit writes (see module docstring).

    Outputs: ``arn`` (the image ARN, RunMicrovm's ``imageIdentifier``), ``image_name``,
    ``image_version`` (the active version).
    """

    arn: pulumi.Output[str]
    image_name: pulumi.Output[str]
    image_version: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        image: pulumi.Input[Mapping[str, Any]],
        access: AwsAccess,
        tags: Mapping[str, str],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """Register the image ``name`` (also its name prefix).

        Raises:
            ValueError: for a name longer than ``NAME_RULE.longest_prefix`` (55) or with
                characters outside ``[A-Za-z0-9_-]`` (lambda-microvms shape ImageName).
        """
        inputs = dynamic_inputs(
            NAME_RULE,
            name,
            {"image": image},
            access=access,
            tags=tags,
            outputs=("arn", "imageName", "imageVersion"),
        )
        super().__init__(MicrovmImageProvider(), name, inputs, opts)
