"""Errors of a config, located: file, line and key (docs/config.md, "Errors").

- :func:`located_error`: a :class:`ConfigError` at a key path of the document;
- :func:`validate`: a pydantic model validated from a part of the document, its
  ``ValidationError`` turned into one :class:`ConfigError` that names the most useful
  problem (unknown key with a "did you mean", missing key, bad value) and counts the rest.
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import ConfigError
from .yamlload import LocatedYaml


def dotted(path: tuple[Any, ...]) -> str:
    """A key path as the key of an error message: ``benchmarks.x.A``."""
    return ".".join(map(str, path))


def located_error(
    doc: LocatedYaml, message: str, *paths: tuple[Any, ...], key: str | None = None
) -> ConfigError:
    """A :class:`ConfigError` for ``doc`` at the line of the first of ``paths`` that has one
    (each path falls back to its deepest known prefix), keyed by the first path (dotted)
    unless ``key`` is given. Without paths: no line, no key."""
    line = next((n for p in paths if (n := doc.line_of(p))), None)
    if key is None and paths:
        key = dotted(paths[0])
    return ConfigError(message, file=doc.file, line=line, key=key)


def validate(
    model: type[BaseModel], data: Any, doc: LocatedYaml, prefix: tuple[str, ...], what: str
) -> Any:
    """``model`` validated from ``data`` (the part of ``doc`` at key path ``prefix``); a
    pydantic error becomes one :class:`ConfigError` at the file, line and key it concerns.
    ``what`` names the part in messages (e.g. "benchmark 'x'")."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise _from_validation_error(exc, model, data, doc, prefix, what) from None


def _submodel(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The BaseModel inside a field annotation, and whether it sits in a dict (keyed by name)."""
    if getattr(annotation, "__origin__", None) is dict:
        annotation = annotation | None  # look at it as a union member below
    for cand in getattr(annotation, "__args__", ()) or (annotation,):
        if isinstance(cand, type) and issubclass(cand, BaseModel):
            return cand, False
        if getattr(cand, "__origin__", None) is dict:
            val = cand.__args__[1]
            if isinstance(val, type) and issubclass(val, BaseModel):
                return val, True
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    return None, False


def _known_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    cur: type[BaseModel] | None = model
    parts = list(loc)
    while parts and cur is not None:
        field = cur.model_fields.get(str(parts.pop(0)))
        if field is None:
            return []
        cur, keyed = _submodel(field.annotation)
        if keyed and parts:
            parts.pop(0)
    return list(cur.model_fields) if cur is not None else []


def _clean_loc(loc: tuple[Any, ...], data: Any, keep_last: bool = False) -> tuple[Any, ...]:
    """A pydantic error location as config keys: the parts that are keys (or list
    indices) of ``data``, without the union member tags pydantic adds
    ("function-before[...]", "int", "NativeRepetitions", ...). ``keep_last``: the last
    part is a key even though ``data`` lacks it (a missing key)."""
    out: list[Any] = []
    cur = data
    for i, part in enumerate(loc):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and isinstance(part, int) and 0 <= part < len(cur):
            cur = cur[part]
        elif not (keep_last and i == len(loc) - 1):
            continue
        out.append(part)
    return tuple(out)


def _from_validation_error(
    exc: ValidationError,
    model: type[BaseModel],
    data: Any,
    doc: LocatedYaml,
    prefix: tuple[str, ...],
    what: str,
) -> ConfigError:
    errors = exc.errors()
    # the most useful error first: unknown keys and missing keys before type noise
    # (a union's own value error says more than "should be a dictionary" of its other member)
    rank = {"extra_forbidden": 0, "missing": 1, "value_error": 2}
    # (among a union's members at one line, the deepest location: `[-1]` in a CPU list says
    # more than "should be 'auto' or 'none'")
    errors.sort(
        key=lambda e: (
            rank.get(e["type"], 3),
            doc.line_of(prefix + tuple(e["loc"])) or 0,
            -len(_clean_loc(e["loc"], data)),
        )
    )
    first = errors[0]
    etype = first["type"]
    loc = _clean_loc(first["loc"], data, keep_last=etype in ("extra_forbidden", "missing"))
    path = prefix + tuple(loc)
    line = doc.line_of(path)
    path_key = dotted(path)
    if etype == "extra_forbidden":
        key = key_text(loc[-1])
        known = _known_keys(model, loc[:-1])
        close = difflib.get_close_matches(key, known, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else ""
        where = f" in {_describe(prefix + tuple(loc[:-1]), what)}"
        if key in ("True", "False", "None"):
            hint += (
                " (YAML reads an unquoted yes/no/on/off/true/false as a boolean and an empty "
                "or ~ key as null; put the key in quotes.)"
            )
        msg = f"unknown key '{key}'{where}.{hint} Known keys here: {', '.join(sorted(known))}."
    elif etype == "missing":
        key = str(loc[-1])
        if key == "A":
            msg = (
                f"{what} has no A side. Add `A: {{run: <command>}}` (thesis format) or "
                "`command:` / `A: {command: ...}` (native format); B is optional (A/A experiment)."
            )
        else:
            msg = f"required key '{key}' is missing in {what}."
    else:
        got = first.get("input")
        shown = _shown(got)
        text = re.sub(r" or instance of \w+", "", str(first["msg"]).removeprefix("Value error, "))
        if got is None and first["type"] in ("model_type", "dict_type", "model_attributes_type"):
            msg = (
                f"`{loc[-1] if loc else path_key}:` is empty; it needs a mapping of settings here."
            )
        else:
            msg = f"{text} (got {shown})."
    more = len({_clean_loc(e["loc"], data) for e in errors}) - 1  # a union's members: one problem
    if more:
        msg += f" ({more} more problem{'s' if more > 1 else ''} after this one.)"
    return ConfigError(msg, file=doc.file, line=line, key=path_key)


def key_text(key: Any) -> str:
    """A key of the config as an error message shows it: short and printable."""
    text = str(key)
    if not text.isprintable():
        text = repr(text)[1:-1]
    return text if len(text) <= 60 else text[:57] + "..."


def _shown(value: Any) -> str:
    """A value for an error message: short, whatever the config holds."""
    if isinstance(value, dict | list):
        return type(value).__name__
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"a number of about {int(value.bit_length() * 0.30103) + 1} digits"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _describe(path: tuple[Any, ...], what: str) -> str:
    """'benchmark 'x' side A' style names for a key path."""
    p = [str(x) for x in path]
    if p[:1] == ["benchmarks"] and len(p) >= 2:
        p = p[1:]
    elif p[:1] in (["experiment"], ["defaults"]):
        return f"the `{p[0]}:` section"
    elif p[:1] == ["duetbench"]:
        return "the `duetbench:` section"
    if not p:
        return what
    s = f"benchmark '{p[0]}'"
    if len(p) >= 2:
        s += f" side {p[1]}" if p[1] in ("A", "B") else f" ({'.'.join(p[1:])})"
    return s
