"""Launcher Lambda: verify a signed agent-platform webhook and start one Lambda MicroVM for it.

Flow for one API Gateway HTTP API (payload format 2.0) request::

    configuration read from the environment     -> 500, no AWS call
    headers checked (format, replay window)     -> 401, no AWS call
    webhook secret read (Secrets Manager, cached) -> 502 on AWS error
    HMAC verified (constant time)               -> 401, nothing started
    body parsed {"sessionId", "jobId"}          -> 400, nothing started
    credential key read (Secrets Manager, cached) -> 502 on AWS error
    per-launch worker credential minted (HMAC)  -> no AWS call
    RunMicrovm (idempotent per session)         -> 502 on AWS error
    -> 202 {"microvmId": ..., "sessionId": ...}

Configuration (environment variables; the contract the Pulumi component sets):

``IMAGE_ARN``
    MicroVM image ARN passed as ``imageIdentifier`` (1-256 chars, botocore shape
    ``MicrovmImageIdentifier``).
``CONNECTOR_ARN``
    The kit's own egress network connector (a ``VPC_EGRESS`` connector in the user's account).
    It is the only entry of ``egressNetworkConnectors``; AWS-managed connectors (account field
    ``aws``, e.g. ``...:aws:network-connector:aws-network-connector:INTERNET_EGRESS``) are refused.
``INGRESS_CONNECTOR_ARN``
    The AWS-managed ``HTTP_INGRESS`` connector (account field ``aws``), the only entry of
    ``ingressNetworkConnectors``. RunMicrovm would pass it implicitly anyway; naming it keeps
    what the launcher passes equal to what its role may pass (``lambda:PassNetworkConnector``
    on every connector passed, defaults included), so nothing else is ever passed.
``WEBHOOK_SECRET_ARN``
    Secrets Manager secret whose ``SecretString`` is the HMAC key shared with the platform.
``CREDENTIAL_KEY_SECRET_ARN``
    Secrets Manager secret whose ``SecretString`` is the HMAC key the launcher signs each
    MicroVM's worker credential with (see "Worker credentials" below). The key never leaves the
    launcher: only the credential it signs goes into the run-hook payload.
``MAX_DURATION_SECONDS``
    ``maximumDurationInSeconds``; integer seconds, 1-28,800 (botocore shape
    ``RunMicrovmRequestMaximumDurationInSecondsInteger``).
``IDLE_TIMEOUT_SECONDS``
    ``idlePolicy.maxIdleDurationSeconds``; integer seconds, >= 60 (botocore shape
    ``IdlePolicyMaxIdleDurationSecondsInteger``). Idle is measured by traffic through the MicroVM's
    proxy endpoint, and the worker receives none, so this is also a ceiling on a job's run time:
    when it passes the MicroVM is suspended and, with ``suspendedDurationSeconds`` 0, terminated
    (AWS agent-toolkit ``aws-lambda-microvms`` lifecycle-model reference).
``EXEC_TIMEOUT_SECONDS``
    Per-command timeout the worker enforces; integer seconds, 1..``MAX_DURATION_SECONDS``.
``REPLAY_WINDOW_SECONDS``
    Accepted clock skew of ``X-Sandboxkit-Timestamp``, past and future; integer seconds >= 1,
    default 300.
``CONTROL_PLANE_URL``
    ``https://`` base URL of the agent platform API the worker calls (no user info, query or
    fragment).
``EXECUTION_ROLE_ARN``
    Optional. Passed as ``executionRoleArn`` only when set and non-empty. Without it no AWS
    credentials are reachable from the guest (the execution role is exposed inside the MicroVM
    through IMDSv2), at the cost of stdout not being shipped to CloudWatch (both per the AWS
    agent-toolkit ``aws-lambda-microvms`` getting-started reference).
``AWS_REGION``
    Set by Lambda; every client is created with this explicit region.

Secrets are cached per container for :data:`SECRET_CACHE_TTL_SECONDS` (60 s): a rotated webhook
secret or credential key is picked up within a minute, and a burst of webhooks costs one
``GetSecretValue`` per secret per minute instead of one per request (Secrets Manager API
reference, ``GetSecretValue``: returns ``SecretString``).

Worker credentials
------------------
Each launch gets its own credential, the only one its MicroVM ever holds::

    "sbxw1." + b64url(claims) + "." + b64url(HMAC-SHA256(key, "sbxw1." + b64url(claims)))

with ``b64url`` the unpadded URL-safe base64 and ``claims`` compact, sorted JSON::

    {"v": 1, "aud": controlPlaneUrl, "jobId": str, "sessionId": str,
     "sandboxId": clientToken, "iat": int, "exp": int}

``sandboxId`` is the RunMicrovm ``clientToken`` (one per session, so one per MicroVM: the
MicroVM id itself is only known after RunMicrovm returns, too late for the payload). ``iat``
is the launch time in unix seconds: the signed webhook timestamp, or the launcher's clock if
that is earlier, and ``exp`` is ``iat + min(MAX_DURATION_SECONDS, IDLE_TIMEOUT_SECONDS)``. The
worker receives no traffic through the MicroVM's proxy endpoint, so the idle limit, not the
maximum duration, is when its MicroVM ends at the latest (``IDLE_TIMEOUT_SECONDS`` above): the
credential dies no later than the MicroVM, and may die up to ``REPLAY_WINDOW_SECONDS`` earlier
when the platform signed the webhook that long before. The same signed webhook delivered twice
mints the same credential, so RunMicrovm's idempotent ``clientToken`` sees the same parameters
again.

What the platform checks (:func:`verify_worker_credential`, the reference): the signature, its
own URL as ``aud``, the ``jobId`` of the URL it serves, the ``sessionId`` that job belongs to in
its own records, the ``sandboxId`` that session's launch used (:func:`client_token_for`), and
expiry. Results are accepted once per credential (:func:`accept_results`): the first
``POST .../results`` that verifies records the credential in a :class:`ResultsLedger`, and every
later one, the worker's own retry included, is refused, so a leaked credential cannot overwrite
what its job reported.

Why HMAC with a key in Secrets Manager, not a KMS asymmetric key (``kms:Sign``, with the public
key for the verifier): the platform already verifies one HMAC (the webhook's) with stdlib code,
and the key is read once a minute through the same cached ``GetSecretValue`` path, so a launch
costs no extra AWS call, quota (KMS ``Sign`` request quotas) or latency. The price: the platform's
verifier holds the same key, so a compromised verifier could mint credentials, which a KMS key
would prevent. :func:`verify_worker_credential` is the reference check the platform runs on every
``Authorization: Bearer`` it receives.

Deployment note: the module imports only the standard library and boto3, but the managed Lambda
Python runtime bundles a boto3/botocore that may predate the ``lambda-microvms`` service model.
The deployment package must bundle a boto3/botocore new enough to have it; 1.44.8 is the
version this module was tested with.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import boto3  # type: ignore[import-untyped,unused-ignore]
from botocore.config import Config  # type: ignore[import-untyped,unused-ignore]
from botocore.exceptions import BotoCoreError, ClientError  # type: ignore[import-untyped,unused-ignore]

LOGGER = logging.getLogger("sandboxkit.aws.launcher")
LOGGER.setLevel(logging.INFO)

TIMESTAMP_HEADER = "x-sandboxkit-timestamp"
SIGNATURE_HEADER = "x-sandboxkit-signature"

# Rotation reaches a warm container within a minute; a burst of webhooks costs one read per minute.
SECRET_CACHE_TTL_SECONDS = 60.0
# Platform clocks drift a little; five minutes is the common webhook default (Stripe, Slack).
DEFAULT_REPLAY_WINDOW_SECONDS = 300

# Limits from the botocore 1.44.8 `lambda-microvms` service model (shape names in comments).
MAX_IMAGE_IDENTIFIER_CHARS = 256  # MicrovmImageIdentifier: min 1, max 256
MAX_NETWORK_CONNECTOR_CHARS = 2048  # NetworkConnector: min 1, max 2048
MIN_MAX_DURATION_SECONDS = 1  # RunMicrovmRequestMaximumDurationInSecondsInteger: min 1
MAX_MAX_DURATION_SECONDS = 28_800  # ... max 28800 (8 hours)
MIN_IDLE_SECONDS = 60  # IdlePolicyMaxIdleDurationSecondsInteger: min 60
MAX_CLIENT_TOKEN_CHARS = 128  # RunMicrovmRequestClientTokenString: min 1, max 128, no pattern
# RunHookPayload: max 4096 in the model although the developer guide says 16 KB; the stricter
# bound wins. The payload is ASCII-only JSON, so characters and bytes coincide.
MAX_RUN_HOOK_PAYLOAD_CHARS = 4096
# RoleArn: min 20, max 2048, pattern below.
ROLE_ARN_PATTERN = re.compile(r"arn:aws[a-z\-]*:iam::[0-9]{12}:role/?[a-zA-Z_0-9+=,.@\-_/]+")
MIN_ROLE_ARN_CHARS = 20
MAX_ROLE_ARN_CHARS = 2048

# Version of the run-hook payload the worker (sandboxkit.aws.worker.main) understands. Version 1
# carried a static shared worker key; the worker refuses it.
RUN_HOOK_PAYLOAD_VERSION = 2
# Worker credentials (module docstring): prefix and claims version.
CREDENTIAL_PREFIX = "sbxw1"
CREDENTIAL_CLAIMS_VERSION = 1

_TIMESTAMP_RE = re.compile(r"[0-9]{1,12}")
_SIGNATURE_RE = re.compile(r"v1=([0-9a-f]{64})")
# Ids end up in the clientToken derivation and in the control-plane URL path the worker calls;
# a conservative charset keeps them out of path traversal and header trouble.
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")

# Lambda behind API Gateway HTTP API has a 30 s integration timeout; stay well under it.
_BOTO_CONFIG = Config(
    connect_timeout=3,
    read_timeout=10,
    retries={"mode": "standard", "max_attempts": 3},
)


class ConfigError(Exception):
    """An environment variable of the launcher contract is missing or invalid."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class WebhookAuthError(Exception):
    """The webhook failed authentication; ``reason`` is a short stable code safe to log."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class BadRequestError(Exception):
    """An authenticated webhook carried a body that is not a valid launch request."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class LauncherConfig:
    """Validated launcher configuration; see the module docstring for each field's source."""

    image_arn: str
    connector_arn: str
    ingress_connector_arn: str
    webhook_secret_arn: str
    credential_key_secret_arn: str
    max_duration_seconds: int
    idle_timeout_seconds: int
    exec_timeout_seconds: int
    replay_window_seconds: int
    control_plane_url: str
    execution_role_arn: str | None


