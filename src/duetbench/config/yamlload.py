"""YAML loading that remembers where every key came from (file and line)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError
from ..files import open_regular
from .limits import MAX_CONFIG_BYTES, MAX_NESTING, MAX_VALUES

Path_ = tuple[str | int, ...]


@dataclass
class LocatedYaml:
    """A parsed YAML document plus the 1-based line of every key path in it."""

    data: Any
    file: Path
    lines: dict[Path_, int] = field(default_factory=dict)

    def line_of(self, path: Path_) -> int | None:
        """Line of the deepest known prefix of ``path`` (pydantic locations may go deeper)."""
        path = tuple(path)
        while path:
            if path in self.lines:
                return self.lines[path]
            path = path[:-1]
        return self.lines.get((), None)


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with the nesting bounded: its composer recurses once per level,
    so 5000 `[` would end in a RecursionError."""

    _depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        self._depth += 1
        try:
            if self._depth > MAX_NESTING:
                raise ConfigError(
                    f"the YAML nests lists and mappings more than {MAX_NESTING} levels deep; "
                    "a config needs a few (docs/config.md, section Limits)",
                    line=self.peek_event().start_mark.line + 1,
                )
            return super().compose_node(parent, index)  # type: ignore[no-any-return]
        finally:
            self._depth -= 1


_MERGE_TAG = "tag:yaml.org,2002:merge"


def _construct(
    node: yaml.Node,
    loader: _Loader,
    path: Path_,
    lines: dict[Path_, int],
    active: frozenset[int] = frozenset(),
) -> Any:
    lines.setdefault(path, node.start_mark.line + 1)
    if id(node) in active:
        raise ConfigError(
            "an alias (*name) refers to a node that contains it, which would never end; "
            "anchor (&name) a separate section and refer to that",
            line=node.start_mark.line + 1,
        )
    active = active | {id(node)}
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for skey, key_node, value_node in _mapping_items(node, loader, active):
            lines[path + (skey,)] = key_node.start_mark.line + 1
            out[skey] = _construct(value_node, loader, path + (skey,), lines, active)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_construct(v, loader, path + (i,), lines, active) for i, v in enumerate(node.value)]
    return _scalar(loader, node)


def _scalar(loader: _Loader, node: yaml.Node) -> Any:
    """A scalar's value; values no command, path or name can hold are errors."""
    try:
        value = loader.construct_object(node, deep=True)
    except (ValueError, OverflowError, TypeError) as exc:
        # PyYAML's own checks: `2001-13-45` (a date), `!!float abc`, a 5000-digit number
        text = str(node.value)
        shown = text if len(text) <= 40 else text[:37] + "..."
        raise ConfigError(
            f"cannot read the value `{shown}` ({str(exc).split(';')[0]}). If it is text, "
            "put it in quotes",
            line=node.start_mark.line + 1,
        ) from None
    if isinstance(value, str):
        if "\0" in value:
            raise ConfigError(
                "a value holds a NUL character (`\\0`), which no command, path or name can "
                "hold; remove it",
                line=node.start_mark.line + 1,
            )
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise ConfigError(
                "a value holds a lone surrogate (an escape such as `\\ud800`), which is not "
                "a character; remove it",
                line=node.start_mark.line + 1,
            ) from None
    return value


_BUSY = (-1, -1)


