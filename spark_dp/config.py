"""Job parameters: declaration, loading from ``conf/`` files, overrides, validation.

This is the one place where parameters are checked. A job declares its parameters as a frozen
dataclass whose fields are made with :func:`param`; the dataclass's ``__post_init__`` calls the
``check_*`` helpers below. :func:`resolve_params` merges, in increasing priority,

1. the dataclass defaults,
2. the values of a YAML or JSON config file (``--config``),
3. the command-line flags the user actually passed,

coerces types, rejects unknown keys (with a "did you mean" hint) and returns a validated
instance. :func:`spark_dp.config_flags.add_param_arguments` derives the command-line flags
from the same fields, so a parameter is declared exactly once.

A field whose values are a registry's algorithm names (``--algorithm``, ``--method``) takes its
choices and their summaries from the registry the caller hands to
:func:`spark_dp.config_flags.add_param_arguments`:
a parameter class never imports a registry (the registry sits above it), and an unknown name
from a config file fails when the plan looks it up.

A field's flag may differ from its name (``flag=``: the command line shares one vocabulary
across jobs, e.g. ``--max-contributions`` for every per-user bound) and may keep deprecated
aliases (``aliases=``: the old flags, accepted with a warning until
:data:`ALIASES_REMOVED_IN`). Config
files accept the field name, the flag's name (``max_contributions``) and, with the same
warning, an alias's. One parameter given under two of its names with different values (on the
command line, or within a config file) is an error: neither value silently wins. A field typed
``int | str`` takes an integer or a word its own check accepts (``auto``).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import logging
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from spark_dp.errors import ConfigError

if TYPE_CHECKING:
    pass

_log = logging.getLogger("spark_dp.config")

__all__ = [
    "ALIASES_REMOVED_IN",
    "base_type",
    "flag_of",
    "is_int_or_word",
    "load_config_file",
    "param",
    "params_to_dict",
    "parse_config_text",
    "parse_spark_conf_overrides",
    "resolve_params",
]

P = TypeVar("P")

ALIASES_REMOVED_IN = "0.2.0"
"""The release that removes the deprecated flag aliases and config keys (see CHANGELOG.md)."""


# --------------------------------------------------------------------------- declaration


def param(
    default: Any,
    help: str,
    *,
    choices: Sequence[Any] | None = None,
    flag: str | None = None,
    aliases: Sequence[str] = (),
    metavar: str | None = None,
    cli: bool = True,
) -> Any:
    """A dataclass field carrying its command-line help.

    Args:
        default: default value (lists are copied per instance).
        help: one sentence for ``--help``; say what a bad choice costs.
        choices: allowed values, enforced by argparse and by :func:`check_choice`.
        flag: command-line flag, default ``--<name with dashes>``.
        aliases: deprecated flags that still set this field (with a warning).
        metavar: the value's name in ``--help`` (default: its type, e.g. ``INT``).
        cli: set False for parameters only settable from a config file.
    """
    meta = {
        "help": help,
        "choices": tuple(choices) if choices else None,
        "flag": flag,
        "aliases": tuple(aliases),
        "metavar": metavar,
        "cli": cli,
    }
    if isinstance(default, list):
        items = list(default)
        return dataclasses.field(default_factory=lambda: list(items), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


# --------------------------------------------------------------------------- files


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML (``.yaml``/``.yml``) or JSON (``.json``) mapping.

    Raises:
        ConfigError: the file is missing, unreadable, unparsable, or not a mapping.
    """
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {str(p)!r} does not exist; pass a path from conf/")
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"config file {str(p)!r} cannot be read: {exc}") from None
    return parse_config_text(str(p), text)


def parse_config_text(name: str, text: str) -> dict[str, Any]:
    """The settings mapping in ``text``, parsed as YAML or JSON by the extension of ``name``.

    Raises:
        ConfigError: unknown extension, unparsable, or not a mapping.
    """
    suffix = Path(name).suffix.lower()
    try:
        if suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        elif suffix == ".json":
            data = json.loads(text)
        else:
            raise ConfigError(
                f"config file {name!r}: unknown extension {suffix!r}; use .yaml, .yml or .json"
            )
    except ConfigError:
        raise
    except Exception as exc:  # yaml/json parse errors carry line numbers
        msg = " ".join(str(exc).split())
        raise ConfigError(f"config file {name!r} cannot be parsed: {msg}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {name!r} must hold a mapping of settings")
    return data


def parse_spark_conf_overrides(items: Sequence[str] | None) -> dict[str, str]:
    """Parse ``--spark-conf key=value`` flags."""
    out: dict[str, str] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--spark-conf expects KEY=VALUE, got {item!r}")
        out[key.strip()] = value.strip()
    return out


# --------------------------------------------------------------------------- resolution


def _fields(cls: type) -> dict[str, dataclasses.Field]:
    return {f.name: f for f in dataclasses.fields(cls)}


def flag_of(f: dataclasses.Field) -> str:
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


