"""Formats of free-text settings, checked the same way for every target that takes them.

- Container image references (``ImageReference``): the OCI distribution reference grammar
  (``name[:tag][@digest]``, github.com/distribution/reference, regexp.go and reference.go), as
  the ``docker-image-py`` library implements it (``docker_image.reference.Reference.parse``:
  lower-case repository, at most 255 characters, tag of at most 128 word characters, digest
  ``algorithm:hex``). Words a YAML or JSON reader would have read as no value (``null``,
  ``none``, ``true`` ...) are refused even though the grammar spells a repository with them:
  quoted in a stack file they mean a setting left empty by mistake, never an image.
- Image identity (``same_image``): two references name the same image when their digests are
  equal, whatever the names and tags (a digest is the content's hash: OCI image-spec
  descriptor.md, "Digests"); without a digest on both, when their repositories and tags are.
  A repository is compared as the Docker CLI resolves it (distribution/reference
  normalize.go, ``ParseNormalizedNamed``): the registry host in lower case (DNS names are
  case-insensitive, RFC 4343) without a default port (``:443``, ``:80``), ``docker.io`` for a
  name without a registry and ``index.docker.io``, and ``library/`` before a one-part Docker
  Hub path.
- Calendar dates (``CalendarDate``): ``YYYY-MM-DD`` naming a real day (``2025-13-45`` is not).
- Shared secrets (``SharedSecret``): HMAC keys and bearer tokens the kit takes (webhook
  secrets, worker keys, the Worker's client token and naming key) are at least
  ``MIN_SHARED_SECRET_LENGTH`` characters, on every target.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import Annotated, Final

from docker_image import digest, reference
from pydantic import AfterValidator

from sandboxkit.secrets import SecretValue

# 32 characters: the floor the Cloudflare Worker applies to its bearer token and naming key
# (MIN_SECRET_LENGTH in cloudflare/worker/src/index.js), met by 16 random bytes in hex (128 bits).
# One rule for every HMAC key and bearer token, so no target takes a weaker one.
MIN_SHARED_SECRET_LENGTH: Final = 32

# Text a YAML 1.1/1.2 or JSON reader takes for null or a boolean: as an image, a placeholder.
_NO_VALUE_WORDS: Final = frozenset({"null", "nil", "none", "undefined", "true", "false"})
_IMAGE_EXPECTED = (
    "an OCI image reference, name[:tag][@digest] (lower-case repository path of letters, "
    "digits and . _ - separators, optionally after a registry host[:port]/; digest "
    "algorithm:hex), e.g. ghcr.io/example/sandbox:1.0 or ghcr.io/example/sandbox@sha256:<64 hex>"
)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$", re.ASCII)
# The longest reference the grammar admits: a name of 255 characters (NameTooLong), ":" and a
# tag of 128, "@sha512:" and 128 hex digits (the longest digest docker-image-py supports).
# Longer text is refused before parsing: the library's regular expressions take seconds on
# 100,000 dots or hyphens.
MAX_IMAGE_REFERENCE_LENGTH: Final = 255 + 1 + 128 + 1 + len("sha512:") + 128


def image_reference(value: str) -> str:
    """``value`` when it is an OCI image reference (module docstring).

    Raises:
        ValueError: for text longer than ``MAX_IMAGE_REFERENCE_LENGTH``, text the reference
            grammar refuses (spaces, non-ASCII, upper case in the repository, template braces,
            an empty name, a digest of another algorithm, length or alphabet than
            ``algorithm:hex``, e.g. ``sha256:`` and 64 lower-case hex digits) or a no-value
            word; the message says the grammar in words.
    """
    if len(value) > MAX_IMAGE_REFERENCE_LENGTH:
        raise ValueError(
            f"{_IMAGE_EXPECTED}, at most {MAX_IMAGE_REFERENCE_LENGTH} characters (a name of at "
            f"most 255, a tag of at most 128, a digest of at most sha512:<128 hex>); this one "
            f"has {len(value):,}"
        )
    try:
        reference.Reference.parse(value)
    except (reference.InvalidReference, digest.InvalidDigest) as exc:
        # docker-image-py's digest errors (an upper-case or short hex, an unknown algorithm)
        # are not InvalidReference subclasses.
        raise ValueError(f"{_IMAGE_EXPECTED} ({exc})") from None
    if value.lower() in _NO_VALUE_WORDS:
        raise ValueError(
            f"{_IMAGE_EXPECTED}; {value!r} reads as a missing value, not an image name"
        )
    return value


_DOCKER_HUB: Final = "docker.io"
_DOCKER_HUB_ALIASES: Final = frozenset({"docker.io", "index.docker.io", "registry-1.docker.io"})
_DEFAULT_PORTS: Final = (":443", ":80")


@dataclass(frozen=True)
class ImageIdentity:
    """What an image reference names, normalised (module docstring: "Image identity").

    Attributes:
        repository: ``<registry host>/<path>``, host in lower case without a default port.
        tag: the tag, ``None`` when the reference has none.
        digest: ``<algorithm>:<hex>`` in lower case, ``None`` when the reference has none.
    """

    repository: str
    tag: str | None
    digest: str | None

    @staticmethod
    def of(value: str) -> ImageIdentity:
        """The identity of reference ``value``.

        Raises:
            ValueError: for text that is no image reference (``image_reference``).
        """
        try:
            parsed = reference.Reference.parse(value)
        except (reference.InvalidReference, digest.InvalidDigest) as exc:
            raise ValueError(f"{_IMAGE_EXPECTED} ({exc})") from None
        name = parsed["name"]
        first, _, rest = name.partition("/")
        if rest and ("." in first or ":" in first or first.lower() == "localhost"):
            host, path = first.lower(), rest
        else:
            host, path = _DOCKER_HUB, name
        host = next((host[: -len(p)] for p in _DEFAULT_PORTS if host.endswith(p)), host)
        if host in _DOCKER_HUB_ALIASES:
            host = _DOCKER_HUB
            path = path if "/" in path else f"library/{path}"
        found = parsed["digest"]
        return ImageIdentity(f"{host}/{path}", parsed["tag"], found.lower() if found else None)


def same_image(first: str, second: str) -> bool:
    """Whether image references ``first`` and ``second`` may name the same image: equal digests
    (whatever the names and tags); with a digest on one side only, the same repository with no
    differing tags; without digests, the same repository and tag (``latest`` when none, as
    ``docker pull`` reads it). Text that is no reference is compared as written.
    """
    try:
        one, two = ImageIdentity.of(first), ImageIdentity.of(second)
    except ValueError:
        return first == second
    if one.digest and two.digest:
        return one.digest == two.digest
    if one.repository != two.repository:
        return False
    if one.digest or two.digest:
        return one.tag is None or two.tag is None or one.tag == two.tag
    return (one.tag or "latest") == (two.tag or "latest")


def pinned_by_digest(value: str) -> bool:
    """Whether image reference ``value`` carries a full ``sha256`` digest (64 hex digits)."""
    try:
        found = ImageIdentity.of(value).digest
    except ValueError:
        return False
    return found is not None and re.fullmatch(r"sha256:[0-9a-f]{64}", found) is not None


def calendar_date(value: str) -> str:
    """``value`` when it is ``YYYY-MM-DD`` naming a real day of the Gregorian calendar.

    Raises:
        ValueError: for another shape, or a month or day that does not exist.
    """
    if not _DATE.match(value):
        raise ValueError("a date written YYYY-MM-DD, e.g. 2026-07-01")
    try:
        datetime.date.fromisoformat(value)
    except ValueError:
        raise ValueError("a real calendar date written YYYY-MM-DD, e.g. 2026-07-01") from None
    return value


def long_enough_secret(value: SecretValue) -> SecretValue:
    """``value`` when it holds at least ``MIN_SHARED_SECRET_LENGTH`` characters.

    Raises:
        ValueError: for a shorter secret; the message never shows the value.
    """
    if value.length() < MIN_SHARED_SECRET_LENGTH:
        raise ValueError(
            f"a secret of at least {MIN_SHARED_SECRET_LENGTH} characters (every HMAC key and "
            "bearer token the kit takes; e.g. openssl rand -hex 32)"
        )
    return value


ImageReference = Annotated[str, AfterValidator(image_reference)]
"""A container image setting: an OCI image reference (``image_reference``)."""
CalendarDate = Annotated[str, AfterValidator(calendar_date)]
"""A ``YYYY-MM-DD`` date setting naming a real day (``calendar_date``)."""
SharedSecret = Annotated[SecretValue, AfterValidator(long_enough_secret)]
"""An HMAC key or bearer token setting: a Pulumi secret of at least
``MIN_SHARED_SECRET_LENGTH`` characters (``long_enough_secret``)."""
