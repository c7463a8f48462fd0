"""The launcher Lambda's deployment package: its handler with the boto3 that can call
``lambda-microvms``, as one deterministic zip.

Why boto3 is bundled: the managed ``python3.12`` runtime ships a boto3/botocore of its own
choosing, which may predate the ``lambda-microvms`` service model (added in botocore 1.44.8),
and the shipped stacks name no layer. So the package carries boto3, botocore and what they
import (``jmespath``, ``dateutil``, ``six``, ``urllib3``, ``s3transfer``) from the environment
that renders the stack (pyproject.toml: ``boto3>=1.44.8``); botocore's service models are kept
for the services the launcher calls only (:data:`LAUNCHER_SERVICES`), which keeps the package
near 6 MiB instead of 30. Lambda puts ``/var/task`` (the package) before the runtime's own
boto3 on ``sys.path`` (Lambda developer guide, "Working with .zip file archives for Python
Lambda functions": a deployment package's dependencies take precedence over the runtime's).
``launcherLayers`` stay available for what else a fork adds.

Determinism: ``__pycache__`` folders and ``.pyc`` files are left out (they differ by machine
and interpreter), and the zip is written by ``worker.build.write_zip`` (sorted names, the zip
epoch, mode 0644, stored): the same sources give the same bytes, so the function's code hash
changes only when the code or the bundled library versions do.
"""

from __future__ import annotations

import hashlib
import importlib.util
import tempfile
from functools import cache
from pathlib import Path

from sandboxkit.aws.worker.build import write_zip

LAUNCHER_DIR = Path(__file__).resolve().parent / "launcher"
# The handler is the package's top-level module (Lambda handler "handler.handler").
HANDLER_MODULE = "handler.py"
# boto3 and every distribution it and botocore import at run time, by import name.
BUNDLED_PACKAGES = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "six", "urllib3")
# The services the launcher's code creates clients for (handler.make_client).
LAUNCHER_SERVICES = ("lambda-microvms", "secretsmanager")


def _source_root(name: str) -> tuple[Path, str]:
    """The folder that holds ``name`` (a package folder or a single module) and its entry."""
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"{name} is not installed; the launcher package bundles it")
    origin = Path(spec.origin)
    if origin.name == "__init__.py":
        return origin.parent.parent, origin.parent.name
    return origin.parent, origin.name


def _wanted(relative: Path) -> bool:
    parts = relative.parts
    if "__pycache__" in parts or relative.suffix == ".pyc":
        return False
    # botocore/data/<service>/...: only the launcher's services; the top-level data files
    # (endpoints, partitions, retry and default configuration) stay.
    if parts[:2] == ("botocore", "data") and len(parts) > 3:
        return parts[2] in LAUNCHER_SERVICES
    return True


def package_entries() -> dict[str, bytes]:
    """Archive name -> bytes of every entry of the launcher package.

    Raises:
        ModuleNotFoundError: if a bundled package is not installed where the stack renders.
    """
    entries = {HANDLER_MODULE: (LAUNCHER_DIR / HANDLER_MODULE).read_bytes()}
    for name in BUNDLED_PACKAGES:
        root, entry = _source_root(name)
        top = root / entry
        files = [top] if top.is_file() else sorted(p for p in top.rglob("*") if p.is_file())
        for path in files:
            relative = path.relative_to(root)
            if _wanted(relative):
                entries[relative.as_posix()] = path.read_bytes()
    return entries


@cache
def launcher_package() -> Path:
    """The package zip, written once per process into the temporary folder under its own
    SHA-256 (so two renders of the same sources share one file and never overwrite another).

    Raises:
        ModuleNotFoundError: as :func:`package_entries`.
        OSError: if the temporary folder cannot be written.
    """
    entries = package_entries()
    digest = hashlib.sha256()
    for name in sorted(entries):
        digest.update(name.encode() + b"\0" + hashlib.sha256(entries[name]).digest())
    folder = Path(tempfile.gettempdir()) / "sandboxkit"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"launcher-{digest.hexdigest()[:16]}.zip"
    if not target.exists():
        write_zip(entries, target)
    return target