def _required(environ: Mapping[str, str], name: str) -> str:
    value = environ.get(name, "")
    if not value.strip():
        raise ConfigError(name, "is required")
    return value.strip()


def _int_in_range(
    environ: Mapping[str, str],
    name: str,
    low: int,
    high: int | None,
    default: int | None = None,
) -> int:
    raw = environ.get(name)
    if raw is None or not raw.strip():
        if default is None:
            raise ConfigError(name, "is required")
        return default
    try:
        value = int(raw.strip(), 10)
    except ValueError:
        raise ConfigError(name, "must be an integer number of seconds") from None
    if value < low or (high is not None and value > high):
        bound = f">= {low}" if high is None else f"between {low} and {high}"
        raise ConfigError(name, f"must be {bound} seconds")
    return value


def _validate_connector(arn: str) -> str:
    parts = arn.split(":")
    if len(arn) > MAX_NETWORK_CONNECTOR_CHARS or len(parts) < 7 or parts[0] != "arn":
        raise ConfigError("CONNECTOR_ARN", "must be a network connector ARN")
    if parts[5] != "network-connector":
        raise ConfigError("CONNECTOR_ARN", "must be a network connector ARN")
    # AWS-managed connectors (INTERNET_EGRESS and friends) live in the pseudo-account "aws";
    # the kit's connector is created in the user's account and is the only egress allowed.
    if parts[4] == "aws" or "INTERNET_EGRESS" in arn.upper():
        raise ConfigError("CONNECTOR_ARN", "must be the kit's connector, not an AWS-managed one")
    return arn


