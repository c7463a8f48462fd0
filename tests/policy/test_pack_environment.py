"""The pack's own environment: what the Pulumi CLI builds from requirements.txt, built here.

The CLI runs pip in the pack folder (``virtualenv: venv`` in PulumiPolicy.yaml); here uv
resolves and installs the same requirements file, from the same folder and the same package
index, into a plain ``python -m venv``: every cloud SDK (about 1.4 GB installed) in a few
seconds from uv's cache, where pip spends about 70 s unpacking and byte-compiling
(benchmarks/README.md). The venv is made without pip, which nothing here runs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from google.protobuf import empty_pb2
from uv import find_uv_bin

from sandboxkit import gate

# The venv that runs the tests has a venv module; the new one sees none of its packages.
BASE_PYTHON = sys.executable


def test_requirements_build_an_isolated_env_that_serves_the_pack(
    tmp_path: Path, project_dir: Path
) -> None:
    pack = gate.pack_dir(project_dir)
    venv = tmp_path / "venv"
    # uv installs into it, so the venv needs no pip of its own (ensurepip: 3 s of CPU).
    subprocess.run([BASE_PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    isolated = subprocess.run(
        [str(python), "-c", "import sys; print(sys.prefix != sys.base_prefix)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert isolated.stdout.strip() == "True"
    # As the CLI does, in the pack folder, so '../..' is this repository, built from this
    # checkout as pip builds it: uv keys its cached build of a local project by the project's
    # pyproject.toml, so without --refresh-package a changed module came from an earlier build.
    install = subprocess.run(
        [
            find_uv_bin(),
            "pip",
            "install",
            "--quiet",
            "--refresh-package",
            "sandboxkit",
            "--python",
            python,
            "-r",
            "requirements.txt",
        ],
        cwd=pack,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert install.returncode == 0, install.stderr
    imported = subprocess.run(
        [
            str(python),
            "-c",
            "import policies, sandboxkit; print(len(policies.ALL_POLICIES), sandboxkit.__file__)",
        ],
        cwd=pack,
        capture_output=True,
        text=True,
        check=True,
    )
    count, location = imported.stdout.split()
    assert int(count) == 37
    assert location.startswith(str(venv))
    with gate.pack_process(pack, python=str(python)) as stub:
        info = stub.GetAnalyzerInfo(empty_pb2.Empty())
    assert len(info.policies) == 37
