"""Tests for the launcher Lambda with botocore Stubbers on real clients (no network)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber
from hypothesis import given
from hypothesis import strategies as st

from model_stubber import ModelStubber
from sandboxkit.aws.launcher import handler

REGION = "us-east-1"
NOW = 1_800_000_000
IMAGE_ARN = "arn:aws:lambda:us-east-1:123456789012:microvm-image:sbx-worker"
CONNECTOR_ARN = "arn:aws:lambda:us-east-1:123456789012:network-connector:sbx-egress"
INGRESS_ARN = "arn:aws:lambda:us-east-1:aws:network-connector:aws-network-connector:HTTP_INGRESS"
WEBHOOK_SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:sbx-webhook-AbCdEf"
CREDENTIAL_KEY_SECRET_ARN = "arn:aws:secretsmanager:us-east-1:123456789012:secret:sbx-worker-GhIjKl"
ROLE_ARN = "arn:aws:iam::123456789012:role/sbx-microvm-exec"
WEBHOOK_SECRET = "whsec_test_0123456789abcdef"
CREDENTIAL_KEY = "ck_live_SUPERSECRET_9f8e7d6c5b4a"
CONTROL_PLANE_URL = "https://agents.example.com/api"
SESSION_ID = "sess_01HZX3Y7"
JOB_ID = "job_42"
MICROVM_ID = "microvm-0a1b2c3d4e5f"

ENV = {
    "AWS_REGION": REGION,
    "IMAGE_ARN": IMAGE_ARN,
    "CONNECTOR_ARN": CONNECTOR_ARN,
    "INGRESS_CONNECTOR_ARN": INGRESS_ARN,
    "WEBHOOK_SECRET_ARN": WEBHOOK_SECRET_ARN,
    "CREDENTIAL_KEY_SECRET_ARN": CREDENTIAL_KEY_SECRET_ARN,
    "MAX_DURATION_SECONDS": "3600",
    "IDLE_TIMEOUT_SECONDS": "900",
    "EXEC_TIMEOUT_SECONDS": "120",
    "CONTROL_PLANE_URL": CONTROL_PLANE_URL,
}


@dataclass
class Aws:
    """Real boto3 clients wrapped by Stubbers, plus a record of every call that reached them."""

    secrets: Any
    microvms: Any
    secrets_stub: Stubber
    microvms_stub: Stubber
    calls: list[tuple[str, str]]

    def expect_secret(self, arn: str, value: str) -> None:
        self.secrets_stub.add_response(
            "get_secret_value",
            {"ARN": arn, "Name": arn.rsplit(":", 1)[-1], "SecretString": value},
            {"SecretId": arn},
        )

    def expect_run(self, params: dict[str, Any]) -> None:
        self.microvms_stub.add_response("run_microvm", _run_response(), params)


def _run_response() -> dict[str, Any]:
    return {
        "microvmId": MICROVM_ID,
        "state": "PENDING",
        "endpoint": f"https://{MICROVM_ID}.lambda-microvm.us-east-1.on.aws",
        "imageArn": IMAGE_ARN,
        "imageVersion": "1.0",
        "maximumDurationInSeconds": 3600,
        "startedAt": datetime(2027, 1, 15, tzinfo=UTC),
    }


def _fake_client(service: str) -> Any:
    return boto3.client(
        service,
        region_name=REGION,
        aws_access_key_id="AKIDTESTING",
        aws_secret_access_key="testing",
    )


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[Aws]:
    for name in [*list(ENV), "REPLAY_WINDOW_SECONDS", "EXECUTION_ROLE_ARN"]:
        monkeypatch.delenv(name, raising=False)
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    calls: list[tuple[str, str]] = []
    clients = {service: _fake_client(service) for service in ("secretsmanager", "lambda-microvms")}
    for service, client in clients.items():

        def record(model: Any, service: str = service, **_: Any) -> None:
            calls.append((service, model.name))

        # Registered before the Stubbers are activated, so it runs ahead of their checks and
        # records every attempted call, including one the Stubber would refuse as un-stubbed.
        client.meta.events.register_first("before-parameter-build.*.*", record)
    env = Aws(
        secrets=clients["secretsmanager"],
        microvms=clients["lambda-microvms"],
        secrets_stub=ModelStubber(clients["secretsmanager"]),
        microvms_stub=ModelStubber(clients["lambda-microvms"]),
        calls=calls,
    )
    monkeypatch.setattr(handler, "make_client", lambda service: clients[service])
    monkeypatch.setattr(handler, "wall_clock", lambda: float(NOW))
    handler.clear_caches()
    with env.secrets_stub, env.microvms_stub:
        yield env
    handler.clear_caches()


def _event(
    body: str | bytes,
    *,
    timestamp: int | str | None = NOW,
    signature: str | None = None,
    secret: str = WEBHOOK_SECRET,
    base64_body: bool = False,
    sign_body: bytes | None = None,
) -> dict[str, Any]:
    raw = body.encode() if isinstance(body, str) else body
    headers: dict[str, str] = {"content-type": "application/json"}
    if timestamp is not None:
        headers["x-sandboxkit-timestamp"] = str(timestamp)
        if signature is None:
            signature = handler.compute_signature(
                secret.encode(), str(timestamp), raw if sign_body is None else sign_body
            )
    if signature is not None:
        headers["x-sandboxkit-signature"] = signature
    return {
        "version": "2.0",
        "routeKey": "POST /webhook",
        "rawPath": "/webhook",
        "headers": headers,
        "requestContext": {"http": {"method": "POST", "path": "/webhook"}},
        "body": base64.b64encode(raw).decode() if base64_body else raw.decode(),
        "isBase64Encoded": base64_body,
    }


def _body(session_id: str = SESSION_ID, job_id: str = JOB_ID) -> str:
    return json.dumps({"sessionId": session_id, "jobId": job_id})


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _claims(
    session_id: str = SESSION_ID, job_id: str = JOB_ID, launched_at: int = NOW
) -> dict[str, Any]:
    return {
        "v": 1,
        "aud": CONTROL_PLANE_URL,
        "jobId": job_id,
        "sessionId": session_id,
        "sandboxId": "sbx-" + hashlib.sha256(session_id.encode()).hexdigest(),
        "iat": launched_at,
        # IDLE_TIMEOUT_SECONDS, shorter than MAX_DURATION_SECONDS (3600): the worker's MicroVM
        # carries no proxy traffic, so it ends at its idle limit at the latest.
        "exp": launched_at + 900,
    }


def _credential(claims: dict[str, Any], key: str = CREDENTIAL_KEY) -> str:
    """The credential format, written out independently of the launcher's code."""
    body = _b64url(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
    mac = hmac.new(key.encode(), f"sbxw1.{body}".encode(), hashlib.sha256).digest()
    return f"sbxw1.{body}.{_b64url(mac)}"


def _expected_params(
    session_id: str = SESSION_ID, job_id: str = JOB_ID, launched_at: int = NOW, **overrides: Any
) -> dict[str, Any]:
    params = {
        "imageIdentifier": IMAGE_ARN,
        "ingressNetworkConnectors": [INGRESS_ARN],
        "egressNetworkConnectors": [CONNECTOR_ARN],
        "idlePolicy": {
            "maxIdleDurationSeconds": 900,
            "suspendedDurationSeconds": 0,
            "autoResumeEnabled": False,
        },
        "maximumDurationInSeconds": 3600,
        "runHookPayload": json.dumps(
            {
                "controlPlaneUrl": CONTROL_PLANE_URL,
                "credential": _credential(_claims(session_id, job_id, launched_at)),
                "execTimeoutSeconds": 120,
                "jobId": job_id,
                "sessionId": session_id,
                "v": 2,
            },
            separators=(",", ":"),
        ),
        "clientToken": handler.client_token_for(session_id),
    }
    params.update(overrides)
    return params


def _call(event: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    result = handler.handler(event, None)
    return result["statusCode"], json.loads(result["body"])


GET_SECRET = ("secretsmanager", "GetSecretValue")
RUN = ("lambda-microvms", "RunMicrovm")


# --- happy path --------------------------------------------------------------------------------


def test_good_webhook_reads_both_secrets_then_runs_one_microvm(aws: Aws) -> None:
    aws.expect_secret(WEBHOOK_SECRET_ARN, WEBHOOK_SECRET)
    aws.expect_secret(CREDENTIAL_KEY_SECRET_ARN, CREDENTIAL_KEY)
    aws.expect_run(_expected_params())

    status, body = _call(_event(_body()))

    assert (status, body) == (202, {"microvmId": MICROVM_ID, "sessionId": SESSION_ID})
    assert aws.calls == [GET_SECRET, GET_SECRET, RUN]
    aws.secrets_stub.assert_no_pending_responses()
    aws.microvms_stub.assert_no_pending_responses()


def test_base64_encoded_body_is_verified_on_its_decoded_bytes(aws: Aws) -> None:
    aws.expect_secret(WEBHOOK_SECRET_ARN, WEBHOOK_SECRET)
    aws.expect_secret(CREDENTIAL_KEY_SECRET_ARN, CREDENTIAL_KEY)
    aws.expect_run(_expected_params())

    status, _ = _call(_event(_body(), base64_body=True))

    assert status == 202
    assert aws.calls == [GET_SECRET, GET_SECRET, RUN]


def test_execution_role_is_passed_only_when_configured(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EXECUTION_ROLE_ARN", ROLE_ARN)
    aws.expect_secret(WEBHOOK_SECRET_ARN, WEBHOOK_SECRET)
    aws.expect_secret(CREDENTIAL_KEY_SECRET_ARN, CREDENTIAL_KEY)
    aws.expect_run(_expected_params(executionRoleArn=ROLE_ARN))

    status, _ = _call(_event(_body()))

    assert status == 202
    aws.microvms_stub.assert_no_pending_responses()


def test_params_never_name_internet_egress_or_auto_resume() -> None:
    config = handler.load_config(ENV)
    params = handler.build_run_microvm_params(config, SESSION_ID, JOB_ID, _credential(_claims()))

    assert params["egressNetworkConnectors"] == [CONNECTOR_ARN]
    # Was: no ingress list, so RunMicrovm passed the default HTTP_INGRESS implicitly, which
    # the role could not pass. Now what is passed is what the role may pass.
    assert params["ingressNetworkConnectors"] == [INGRESS_ARN]
    assert "INTERNET_EGRESS" not in json.dumps(params)
    assert params["idlePolicy"]["autoResumeEnabled"] is False
    assert params["idlePolicy"]["suspendedDurationSeconds"] == 0
    assert "executionRoleArn" not in params


def test_params_are_valid_against_the_service_model() -> None:
    """botocore's own validator accepts the params (member names, types, min/max)."""
    from botocore.validate import ParamValidator

    config = handler.load_config({**ENV, "EXECUTION_ROLE_ARN": ROLE_ARN})
    claims = _claims("s" * 128, "j" * 128)
    params = handler.build_run_microvm_params(config, "s" * 128, "j" * 128, _credential(claims))
    model = _fake_client("lambda-microvms").meta.service_model.operation_model("RunMicrovm")

    report = ParamValidator().validate(params, model.input_shape)

    assert not report.has_errors(), report.generate_report()


# --- per-launch worker credentials ------------------------------------------------------------


def test_each_launch_carries_a_credential_for_its_own_job_and_no_key(aws: Aws) -> None:
    aws.expect_secret(WEBHOOK_SECRET_ARN, WEBHOOK_SECRET)
    aws.expect_secret(CREDENTIAL_KEY_SECRET_ARN, CREDENTIAL_KEY)
    aws.expect_run(_expected_params())
    aws.expect_run(_expected_params("sess_other", "job_43"))
    sent: list[dict[str, Any]] = []
    aws.microvms.meta.events.register(
        "provide-client-params.lambda-microvms.RunMicrovm",
        lambda params, **_: sent.append(dict(params)),
    )

    assert _call(_event(_body()))[0] == 202
    assert _call(_event(_body("sess_other", "job_43")))[0] == 202

    payloads = [json.loads(params["runHookPayload"]) for params in sent]
    assert [p["credential"] for p in payloads] == [
        _credential(_claims()),
        _credential(_claims("sess_other", "job_43")),
    ]
    for params in sent:
        # The signing key is in no RunMicrovm parameter, so in nothing the guest receives.
        assert CREDENTIAL_KEY not in json.dumps(params)
        assert "workerKey" not in params["runHookPayload"]
    # The launcher's environment names the key's secret, never the key.
    assert CREDENTIAL_KEY not in json.dumps(dict(handler.os.environ))


def test_the_platform_verifies_a_credential_for_its_job_session_and_sandbox_only() -> None:
    key = CREDENTIAL_KEY.encode()
    credential = _credential(_claims())
    verify = handler.verify_worker_credential
    forged = (
        _credential(_claims(job_id="job_43")).rsplit(".", 1)[0] + "." + credential.rsplit(".", 1)[1]
    )
    # Signed with the real key, but its sandboxId is not the one its session's launch used.
    other_sandbox = _credential({**_claims(), "sandboxId": "sbx-" + "0" * 64})

    assert verify(
        key, credential, audience=CONTROL_PLANE_URL, job_id=JOB_ID, session_id=SESSION_ID, now=NOW
    ) == (_claims())
    refusals = {
        "other job": (key, credential, CONTROL_PLANE_URL, "job_43", SESSION_ID, NOW),
        "other session": (key, credential, CONTROL_PLANE_URL, JOB_ID, "sess_other", NOW),
        "other sandbox": (key, other_sandbox, CONTROL_PLANE_URL, JOB_ID, SESSION_ID, NOW),
        # The idle limit (900 s), not the maximum duration (3600 s), ends the credential.
        "past the idle limit": (key, credential, CONTROL_PLANE_URL, JOB_ID, SESSION_ID, NOW + 900),
        "other key": (b"another-key", credential, CONTROL_PLANE_URL, JOB_ID, SESSION_ID, NOW),
        "other platform": (key, credential, "https://evil.example.com", JOB_ID, SESSION_ID, NOW),
        # Job 43's claims under job 42's signature.
        "forged claims": (key, forged, CONTROL_PLANE_URL, "job_43", SESSION_ID, NOW),
        "static key": (key, CREDENTIAL_KEY, CONTROL_PLANE_URL, JOB_ID, SESSION_ID, NOW),
    }
    reasons = {}
    for name, (k, token, audience, job, session, now) in refusals.items():
        with pytest.raises(handler.CredentialError) as raised:
            verify(k, token, audience=audience, job_id=job, session_id=session, now=now)
        reasons[name] = raised.value.reason
    assert reasons == {
        "other job": "wrong_job",
        "other session": "wrong_session",
        "other sandbox": "wrong_sandbox",
        "past the idle limit": "expired",
        "other key": "bad_signature",
        "other platform": "wrong_audience",
        "forged claims": "bad_signature",
        "static key": "malformed",
    }
    assert verify(
        key,
        credential,
        audience=CONTROL_PLANE_URL,
        job_id=JOB_ID,
        session_id=SESSION_ID,
        now=NOW + 899,
    ) == (_claims())


def test_a_credential_expires_at_the_maximum_duration_when_that_is_shorter() -> None:
    config = handler.load_config({**ENV, "MAX_DURATION_SECONDS": "600"})

    claims = handler.worker_credential_claims(config, SESSION_ID, JOB_ID, NOW)

    assert claims["exp"] == NOW + 600


def test_the_platform_accepts_a_credentials_results_once() -> None:
    key = CREDENTIAL_KEY.encode()
    ledger = handler.MemoryResultsLedger()
    other = _credential(_claims("sess_other", "job_43"))

    def accept(credential: str, session: str, job: str, now: float) -> dict[str, Any]:
        return handler.accept_results(
            key,
            credential,
            ledger,
            audience=CONTROL_PLANE_URL,
            job_id=job,
            session_id=session,
            now=now,
        )

    assert accept(_credential(_claims()), SESSION_ID, JOB_ID, NOW) == _claims()
    with pytest.raises(handler.CredentialError) as again:
        accept(_credential(_claims()), SESSION_ID, JOB_ID, NOW + 1)
    # A credential that does not verify is never recorded, so it cannot spend another's receipt.
    with pytest.raises(handler.CredentialError) as wrong:
        accept(other, SESSION_ID, JOB_ID, NOW)
    assert (again.value.reason, wrong.value.reason) == ("results_already_accepted", "wrong_job")
    assert accept(other, "sess_other", "job_43", NOW) == _claims("sess_other", "job_43")


def test_the_memory_ledger_forgets_receipts_only_after_they_expire() -> None:
    ledger = handler.MemoryResultsLedger()

    assert ledger.record_once("r1", NOW + 10, NOW) is True
    assert ledger.record_once("r1", NOW + 10, NOW + 9) is False
    # Past exp the credential is refused before the ledger is asked, so forgetting is safe.
    assert ledger.record_once("r1", NOW + 20, NOW + 10) is True


# --- rejected webhooks: exact status and nothing started ---------------------------------------


@pytest.mark.parametrize(
    ("name", "event"),
    [
        ("no headers", _event(_body(), timestamp=None, signature=None)),
        ("no signature", {**_event(_body()), "headers": {"x-sandboxkit-timestamp": str(NOW)}}),
        ("no timestamp", _event(_body(), timestamp=None, signature="v1=" + "a" * 64)),
        ("signature without v1", _event(_body(), signature="a" * 64)),
        ("signature not hex", _event(_body(), signature="v1=" + "z" * 64)),
        ("signature too short", _event(_body(), signature="v1=" + "a" * 63)),
        ("signature upper-case", _event(_body(), signature="v1=" + "A" * 64)),
        ("timestamp not a number", _event(_body(), timestamp="yesterday")),
        ("timestamp negative", _event(_body(), timestamp="-5")),
        ("expired timestamp", _event(_body(), timestamp=NOW - 301)),
        ("future timestamp", _event(_body(), timestamp=NOW + 301)),
    ],
)
def test_rejected_before_any_aws_call(aws: Aws, name: str, event: dict[str, Any]) -> None:
    status, body = _call(event)

    assert (status, body) == (401, {"error": "unauthorized"}), name
    assert aws.calls == [], name


def test_replay_window_edges_are_accepted(aws: Aws) -> None:
    aws.expect_secret(WEBHOOK_SECRET_ARN, WEBHOOK_SECRET)
    aws.expect_secret(CREDENTIAL_KEY_SECRET_ARN, CREDENTIAL_KEY)
    aws.expect_run(_expected_params(launched_at=NOW - 300))
    aws.expect_run(_expected_params())  # a future timestamp never extends the credential

    past = _call(_event(_body(), timestamp=NOW - 300))
    future = _call(_event(_body(), timestamp=NOW + 300))

    assert past[0] == future[0] == 202
    assert aws.calls == [GET_SECRET, GET_SECRET, RUN, RUN]


_OTHER_TIMESTAMP = _event(_body())
_OTHER_TIMESTAMP["headers"]["x-sandboxkit-signature"] = handler.compute_signature(
    WEBHOOK_SECRET.encode(), str(NOW - 1), _body().encode()
)


@pytest.mark.parametrize(
    ("name", "event"),
    [
        ("wrong secret", _event(_body(), secret="not-the-secret")),
        ("tampered body", _event(_body(), sign_body=_body(job_id="job_43").encode())),
        ("signed for another timestamp", _OTHER_TIMESTAMP),
    ],
)
def test_bad_signature_reads_only_the_webhook_secret(
    aws: Aws, name: str, event: dict[str, Any]
) -> None:
    aws.expect_secret(WEBHOOK_SECRET_ARN, WEBHOOK_SECRET)

    status, body = _call(event)

    assert (status, body) == (401, {"error": "unauthorized"}), name
    assert aws.calls == [GET_SECRET], name
    aws.secrets_stub.assert_no_pending_responses()


@pytest.mark.parametrize(
    "raw",
    [
        "{not json",
        "[]",
        json.dumps({"sessionId": SESSION_ID}),
        json.dumps({"sessionId": SESSION_ID, "jobId": 7}),
        json.dumps({"sessionId": "../../etc", "jobId": JOB_ID}),
        json.dumps({"sessionId": SESSION_ID, "jobId": "a/b"}),
        json.dumps({"sessionId": "x" * 129, "jobId": JOB_ID}),
        "",
    ],
)
def test_bad_body_after_good_signature_is_400_and_starts_nothing(aws: Aws, raw: str) -> None:
    aws.expect_secret(WEBHOOK_SECRET_ARN, WEBHOOK_SECRET)

    status, body = _call(_event(raw))

    assert (status, body) == (400, {"error": "bad_request"})
    assert aws.calls == [GET_SECRET]


def test_invalid_base64_body_is_401(aws: Aws) -> None:
    event = _event(_body())
    event["isBase64Encoded"] = True
    event["body"] = "%%% not base64 %%%"

    status, _ = _call(event)

    assert status == 401
    assert aws.calls == []


# --- idempotency, caching, errors ---------------------------------------------------------------


def test_redelivery_of_a_session_reuses_the_client_token(aws: Aws) -> None:
    aws.expect_secret(WEBHOOK_SECRET_ARN, WEBHOOK_SECRET)
    aws.expect_secret(CREDENTIAL_KEY_SECRET_ARN, CREDENTIAL_KEY)
    aws.expect_run(_expected_params(launched_at=NOW - 10))
    aws.expect_run(_expected_params())  # same clientToken, asserted by the Stubber

    first = _call(_event(_body(), timestamp=NOW - 10))
    second = _call(_event(_body(), timestamp=NOW))

    assert first == second == (202, {"microvmId": MICROVM_ID, "sessionId": SESSION_ID})
    # Secrets came from the per-container cache the second time.
    assert aws.calls == [GET_SECRET, GET_SECRET, RUN, RUN]
    aws.microvms_stub.assert_no_pending_responses()


def test_client_token_is_deterministic_distinct_and_within_model_limits() -> None:
    token = handler.client_token_for(SESSION_ID)

    assert token == handler.client_token_for(SESSION_ID)
    assert token != handler.client_token_for(SESSION_ID + "x")
    assert 1 <= len(token) <= handler.MAX_CLIENT_TOKEN_CHARS
    assert len(handler.client_token_for("s" * 128)) == len(token)


def test_secrets_are_refetched_after_the_cache_ttl(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = [1000.0]
    monkeypatch.setattr(handler, "monotonic_clock", lambda: clock[0])
    for _ in range(2):
        aws.expect_secret(WEBHOOK_SECRET_ARN, WEBHOOK_SECRET)
        aws.expect_secret(CREDENTIAL_KEY_SECRET_ARN, CREDENTIAL_KEY)
    for _ in range(3):
        aws.expect_run(_expected_params())

    _call(_event(_body()))
    clock[0] += handler.SECRET_CACHE_TTL_SECONDS - 1
    _call(_event(_body()))
    clock[0] += 2
    _call(_event(_body()))

    assert aws.calls == [GET_SECRET, GET_SECRET, RUN, RUN, GET_SECRET, GET_SECRET, RUN]


def test_run_microvm_error_is_502_without_details(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    aws.expect_secret(WEBHOOK_SECRET_ARN, WEBHOOK_SECRET)
    aws.expect_secret(CREDENTIAL_KEY_SECRET_ARN, CREDENTIAL_KEY)
    aws.microvms_stub.add_client_error(
        "run_microvm",
        service_error_code="ServiceQuotaExceededException",
        service_message="Quota exceeded for account 123456789012 image sbx-worker",
        http_status_code=402,
        expected_params=_expected_params(),
    )
    caplog.set_level(logging.INFO, logger="sandboxkit.aws.launcher")

    result = handler.handler(_event(_body()), None)

    assert result["statusCode"] == 502
    assert json.loads(result["body"]) == {"error": "upstream_error"}
    assert "123456789012" not in result["body"] and "Quota" not in result["body"]
    assert "Quota exceeded" not in caplog.text
    assert "ServiceQuotaExceededException" in caplog.text
    assert aws.calls == [GET_SECRET, GET_SECRET, RUN]


def test_secret_read_error_is_502_and_starts_nothing(aws: Aws) -> None:
    aws.secrets_stub.add_client_error(
        "get_secret_value", "AccessDeniedException", "not allowed on arn:aws:secretsmanager:..."
    )

    status, body = _call(_event(_body()))

    assert (status, body) == (502, {"error": "upstream_error"})
    assert aws.calls == [GET_SECRET]


def test_credential_key_read_error_is_502_and_starts_nothing(aws: Aws) -> None:
    aws.expect_secret(WEBHOOK_SECRET_ARN, WEBHOOK_SECRET)
    aws.secrets_stub.add_client_error("get_secret_value", "InternalServiceError", "boom")

    status, _ = _call(_event(_body()))

    assert status == 502
    assert aws.calls == [GET_SECRET, GET_SECRET]


def test_webhook_secret_without_a_string_is_refused(aws: Aws) -> None:
    # The model forbids an empty SecretString, but a binary-only secret has none at all: the
    # launcher must not fall back to an empty HMAC key, which anyone could sign with.
    aws.secrets_stub.add_response(
        "get_secret_value", {"SecretBinary": b"\x00\x01"}, {"SecretId": WEBHOOK_SECRET_ARN}
    )

    status, body = _call(_event(_body(), secret=""))

    assert (status, body) == (500, {"error": "launcher_misconfigured"})
    assert aws.calls == [GET_SECRET]


def test_credential_key_never_reaches_logs_or_response(
    aws: Aws, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    aws.expect_secret(WEBHOOK_SECRET_ARN, WEBHOOK_SECRET)
    aws.expect_secret(CREDENTIAL_KEY_SECRET_ARN, CREDENTIAL_KEY)
    aws.expect_run(_expected_params())
    caplog.set_level(logging.DEBUG)

    result = handler.handler(_event(_body()), None)
    captured = capsys.readouterr()

    assert result["statusCode"] == 202
    assert any('"event": "microvm_started"' in r.getMessage() for r in caplog.records)
    for text in (caplog.text, captured.out, captured.err, json.dumps(result)):
        assert CREDENTIAL_KEY not in text
        assert WEBHOOK_SECRET not in text


def test_logs_are_json_with_an_event_name(aws: Aws, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="sandboxkit.aws.launcher")

    _call(_event(_body(), timestamp=NOW - 3600))

    records = [json.loads(r.getMessage()) for r in caplog.records if r.name == handler.LOGGER.name]
    assert records == [
        {"event": "webhook_rejected", "reason": "stale_timestamp", "requestId": None}
    ]


# --- configuration -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("override", "field_name"),
    [
        ({"IMAGE_ARN": ""}, "IMAGE_ARN"),
        (
            {
                "CONNECTOR_ARN": "arn:aws:lambda:us-east-1:aws:network-connector:"
                "aws-network-connector:INTERNET_EGRESS"
            },
            "CONNECTOR_ARN",
        ),
        ({"CONNECTOR_ARN": "sg-0123"}, "CONNECTOR_ARN"),
        ({"INGRESS_CONNECTOR_ARN": ""}, "INGRESS_CONNECTOR_ARN"),
        ({"INGRESS_CONNECTOR_ARN": INGRESS_ARN.replace("HTTP", "SHELL")}, "INGRESS_CONNECTOR_ARN"),
        ({"INGRESS_CONNECTOR_ARN": CONNECTOR_ARN}, "INGRESS_CONNECTOR_ARN"),
        ({"MAX_DURATION_SECONDS": "28801"}, "MAX_DURATION_SECONDS"),
        ({"MAX_DURATION_SECONDS": "0"}, "MAX_DURATION_SECONDS"),
        ({"IDLE_TIMEOUT_SECONDS": "59"}, "IDLE_TIMEOUT_SECONDS"),
        ({"EXEC_TIMEOUT_SECONDS": "3601"}, "EXEC_TIMEOUT_SECONDS"),
        ({"EXEC_TIMEOUT_SECONDS": "1.5"}, "EXEC_TIMEOUT_SECONDS"),
        ({"REPLAY_WINDOW_SECONDS": "0"}, "REPLAY_WINDOW_SECONDS"),
        ({"CONTROL_PLANE_URL": "http://agents.example.com"}, "CONTROL_PLANE_URL"),
        ({"CONTROL_PLANE_URL": "https://u:p@agents.example.com"}, "CONTROL_PLANE_URL"),
        ({"EXECUTION_ROLE_ARN": "arn:aws:iam::123:user/x"}, "EXECUTION_ROLE_ARN"),
        ({"CREDENTIAL_KEY_SECRET_ARN": "  "}, "CREDENTIAL_KEY_SECRET_ARN"),
    ],
)
def test_invalid_configuration_names_the_field(override: dict[str, str], field_name: str) -> None:
    with pytest.raises(handler.ConfigError) as raised:
        handler.load_config({**ENV, **override})
    assert raised.value.field == field_name


def test_configuration_defaults() -> None:
    config = handler.load_config({**ENV, "EXECUTION_ROLE_ARN": ""})

    assert config.replay_window_seconds == 300
    assert config.execution_role_arn is None
    assert config.control_plane_url == CONTROL_PLANE_URL


def test_misconfigured_launcher_is_500_before_any_aws_call(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONNECTOR_ARN", "")

    status, body = _call(_event(_body()))

    assert (status, body) == (500, {"error": "launcher_misconfigured"})
    assert aws.calls == []


def test_custom_replay_window_is_honoured(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REPLAY_WINDOW_SECONDS", "30")

    status, _ = _call(_event(_body(), timestamp=NOW - 31))

    assert status == 401
    assert aws.calls == []


def test_oversized_payload_is_refused_before_run(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    # The URL appears twice (the payload and the credential's aud): 1,800 characters overflow.
    monkeypatch.setenv("CONTROL_PLANE_URL", CONTROL_PLANE_URL + "/" + "a" * 1800)
    aws.expect_secret(WEBHOOK_SECRET_ARN, WEBHOOK_SECRET)
    aws.expect_secret(CREDENTIAL_KEY_SECRET_ARN, CREDENTIAL_KEY)

    status, _ = _call(_event(_body()))

    assert status == 500
    assert aws.calls == [GET_SECRET, GET_SECRET]


def test_clients_use_the_lambda_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTESTING")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")

    client = handler.make_client("lambda-microvms")

    assert client.meta.region_name == "eu-west-3"


# --- signature verifier properties -------------------------------------------------------------

SECRET = WEBHOOK_SECRET.encode()


@given(body=st.binary(max_size=512), timestamp=st.integers(min_value=0, max_value=10**11))
def test_own_signature_verifies(body: bytes, timestamp: int) -> None:
    ts, digest = handler.check_signature_headers(
        str(timestamp), handler.compute_signature(SECRET, str(timestamp), body), timestamp, 300
    )
    assert handler.signature_matches(SECRET, ts, body, digest)


@given(body=st.binary(max_size=512), data=st.data())
def test_any_body_mutation_fails_verification(body: bytes, data: st.DataObject) -> None:
    signature = handler.compute_signature(SECRET, str(NOW), body)
    mutated = data.draw(st.binary(max_size=513).filter(lambda other: other != body))

    _, digest = handler.check_signature_headers(str(NOW), signature, NOW, 300)

    assert not handler.signature_matches(SECRET, str(NOW), mutated, digest)


@given(body=st.binary(max_size=64), position=st.integers(min_value=0, max_value=63), data=st.data())
def test_any_digest_mutation_fails_verification(
    body: bytes, position: int, data: st.DataObject
) -> None:
    digest = handler.compute_signature(SECRET, str(NOW), body)[3:]
    replacement = data.draw(
        st.sampled_from("0123456789abcdef").filter(lambda c: c != digest[position])
    )
    mutated = digest[:position] + replacement + digest[position + 1 :]

    assert not handler.signature_matches(SECRET, str(NOW), body, mutated)


@given(skew=st.integers(min_value=301, max_value=10**6), sign=st.sampled_from([-1, 1]))
def test_timestamps_outside_the_window_fail(skew: int, sign: int) -> None:
    ts = NOW + sign * skew
    with pytest.raises(handler.WebhookAuthError, match="stale_timestamp"):
        handler.check_signature_headers(
            str(ts), handler.compute_signature(SECRET, str(ts), b"{}"), NOW, 300
        )
