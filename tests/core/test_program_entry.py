"""The entry point `pulumi up` runs refuses bad config with exit 2 before touching the engine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def test_engine_config_error_exits_2_with_every_problem_and_no_traceback(
    project_dir: Path,
) -> None:
    # The engine hands config to the program as PULUMI_CONFIG, structured values as JSON text.
    config = {
        "sandboxkit:environment": "nope",
        "sandboxkit:targets": json.dumps(["kubernetes"]),
        "sandboxkit:kubernetes": json.dumps({"context": "c", "image": "i", "namespce": "x"}),
    }
    env = {**os.environ, "PULUMI_CONFIG": json.dumps(config)}
    result = subprocess.run(
        [sys.executable, str(project_dir / "components" / "__main__.py")],
        cwd=project_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "sandboxkit: invalid input",
        "sandboxkit:environment: got 'nope'; expected one of dev, staging, prod",
        "sandboxkit:kubernetes.namespce: got '[value not shown]'; expected no such key "
        "(did you mean 'namespace'?); known keys: unenforced, image, namespace, createNamespace, "
        "entryNamespace, entryPort, runAsUser, resolver, context, runtimeClass, fqdnPolicy, "
        "ciliumVersion",
    ]