def _validate_ingress_connector(arn: str) -> str:
    parts = arn.split(":")
    if (
        len(arn) > MAX_NETWORK_CONNECTOR_CHARS
        or len(parts) != 8
        or parts[0] != "arn"
        or parts[4:] != ["aws", "network-connector", "aws-network-connector", "HTTP_INGRESS"]
    ):
        raise ConfigError(
            "INGRESS_CONNECTOR_ARN", "must be the AWS-managed HTTP_INGRESS connector ARN"
        )
    return arn


def _validate_control_plane_url(url: str) -> str:
    if not url.isascii():
        raise ConfigError("CONTROL_PLANE_URL", "must be ASCII")
    parts = urlsplit(url)
    if parts.scheme != "https" or not parts.hostname:
        raise ConfigError("CONTROL_PLANE_URL", "must be an https:// URL with a host")
    if parts.username or parts.password or parts.query or parts.fragment:
        raise ConfigError("CONTROL_PLANE_URL", "must not carry user info, a query or a fragment")
    return url.rstrip("/")


def load_config(environ: Mapping[str, str]) -> LauncherConfig:
    """Read and validate the launcher contract from ``environ``.

    Raises:
        ConfigError: naming the first offending variable.
    """
    image_arn = _required(environ, "IMAGE_ARN")
    if len(image_arn) > MAX_IMAGE_IDENTIFIER_CHARS:
        raise ConfigError("IMAGE_ARN", f"must be at most {MAX_IMAGE_IDENTIFIER_CHARS} characters")
    connector_arn = _validate_connector(_required(environ, "CONNECTOR_ARN"))
    ingress_connector_arn = _validate_ingress_connector(_required(environ, "INGRESS_CONNECTOR_ARN"))
    webhook_secret_arn = _required(environ, "WEBHOOK_SECRET_ARN")
    credential_key_secret_arn = _required(environ, "CREDENTIAL_KEY_SECRET_ARN")
    max_duration = _int_in_range(
        environ, "MAX_DURATION_SECONDS", MIN_MAX_DURATION_SECONDS, MAX_MAX_DURATION_SECONDS
    )
    idle = _int_in_range(environ, "IDLE_TIMEOUT_SECONDS", MIN_IDLE_SECONDS, None)
    exec_timeout = _int_in_range(environ, "EXEC_TIMEOUT_SECONDS", 1, max_duration)
    replay = _int_in_range(
        environ, "REPLAY_WINDOW_SECONDS", 1, None, default=DEFAULT_REPLAY_WINDOW_SECONDS
    )
    control_plane_url = _validate_control_plane_url(_required(environ, "CONTROL_PLANE_URL"))
    role = environ.get("EXECUTION_ROLE_ARN", "").strip() or None
    if role is not None and (
        not MIN_ROLE_ARN_CHARS <= len(role) <= MAX_ROLE_ARN_CHARS
        or ROLE_ARN_PATTERN.fullmatch(role) is None
    ):
        raise ConfigError("EXECUTION_ROLE_ARN", "must be an IAM role ARN")
    return LauncherConfig(
        image_arn=image_arn,
        connector_arn=connector_arn,
        ingress_connector_arn=ingress_connector_arn,
        webhook_secret_arn=webhook_secret_arn,
        credential_key_secret_arn=credential_key_secret_arn,
        max_duration_seconds=max_duration,
        idle_timeout_seconds=idle,
        exec_timeout_seconds=exec_timeout,
        replay_window_seconds=replay,
        control_plane_url=control_plane_url,
        execution_role_arn=role,
    )


