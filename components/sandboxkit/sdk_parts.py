"""Importing the part of a Pulumi SDK package that a render uses.

pulumi-cloudflare 6's ``__init__`` imports every resource module of the provider (about 1,250
modules, 2.4 s of CPU on the 2-CPU reference machine: benchmarks/README.md) while the kit
creates two of its resources. ``import_parts_only`` makes ``import package.module`` load that
module and what it imports, never the package's ``__init__``, until something asks the package
for a name that is not one of its modules: then the real ``__init__`` runs in place and the
name is looked up as usual, so code written against the whole package still works, only
slower. The offline render (``render.recording_engine``) does this for ``PARTIAL_PACKAGES``;
``pulumi up`` imports the SDKs whole.

Example::

    import_parts_only("pulumi_cloudflare")
    from pulumi_cloudflare.workers_script import WorkersScript  # no other resource module
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

# SDK packages whose __init__ imports every module eagerly; the other SDKs the kit uses load
# their modules on first use already (pulumi_aws, pulumi_gcp, pulumi_azure_native,
# pulumi_kubernetes: ``_utilities.lazy_import``).
PARTIAL_PACKAGES = ("pulumi_cloudflare",)


def import_parts_only(package: str) -> None:
    """Install ``package`` in ``sys.modules`` without running its ``__init__``.

    Importing one of its modules then loads only that module (and what it imports). Any other
    attribute of the package (``package.SomeResource``, ``from package import *``) runs the
    real ``__init__`` once, in the same module object, and answers from it (PEP 562
    ``__getattr__``). Nothing happens when the package is imported already or is not
    installed (its import then fails where it always did).
    """
    if package in sys.modules:
        return
    spec = importlib.util.find_spec(package)
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
