"""The architecture rules import-linter cannot state: targets reach each other only through
public names (gcp-gke builds the kubernetes objects with the kubernetes folder's public API), and
the files shipped alone (the MicroVM launcher and worker) import only what ships with them."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "components" / "sandboxkit"
TARGET_FOLDERS = ("aws", "azure", "cloudflare", "gcp", "kubernetes")


def _folder(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in TARGET_FOLDERS else None


def cross_target_private_imports(package: Path) -> list[str]:
    """``file: from sandboxkit.<other target>... import _name`` for every such import."""
    found = []
    for path in sorted(package.rglob("*.py")):
        module = ".".join(("sandboxkit", *path.relative_to(package).with_suffix("").parts))
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith(
                "sandboxkit."
            ):
                continue
            other = _folder(node.module or "")
            if other is None or other == _folder(module):
                continue
            private = [a.name for a in node.names if a.name.startswith("_")]
            private += [p for p in (node.module or "").split(".") if p.startswith("_")]
            found += [f"{path.relative_to(package)}: {node.module}.{name}" for name in private]
    return found


def test_targets_use_each_other_only_through_public_names() -> None:
    assert cross_target_private_imports(PACKAGE) == []


def test_a_private_name_from_another_target_is_caught(tmp_path: Path) -> None:
    (tmp_path / "gcp").mkdir()
    (tmp_path / "gcp" / "x.py").write_text(
        "from sandboxkit.kubernetes.spec import _NAME, sandbox_args\n"
        "from sandboxkit.gcp.settings import _private_cidr\n"
    )
    assert cross_target_private_imports(tmp_path) == ["gcp/x.py: sandboxkit.kubernetes.spec._NAME"]


# Shipped alone: the launcher runs in the Lambda Python runtime (which provides boto3 and
# botocore), the worker inside the MicroVM guest with the standard library only.
SHIPPED_ALONE = {"aws/launcher": frozenset({"boto3", "botocore"}), "aws/worker": frozenset()}


def imports_beyond(folder: Path, allowed: frozenset[str]) -> list[str]:
    """``file: module`` for every absolute import in ``folder`` outside the standard library
    and ``allowed`` (relative imports stay inside the folder)."""
    found = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            top = {m: m.split(".")[0] for m in modules}
            found += [
                f"{path.relative_to(folder)}: {m}"
                for m, t in top.items()
                if t not in sys.stdlib_module_names and t not in allowed and t != "__future__"
            ]
    return found


def test_the_launcher_and_the_worker_import_only_what_ships_with_them() -> None:
    for folder, allowed in SHIPPED_ALONE.items():
        assert imports_beyond(PACKAGE / folder, allowed) == [], folder


def test_an_import_of_the_kit_from_a_shipped_folder_is_caught(tmp_path: Path) -> None:
    (tmp_path / "main.py").write_text(
        "import json\nfrom . import helper\nimport boto3\nfrom sandboxkit.contract import X\n"
    )
    assert imports_beyond(tmp_path, frozenset({"boto3"})) == ["main.py: sandboxkit.contract"]
    assert imports_beyond(tmp_path, frozenset()) == [
        "main.py: boto3",
        "main.py: sandboxkit.contract",
    ]