def _nodes_of(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_size(root: yaml.Node) -> None:
    """Refuse, before building anything, a document that its aliases expand beyond
    MAX_VALUES values or MAX_NESTING levels (an 11-line "billion laughs" file stands for
    10**9 values). Each node is visited once: its expanded size and height are kept."""
    seen: dict[int, tuple[int, int]] = {}

    def too_deep(line: int) -> ConfigError:
        return ConfigError(
            f"with its aliases (*name) replaced by what they name, the config nests lists and "
            f"mappings more than {MAX_NESTING} levels deep; a config needs a few "
            "(docs/config.md, section Limits)",
            line=line,
        )

    def visit(node: yaml.Node, depth: int) -> tuple[int, int]:
        line = node.start_mark.line + 1
        got = seen.get(id(node))
        if got == _BUSY:
            raise ConfigError(
                "an alias (*name) refers to a node that contains it, which would never end; "
                "anchor (&name) a separate section and refer to that",
                line=line,
            )
        if got is not None:
            return got
        if depth > MAX_NESTING:
            raise too_deep(line)
        seen[id(node)] = _BUSY
        count, height = 1, 1
        for child in _nodes_of(node):
            c, h = visit(child, depth + 1)
            count, height = count + c, max(height, h + 1)
            if depth + h > MAX_NESTING:  # an alias (the child) made it deep: name its line
                raise too_deep(line)
            if count > MAX_VALUES:
                raise ConfigError(
                    "with its aliases (*name) replaced by what they name, the config holds "
                    f"more than {MAX_VALUES:,} values (an alias bomb?); a config needs a "
                    "few hundred (docs/config.md, section Limits)",
                    line=line,
                )
        seen[id(node)] = (count, height)
        return count, height

    visit(root, 1)


def _key(loader: _Loader, key_node: yaml.Node) -> str:
    if not isinstance(key_node, yaml.ScalarNode):
        raise ConfigError("a mapping key must be a plain value", line=key_node.start_mark.line + 1)
    key = _scalar(loader, key_node)
    return key if isinstance(key, str) else str(key)


def _mapping_items(
    node: yaml.MappingNode, loader: _Loader, active: frozenset[int]
) -> list[tuple[str, yaml.Node, yaml.Node]]:
    """The (key, key node, value node) of a mapping with YAML merge keys (``<<``) resolved.

    The mapping's own keys win over merged ones, and among several merged mappings
    (``<<: [*a, *b]``) the first listed wins, as the YAML merge-key spec says. A key
    written twice in the mapping itself is an error (PyYAML would keep the last one
    silently).
    """
    own: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    merged: dict[str, tuple[yaml.Node, yaml.Node]] = {}
    for key_node, value_node in node.value:
        if key_node.tag == _MERGE_TAG:
            sources = (
                value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]
            )
            for src in sources:
                if not isinstance(src, yaml.MappingNode):
                    raise ConfigError(
                        "`<<:` merges a mapping (`<<: *name`) or a list of them "
                        "(`<<: [*a, *b]`), not a single value",
                        line=src.start_mark.line + 1,
                    )
                if id(src) in active:
                    raise ConfigError(
                        "`<<:` merges a mapping that contains this one, which would never end",
                        line=src.start_mark.line + 1,
                    )
                for skey, kn, vn in _mapping_items(src, loader, active | {id(src)}):
                    merged.setdefault(skey, (kn, vn))
            continue
        skey = _key(loader, key_node)
        if skey in own:
            raise ConfigError(
                f"duplicate key '{skey}' (it also appears above, on line "
                f"{own[skey][0].start_mark.line + 1}); remove one of them",
                line=key_node.start_mark.line + 1,
                key=skey,
            )
        own[skey] = (key_node, value_node)
    items = {k: v for k, v in merged.items() if k not in own}
    items.update(own)
    return [(k, kn, vn) for k, (kn, vn) in items.items()]


def _too_big(size: str) -> str:
    return (
        f"the config is {size}; a config may have at most {MAX_CONFIG_BYTES // 1024} KiB "
        "(docs/config.md, section Limits). Is this the right file?"
    )


def load_located(file: str | Path) -> LocatedYaml:
    """Parse ``file``; YAML syntax errors become a :class:`ConfigError` with the line."""
    file = Path(file)
    try:
        with open_regular(file) as f:  # a FIFO or a device is refused, never read
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {file}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {file}: {exc.strerror or exc}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(_too_big(f"larger than {MAX_CONFIG_BYTES // 1024} KiB"), file=file)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(
            f"the file is not UTF-8 text: byte 0x{raw[exc.start]:02x} at column {column} is "
            "not part of a UTF-8 character. Save the file as UTF-8 (or is it not a config?)",
            file=file,
            line=line,
        ) from None
    return loads_located(text, file)


def _reader_error(exc: yaml.reader.ReaderError, text: str, file: Path) -> ConfigError:
    """A character YAML does not allow anywhere (NUL, other control characters)."""
    line = text.count("\n", 0, exc.position) + 1
    column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
    what = "NUL" if exc.character == 0 else "a control character"
    return ConfigError(
        f"the file holds {what} (U+{exc.character:04X}) at column {column}; YAML allows no "
        "control characters other than tab and line breaks. Remove it (or is it not a config?)",
        file=file,
        line=line,
    )


def loads_located(text: str, file: str | Path = "<string>") -> LocatedYaml:
    file = Path(file)
    if len(text) > MAX_CONFIG_BYTES:
        raise ConfigError(_too_big(f"{len(text):,} characters long"), file=file)
    lines: dict[Path_, int] = {}
    try:
        loader = _Loader(text)
    except yaml.reader.ReaderError as exc:
        raise _reader_error(exc, text, file) from None
    try:
        node = loader.get_single_node()
        if node is not None:
            _check_size(node)
        data = _construct(node, loader, (), lines) if node is not None else None
    except yaml.reader.ReaderError as exc:
        raise _reader_error(exc, text, file) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        what = " ".join(p for p in (exc.context, exc.problem) if p)
        if "'\\t'" in what or "\t" in what:
            hint = "YAML does not allow tabs for indentation; indent with spaces."
        else:
            hint = "Check indentation, colons and quotes around that line."
        raise ConfigError(
            f"this is not valid YAML ({what}). {hint}",
            file=file,
            line=line,
        ) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"this is not valid YAML: {exc}", file=file) from None
    except ConfigError as exc:
        raise ConfigError(exc.detail, file=file, line=exc.line, key=exc.key) from None
    finally:
        loader.dispose()
    return LocatedYaml(data=data, file=file, lines=lines)
