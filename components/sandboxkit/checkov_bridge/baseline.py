"""The reviewed baseline: checkov findings the kit accepts, each with a written reason.

``policy-packs/checkov/baseline.yaml``::

    accepted:
      - check: CKV_K8S_43              # the checkov id
        resource_type: kubernetes:...  # exactly one selector: resource_type, urn or file
        reason: Why the finding follows from a deliberate choice and what covers the risk.

``urn`` and ``file`` are shell-style patterns (``fnmatch``); ``file`` is a path relative to the
project, for findings on the kit's own files (Dockerfiles, workflows). An optional ``resource``
pattern narrows an entry to the ids checkov reports (``jobs(preview).steps[4]*``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

import yaml

from sandboxkit.type_tokens import without_version

BASELINE_PATH = Path("policy-packs/checkov/baseline.yaml")
SELECTORS = ("resource_type", "urn", "file")
# A reason says what was decided and why; a word or two says neither.
MIN_REASON_WORDS = 6


class BaselineError(ValueError):
    """A baseline file that does not follow the format above (names the entry and the key)."""


@dataclass(frozen=True)
class Accepted:
    """One accepted finding.

    Attributes:
        check: the checkov check id.
        selector: ``resource_type``, ``urn`` or ``file``.
        pattern: the type token (any API version of it matches), or a pattern over URNs or
            project-relative paths.
        reason: why it is accepted.
        resource: a pattern over checkov's resource id, or ``None`` for any.
    """

    check: str
    selector: str
    pattern: str
    reason: str
    resource: str | None = None

    def matches(
        self, check: str, resource_type: str | None, urn: str, file: str, resource: str
    ) -> bool:
        """Whether a finding of ``check`` on this resource or file is accepted by this entry."""
        if check != self.check:
            return False
        if self.resource is not None and not fnmatchcase(resource, self.resource):
            return False
        if self.selector == "resource_type":
            # Any API version's token of the type (TypeToken.matches), as every check reads it.
            return resource_type is not None and without_version(resource_type) == without_version(
                self.pattern
            )
        if self.selector == "urn":
            return fnmatchcase(urn, self.pattern)
        return fnmatchcase(file, self.pattern)


def parse_baseline(document: object, origin: str) -> tuple[Accepted, ...]:
    """Validate a loaded baseline document.

    Raises:
        BaselineError: naming ``origin``, the entry's index and the bad key.
    """
    if not isinstance(document, dict) or not isinstance(document.get("accepted", []), list):
        raise BaselineError(f"{origin}: expected a mapping with a list under 'accepted'")
    entries = []
    for index, entry in enumerate(document.get("accepted", [])):
        where = f"{origin}: accepted[{index}]"
        if not isinstance(entry, dict):
            raise BaselineError(f"{where}: expected a mapping")
        unknown = set(entry) - {"check", "reason", "resource", *SELECTORS}
        if unknown:
            raise BaselineError(f"{where}: unknown keys {sorted(unknown)}")
        check = entry.get("check")
        if not isinstance(check, str) or not check.startswith("CKV"):
            raise BaselineError(f"{where}.check: got {check!r}; expected a checkov id (CKV...)")
        chosen = [s for s in SELECTORS if s in entry]
        if len(chosen) != 1 or not isinstance(entry[chosen[0]], str):
            raise BaselineError(f"{where}: expected exactly one of {', '.join(SELECTORS)}")
        reason = entry.get("reason")
        if not isinstance(reason, str) or len(reason.split()) < MIN_REASON_WORDS:
            raise BaselineError(
                f"{where}.reason: got {reason!r}; expected a written reason of at least "
                f"{MIN_REASON_WORDS} words"
            )
        resource = entry.get("resource")
        if resource is not None and not isinstance(resource, str):
            raise BaselineError(f"{where}.resource: got {resource!r}; expected a pattern")
        reason = " ".join(reason.split())
        entries.append(Accepted(check, chosen[0], entry[chosen[0]], reason, resource))
    return tuple(entries)


def load_baseline(project_dir: Path) -> tuple[Accepted, ...]:
    """The project's baseline (empty when the file is absent).

    Raises:
        BaselineError: for a malformed file or an entry without a reason.
    """
    path = project_dir / BASELINE_PATH
    if not path.is_file():
        return ()
    return parse_baseline(yaml.safe_load(path.read_text()) or {}, str(BASELINE_PATH))