# --- webhook signature -------------------------------------------------------------------------


def compute_signature(secret: bytes, timestamp: str, body: bytes) -> str:
    """Return the ``X-Sandboxkit-Signature`` value for ``body`` signed at ``timestamp``.

    Shape: ``"v1=" + hex(HMAC-SHA256(secret, f"{timestamp}.{raw_body}"))`` (64 lowercase hex).
    """
    mac = hmac.new(secret, timestamp.encode("ascii") + b"." + body, hashlib.sha256)
    return "v1=" + mac.hexdigest()


def check_signature_headers(
    timestamp: str | None, signature: str | None, now: float, window_seconds: int
) -> tuple[str, str]:
    """Validate header presence, format and freshness; needs no secret and calls nothing.

    Args:
        timestamp: ``X-Sandboxkit-Timestamp``, decimal unix seconds.
        signature: ``X-Sandboxkit-Signature``, ``v1=<64 lowercase hex>``.
        now: current unix time in seconds.
        window_seconds: maximum accepted ``|now - timestamp|`` in seconds (past and future skew).

    Returns:
        ``(timestamp, hex_digest)`` ready for :func:`signature_matches`.

    Raises:
        WebhookAuthError: ``missing_headers``, ``malformed_timestamp``, ``malformed_signature``
            or ``stale_timestamp``.
    """
    if not timestamp or not signature:
        raise WebhookAuthError("missing_headers")
    timestamp = timestamp.strip()
    if _TIMESTAMP_RE.fullmatch(timestamp) is None:
        raise WebhookAuthError("malformed_timestamp")
    match = _SIGNATURE_RE.fullmatch(signature.strip())
    if match is None:
        raise WebhookAuthError("malformed_signature")
    if abs(now - int(timestamp)) > window_seconds:
        raise WebhookAuthError("stale_timestamp")
    return timestamp, match.group(1)


