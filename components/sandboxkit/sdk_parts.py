"""Importing the part of a Pulumi SDK package that a render uses.

Some SDK packages import every one of their modules in ``__init__``: pulumi-cloudflare 6 (about
1,250 modules, 2.4 s of CPU on the 2-CPU machine of benchmarks/README.md), pulumi-gcp's
``compute`` (about 290 modules, 1.2 s) and pulumi-aws's ``ec2`` (about 180 modules, 0.4 s),
while the kit creates a handful of their resources.
``import_parts_only`` makes ``import package.module`` load that module and what it imports,
never the package's ``__init__``, until something asks the package for a name that is not one
of its modules: then the real ``__init__`` runs in place and the name is looked up as usual,
so code written against the whole package still works, only slower. The kit's components
import the resource modules themselves (``from pulumi_gcp.compute.network import Network``).
The offline render (``render.recording_engine``) does this for ``PARTIAL_PACKAGES``; ``pulumi
up`` imports the SDKs as they are.

Example::

    import_parts_only("pulumi_cloudflare")
    from pulumi_cloudflare.workers_script import WorkersScript  # no other resource module
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys

# Packages whose __init__ imports every module eagerly. The SDKs' top-level packages other than
# pulumi_cloudflare load their subpackages on first use already (``_utilities.lazy_import``),
# which finds and keeps a module installed here first.
PARTIAL_PACKAGES = ("pulumi_cloudflare", "pulumi_gcp.compute", "pulumi_aws.ec2")


def _spec_of(package: str) -> importlib.machinery.ModuleSpec | None:
    """The spec of ``package`` (dotted), found without running any ``__init__`` on the way."""
    top, *rest = package.split(".")
    spec = importlib.util.find_spec(top)
    for depth in range(len(rest)):
        if spec is None or spec.submodule_search_locations is None:
            return None
        name = ".".join([top, *rest[: depth + 1]])
        spec = importlib.machinery.PathFinder.find_spec(name, spec.submodule_search_locations)
    return spec


def import_parts_only(package: str) -> None:
    """Install ``package`` (a dotted name) in ``sys.modules`` without running its
    ``__init__``.

    Importing one of its modules then loads only that module (and what it imports). Any other
    attribute of the package (``package.SomeResource``, ``from package import *``) runs the
    real ``__init__`` once, in the same module object, and answers from it (PEP 562
    ``__getattr__``). Nothing happens when the package (or for a subpackage, its parent) is
    imported already, or is not installed (its import then fails where it always did).
    """
    if package in sys.modules or package.rpartition(".")[0] in sys.modules:
        return
    spec = _spec_of(package)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def whole_package_on_demand(name: str) -> object:
        if not name.startswith("__") and importlib.util.find_spec(f"{package}.{name}"):
            return importlib.import_module(f"{package}.{name}")
        del module.__dict__["__getattr__"]
        loader.exec_module(module)
        return getattr(module, name)

    module.__dict__["__getattr__"] = whole_package_on_demand
    sys.modules[package] = module


def import_partial_packages() -> None:
    """``import_parts_only`` for each of ``PARTIAL_PACKAGES`` (the offline render's, and the
    test session's before it collects)."""
    for package in PARTIAL_PACKAGES:
        import_parts_only(package)
