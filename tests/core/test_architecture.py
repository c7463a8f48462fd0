"""The architecture rules import-linter cannot state: targets reach each other only through
public names (gcp-gke builds the kubernetes objects with the kubernetes folder's public API), and
the files shipped alone (the MicroVM launcher and worker) import only what ships with them."""

from __future__ import annotations

import ast
import functools
import importlib.util
import re
import sys
import tomllib
from pathlib import Path
from typing import Any

from sandboxkit.targets import TARGET_MODULES, get_target

PACKAGE = Path(__file__).resolve().parents[2] / "components" / "sandboxkit"
PROJECT = PACKAGE.parents[1]
# Each registered target's top folder (gcp-cloudrun and gcp-gke share gcp/).
TARGET_FOLDERS = tuple(sorted({module.split(".")[1] for module in TARGET_MODULES.values()}))


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


# --- the lists of targets outside the registry (sandboxkit.targets.TARGET_MODULES) ------------


def importlinter_contract(name_starts: str) -> dict[str, Any]:
    """The import-linter contract of pyproject.toml whose name starts ``name_starts``."""
    contracts = tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["importlinter"]
    (contract,) = [c for c in contracts["contracts"] if c["name"].startswith(name_starts)]
    return contract


def test_the_import_contracts_name_exactly_the_registered_targets() -> None:
    layers = importlinter_contract("Layers: core, targets")["layers"]
    # The targets' layer: independent siblings (``:``), between the program and the guard.
    (targets_layer,) = [layer for layer in layers if ":" in layer]
    assert tuple(part.strip() for part in targets_layer.split(":")) == TARGET_FOLDERS
    independent = importlinter_contract("Targets are independent")["modules"]
    assert independent == [f"sandboxkit.{folder}" for folder in TARGET_FOLDERS]


def test_the_mypy_sdk_lists_are_the_registered_targets_sdks() -> None:
    _, normal = tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"]
    # Each SDK's root package is followed (its shared modules are what every service imports).
    assert [m for m in normal["module"] if "." not in m] == list(SDKS)


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
        "import json\nfrom . import helper\nimport boto3\nfrom sandboxkit.boundary import X\n"
    )
    assert imports_beyond(tmp_path, frozenset({"boto3"})) == ["main.py: sandboxkit.boundary"]
    assert imports_beyond(tmp_path, frozenset()) == [
        "main.py: boto3",
        "main.py: sandboxkit.boundary",
    ]


# --- mypy reads the cloud SDKs only where the kit calls them (pyproject [tool.mypy]) -----------

SDKS = tuple(
    sorted(
        {
            sdk
            for name in TARGET_MODULES
            for sdk in (*get_target(name).sdks, *get_target(name).program_sdks)
        }
    )
)
CHECKED = ("components/sandboxkit", "tests", "policy-packs/sandbox-guard/policies", "benchmarks")


def sdk_uses(tree: ast.AST) -> set[tuple[str, ...]]:
    """Each SDK name a module uses, as its dotted parts: ``import pulumi_aws as aws`` then
    ``aws.ec2.SecurityGroup`` is ``("pulumi_aws", "ec2", "SecurityGroup")``; ``from
    pulumi_azure_native import app`` is ``("pulumi_azure_native", "app")``."""
    aliases: dict[str, tuple[str, ...]] = {}
    found: set[tuple[str, ...]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in SDKS:
                    aliases[alias.asname or alias.name] = tuple(alias.name.split("."))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in SDKS:
            for alias in node.names:
                parts = (*(node.module or "").split("."), alias.name)
                aliases[alias.asname or alias.name] = parts
                found.add(parts)
    for node in ast.walk(tree):
        chain: list[str] = []
        base = node
        while isinstance(base, ast.Attribute):
            chain.insert(0, base.attr)
            base = base.value
        if chain and isinstance(base, ast.Name) and base.id in aliases:
            found.add((*aliases[base.id], *chain))
    return found


def defining_module(parts: tuple[str, ...], site: Path) -> str:
    """The SDK module that defines ``parts``: the deepest subpackage or module on its path,
    or for a name of a package's flat namespace (``pulumi_cloudflare.WorkersScript``) the
    module of that package which defines it (``pulumi_cloudflare.workers_script``)."""
    depth = 1
    while depth < len(parts) and (
        (site.joinpath(*parts[: depth + 1])).is_dir()
        or site.joinpath(*parts[:depth], f"{parts[depth]}.py").is_file()
    ):
        depth += 1
    package = site.joinpath(*parts[:depth])
    if depth == len(parts) or not package.is_dir():
        return ".".join(parts[:depth])
    module = definitions(package).get(parts[depth].removesuffix("_output"))
    return ".".join((*parts[:depth], module) if module else parts[:depth])


DEFINED = re.compile(r"^\s*(?:class|def) (\w+)", re.MULTILINE)


@functools.cache
def definitions(package: Path) -> dict[str, str]:
    """Each name a class or function of ``package`` is defined as -> the first of its modules
    (by file name, ``__init__`` aside) that defines it; each file read once per process (a
    flat SDK package has hundreds, some of several MB)."""
    found: dict[str, str] = {}
    for path in sorted(package.glob("*.py")):
        if path.name != "__init__.py":
            for name in DEFINED.findall(path.read_text()):
                found.setdefault(name, path.stem)
    return found


def sdk_site() -> Path:
    """The site-packages folder holding the cloud SDKs (found without importing them)."""
    spec = importlib.util.find_spec("pulumi_aws")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parents[1]


def followed(module: str, patterns: list[str]) -> bool:
    """Whether a mypy module pattern (``x.y`` or ``x.y.*``, the latter x.y and below) names
    ``module``."""
    return any(
        module == p or (p.endswith(".*") and (module == p[:-2] or module.startswith(p[:-1])))
        for p in patterns
    )


def test_mypy_follows_every_sdk_module_the_kit_uses() -> None:
    mypy = tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["mypy"]
    assert mypy["files"] == list(CHECKED)
    skipped, normal = mypy["overrides"]
    assert skipped == {"module": [f"{sdk}.*" for sdk in SDKS], "follow_imports": "skip"}
    assert normal["follow_imports"] == "normal"
    site = sdk_site()
    used = {
        parts
        for folder in CHECKED
        for path in (PROJECT / folder).rglob("*.py")
        for parts in sdk_uses(ast.parse(path.read_text()))
    }
    modules = {defining_module(parts, site) for parts in used}
    assert {"pulumi_aws.ec2.vpc", "pulumi_azure_native.app"} <= modules
    assert sorted(m for m in modules if not followed(m, normal["module"])) == []


def test_a_new_sdk_service_in_the_kit_is_caught() -> None:
    tree = ast.parse(
        "import pulumi_aws as aws\nfrom pulumi_cloudflare import Account\n"
        "aws.sqs.Queue('q')\nAccount('a')\n"
    )
    site = sdk_site()
    modules = {defining_module(parts, site) for parts in sdk_uses(tree)}
    assert modules == {"pulumi_aws.sqs", "pulumi_aws.sqs.queue", "pulumi_cloudflare.account"}
    normal = tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["mypy"]["overrides"][1]
    assert [m for m in sorted(modules) if not followed(m, normal["module"])] == sorted(modules)