def signature_matches(secret: bytes, timestamp: str, body: bytes, hex_digest: str) -> bool:
    """Constant-time comparison of ``hex_digest`` with the HMAC of ``f"{timestamp}.{body}"``."""
    expected = compute_signature(secret, timestamp, body)[len("v1=") :]
    return hmac.compare_digest(expected, hex_digest)


# --- AWS clients and secrets -------------------------------------------------------------------


def make_client(service_name: str) -> Any:
    """Create a boto3 client for ``service_name`` in ``AWS_REGION``.

    This is the seam tests replace (``monkeypatch.setattr(handler, "make_client", ...)``) to
    hand in clients wrapped by ``botocore.stub.Stubber``.
    """
    region = os.environ.get("AWS_REGION", "").strip()
    if not region:
        raise ConfigError("AWS_REGION", "is required")
    return boto3.client(service_name, region_name=region, config=_BOTO_CONFIG)


_clients: dict[str, Any] = {}
_secret_cache: dict[str, tuple[str, float]] = {}
_cache_lock = threading.Lock()
# Clocks, replaceable in tests: wall time for the replay window, monotonic time for the cache.
wall_clock: Callable[[], float] = time.time
monotonic_clock: Callable[[], float] = time.monotonic


def _client(service_name: str) -> Any:
    with _cache_lock:
        client = _clients.get(service_name)
        if client is None:
            client = make_client(service_name)
            _clients[service_name] = client
        return client


def clear_caches() -> None:
    """Forget cached clients and secrets (tests; also usable after a forced rotation)."""
    with _cache_lock:
        _clients.clear()
        _secret_cache.clear()


class _EmptySecretError(Exception):
    pass


def _get_secret(arn: str) -> str:
    """Return the ``SecretString`` of ``arn``, cached for :data:`SECRET_CACHE_TTL_SECONDS`."""
    now = monotonic_clock()
    with _cache_lock:
        cached = _secret_cache.get(arn)
    if cached is not None and now - cached[1] < SECRET_CACHE_TTL_SECONDS:
        return cached[0]
    response = _client("secretsmanager").get_secret_value(SecretId=arn)
    value = response.get("SecretString")
    if not isinstance(value, str) or not value:
        # An empty HMAC key would let anyone sign webhooks or worker credentials.
        raise _EmptySecretError(arn)
    with _cache_lock:
        _secret_cache[arn] = (value, now)
    return value


# --- request handling --------------------------------------------------------------------------


def client_token_for(session_id: str) -> str:
    """Deterministic RunMicrovm ``clientToken`` for a session.

    ``"sbx-" + sha256(session_id)`` hex: 68 ASCII characters, within the model's 1-128 limit
    (``RunMicrovmRequestClientTokenString``) whatever the session id, and the same on every
    redelivery so AWS returns the MicroVM it already started instead of a second one.
    """
    return "sbx-" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()


