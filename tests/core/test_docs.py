"""The docs say what the code does: generated settings tables match the settings models, every
setting and profile field is documented, and every link between the docs resolves."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Annotated, Any

import pytest
import yaml
from pydantic import BaseModel, Field

from sandboxkit import docgen
from sandboxkit.profile import SandboxProfile
from sandboxkit.secrets import SecretValue
from sandboxkit.targets import TARGET_MODULES, TargetSettings

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").rglob("*.md"))
_LINK = re.compile(r"\]\(([^)\s]+)\)")


# --- the shipped docs ---------------------------------------------------------------------------


def test_every_setting_of_every_target_is_described() -> None:
    assert docgen.generate(ROOT).problems == []


def test_generated_docs_match_the_settings_models_and_the_rule_catalogue() -> None:
    report = docgen.generate(ROOT)
    assert [path.relative_to(ROOT) for path in report.stale] == [], (
        "run: python -m sandboxkit.docgen --write"
    )
    assert sorted(report.documents) == sorted(
        [
            *(ROOT / "docs" / "targets" / f"{target}.md" for target in TARGET_MODULES),
            ROOT / docgen.RULES_DOC,
            *(ROOT / docgen.PACK_CONFIG / f"{env}.json" for env in ("dev", "staging", "prod")),
        ]
    )


def test_readme_links_every_target_reference() -> None:
    text = README.read_text()
    for target in TARGET_MODULES:
        assert f"](docs/targets/{target}.md)" in text, target


def _profile_defaults() -> dict[str, Any]:
    defaults: dict[str, Any] = {}
    for section, info in SandboxProfile.model_fields.items():
        model = info.annotation
        assert isinstance(model, type) and issubclass(model, BaseModel)
        for name, field in model.model_fields.items():
            value = field.default
            defaults[f"sandboxkit:profile.{section}.{field.alias or name}"] = (
                list(value) if isinstance(value, tuple) else value
            )
    return defaults


def test_readme_profile_table_has_every_profile_field_with_its_default() -> None:
    rows = {
        match.group(1): match.group(2)
        for match in re.finditer(
            r"^\| `(sandboxkit:profile\.[^`]+)` \| `([^`]*)` \|", README.read_text(), re.M
        )
    }
    expected = _profile_defaults()
    assert sorted(rows) == sorted(expected)
    assert {key: yaml.safe_load(text) for key, text in rows.items()} == expected


def test_readme_setup_is_the_two_commands() -> None:
    setup = README.read_text().split("## Set up", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    commands = [line for line in setup.splitlines() if line and not line.startswith("#")]
    assert commands == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && "
        ".venv/bin/sandboxkit preview --stack dev && bash .ci/install-debian bubblewrap && "
        ".venv/bin/sandboxkit run --stack dev -- /bin/true",
        "bash .ci/run",
    ]


def test_readme_quotes_the_workflow_gate_step() -> None:
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "pr.yml").read_text())
    step = next(
        step
        for step in workflow["jobs"]["gate"]["steps"]
        if step.get("name") == "sandboxkit check --all-stacks"
    )
    assert f"- name: {step['name']}\n  run: {step['run']}\n" in README.read_text()


def _anchor(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces as -."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return {_anchor(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def _resolves(document: Path, link: str) -> bool:
    """Whether a relative link (``file``, ``file#anchor`` or ``#anchor``) finds its target."""
    file_part, _, anchor = link.partition("#")
    linked = (document.parent / file_part).resolve() if file_part else document
    if not linked.exists():
        return False
    return not anchor or linked.suffix != ".md" or anchor in _anchors(linked)


@pytest.mark.parametrize(
    "document",
    [README, *DOCS, ROOT / "components/sandboxkit/cloudflare/worker/README.md"],
    ids=lambda path: str(path.relative_to(ROOT)),
)
def test_relative_links_resolve(document: Path) -> None:
    text = re.sub(r"```.*?```", "", document.read_text(), flags=re.S)
    links = [link for link in _LINK.findall(text) if not re.match(r"^[a-z]+:", link)]
    assert links
    assert [link for link in links if not _resolves(document, link)] == []


_CONFLICT_MARKER = re.compile(r"^(<{7} |>{7} |={7}$)", re.M)


def test_no_tracked_file_holds_merge_conflict_markers() -> None:
    """docs/policy-gate.md carried a merge's ``<<<<<<< HEAD`` / ``=======`` / ``>>>>>>> main``
    for several commits, a stale hand table after the generated one; docgen kept both."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.decode()
    files = [ROOT / name for name in listed.split("\0") if name]
    assert len(files) > 100
    marked = [
        str(path.relative_to(ROOT))
        for path in files
        if path.is_file() and _CONFLICT_MARKER.search(path.read_bytes().decode("utf-8", "replace"))
    ]
    assert marked == []


# A repository path in code spans: `stacks/Pulumi.<stack>.yaml`, `images/*/Dockerfile`, ...
_REPO_PATH = re.compile(
    r"`((?:components|policy-packs|tests|stacks|images|benchmarks|docs|\.github|\.ci)/[^`\s]*)`"
)


@pytest.mark.parametrize("document", [README, *DOCS], ids=lambda path: str(path.relative_to(ROOT)))
def test_repository_paths_named_in_the_docs_exist(document: Path) -> None:
    patterns = {re.sub(r"<[^>]*>", "*", path) for path in _REPO_PATH.findall(document.read_text())}
    assert [pattern for pattern in sorted(patterns) if not list(ROOT.glob(pattern))] == []


def test_anchor_follows_github_rules() -> None:
    assert _anchor(" The container: a generated wrangler config") == (
        "the-container-a-generated-wrangler-config"
    )
    assert _anchor("Settings (`sandboxkit:gcp-gke.*`)") == "settings-sandboxkitgcp-gke"


# --- the generator --------------------------------------------------------------------------------


class Inner(BaseModel):
    """A nested model.

    Attributes:
        name: the inner name.
    """

    name: str = "x"


class Item(BaseModel):
    """One item.

    Attributes:
        principalId: who.
    """

    principal_id: str = Field(alias="principalId")


class FakeBase(TargetSettings):
    """A base settings class.

    Attributes:
        shared: from the base, ``code`` kept as code.
    """

    shared: bool = True


class FakeSettings(FakeBase):
    """Fake settings.

    Attributes:
        token: a secret; a
            continuation line.
        size: a size.
        inner: nested | with a pipe.
        items: a list of models.
        maybe: unset by default.
        stale: names no field.
    """

    token: SecretValue = Field(alias="token", json_schema_extra={"secret": True})
    size: Annotated[int, Field(ge=1)] = 3
    inner: Inner = Inner()
    items: tuple[Item, ...] = ()
    maybe: Inner | None = None
    described: str = Field("2026-07-01", description="from Field(description=...)")
    undocumented: float = 0.5


def test_rows_come_from_the_model_in_order_with_nested_models_expanded() -> None:
    rows = docgen.setting_rows(FakeSettings)
    assert [(row.key, row.default, row.meaning) for row in rows] == [
        ("shared", "`true`", "from the base, `code` kept as code."),
        ("token", "(required, secret)", "a secret; a continuation line."),
        ("size", "`3`", "a size."),
        ("inner", "`{name: x}`", "nested | with a pipe."),
        ("inner.name", "`x`", "the inner name."),
        ("items", "`[]`", "a list of models."),
        ("items[].principalId", "(required)", "who."),
        ("maybe", "(unset)", "unset by default."),
        ("maybe.name", "`x`", "the inner name."),
        ("described", "`'2026-07-01'`", "from Field(description=...)"),
        ("undocumented", "`0.5`", None),
        (
            "unenforced",
            "`[]`",
            "profile fields (e.g. `limits.execTimeoutSeconds`) that the stack sets explicitly "
            "and accepts this target cannot enforce.",
        ),
    ]
    table = docgen.settings_table(rows).splitlines()
    assert table[:2] == ["| key | default | meaning |", "|---|---|---|"]
    assert table[5] == "| `inner` | `{name: x}` | nested \\| with a pipe. |"
    assert docgen.stale_entries(FakeSettings) == ["FakeSettings.stale"]


def test_an_undocumented_setting_stops_generation(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(docgen, "TARGET_MODULES", {"fake": "fake.spec"})
    monkeypatch.setattr(
        docgen, "get_target", lambda name: SimpleNamespace(settings_model=FakeSettings)
    )
    report = docgen.generate(tmp_path)
    assert report.problems == [
        "sandboxkit:fake.undocumented has no description: add it to the Attributes: section of "
        "FakeSettings's docstring (or the class that declares it)",
        "fake: docstring entry FakeSettings.stale names no setting",
    ]
    assert docgen.main(["--write", "--root", str(tmp_path)]) == 1
    assert not (tmp_path / "docs").exists()
    assert "sandboxkit:fake.undocumented has no description" in capsys.readouterr().err


def test_check_fails_on_a_stale_table_and_write_restores_it(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    shutil.copytree(ROOT / "docs" / "targets", tmp_path / "docs" / "targets")
    doc = tmp_path / "docs" / "targets" / "kubernetes.md"
    doc.write_text(doc.read_text().replace("| `runAsUser` | `65532` |", "| `runAsUser` | `0` |"))
    assert docgen.main(["--check", "--root", str(tmp_path)]) == 1
    assert docgen.main(["--write", "--root", str(tmp_path)]) == 0
    assert doc.read_text() == (ROOT / "docs" / "targets" / "kubernetes.md").read_text()
    assert docgen.main(["--check", "--root", str(tmp_path)]) == 0


def test_a_new_target_gets_a_stub_and_an_orphan_doc_is_reported(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    shutil.copytree(ROOT / "docs" / "targets", tmp_path / "docs" / "targets")
    (tmp_path / "docs" / "targets" / "cloudflare.md").unlink()
    (tmp_path / "docs" / "targets" / "fly.md").write_text("# Target `fly`\n")
    report = docgen.generate(tmp_path)
    assert report.problems == [
        f"{tmp_path / 'docs/targets/fly.md'}: no registered target named fly "
        "(sandboxkit.targets.TARGET_MODULES)"
    ]
    new = report.documents[tmp_path / "docs" / "targets" / "cloudflare.md"]
    assert new.startswith("# Target `cloudflare`\n\n## Settings (`sandboxkit:cloudflare.*`)\n\n")
    assert "| `accountId` | (required) |" in new
    assert report.stale == [tmp_path / "docs" / "targets" / "cloudflare.md"]


def test_a_new_target_registered_by_one_line_gets_its_settings_table(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(TARGET_MODULES, "flyio", "fake_target.spec")
    shutil.copytree(ROOT / "docs" / "targets", tmp_path / "docs" / "targets")
    report = docgen.generate(tmp_path)
    assert report.problems == []
    assert report.stale == [tmp_path / "docs" / "targets" / "flyio.md"]
    assert report.documents[report.stale[0]] == (
        "# Target `flyio`\n\n## Settings (`sandboxkit:flyio.*`)\n\n"
        f"{docgen.BEGIN}\n{docgen.HEADER}\n"
        "| `app` | (required) | the Fly app. |\n"
        "| `image` | (required) | the machine image. |\n"
        "| `metadata` | `{}` | machine metadata. |\n"
        "| `unenforced` | `[]` | profile fields (e.g. `limits.execTimeoutSeconds`) that the stack "
        "sets explicitly and accepts this target cannot enforce. |\n"
        f"{docgen.END}\n"
    )


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("no markers\n", "needs one <!-- BEGIN SETTINGS --> and one <!-- END SETTINGS --> line"),
        (f"{docgen.END}\n{docgen.BEGIN}\n", "<!-- END SETTINGS --> comes before"),
        (f"{docgen.BEGIN}\n{docgen.BEGIN}\n{docgen.END}\n", "needs one"),
    ],
)
def test_bad_markers_are_refused(document: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        docgen.with_table(document, "table", Path("x.md"))


def test_with_table_replaces_only_the_marked_section() -> None:
    document = f"intro\n{docgen.BEGIN}\nold\nrows\n{docgen.END}\noutro\n"
    assert docgen.with_table(document, "new", Path("x.md")) == (
        f"intro\n{docgen.BEGIN}\nnew\n{docgen.END}\noutro\n"
    )
