"""Reading the YAML the kit is given (stack files, Pulumi.yaml) exactly, boundedly, or not at all.

Every refusal is a ``Problem`` naming the file, the line and the key, all of a document's
refusals raised together as one ``ConfigError``, in well under a second whatever the input (text
that is not UTF-8 or not YAML, a recursive alias, too deep or too big is refused alone, as
nothing further can be read): the text must be UTF-8; the document is composed (PyYAML's node
graph, where an alias is the anchored node itself) and measured before anything is built from
it, so an alias expansion bomb or a recursive alias is refused without being expanded; nesting
is bounded;
mapping keys are text and unique; only the core schema's tags are read; scalars are resolved with
the YAML 1.2 core schema, and a plain scalar that a YAML 1.1 reader reads as another type or
value (``010`` -> 8, ``1:00:00`` -> 3600, ``yes`` -> true; ``0o17`` and ``1e3`` stay text) is
refused: the Pulumi engine's reader (go-yaml v3, ``resolve.go``: ``strconv.ParseInt(plain, 0,
64)`` after dropping ``_``; "octals from the 1.1 spec, spelled as 0777, are still decoded")
mixes the two, reading ``010`` as 8;
integers must fit in 64 bits, as the engine's config values do. A refused value is read as
null, so nothing is derived from a reading the stack did not mean; where the rest of the document
is still readable (no explicit tag, every key text), ``config_values`` hands it on with its
refusals (``StackFileError``), for ``config`` to add the problems validation finds beside them.

``config_values`` then reads a stack file's ``config`` mapping the way the Pulumi engine does:
a key without a namespace belongs to the project's namespace ("In cases where a simple name
without a colon is used, Pulumi automatically uses the current project name from Pulumi.yaml as
the namespace", https://www.pulumi.com/docs/iac/concepts/config/#configuration-keys), and a
value written as JSON text is read as the JSON it holds (the engine hands every structured value
to the program as JSON text, so the program cannot tell the two apart: ``parse_config_text``).
"""

from __future__ import annotations

import copy
import functools
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from yaml.events import AliasEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from sandboxkit import provider_config
from sandboxkit.errors import NOT_SHOWN, ConfigError, Problem, did_you_mean

NAMESPACE = "sandboxkit"
"""The config namespace the kit reads (``sandboxkit:<key>``)."""

MAX_DEPTH = 64
"""Deepest nesting read (a stack file needs about 8): deeper is refused, never recursed into."""

MAX_NODES = 100_000
"""Most values a document may hold once every alias is expanded (a large stack file has about
2,000): a document beyond it is refused before anything is built from it."""

# The engine's config values are 64-bit: yaml.v3 reads an integer as int64, else uint64.
_INT_MIN, _INT_MAX = -(2**63), 2**64 - 1
_INT_DIGITS = 21  # enough for both bounds; longer text is refused before int() sees it

_TAG = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (_TAG + t for t in ("str", "int", "float", "bool", "null"))
_MERGE = _TAG + "merge"
_TIMESTAMP = _TAG + "timestamp"
_CORE_TAGS = frozenset({_STR, _INT, _FLOAT, _BOOL, _NULL, _MERGE, _TAG + "seq", _TAG + "map"})

