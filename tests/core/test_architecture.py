"""The architecture rules import-linter cannot state: targets reach each other only through
public names (gcp-gke builds the kubernetes objects with the kubernetes folder's public API)."""

from __future__ import annotations

import ast
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
