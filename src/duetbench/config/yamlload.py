"""YAML loading that remembers where every key came from (file and line)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import ConfigError

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
    pass


def _construct(node: yaml.Node, loader: _Loader, path: Path_, lines: dict[Path_, int]) -> Any:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        loader.flatten_mapping(node)
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if isinstance(key, list | dict):
                raise ConfigError(
                    "a mapping key must be a plain value", line=key_node.start_mark.line + 1
                )
            skey = key if isinstance(key, str) else str(key)
            if skey in out:
                raise ConfigError(
                    f"duplicate key '{skey}' (it also appears above); remove one of them",
                    line=key_node.start_mark.line + 1,
                    key=skey,
                )
            lines[path + (skey,)] = key_node.start_mark.line + 1
            out[skey] = _construct(value_node, loader, path + (skey,), lines)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_construct(v, loader, path + (i,), lines) for i, v in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def load_located(file: str | Path) -> LocatedYaml:
    """Parse ``file``; YAML syntax errors become a :class:`ConfigError` with the line."""
    file = Path(file)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {file}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {file}: {exc.strerror}") from None
    return loads_located(text, file)


def loads_located(text: str, file: str | Path = "<string>") -> LocatedYaml:
    file = Path(file)
    loader = _Loader(text)
    lines: dict[Path_, int] = {}
    try:
        node = loader.get_single_node()
        data = _construct(node, loader, (), lines) if node is not None else None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        what = " ".join(p for p in (exc.context, exc.problem) if p)
        raise ConfigError(
            f"this is not valid YAML ({what}). Check indentation, colons and quotes around that line.",
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