# YAML 1.2 core schema (https://yaml.org/spec/1.2.2/#1032-tag-resolution), and the merge key.
_CORE_RESOLVERS: tuple[tuple[str, str, str], ...] = (
    (_NULL, r"^(?:~|null|Null|NULL|)$", "~nN\0"),
    (_BOOL, r"^(?:true|True|TRUE|false|False|FALSE)$", "tTfF"),
    (_INT, r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", "-+0123456789"),
    (
        _FLOAT,
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$",
        "-+.0123456789",
    ),
    (_MERGE, r"^<<$", "<"),
)


def _core_int(text: str) -> int:
    if text.startswith("0o"):
        return int(text[2:], 8)
    if text.startswith("0x"):
        return int(text[2:], 16)
    return int(text, 10)


class _RefusedError(Exception):
    """One refusal; ``fatal`` when nothing usable can be built from the document with it."""

    def __init__(
        self,
        node_or_mark: Any,
        expected: str,
        value: object = None,
        path: str = "",
        *,
        fatal: bool = False,
    ) -> None:
        super().__init__(expected)
        self.mark = getattr(node_or_mark, "start_mark", node_or_mark)
        self.expected = expected
        self.value = value
        self.path = path
        self.fatal = fatal


class _CoreLoader(yaml.SafeLoader):
    """A SafeLoader with the YAML 1.2 core resolvers that bounds nesting and refuses a
    recursive alias while composing (before any value is built)."""

    yaml_implicit_resolvers = {}  # noqa: RUF012 - PyYAML's class-level table, filled below

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._open: set[str] = set()

    def compose_node(self, parent: Node | None, index: int) -> Node | None:
        event = self.peek_event()
        if self.check_event(AliasEvent):
            if event.anchor in self._open:
                raise _RefusedError(
                    event,
                    "no recursive alias (this alias is inside its own anchor)",
                    f"*{event.anchor}",
                )
            return super().compose_node(parent, index)
        if self._depth >= MAX_DEPTH:
            raise _RefusedError(
                event, f"nesting at most {MAX_DEPTH} levels deep", f"{MAX_DEPTH + 1} levels"
            )
        anchor = event.anchor
        self._depth += 1
        if anchor is not None:
            self._open.add(anchor)
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1
            self._open.discard(anchor)


for _tag, _pattern, _first in _CORE_RESOLVERS:
    # "\0" stands for the empty scalar (PyYAML keys it by ""): ``vcpu:`` is null in 1.1 and 1.2.
    _first_chars = [c if c != "\0" else "" for c in _first]
    _CoreLoader.add_implicit_resolver(_tag, re.compile(_pattern), _first_chars)


def _construct_int(loader: yaml.SafeLoader, node: Node) -> int:
    assert isinstance(node, ScalarNode)
    return _core_int(loader.construct_scalar(node))


_CoreLoader.add_constructor(_INT, _construct_int)

# What a YAML 1.1 reader (PyYAML's own resolvers, much as go-yaml and older tools) makes of a
# plain scalar: compared with the core reading to find the scalars the two read differently.
_YAML11 = yaml.SafeLoader("")


def _reads_differently(node: ScalarNode) -> bool:
    old = _YAML11.resolve(ScalarNode, node.value, (True, False))
    if old == _TIMESTAMP:
        old = _STR  # an unquoted date stays text, as the engine passes it
    if old != node.tag:
        return True  # 010, 1:00:00, yes, 1_000 (1.1) or 0o17, 1e3, 08 (1.2) read as another type
    if old not in (_INT, _BOOL):
        return False  # text, null, a float by both regexes, the merge key
    old_value = _YAML11.construct_object(ScalarNode(old, node.value))
    new_value = _CoreLoader("").construct_object(ScalarNode(node.tag, node.value))
    return bool(old_value != new_value)


def _expanded_size(root: Node) -> int:
    """Values in the document with every alias expanded, counted without expanding (memoised
    on the shared nodes; nesting is already bounded, so the recursion is too)."""
    sizes: dict[int, int] = {}

    def size(node: Node) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        total = 1
        if isinstance(node, SequenceNode):
            total += sum(size(child) for child in node.value)
        elif isinstance(node, MappingNode):
            total += sum(size(k) + size(v) for k, v in node.value)
        sizes[id(node)] = min(total, MAX_NODES + 1)
        return sizes[id(node)]

    return size(root)


def _child_path(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    if path in ("", "config"):
        return key  # config keys are shown as written: sandboxkit:profile
    return f"{path}.{key}"


def _walk(node: Node, path: str, is_key: bool = False) -> Iterator[tuple[Node, str, bool]]:
    yield node, path, is_key
    if isinstance(node, SequenceNode):
        for index, child in enumerate(node.value):
            yield from _walk(child, _child_path(path, index))
    elif isinstance(node, MappingNode):
        for key, value in node.value:
            yield key, path, True
            name = key.value if isinstance(key, ScalarNode) else "?"
            yield from _walk(value, _child_path(path, str(name)))


def _check_mapping(node: MappingNode, path: str) -> Iterator[_RefusedError]:
    seen: dict[str, Node] = {}
    for key, _ in node.value:
        if not isinstance(key, ScalarNode) or key.tag not in (_STR, _MERGE):
            shown = key.value if isinstance(key, ScalarNode) else "a list or mapping"
            yield _RefusedError(
                key, "text keys only (quote a key that looks like a number)", shown, fatal=True
            )
            continue
        if key.tag == _MERGE:
            continue
        if key.value in seen:
            first = seen[key.value].start_mark.line + 1
            yield _RefusedError(
                key,
                f"each key once: it is also on line {first} "
                "(a reader would silently keep the later one)",
                "a second entry",
                _child_path(path, key.value),
            )
            continue
        seen[key.value] = key


_SURROGATE = re.compile("[\ud800-\udfff]")


def _check_scalar(node: ScalarNode) -> Iterator[_RefusedError]:
    if _SURROGATE.search(node.value):
        # A "\ud800" escape: no Unicode character, so no engine or cloud can carry it.
        yield _RefusedError(
            node,
            "text of Unicode characters (no lone surrogate escape such as \\ud800)",
            node.value.encode("utf-8", "backslashreplace").decode(),
        )
    if node.tag == _INT:
        digits = node.value.lstrip("+-")
        if len(digits) > _INT_DIGITS or not _INT_MIN <= _core_int(node.value) <= _INT_MAX:
            shown = (
                node.value
                if len(node.value) <= 30
                else f"{node.value[:20]}... ({len(digits)} digits)"
            )
            yield _RefusedError(node, "an integer that fits in 64 bits", shown)
            return
    if node.style is None and _reads_differently(node):
        yield _RefusedError(
            node,
            "a value YAML 1.1 and 1.2 readers read alike (this plain scalar is a number or a "
            "boolean in one and not the other, or a different number): quote it for text, or "
            "write the number in plain decimal (10, 3600)",
            node.value,
        )


def _shown_tag(tag: str) -> str:
    return tag.replace(_TAG, "!!", 1) if tag.startswith(_TAG) else tag


def _check(root: Node) -> list[_RefusedError]:
    """Every refusal of the composed document, by line (an alias's node is checked where it
    is anchored, once); an alias bomb is refused alone, before any walk."""
    if _expanded_size(root) > MAX_NODES:
        raise _RefusedError(
            root,
            f"at most {MAX_NODES:,} values once aliases are expanded (refused unexpanded)",
            f"more than {MAX_NODES:,} values",
        )
    found: list[_RefusedError] = []
    checked: set[int] = set()
    for node, path, is_key in _walk(root, ""):
        if id(node) in checked:
            continue
        checked.add(id(node))
        if node.tag not in _CORE_TAGS:
            found.append(
                _RefusedError(
                    node,
                    "a plain value without an explicit tag (quote text instead)",
                    _shown_tag(node.tag),
                    path,
                    fatal=True,
                )
            )
            continue
        refused = (
            _check_mapping(node, path)
            if isinstance(node, MappingNode)
            else _check_scalar(node)
            if isinstance(node, ScalarNode)
            else iter(())
        )
        for exc in refused:
            exc.path = exc.path or path
            found.append(exc)
            if isinstance(node, ScalarNode) and not is_key:
                # Not read at all (null, which each setting refuses or defaults), so no other
                # problem is derived from a reading the stack did not mean (010 as 10).
                node.tag = _NULL
    return sorted(found, key=lambda r: (r.mark.line, r.mark.column))


def _problem(origin: str, mark: Any, value: object, expected: str, path: str = "") -> Problem:
    where = f"{origin} line {mark.line + 1}" if mark is not None else origin
    return Problem(f"{path} ({where})" if path else where, value, expected)


def decode(data: bytes, origin: str) -> str:
    """UTF-8 text of a file's bytes (a UTF-8 byte-order mark is dropped).

    Raises:
        ConfigError: naming ``origin``, the first bad byte's offset and line.
    """
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        bad = data[exc.start : exc.start + 1].hex()
        raise ConfigError(
            Problem(
                origin,
                f"byte 0x{bad} at offset {exc.start} (line {line})",
                "a UTF-8 text file (re-save it as UTF-8; UTF-16 is not read)",
            )
        ) from None


@dataclass(frozen=True)
class _Parsed:
    root: Node | None
    document: Any
    problems: tuple[Problem, ...]  # refusals that leave the document usable
    paths: tuple[str, ...]  # the key path each of them names


def _parse(text: str, origin: str) -> _Parsed:
    """The document and every refusal in it; a refusal that leaves nothing usable (text that
    is not YAML, a recursive alias, too deep or too big, an explicit tag, a key that is not
    text) raises ``ConfigError`` with every refusal found."""
    loader = None
    try:
        loader = _CoreLoader(text)  # its reader refuses control characters at once
        root = loader.get_single_node()
        if root is None:
            return _Parsed(None, None, (), ())
        refused = _check(root)
        problems = tuple(_problem(origin, r.mark, r.value, r.expected, r.path) for r in refused)
        if any(r.fatal for r in refused):
            raise ConfigError(*problems)
        document = loader.construct_document(root)
        return _Parsed(root, document, problems, tuple(r.path for r in refused))
    except _RefusedError as exc:
        raise ConfigError(_problem(origin, exc.mark, exc.value, exc.expected, exc.path)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        reason = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(
            _problem(origin, mark, "unparseable YAML", f"valid YAML ({reason})")
        ) from None
    finally:
        if loader is not None:
            loader.dispose()


def load_yaml(text: str, origin: str) -> Any:
    """Parse one YAML document as described in the module docstring.

    Args:
        text: the document.
        origin: what to name in problems (the file's path).

    Returns:
        Plain data: dicts with ``str`` keys, lists, ``str``, ``int``, ``float``, ``bool``,
        ``None``; ``None`` for an empty document.

    Raises:
        ConfigError: naming ``origin``, the line and the key for every refusal above, or for
            text that is not YAML.
    """
    parsed = _parse(text, origin)
    if parsed.problems:
        raise ConfigError(*parsed.problems)
    return parsed.document


def _read_bytes(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            Problem(str(path), "unreadable", f"a readable file ({exc.strerror})")
        ) from None
    return decode(data, str(path))


def read_yaml_file(path: Path) -> Any:
    """``load_yaml`` on a file's UTF-8 text.

    Pulumi.yaml is read at every stack-file lookup (``project.stack_file``, ``project_name``):
    what the same text at the same path gives is kept for the process (the last 16), each call
    gets its own copy, and a refusal is found again each time, as in ``config_values``.

    Raises:
        ConfigError: naming the file when it cannot be read, is not UTF-8, or is refused.
    """
    return copy.deepcopy(_loaded_yaml(_read_bytes(path), str(path)))


@functools.lru_cache(maxsize=16)
def _loaded_yaml(text: str, origin: str) -> Any:
    """``load_yaml(text, origin)``, which reads nothing else (kept by the cache: never changed
    in place)."""
    return load_yaml(text, origin)


_TOO_DEEP = f"JSON nested at most {MAX_DEPTH} deep"
_FINITE = (
    "a finite number, e.g. 8 (JSON has no NaN or Infinity, and a number beyond a 64-bit float, "
    "such as 1e400, reads as Infinity)"
)


def _shown(value: object) -> object:
    if isinstance(value, int) and len(digits := str(value)) > 40:
        return f"{digits[:20]}... ({len(digits)} digits)"
    if isinstance(value, str) and len(value) > 40:
        value = f"{value[:20]}... ({len(value)} characters)"
    return value.encode("utf-8", "backslashreplace").decode() if isinstance(value, str) else value


class _Repeated(tuple[Any, ...]):
    """The values of a key a JSON object gives more than once, in order (``_json_pairs``)."""


def _json_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, a key given twice holding ``_Repeated`` (refused by ``_json_problems``):
    ``json`` would silently keep the later value, as the Pulumi CLI's Go reader does."""
    found: dict[str, list[Any]] = {}
    for key, value in pairs:
        found.setdefault(key, []).append(value)
    return {k: v[0] if len(v) == 1 else _Repeated(v) for k, v in found.items()}


def _loads(text: str) -> Any:
    return json.loads(text, object_pairs_hook=_json_pairs)


def _json_problems(value: Any, where: str) -> list[Problem]:
    """Every key a JSON document gives twice, and the first value beyond ``load_yaml``'s bounds
    (nesting, size, 64-bit integers, lone surrogates) or not a finite number (``NaN``,
    ``Infinity``, ``1e400``), each named by its path below ``where``;
    empty when there is none."""
    stack: list[tuple[Any, str, int]] = [(value, where, 1)]
    count = 0
    repeated: list[Problem] = []
    while stack:
        item, path, depth = stack.pop()
        count += 1
        if depth > MAX_DEPTH:
            return [Problem(path, f"{MAX_DEPTH + 1} levels", _TOO_DEEP)]
        if count > MAX_NODES:
            return [Problem(where, f"more than {MAX_NODES:,} values", f"at most {MAX_NODES:,}")]
        if isinstance(item, _Repeated):
            repeated.append(
                Problem(
                    path,
                    [_shown(v) for v in item],
                    f"each key once: it is given {len(item)} times (a reader would silently "
                    "keep the later one)",
                )
            )
            stack.extend((v, path, depth) for v in item)
        elif isinstance(item, int) and not isinstance(item, bool):
            if not _INT_MIN <= item <= _INT_MAX:
                return [Problem(path, _shown(item), "an integer that fits in 64 bits")]
        elif isinstance(item, float) and not math.isfinite(item):
            # Python's json reads NaN, Infinity and 1e400 (as inf); JSON (RFC 8259 section 6)
            # has none of them and protobuf's Struct refuses to carry one.
            return [Problem(path, _shown(item), _FINITE)]
        elif isinstance(item, str) and _SURROGATE.search(item):
            return [Problem(path, _shown(item), "text without a lone surrogate escape (\\ud800)")]
        elif isinstance(item, dict):
            stack.extend((k, path, depth + 1) for k in item)
            dot = "" if path.endswith(" ") else "."
            stack.extend((v, f"{path}{dot}{k}", depth + 1) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((v, f"{path}[{n}]", depth + 1) for n, v in enumerate(item))
    return sorted(repeated, key=lambda p: p.key)


def read_json_file(path: Path) -> Any:
    """A JSON file's value, within the bounds ``load_yaml`` keeps (nesting, size, 64-bit
    integers, no lone surrogate, each key of an object once), every number finite.

    Raises:
        ConfigError: naming the file (and the key, for a value beyond the bounds or a key
            given twice, with both values) when it cannot be read, is not UTF-8, not JSON, or
            beyond the bounds.
    """
    text = _read_bytes(path)
    try:
        value = _loads(text)
    except RecursionError:
        raise ConfigError(Problem(str(path), f"{len(text)} characters", _TOO_DEEP)) from None
    except ValueError as exc:
        raise ConfigError(Problem(str(path), "not JSON", f"a JSON document ({exc})")) from None
    problems = _json_problems(value, f"{path}: ")
    if problems:
        raise ConfigError(*problems)
    return value


def parse_config_text(value: Any, key: str) -> Any:
    """A config value as the program reads it: text that is a JSON object or array is that
    JSON (the engine passes structured values as JSON text); any other text stays text.

    Raises:
        ConfigError: naming ``key`` and the path below it when the JSON is deeper, larger or
            holds wider integers than ``load_yaml`` admits, or gives a key twice.
    """
    if not (isinstance(value, str) and value[:1] in ("{", "[")):
        return value
    try:
        parsed = _loads(value)
    except RecursionError:
        raise ConfigError(Problem(key, _shown(value), _TOO_DEEP)) from None
    except ValueError:
        return value  # not JSON: the engine passes it as the text it is
    problems = _json_problems(parsed, key)
    if problems:
        raise ConfigError(*problems)
    return parsed


class StackFileError(ConfigError):
    """A stack file's refusals (``config_values``), with the config read despite them.

    Attributes:
        values: what ``config_values`` would return, read from the file as it is (a key given
            twice keeps its later value, as the engine would); ``None`` when nothing usable
            could be read.
        paths: the config key paths the refusals name (``sandboxkit:profile.limits.vcpu``):
            a validation of ``values`` has nothing to add at or below them.
    """

    def __init__(
        self, problems: list[Problem], values: dict[str, Any] | None, paths: list[str]
    ) -> None:
        super().__init__(*problems)
        self.values = values
        self.paths = tuple(paths)


def _config_path(path: str, project: str) -> str:
    """A refusal's key path as config names it: bare keys in the kit's namespace."""
    head = re.split(r"[.\[]", path, maxsplit=1)[0]
    if ":" in head or project != NAMESPACE or not path:
        return path
    return f"{NAMESPACE}:{path}"


@dataclass(frozen=True)
class _Entry:
    name: str  # without namespace
    written: str  # as written in the file
    line: int


def config_values(path: Path, project: str) -> dict[str, Any]:
    """The ``sandboxkit:*`` entries of a stack file's ``config``, keys without namespace.

    Args:
        path: the stack file.
        project: the project's name (Pulumi.yaml ``name``), the namespace of bare keys.

    Returns:
        key (``profile``, ``aws-microvm``) -> value as the program would read it
        (``parse_config_text``); ``secure:`` mappings are left as written.

    Raises:
        StackFileError: naming the file, the line and the key, for everything ``load_yaml``
            refuses, a bare key the kit cannot read (in a project not named ``sandboxkit``)
            and a key written both bare and namespaced, all together, with the values read
            despite them.
        ConfigError: for what leaves nothing to read: a refusal ``load_yaml`` cannot read
            past, or a document without a ``config`` mapping.

    A render reads its stack file twice (``config.stack_source``, then the program's
    ``ConfigSource.from_runtime``) and tests render one file hundreds of times: the values the
    same text gives, at the same path in the same project, are kept for the process (the last
    16) and each call gets its own copy. A refusal is not kept: it is found again each time.
    """
    return copy.deepcopy(_config_values(_read_bytes(path), str(path), project))


@functools.lru_cache(maxsize=16)
def _config_values(text: str, origin: str, project: str) -> dict[str, Any]:
    """``config_values`` of a stack file's ``text`` (its bytes decoded, a UTF-8 byte-order mark
    dropped) read at ``origin`` in ``project``: it reads nothing else, so the same three give
    the same values (kept by the cache: never changed in place)."""
    parsed = _parse(text, origin)
    document = {} if parsed.document is None else parsed.document
    misplaced = _outside_config(document, origin, project)
    if misplaced:
        # Keys outside config: are what the stack meant to set: every "missing" key would
        # only repeat them.
        raise StackFileError([*parsed.problems, *misplaced], None, [])
    config = document.get("config", {}) if isinstance(document, dict) else None
    if config is None and isinstance(document, dict):
        config = {}
    if not isinstance(config, dict):
        raise ConfigError(
            *parsed.problems, Problem(f"{origin}: config", config, "a mapping of config keys")
        )
    lines = _key_lines(parsed.root)
    values: dict[str, Any] = {}
    entries: dict[str, _Entry] = {}
    problems: list[Problem] = list(parsed.problems)
    paths = [_config_path(p, project) for p in parsed.paths]
    prefix = f"{NAMESPACE}:"
    for written, value in config.items():
        if ":" in written:
            if not written.startswith(prefix):
                # Another namespace (aws:region) is not the kit's, unless it moves a provider's
                # endpoint or identity or holds a credential in plain text.
                where = f"{origin} line {lines.get(written, 0)}"
                problems += provider_config.refusals(written, value, where)
                continue
            name = written.removeprefix(prefix)
        elif project == NAMESPACE:
            name = written
        else:
            problems.append(
                Problem(
                    f"{origin}: config.{written}",
                    "[value not shown]",
                    f"a namespaced key: the engine reads {written!r} as "
                    f"{project}:{written} (the project's name), which the kit does not read; "
                    f"write {prefix}{written}",
                )
            )
            continue
        line = lines.get(written, 0)
        if name in entries:
            other = entries[name]
            problems.append(
                Problem(
                    f"{origin}: {prefix}{name}",
                    "[value not shown]",
                    f"one entry: {other.written!r} (line {other.line}) and {written!r} "
                    f"(line {line}) are the same key (a bare key is the project's namespace)",
                )
            )
            paths.append(f"{prefix}{name}")
            continue
        entries[name] = _Entry(name, written, line)
        try:
            values[name] = parse_config_text(value, f"{prefix}{name}")
        except ConfigError as exc:
            problems += exc.problems
            paths.append(f"{prefix}{name}")
    if problems:
        raise StackFileError(problems, values, paths)
    return values


# The top-level keys of a Pulumi stack settings file (Pulumi.<stack>.yaml): pulumi's
# sdk/go/common/workspace/project.go ProjectStack (config, environment, secretsprovider,
# encryptedkey, encryptionsalt).
STACK_FILE_KEYS = ("config", "environment", "secretsprovider", "encryptedkey", "encryptionsalt")


def _outside_config(document: Any, origin: str, project: str) -> list[Problem]:
    """One problem per top-level key that is no stack-file key (``STACK_FILE_KEYS``): a
    config key written without the ``config:`` mapping around it (``sandboxkit:environment``,
    ``profile``) or a misspelt ``config`` (``configs``), each with the fix."""
    if not isinstance(document, dict):
        return []
    problems = []
    for key in document:
        if key in STACK_FILE_KEYS:
            continue
        hint = "" if ":" in key else did_you_mean(key, STACK_FILE_KEYS)
        if hint or not (":" in key or project == NAMESPACE):
            expected = f"a stack file key: {', '.join(STACK_FILE_KEYS)}{hint}"
        else:
            expected = (
                "a key inside the top-level config: mapping (config keys are read there only): "
                f"add a line 'config:' above it and indent {key} two spaces under it"
            )
        problems.append(Problem(f"{origin}: {key}", NOT_SHOWN, expected))
    return problems


def _key_lines(root: Node | None) -> dict[str, int]:
    """Lines (1-based) of the ``config`` mapping's keys, for naming both of two entries."""
    if not isinstance(root, MappingNode):
        return {}
    for key, value in root.value:
        if isinstance(key, ScalarNode) and key.value == "config" and isinstance(value, MappingNode):
            return {
                k.value: k.start_mark.line + 1 for k, _ in value.value if isinstance(k, ScalarNode)
            }
    return {}
