"""Fuzzed input by kind (issue 31): each kind of mistake a generated stack can hold, tried in
every setting of that kind on every target (``settings_paths``), starting from the prod stack
(all six targets) and changing one value. Whatever the value, validation ends in a spec or a
``ConfigError`` naming exactly the setting changed (exit 2), never another exception (exit
70). The time bound over long values is a benchmark: ``benchmarks/long_values.py``."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sandboxkit.value_formats import MAX_IMAGE_REFERENCE_LENGTH, image_reference
from settings_paths import refusal, setting_paths, validated_by, with_value

FUZZ = settings(max_examples=1000, suppress_health_check=[HealthCheck.too_slow])


def refused_keys(path: str, value: object) -> list[str] | None:
    """The keys the refusal of prod with ``path`` set to ``value`` names; ``None`` if none."""
    refused = refusal(with_value(path, value))
    return None if refused is None else list(refused.keys)


# --- image references: malformed digests (item 1) -------------------------------------------

IMAGE_SETTINGS = setting_paths(validated_by(image_reference))
HEX = "0123456789abcdef"
# What docker-image-py (as the distribution reference library) accepts: these algorithms with
# exactly this many lower-case hex digits (docker_image/digest.py DIGESTS_SIZE, in bytes).
DIGEST_LENGTHS = {"sha256": 64, "sha384": 96, "sha512": 128}


def test_every_image_setting_is_found() -> None:
    assert IMAGE_SETTINGS == [
        "kubernetes.image",
        "kubernetes.resolver.image",
        "azure-sessions.image",
        "gcp-cloudrun.image",
        "gcp-cloudrun.sandboxImage",
        "gcp-cloudrun.templates[0].image",
        "gcp-gke.image",
        "gcp-gke.resolver.image",
        "cloudflare.image",
    ]


@pytest.mark.parametrize("path", IMAGE_SETTINGS)
@pytest.mark.parametrize("digest", ["sha256:" + "A" * 64, "sha256:" + "a" * 63])
def test_the_reported_malformed_digests_are_refused_naming_the_setting(
    path: str, digest: str
) -> None:
    image = f"ghcr.io/example/sandbox@{digest}"
    assert refused_keys(path, image) == [f"sandboxkit:{path}"]


@FUZZ
@given(
    path=st.sampled_from(IMAGE_SETTINGS),
    algorithm=st.sampled_from([*DIGEST_LENGTHS, "md5", "sha1", "SHA256", "sha256+b64", "x"]),
    digits=st.text(alphabet=HEX + "ABCDEFgz_=-.:", max_size=160)
    | st.integers(0, 160).map(lambda n: "a" * n),
)
def test_any_digest_in_any_image_setting_is_accepted_or_refused_naming_it(
    path: str, algorithm: str, digits: str
) -> None:
    image = f"ghcr.io/example/sandbox@{algorithm}:{digits}"
    well_formed = len(digits) == DIGEST_LENGTHS.get(algorithm) and set(digits) <= set(HEX)
    assert refused_keys(path, image) == (None if well_formed else [f"sandboxkit:{path}"])


@pytest.mark.parametrize("path", IMAGE_SETTINGS)
def test_an_image_reference_beyond_the_grammars_longest_is_refused_unparsed(path: str) -> None:
    # 100,000 dots once took docker-image-py's expressions 6 s (benchmarks/long_values.py).
    refused = refusal(with_value(path, "a." * 50_000))
    assert refused is not None
    [problem] = refused.problems
    assert (problem.key, problem.expected.split(", at most ")[1]) == (
        f"sandboxkit:{path}",
        f"{MAX_IMAGE_REFERENCE_LENGTH} characters (a name of at most 255, a tag of at most 128, "
        "a digest of at most sha512:<128 hex>); this one has 100,000",
    )
