"""Job parameters: declaration, loading from ``conf/`` files, overrides, validation.

This is the one place where parameters are checked. A job declares its parameters as a frozen
dataclass whose fields are made with :func:`param`; the dataclass's ``__post_init__`` calls the
``check_*`` helpers below. :func:`resolve_params` merges, in increasing priority,

1. the dataclass defaults,
2. the values of a YAML or JSON config file (``--config``),
3. the command-line flags the user actually passed,

coerces types, rejects unknown keys (with a "did you mean" hint) and returns a validated
instance. :func:`add_param_arguments` derives the flags from the same fields (declared once).

A field whose values are a registry's algorithm names (``--algorithm``, ``--method``) takes its
choices and their summaries from the registry the caller hands to :func:`add_param_arguments`:
a parameter class never imports a registry (the registry sits above it), and an unknown name
from a config file fails when the plan looks it up.

A field's flag may differ from its name (``flag=``: the command line shares one vocabulary
across jobs, e.g. ``--max-contributions`` for every per-user bound) and may keep deprecated
aliases (``aliases=``: the old flags, accepted with a warning until :data:`ALIASES_REMOVED_IN`).
Config files accept the field name, the flag's name and, with the same warning, an alias's. A
field typed ``int | str`` takes an integer or a word its own check accepts (``auto``).
"""

from __future__ import annotations

import argparse
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
    from spark_dp.registry import Registry

_log = logging.getLogger("spark_dp.config")

__all__ = [
    "ALIASES_REMOVED_IN",
    "DeprecatedAlias",
    "add_param_arguments",
    "cli_overrides",
    "deprecation_warnings",
    "load_config_file",
    "name_flags",
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
    if suffix not in (".yaml", ".yml", ".json"):
        raise ConfigError(
            f"config file {name!r}: unknown extension {suffix!r}; use .yaml, .yml or .json"
        )
    try:
        import yaml

        data = json.loads(text) if suffix == ".json" else yaml.safe_load(text)
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


def _flag(f: dataclasses.Field) -> str:
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


def _base_type(tp: Any) -> tuple[Any, bool]:
    """Return (inner type, optional?) for ``X`` or ``X | None``."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0], True
    return tp, False


def _is_int_or_word(tp: Any) -> bool:
    """``int | str``: an integer, or a word the field's own check accepts (``auto``)."""
    return typing.get_origin(tp) in (typing.Union, types.UnionType) and set(
        typing.get_args(tp)
    ) == {int, str}


def _coerce(name: str, value: Any, tp: Any) -> Any:
    base, optional = _base_type(tp)
    if value is None:
        if optional:
            return None
        raise ConfigError(f"parameter {name!r} may not be null")
    origin = typing.get_origin(base)
    try:
        if _is_int_or_word(base):  # ``max_contributions``: an integer or a word (``auto``)
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
            if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
                raise ValueError(value)
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
                new = _flag(fields[key]).lstrip("-").replace("-", "_")
                _log.warning(
                    "config key %r is deprecated (removed in %s); use %r",
                    raw_key,
                    ALIASES_REMOVED_IN,
                    new,
                )
            if value is None and source == "command line":
                continue
            merged[key] = _coerce(key, value, hints[key])
    return cls(**merged)


def _config_names(cls: type) -> tuple[dict[str, str], dict[str, str]]:
    """(accepted config key -> field, deprecated key -> field) of a parameter dataclass."""
    names: dict[str, str] = {}
    deprecated: dict[str, str] = {}
    for f in dataclasses.fields(cls):
        names[f.name] = f.name
        names[_flag(f).lstrip("-").replace("-", "_")] = f.name
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


class DeprecatedAlias(argparse.Action):
    """An old flag that still sets its field; it notes itself in ``deprecated_flags``."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, new_flag: str, **kw: Any):
        super().__init__(option_strings, dest, **kw)
        self.new_flag = new_flag

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        notes = list(getattr(namespace, "deprecated_flags", None) or [])
        notes.append((option_string or self.option_strings[0], self.new_flag))
        namespace.deprecated_flags = notes


def name_flags(message: str, cls: type) -> str:
    """``message`` with a leading parameter name spelled as its flag where they differ:
    ``beta must ...`` becomes ``--truncation-beta (beta) must ...``.
    """
    for f in dataclasses.fields(cls):
        flag = _flag(f)
        if flag != "--" + f.name.replace("_", "-") and message.startswith(f"{f.name} "):
            return f"{flag} ({f.name}){message[len(f.name) :]}"
    return message


def deprecation_warnings(args: argparse.Namespace) -> list[str]:
    """One sentence per deprecated flag the user passed."""
    return [
        f"{old} is deprecated and will be removed in {ALIASES_REMOVED_IN}; use {new}"
        for old, new in getattr(args, "deprecated_flags", None) or []
    ]


def add_param_arguments(
    parser: argparse.ArgumentParser,
    cls: type,
    registries: Mapping[str, Registry[Any, Any]] | None = None,
) -> None:
    """Add one flag per :func:`param` field of ``cls`` (default ``None`` = not passed), and a
    hidden :class:`DeprecatedAlias` per old name.

    ``registries`` maps a field (``algorithm``, ``method``) to the registry whose names are its
    choices; the help then lists each name with its summary.
    """
    registries = registries or {}
    hints = typing.get_type_hints(cls)
    group = parser.add_argument_group(f"{cls.__name__} parameters")
    for f in dataclasses.fields(cls):
        if not f.metadata.get("cli", True):
            continue
        base, _ = _base_type(hints[f.name])
        default = f.default
        if default is dataclasses.MISSING and f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        aliases = tuple(f.metadata.get("aliases") or ())
        was = f"; replaces {', '.join(aliases)}" if aliases else ""
        kwargs: dict[str, Any] = {
            "dest": f.name,
            "default": None,
            "help": f"{f.metadata.get('help', '')} (default: {default}{was})",
        }
        choices = f.metadata.get("choices")
        if f.name in registries:
            choices = registries[f.name].names
            kwargs["help"] += f"; {registries[f.name].summaries()}"
        if choices:
            kwargs["choices"] = list(choices)
            kwargs["metavar"] = "{" + ",".join(map(str, choices)) + "}"
        if base is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif base in (int, float, str) or _is_int_or_word(base):  # int | str: resolve_params
            kind = base if base in (int, float, str) else str  # coerces it
            kwargs["type"] = kind
            kwargs.setdefault("metavar", f.metadata.get("metavar") or kind.__name__.upper())
        else:  # lists: comma separated
            kwargs["type"] = str
            kwargs["metavar"] = "A,B,..."
        group.add_argument(_flag(f), **kwargs)
        for alias in aliases:
            extra = {k: v for k, v in kwargs.items() if k in ("type", "choices", "metavar")}
            group.add_argument(
                alias,
                dest=f.name,
                default=None,
                help=argparse.SUPPRESS,
                action=DeprecatedAlias,
                new_flag=_flag(f),
                **extra,
            )


def cli_overrides(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The parameter values present in ``args`` (``None`` where the flag was not given)."""
    return {f.name: getattr(args, f.name, None) for f in dataclasses.fields(cls)}