class CredentialError(Exception):
    """A worker credential failed verification; ``reason`` is a short stable code safe to log."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _credential_mac(key: bytes, signed_part: str) -> str:
    return _b64url(hmac.new(key, signed_part.encode("ascii"), hashlib.sha256).digest())


def worker_credential_claims(
    config: LauncherConfig, session_id: str, job_id: str, launched_at: int
) -> dict[str, Any]:
    """The claims of one launch's worker credential (shape in the module docstring).

    Args:
        launched_at: the launch time, unix seconds; ``exp`` is ``launched_at`` plus the shorter
            of ``MAX_DURATION_SECONDS`` (RunMicrovm ``maximumDurationInSeconds``) and
            ``IDLE_TIMEOUT_SECONDS`` (``idlePolicy.maxIdleDurationSeconds``, which ends a
            MicroVM whose proxy endpoint carries no traffic, as the worker's never does).
    """
    return {
        "v": CREDENTIAL_CLAIMS_VERSION,
        "aud": config.control_plane_url,
        "jobId": job_id,
        "sessionId": session_id,
        "sandboxId": client_token_for(session_id),
        "iat": launched_at,
        "exp": launched_at + min(config.max_duration_seconds, config.idle_timeout_seconds),
    }


def mint_worker_credential(key: bytes, claims: Mapping[str, Any]) -> str:
    """Sign ``claims`` into a worker credential (``sbxw1.<claims>.<mac>``, ASCII)."""
    encoded = _b64url(
        json.dumps(claims, ensure_ascii=True, separators=(",", ":"), sort_keys=True).encode()
    )
    signed_part = f"{CREDENTIAL_PREFIX}.{encoded}"
    return f"{signed_part}.{_credential_mac(key, signed_part)}"


def verify_worker_credential(
    key: bytes,
    credential: str,
    *,
    audience: str,
    job_id: str,
    session_id: str,
    now: float,
) -> dict[str, Any]:
    """The platform's check of a worker's ``Authorization: Bearer <credential>``.

    Args:
        key: the credential key (the ``CREDENTIAL_KEY_SECRET_ARN`` secret's value).
        audience: the platform's own ``controlPlaneUrl``.
        job_id: the job the request addresses (``/v1/jobs/{jobId}``).
        session_id: the session that job belongs to in the platform's records (never the one
            the request body names); the credential's ``sandboxId`` must be that session's
            ``clientToken`` (:func:`client_token_for`), the one MicroVM launched for it.
        now: current unix time, seconds.

    Returns:
        The verified claims.

    Raises:
        CredentialError: ``malformed``, ``bad_signature`` (constant-time comparison),
            ``wrong_audience``, ``wrong_job``, ``wrong_session``, ``wrong_sandbox`` or
            ``expired`` (``now >= exp``).
    """
    parts = credential.split(".")
    if len(parts) != 3 or parts[0] != CREDENTIAL_PREFIX or not credential.isascii():
        raise CredentialError("malformed")
    signed_part = f"{parts[0]}.{parts[1]}"
    if not hmac.compare_digest(_credential_mac(key, signed_part), parts[2]):
        raise CredentialError("bad_signature")
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError):
        raise CredentialError("malformed") from None
    if not isinstance(claims, dict) or claims.get("v") != CREDENTIAL_CLAIMS_VERSION:
        raise CredentialError("malformed")
    expires = claims.get("exp")
    if not isinstance(expires, int) or isinstance(expires, bool):
        raise CredentialError("malformed")
    for claim, expected, reason in (
        ("aud", audience, "wrong_audience"),
        ("jobId", job_id, "wrong_job"),
        ("sessionId", session_id, "wrong_session"),
        ("sandboxId", client_token_for(session_id), "wrong_sandbox"),
    ):
        if claims.get(claim) != expected:
            raise CredentialError(reason)
    if now >= expires:
        raise CredentialError("expired")
    return claims


class ResultsLedger(Protocol):
    """Where the platform records the credentials whose results it accepted.

    ``record_once`` must be atomic across every verifier the platform runs: a conditional write
    (DynamoDB ``PutItem`` with ``ConditionExpression: attribute_not_exists(pk)`` and a TTL
    attribute at ``expires_at``; SQL ``INSERT`` on a primary key) or, for one process,
    :class:`MemoryResultsLedger`. Entries may be dropped after ``expires_at``: an expired
    credential is refused before the ledger is asked.
    """

    def record_once(self, receipt: str, expires_at: int, now: float) -> bool:
        """Record ``receipt`` at ``now`` (unix seconds); ``True`` the first time, ``False`` if
        it was recorded before."""
        ...


class MemoryResultsLedger:
    """A :class:`ResultsLedger` for one verifier process (a lock and a dict of receipt ->
    ``exp``, unix seconds); entries past their ``exp`` are dropped as new ones arrive."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._receipts: dict[str, int] = {}

    def record_once(self, receipt: str, expires_at: int, now: float) -> bool:
        """See :meth:`ResultsLedger.record_once`."""
        with self._lock:
            self._receipts = {r: exp for r, exp in self._receipts.items() if exp > now}
            if receipt in self._receipts:
                return False
            self._receipts[receipt] = expires_at
            return True


def accept_results(
    key: bytes,
    credential: str,
    ledger: ResultsLedger,
    *,
    audience: str,
    job_id: str,
    session_id: str,
    now: float,
) -> dict[str, Any]:
    """The platform's check of ``POST {controlPlaneUrl}/v1/jobs/{jobId}/results``: the
    credential verifies (:func:`verify_worker_credential`, same arguments) and its results were
    never accepted before. The receipt is the credential's signature, one per launch.

    Returns:
        The verified claims; the results may be stored.

    Raises:
        CredentialError: every reason of :func:`verify_worker_credential`, or
            ``results_already_accepted`` (the platform answers 409; the worker does not retry it).
    """
    claims = verify_worker_credential(
        key, credential, audience=audience, job_id=job_id, session_id=session_id, now=now
    )
    if not ledger.record_once(credential.rsplit(".", 1)[1], claims["exp"], now):
        raise CredentialError("results_already_accepted")
    return claims


def build_run_hook_payload(
    config: LauncherConfig, session_id: str, job_id: str, credential: str
) -> str:
    """The ``runHookPayload`` the worker reads from ``POST /aws/lambda-microvms/runtime/v1/run``.

    Shape (compact JSON, ASCII only, sorted keys)::

        {"v": 2, "sessionId": str, "jobId": str, "controlPlaneUrl": str,
         "credential": str, "execTimeoutSeconds": int}

    ``credential`` is this launch's worker credential; the key that signed it is not here.

    Raises:
        ConfigError: if the payload exceeds :data:`MAX_RUN_HOOK_PAYLOAD_CHARS` (in practice an
            oversized control-plane URL, which the credential's ``aud`` repeats).
    """
    payload = json.dumps(
        {
            "v": RUN_HOOK_PAYLOAD_VERSION,
            "sessionId": session_id,
            "jobId": job_id,
            "controlPlaneUrl": config.control_plane_url,
            "credential": credential,
            "execTimeoutSeconds": config.exec_timeout_seconds,
        },
        ensure_ascii=True,
        separators=(",", ":"),
        sort_keys=True,
    )
    if len(payload) > MAX_RUN_HOOK_PAYLOAD_CHARS:
        raise ConfigError("CONTROL_PLANE_URL", "too long for runHookPayload")
    return payload


def build_run_microvm_params(
    config: LauncherConfig, session_id: str, job_id: str, credential: str
) -> dict[str, Any]:
    """Keyword arguments for ``lambda-microvms`` ``RunMicrovm`` (member names from the model).

    The idle policy never brings a MicroVM back: ``autoResumeEnabled`` is false and a suspended
    MicroVM is terminated at once (``suspendedDurationSeconds`` 0).
    """
    params: dict[str, Any] = {
        "imageIdentifier": config.image_arn,
        "ingressNetworkConnectors": [config.ingress_connector_arn],
        "egressNetworkConnectors": [config.connector_arn],
        "idlePolicy": {
            "maxIdleDurationSeconds": config.idle_timeout_seconds,
            "suspendedDurationSeconds": 0,
            "autoResumeEnabled": False,
        },
        "maximumDurationInSeconds": config.max_duration_seconds,
        "runHookPayload": build_run_hook_payload(config, session_id, job_id, credential),
        "clientToken": client_token_for(session_id),
    }
    if config.execution_role_arn is not None:
        params["executionRoleArn"] = config.execution_role_arn
    return params


def parse_launch_body(body: bytes) -> tuple[str, str]:
    """Parse an authenticated body ``{"sessionId": str, "jobId": str}`` (other keys ignored).

    Both ids must match :data:`ID_PATTERN` (1-128 chars of ``[A-Za-z0-9._:-]``, alphanumeric
    first).

    Raises:
        BadRequestError: ``invalid_json``, ``not_an_object`` or ``invalid_ids``.
    """
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise BadRequestError("invalid_json") from None
    if not isinstance(data, dict):
        raise BadRequestError("not_an_object")
    session_id = data.get("sessionId")
    job_id = data.get("jobId")
    if not (isinstance(session_id, str) and ID_PATTERN.fullmatch(session_id)):
        raise BadRequestError("invalid_ids")
    if not (isinstance(job_id, str) and ID_PATTERN.fullmatch(job_id)):
        raise BadRequestError("invalid_ids")
    return session_id, job_id


def _log(event: str, **fields: Any) -> None:
    LOGGER.info(json.dumps({"event": event, **fields}, sort_keys=True, default=str))


def _response(status: int, body: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "statusCode": status,
        "headers": {"content-type": "application/json"},
        "body": json.dumps(body, sort_keys=True),
    }


def _header(headers: Mapping[str, Any], name: str) -> str | None:
    # HTTP API v2 lower-cases header names already; be tolerant of hand-built test events.
    for key, value in headers.items():
        if isinstance(key, str) and key.lower() == name and isinstance(value, str):
            return value
    return None


def _raw_body(event: Mapping[str, Any]) -> bytes:
    body = event.get("body")
    if body is None:
        return b""
    if not isinstance(body, str):
        raise WebhookAuthError("malformed_body")
    if event.get("isBase64Encoded"):
        try:
            return base64.b64decode(body, validate=True)
        except (binascii.Error, ValueError):
            raise WebhookAuthError("malformed_body") from None
    return body.encode("utf-8")


def _aws_error_code(error: Exception) -> str:
    if isinstance(error, ClientError):
        return str(error.response.get("Error", {}).get("Code", "Unknown"))
    return type(error).__name__


def handler(event: Mapping[str, Any], context: Any) -> dict[str, Any]:
    """Lambda entry point for an API Gateway HTTP API (payload format 2.0) event.

    Returns:
        An HTTP API proxy response: 202 ``{"microvmId", "sessionId"}``; 401 for any
        authentication failure; 400 for a bad body after a good signature; 500 when the launcher
        is misconfigured or fails unexpectedly; 502 when an AWS call fails. Error bodies carry
        only a short code, never an AWS message.
    """
    request_id = getattr(context, "aws_request_id", None)
    try:
        return _handle(event, request_id)
    except Exception as error:
        _log("unexpected_error", requestId=request_id, type=type(error).__name__)
        return _response(500, {"error": "internal_error"})


def _handle(event: Mapping[str, Any], request_id: str | None) -> dict[str, Any]:
    try:
        config = load_config(os.environ)
    except ConfigError as error:
        _log("config_invalid", requestId=request_id, field=error.field, reason=error.reason)
        return _response(500, {"error": "launcher_misconfigured"})

    headers = event.get("headers") or {}
    if not isinstance(headers, Mapping):
        headers = {}
    try:
        timestamp, digest = check_signature_headers(
            _header(headers, TIMESTAMP_HEADER),
            _header(headers, SIGNATURE_HEADER),
            wall_clock(),
            config.replay_window_seconds,
        )
        body = _raw_body(event)
    except WebhookAuthError as error:
        _log("webhook_rejected", requestId=request_id, reason=error.reason)
        return _response(401, {"error": "unauthorized"})

    try:
        secret = _get_secret(config.webhook_secret_arn).encode("utf-8")
    except (BotoCoreError, ClientError) as error:
        _log("aws_error", requestId=request_id, step="webhook_secret", code=_aws_error_code(error))
        return _response(502, {"error": "upstream_error"})
    except _EmptySecretError:
        _log("config_invalid", requestId=request_id, field="WEBHOOK_SECRET_ARN", reason="empty")
        return _response(500, {"error": "launcher_misconfigured"})
    except ConfigError as error:
        _log("config_invalid", requestId=request_id, field=error.field, reason=error.reason)
        return _response(500, {"error": "launcher_misconfigured"})

    if not signature_matches(secret, timestamp, body, digest):
        _log("webhook_rejected", requestId=request_id, reason="bad_signature")
        return _response(401, {"error": "unauthorized"})

    try:
        session_id, job_id = parse_launch_body(body)
    except BadRequestError as error:
        _log("bad_request", requestId=request_id, reason=error.reason)
        return _response(400, {"error": "bad_request"})

    try:
        key = _get_secret(config.credential_key_secret_arn).encode("utf-8")
        launched_at = min(int(timestamp), int(wall_clock()))
        claims = worker_credential_claims(config, session_id, job_id, launched_at)
        credential = mint_worker_credential(key, claims)
        params = build_run_microvm_params(config, session_id, job_id, credential)
        response = _client("lambda-microvms").run_microvm(**params)
    except (BotoCoreError, ClientError) as error:
        _log(
            "aws_error",
            requestId=request_id,
            sessionId=session_id,
            step="launch",
            code=_aws_error_code(error),
        )
        return _response(502, {"error": "upstream_error"})
    except _EmptySecretError:
        _log(
            "config_invalid",
            requestId=request_id,
            field="CREDENTIAL_KEY_SECRET_ARN",
            reason="empty",
        )
        return _response(500, {"error": "launcher_misconfigured"})
    except ConfigError as error:
        _log("config_invalid", requestId=request_id, field=error.field, reason=error.reason)
        return _response(500, {"error": "launcher_misconfigured"})

    microvm_id = response.get("microvmId")
    _log(
        "microvm_started",
        requestId=request_id,
        sessionId=session_id,
        jobId=job_id,
        microvmId=microvm_id,
        credentialExpiresAt=claims["exp"],
        state=response.get("state"),
        clientToken=params["clientToken"],
    )
    return _response(202, {"microvmId": microvm_id, "sessionId": session_id})
