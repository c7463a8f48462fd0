"""The launcher's deployment package: deterministic, no bytecode, and able to call
``lambda-microvms`` with nothing but what it carries."""

from __future__ import annotations

import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

from sandboxkit.aws.launcher_package import (
    BUNDLED_PACKAGES,
    LAUNCHER_SERVICES,
    launcher_package,
    package_entries,
)
from sandboxkit.aws.worker.build import write_zip


def test_the_package_holds_no_bytecode_and_the_same_bytes_every_time(tmp_path: Path) -> None:
    # Was: a FileArchive of the launcher folder, __pycache__ included: a code hash that
    # differed by machine and interpreter.
    names = zipfile.ZipFile(launcher_package()).namelist()
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]
    assert "handler.py" in names
    assert {n.split("/")[0] for n in names} >= {"boto3", "botocore", "urllib3", "six.py"}
    services = {
        n.split("/")[2] for n in names if n.startswith("botocore/data/") and n.count("/") > 2
    }
    assert services == set(LAUNCHER_SERVICES)
    first = write_zip(package_entries(), tmp_path / "a.zip").read_bytes()
    second = write_zip(package_entries(), tmp_path / "b.zip").read_bytes()
    assert hashlib.sha256(first).digest() == hashlib.sha256(second).digest()
    assert first == launcher_package().read_bytes()


def test_the_package_alone_can_call_lambda_microvms(tmp_path: Path) -> None:
    # Was: handler.py and __init__.py only, on a runtime whose boto3 may predate the
    # lambda-microvms model. Here the interpreter sees the package and the standard library
    # only (-I -S: no site-packages), as Lambda's /var/task would put it first.
    with zipfile.ZipFile(launcher_package()) as archive:
        archive.extractall(tmp_path)
    script = (
        "import sys; sys.path.insert(0, sys.argv[1])\n"
        "import boto3, botocore, handler\n"
        "assert botocore.__file__.startswith(sys.argv[1]), botocore.__file__\n"
        "c = boto3.client('lambda-microvms', region_name='eu-west-1',\n"
        "    aws_access_key_id='a', aws_secret_access_key='b')\n"
        "assert 'RunMicrovm' in c.meta.service_model.operation_names\n"
        "from botocore.stub import Stubber\n"
        "with Stubber(c) as s:\n"
        "    s.add_response('get_microvm', {'microvmId': 'm', 'state': 'RUNNING',\n"
        "        'endpoint': 'https://m',\n"
        "        'imageArn': 'arn:aws:lambda:eu-west-1:1:microvm-image:i',\n"
        "        'imageVersion': '1', 'maximumDurationInSeconds': 60,\n"
        "        'startedAt': 0}, {'microvmIdentifier': 'm'})\n"
        "    c.get_microvm(microvmIdentifier='m')\n"
        "boto3.client('secretsmanager', region_name='eu-west-1',\n"
        "    aws_access_key_id='a', aws_secret_access_key='b')\n"
        "print(sorted({m.split('.')[0] for m in sys.modules if m.split('.')[0] in\n"
        f"    {list(BUNDLED_PACKAGES)!r}}}))\n"
    )
    ran = subprocess.run(
        [sys.executable, "-I", "-S", "-c", script, str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr
    assert "boto3" in ran.stdout and "botocore" in ran.stdout
