"""Whole kinds of bad input end in exit 2 naming the file, line and key (issue 15, sections 1,
1b and the reader's part of 2): each example of the issue with its exact message."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from sandboxkit.cloud_names import derived_name, is_stack_name
from sandboxkit.config import load_stack_file, read_stack_file
from sandboxkit.errors import ConfigError
from sandboxkit.project import list_stacks, project_root, stack_environment, stack_file
from sandboxkit.stackfile import load_yaml, parse_config_text
from sandboxkit.targets import KitContext
from support import GOOD, make_project

REPO = Path(__file__).resolve().parents[2]


def refusal(text: str | bytes, tmp_path: Path, stack: str = "t") -> list[str]:
    """The problems, as printed, of loading a stack file holding ``text``."""
    root = make_project(tmp_path, {stack: text})
    with pytest.raises(ConfigError) as caught:
        load_stack_file(root, stack)
    return [str(p).replace(str(root), "<p>") for p in caught.value.problems]


EXPECTED_LINE = (
    "expected a value YAML 1.1 and 1.2 readers read alike (this plain scalar is a number or a "
    "boolean in one and not the other, or a different number): quote it for text, or write the "
    "number in plain decimal (10, 3600)"
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            GOOD.replace("[kubernetes]", "[kubernetes, {a: 1}]"),
            "sandboxkit:targets[1]: got {a: 1}; expected one of kubernetes, azure-sessions, "
            "aws-microvm, gcp-cloudrun, gcp-gke, cloudflare, local",
            id="mapping-in-list",
        ),
        pytest.param(
            GOOD + "  sandboxkit:profile:\n    egress:\n      allow: &a [*a]\n",
            "<p>/stacks/Pulumi.t.yaml line 9: got '*a'; expected no recursive alias (this alias "
            "is inside its own anchor)",
            id="recursive-alias",
        ),
        pytest.param(
            GOOD + "  sandboxkit:profile:\n    limits: {1: x}\n",
            "sandboxkit:profile.limits (<p>/stacks/Pulumi.t.yaml line 8): got '1'; expected text "
            "keys only (quote a key that looks like a number)",
            id="non-string-key",
        ),
        pytest.param(
            GOOD + "  sandboxkit:profile:\n    limits: {vcpu: !!binary aGVsbG8=}\n",
            "sandboxkit:profile.limits.vcpu (<p>/stacks/Pulumi.t.yaml line 8): got '!!binary'; "
            "expected a plain value without an explicit tag (quote text instead)",
            id="explicit-tag",
        ),
        pytest.param(
            GOOD + "  sandboxkit:profile:\n    limits: {vcpu: " + "9" * 5000 + "}\n",
            "sandboxkit:profile.limits.vcpu (<p>/stacks/Pulumi.t.yaml line 8): got "
            "'99999999999999999999... (5000 digits)'; expected an integer that fits in 64 bits",
            id="5000-digit-integer",
        ),
        pytest.param(
            GOOD + "  sandboxkit:profile:\n    limits: {maxLifetimeSeconds: 010}\n",
            "sandboxkit:profile.limits.maxLifetimeSeconds (<p>/stacks/Pulumi.t.yaml line 8): got "
            f"'010'; {EXPECTED_LINE}",
            id="yaml11-octal",
        ),
        pytest.param(
            GOOD + "  sandboxkit:profile:\n    limits: {maxLifetimeSeconds: 1:00:00}\n",
            "sandboxkit:profile.limits.maxLifetimeSeconds (<p>/stacks/Pulumi.t.yaml line 8): got "
            f"'1:00:00'; {EXPECTED_LINE}",
            id="yaml11-sexagesimal",
        ),
        pytest.param(
            "config:\n  sandboxkit:environment: prod\n" + GOOD.removeprefix("config:\n"),
            "sandboxkit:environment (<p>/stacks/Pulumi.t.yaml line 3): got 'a second entry'; "
            "expected each key once: it is also on line 2 (a reader would silently keep the "
            "later one)",
            id="duplicate-key",
        ),
        pytest.param(
            GOOD.replace("environment: dev", 'environment: "{x"'),
            "sandboxkit:environment: got '{x'; expected one of dev, staging, prod",
            id="brace-text-not-json",
        ),
        pytest.param(
            GOOD + "  profile: {limits: {vcpu: 2}}\n  sandboxkit:profile: {}\n",
            "<p>/stacks/Pulumi.t.yaml: sandboxkit:profile: got '[value not shown]'; expected one "
            "entry: 'profile' (line 7) and 'sandboxkit:profile' (line 8) are the same key (a bare "
            "key is the project's namespace)",
            id="bare-and-namespaced",
        ),
    ],
)
def test_each_kind_of_bad_stack_file_is_named(text: str, expected: str, tmp_path: Path) -> None:
    assert refusal(text, tmp_path) == [expected]


def test_an_alias_bomb_is_refused_before_it_is_expanded(tmp_path: Path) -> None:
    # Nine levels of nine aliases (9**9 values expanded) under a key the kit does not read.
    lines = ["config:", "  other:lol:", "    l0: &l0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"    l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, 9)]
    text = GOOD + "\n".join(lines[1:]) + "\n"
    started = time.process_time()
    problems = refusal(text, tmp_path)
    assert time.process_time() - started < 0.5
    assert problems == [
        "<p>/stacks/Pulumi.t.yaml line 1: got 'more than 100,000 values'; expected at most "
        "100,000 values once aliases are expanded (refused unexpanded)"
    ]


def test_deep_nesting_is_refused_without_recursing(tmp_path: Path) -> None:
    text = GOOD + "  sandboxkit:profile: " + "[" * 100_000 + "]" * 100_000 + "\n"
    started = time.process_time()
    problems = refusal(text, tmp_path)
    assert time.process_time() - started < 1.0
    assert problems == [
        "<p>/stacks/Pulumi.t.yaml line 7: got '65 levels'; expected nesting at most 64 levels deep"
    ]


@pytest.mark.parametrize(
    ("data", "value"),
    [
        pytest.param(GOOD.encode("utf-16"), "byte 0xff at offset 0 (line 1)", id="utf-16"),
        pytest.param(bytes(range(128, 256)), "byte 0x80 at offset 0 (line 1)", id="random-bytes"),
        pytest.param(
            GOOD.replace("kind-test", "kind-t\udcffst").encode("utf-8", "surrogateescape"),
            "byte 0xff at offset 117 (line 5)",
            id="one-invalid-byte",
        ),
    ],
)
def test_a_file_that_is_not_utf8_is_named(data: bytes, value: str, tmp_path: Path) -> None:
    assert refusal(data, tmp_path) == [
        f"<p>/stacks/Pulumi.t.yaml: got {value!r}; expected a UTF-8 text file (re-save it as "
        "UTF-8; UTF-16 is not read)"
    ]


def test_quoted_and_yaml12_scalars_read_as_written() -> None:
    document = load_yaml(
        "a: '010'\nb: \"yes\"\nc: 10\nd: 0x1F\ne: 2025-09-01\nf: 1.5\ng: true\nh: ~\n", "f"
    )
    assert document == {
        "a": "010",
        "b": "yes",
        "c": 10,
        "d": 31,
        "e": "2025-09-01",
        "f": 1.5,
        "g": True,
        "h": None,
    }


def test_a_merge_key_still_merges() -> None:
    assert load_yaml("base: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n", "f")["other"] == {
        "x": 1,
        "y": 2,
    }


def test_a_setting_given_as_json_text_reads_as_json_for_every_command(tmp_path: Path) -> None:
    # The engine passes structured values as JSON text, so the program reads the two alike;
    # cloudflare-config (load_stack_file) reads the stack file the same way as preview.
    root = make_project(tmp_path, {"t": GOOD.replace("[kubernetes]", "'[\"kubernetes\"]'")})
    assert load_stack_file(root, "t").targets == ("kubernetes",)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "[" * 100_000 + "]" * 100_000,
            "sandboxkit:targets: got '[[[[[[[[[[[[[[[[[[[[... (200000 characters)'; expected "
            "JSON nested at most 64 deep",
            id="nested",
        ),
        pytest.param(
            '["kubernetes", ' + "9" * 400 + "]",
            "sandboxkit:targets[1]: got '99999999999999999999... (400 digits)'; expected an "
            "integer that fits in 64 bits",
            id="400-digits",
        ),
        pytest.param(
            '[{"a": 1, "a": 2, "b": {"c": true, "c": null}}]',
            "sandboxkit:targets[0].a: got [1, 2]; expected each key once: it is given 2 times (a "
            "reader would silently keep the later one)\nsandboxkit:targets[0].b.c: got [true, "
            "null]; expected each key once: it is given 2 times (a reader would silently keep "
            "the later one)",
            id="duplicate-keys",
        ),
    ],
)
def test_json_text_beyond_the_bounds_is_refused_naming_the_key(text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config_text(text, "sandboxkit:targets")
    assert str(caught.value) == expected


def test_a_bare_key_is_read_in_the_project_namespace(tmp_path: Path) -> None:
    # "In cases where a simple name without a colon is used, Pulumi automatically uses the
    # current project name from Pulumi.yaml as the namespace" (Pulumi docs, Configuration keys).
    text = GOOD + "  profile: {limits: {vcpu: 2}}\n"
    root = make_project(tmp_path, {"t": text})
    assert load_stack_file(root, "t").profile.limits.vcpu == 2


def test_a_bare_key_in_another_project_is_refused_naming_it(tmp_path: Path) -> None:
    root = make_project(tmp_path, {"t": GOOD + "  profile: {}\n"}, name="agents")
    with pytest.raises(ConfigError) as caught:
        read_stack_file(root / "stacks" / "Pulumi.t.yaml")
    assert [str(p).replace(str(root), "<p>") for p in caught.value.problems] == [
        "<p>/stacks/Pulumi.t.yaml: config.profile: got '[value not shown]'; expected a "
        "namespaced key: the engine reads 'profile' as agents:profile (the project's name), "
        "which the kit does not read; write sandboxkit:profile"
    ]


# -- the project, its files and the command line's paths -------------------------------------


@pytest.mark.parametrize(
    ("project_file", "expected"),
    [
        pytest.param(
            "- a\n- b\n", "<p>/Pulumi.yaml: got [a, b]; expected a mapping (name, runtime, ...)"
        ),
        pytest.param(
            "name: [\n",
            "<p>/Pulumi.yaml line 2: got 'unparseable YAML'; expected valid YAML (expected the "
            "node content, but found '<stream end>')",
        ),
        pytest.param(
            "name: x\nstackConfigDir: 5\n",
            "<p>/Pulumi.yaml: stackConfigDir: got 5; expected a folder path (text) for stack files",
        ),
        pytest.param(
            "name: x\n".encode("utf-16"),
            "<p>/Pulumi.yaml: got 'byte 0xff at offset 0 (line 1)'; expected a UTF-8 text file "
            "(re-save it as UTF-8; UTF-16 is not read)",
        ),
    ],
)
def test_a_broken_pulumi_yaml_is_named(
    project_file: str | bytes, expected: str, tmp_path: Path
) -> None:
    data = project_file if isinstance(project_file, bytes) else project_file.encode()
    (tmp_path / "Pulumi.yaml").write_bytes(data)
    with pytest.raises(ConfigError) as caught:
        stack_file(tmp_path, "dev")
    assert [str(p).replace(str(tmp_path), "<p>") for p in caught.value.problems] == [expected]


def test_a_stack_name_pulumi_refuses_is_named_with_the_rule(tmp_path: Path) -> None:
    root = make_project(tmp_path, {})
    with pytest.raises(ConfigError) as caught:
        stack_file(root, "a" * 300)
    assert str(caught.value) == (
        "--stack: got 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa... (300 bytes)'; expected a stack "
        "name: 1 to 100 of the letters, digits, '-', '_' and '.' (Pulumi's rule)"
    )


@pytest.mark.parametrize(
    ("given", "state"),
    [("missing", "no such folder"), ("empty", "a folder without Pulumi.yaml")],
)
def test_a_project_dir_without_a_project_is_named(given: str, state: str, tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError) as caught:
        project_root(tmp_path / given)
    assert str(caught.value) == (
        f"--project-dir: got {str(tmp_path / given)!r}; expected a folder with Pulumi.yaml "
        f"(this is {state})"
    )


def test_a_project_dir_the_system_refuses_is_named(tmp_path: Path) -> None:
    given = tmp_path / ("a" * 300)
    with pytest.raises(ConfigError) as caught:
        project_root(given)
    assert str(caught.value).endswith(
        "; expected a folder with Pulumi.yaml (this is a path the system refuses: File name too "
        "long)"
    )


def test_a_removed_working_folder_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(ConfigError) as caught:
        project_root(None)
    assert str(caught.value) == (
        "--project-dir: got '(the working folder)'; expected a working folder that exists "
        "(this one was removed): cd into the sandboxkit project, or pass --project-dir"
    )


def test_a_folder_on_the_way_up_that_cannot_be_read_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Tests run as root read every folder: the refusal a user without rights gets is made here.
    locked = tmp_path / "locked"
    (locked / "work").mkdir(parents=True)
    is_file = Path.is_file

    def refusing(path: Path) -> bool:
        if path.parent == locked:
            raise PermissionError(13, "Permission denied")
        return is_file(path)

    monkeypatch.setattr(Path, "is_file", refusing)
    monkeypatch.chdir(locked / "work")
    with pytest.raises(ConfigError) as caught:
        project_root(None)
    assert str(caught.value) == (
        f"--project-dir: got {str(locked / 'work')!r}; expected folders the kit may read up to "
        "the one with Pulumi.yaml (Permission denied): run inside the sandboxkit project, or "
        "pass --project-dir"
    )


def test_a_folder_named_like_a_stack_file_is_named_not_blamed_on_stack(tmp_path: Path) -> None:
    root = make_project(tmp_path, {"dev": GOOD})
    (root / "stacks" / "Pulumi.stray.yaml").mkdir()
    with pytest.raises(ConfigError) as caught:
        list_stacks(root)
    assert str(caught.value) == (
        f"{root}/stacks/Pulumi.stray.yaml: got 'not a file'; expected only stack files named "
        "like one"
    )


# -- the organisation's stack environments ---------------------------------------------------


def test_the_stack_file_cannot_choose_the_gates_environment(tmp_path: Path) -> None:
    root = make_project(tmp_path, {"prod": GOOD})  # sandboxkit:environment: dev
    shutil.copy(REPO / "sandboxkit.yaml", root / "sandboxkit.yaml")
    with pytest.raises(ConfigError) as caught:
        load_stack_file(root, "prod")
    assert str(caught.value) == (
        "sandboxkit:environment: got 'dev'; expected prod: the environment sandboxkit.yaml "
        "gives stack 'prod' (the gate's strictness is the organisation's choice, not the stack "
        "file's; a stack no pattern matches is prod); to make it dev, add 'prod: dev' first "
        "under environments: in sandboxkit.yaml (its code owners review it; the first matching "
        "pattern wins), or write sandboxkit:environment: prod"
    )


def test_environment_patterns_match_in_order(tmp_path: Path) -> None:
    (tmp_path / "sandboxkit.yaml").write_text("environments:\n  prod-*: prod\n  '*': staging\n")
    assert stack_environment(tmp_path, "prod-eu") == "prod"
    assert stack_environment(tmp_path, "feature-x") == "staging"
    # No pattern maps it: prod, the strictest (the gate fails closed).
    assert stack_environment(REPO, "feature-x") == "prod"
    assert stack_environment(tmp_path / "no-such-project", "feature-x") is None


def test_a_folder_named_like_the_kit_project_file_is_refused_not_read_as_absent(
    tmp_path: Path,
) -> None:
    # Issue 31 item 18: read as absent, each stack file's own environment stood alone.
    (tmp_path / "sandboxkit.yaml").mkdir()
    with pytest.raises(ConfigError) as caught:
        stack_environment(tmp_path, "prod")
    assert str(caught.value) == (
        f"{tmp_path}/sandboxkit.yaml: got 'a folder'; expected a YAML file with the "
        "environments map (stack name pattern: dev, staging or prod): move the folder away and "
        "write sandboxkit.yaml in its place, or remove it to let each stack file's "
        "sandboxkit:environment stand alone"
    )


def test_a_dangling_link_named_like_the_kit_project_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "sandboxkit.yaml").symlink_to(tmp_path / "gone.yaml")
    with pytest.raises(ConfigError) as caught:
        stack_environment(tmp_path, "prod")
    assert str(caught.value).startswith(
        f"{tmp_path}/sandboxkit.yaml: got 'not a regular file'; expected a YAML file"
    )


def test_a_malformed_environments_map_is_named(tmp_path: Path) -> None:
    (tmp_path / "sandboxkit.yaml").write_text("environments:\n  prod: production\n")
    with pytest.raises(ConfigError) as caught:
        stack_environment(tmp_path, "prod")
    assert str(caught.value) == (
        f"{tmp_path}/sandboxkit.yaml: environments: got {{prod: production}}; expected a "
        "mapping of stack name patterns to dev, staging, prod"
    )


# -- names derived from the stack name -------------------------------------------------------


def test_a_valid_name_is_kept_as_it_is() -> None:
    assert derived_name("sbx-", "prod", 22) == "sbx-prod"
    assert derived_name("", "dev", 63) == "dev"


def test_a_long_stack_name_is_cut_with_a_digest_within_the_limit() -> None:
    # eu-west-agents-production ended in "object_name ... 22 or fewer" before.
    name = derived_name("sbx-", "eu-west-agents-production", 22)
    assert name == "sbx-eu-west-a-fb2576b3"
    assert len(name) == 22


def test_names_pulumi_accepts_but_clouds_do_not_are_mapped_and_kept_apart() -> None:
    assert derived_name("sbx-", "Prod", 22) == "sbx-prod-" + derived_name("", "Prod", 63)[-8:]
    assert derived_name("sbx-", "Prod", 22) != derived_name("sbx-", "prod", 22)
    assert derived_name("sbx-", "a.b", 22) != derived_name("sbx-", "a_b", 22)
    assert derived_name("sbx-", "...", 22) == "sbx-" + derived_name("", "...", 63)[-8:]


@pytest.mark.parametrize(
    ("target", "limit"),
    [("gcp-cloudrun", 22), ("gcp-gke", 24), ("azure-sessions", 27), ("kubernetes", 50)],
)
def test_every_stack_pulumi_accepts_gives_valid_names(target: str, limit: int) -> None:
    stacks = ["eu-west-agents-production", "A" * 100, "x", "-", "_._", "Team.Agents_prod-2"]
    for stack in stacks:
        assert is_stack_name(stack)
        context = KitContext(stack=stack, environment="dev", target=target)
        prefix = "sandboxkit-" if target == "kubernetes" else "sbx-"
        name = context.object_name(prefix, limit)
        assert len(name) <= limit
        assert name[0].isalpha() and name[-1].isalnum()
        assert set(name) <= set("abcdefghijklmnopqrstuvwxyz0123456789-")
        label = context.labels()["sandboxkit-stack"]
        assert len(label) <= 63 and label == label.lower()


# -- config keys outside the config: mapping (issue 31 item 11) -------------------------------

OUTSIDE = (
    "a key inside the top-level config: mapping (config keys are read there only): add a line "
    "'config:' above it and indent {key} two spaces under it"
)
STACK_KEYS = "config, environment, secretsprovider, encryptedkey, encryptionsalt"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "sandboxkit:environment: prod\nsandboxkit:targets: [kubernetes]\n",
            [
                f"<p>/stacks/Pulumi.t.yaml: {key}: got '[value not shown]'; expected "
                + OUTSIDE.format(key=key)
                for key in ("sandboxkit:environment", "sandboxkit:targets")
            ],
            id="no-wrapper",
        ),
        pytest.param(
            "profile: {}\n",
            [
                "<p>/stacks/Pulumi.t.yaml: profile: got '[value not shown]'; expected "
                + OUTSIDE.format(key="profile")
            ],
            id="bare-key-no-wrapper",
        ),
        pytest.param(
            "configs:\n  sandboxkit:environment: prod\n",
            [
                "<p>/stacks/Pulumi.t.yaml: configs: got '[value not shown]'; expected a stack "
                f"file key: {STACK_KEYS} (did you mean 'config'?)"
            ],
            id="misspelt-config",
        ),
    ],
)
def test_config_keys_outside_the_config_mapping_are_named_with_the_fix(
    text: str, expected: list[str], tmp_path: Path
) -> None:
    assert refusal(text, tmp_path) == expected