def base_type(tp: Any) -> tuple[Any, bool]:
    """Return (inner type, optional?) for ``X`` or ``X | None``."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return tp, False


def is_int_or_word(tp: Any) -> bool:
    """``int | str``: an integer, or a word the field's own check accepts (``auto``)."""
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and set(
        typing.get_args(tp)
    ) == {int, str}


def _coerce(name: str, value: Any, tp: Any) -> Any:
    base, optional = base_type(tp)
    if value is None:
        if optional:
            return None
        raise ConfigError(f"parameter {name!r} may not be null")
    origin = typing.get_origin(base)
    try:
        if is_int_or_word(base):  # ``max_contributions``: an integer or a word (``auto``)
            word = isinstance(value, str) and not value.strip().lstrip("+-").isdigit()
            return value.strip() if word else _coerce(name, value, int)
        if base is bool:
            if isinstance(value, str):
                low = value.strip().lower()
                if low in ("true", "yes", "1", "on"):
                    return True
                if low in ("false", "no", "0", "off"):
                    return False
                raise ValueError(value)
            if isinstance(value, (bool, int)):
                return bool(value)
            raise ValueError(value)
        if base is int:
            if isinstance(value, bool):
                raise ValueError(value)
            if isinstance(value, float):
                if not value.is_integer():
                    raise ValueError(value)
                return int(value)
            return int(value)
        if base is float:
            if isinstance(value, bool):
                raise ValueError(value)
            return float(value)
        if base is str:
            return str(value)
        if origin in (list, tuple):
            (inner,) = typing.get_args(base)[:1] or (str,)
            if isinstance(value, str):
                value = [v for v in value.replace(";", ",").split(",") if v.strip()]
            if not isinstance(value, (list, tuple)):
                raise ValueError(value)
            items = [_coerce(name, v, inner) for v in value]
            return tuple(items) if origin is tuple else items
    except (TypeError, ValueError) as exc:
        raise ConfigError(
            f"parameter {name!r} expects {getattr(base, '__name__', base)}, got {value!r}"
        ) from exc
    return value


def resolve_params(
    cls: type[P],
    file_values: Mapping[str, Any] | None = None,
    cli_values: Mapping[str, Any] | None = None,
) -> P:
    """Build a validated parameter object: defaults < config file < command line.

    Args:
        cls: a dataclass whose ``__post_init__`` validates.
        file_values: mapping from a config file (keys may use dashes or underscores).
        cli_values: values the user passed on the command line (``None`` = not passed).

    Raises:
        ConfigError: unknown key or uncoercible value.
        ParameterError: a value outside its domain.
    """
    fields = _fields(cls)
    names, deprecated = _config_names(cls)
    hints = typing.get_type_hints(cls)
    merged: dict[str, Any] = {}
    for source, values in (("config file", file_values or {}), ("command line", cli_values or {})):
        spelled_as: dict[str, tuple[str, Any]] = {}  # field -> (key, value) in this source
        for raw_key, value in values.items():
            spelled = str(raw_key).replace("-", "_")
            key = names.get(spelled) or deprecated.get(spelled)
            if key is None:
                hint = difflib.get_close_matches(spelled, list(names), n=1)
                extra = f"; did you mean {hint[0]!r}?" if hint else ""
                raise ConfigError(
                    f"unknown parameter {raw_key!r} in {source} for {cls.__name__}{extra} "
                    f"(known: {', '.join(sorted(fields))})"
                )
            if spelled in deprecated and source == "config file":
                new = flag_of(fields[key]).lstrip("-").replace("-", "_")
                _log.warning(
                    "config key %r is deprecated (removed in %s); use %r",
                    raw_key,
                    ALIASES_REMOVED_IN,
                    new,
                )
            if value is None and source == "command line":
                continue
            earlier = spelled_as.setdefault(key, (str(raw_key), value))
            if earlier[1] != value:
                raise ConfigError(
                    f"the {source} sets {key} twice, as {earlier[0]!r}: {earlier[1]!r} and as "
                    f"{raw_key!r}: {value!r}; keep one of them"
                )
            merged[key] = _coerce(key, value, hints[key])
    return cls(**merged)


def _config_names(cls: type) -> tuple[dict[str, str], dict[str, str]]:
    """(accepted config key -> field, deprecated key -> field) of a parameter dataclass."""
    names: dict[str, str] = {}
    deprecated: dict[str, str] = {}
    for f in dataclasses.fields(cls):
        names[f.name] = f.name
        names[flag_of(f).lstrip("-").replace("-", "_")] = f.name
        for alias in f.metadata.get("aliases") or ():
            deprecated[alias.lstrip("-").replace("-", "_")] = f.name
    return names, deprecated


def params_to_dict(params: Any) -> dict[str, Any]:
    """Plain JSON-ready dict of a parameter dataclass (tuples become lists)."""
    out = {}
    for f in dataclasses.fields(params):
        v = getattr(params, f.name)
        out[f.name] = list(v) if isinstance(v, tuple) else v
    return out
