"""Job parameters: declaration, loading from ``conf/`` files, overrides, validation.

This is the one place where parameters are checked. A job declares its parameters as a frozen
dataclass whose fields are made with :func:`param`; the dataclass's ``__post_init__`` calls the
``check_*`` helpers below. :func:`resolve_params` merges, in increasing priority,

1. the dataclass defaults,
2. the values of a YAML or JSON config file (``--config``),
3. the command-line flags the user actually passed,

coerces types, rejects unknown keys (with a "did you mean" hint) and returns a validated
instance. :func:`add_param_arguments` derives the command-line flags from the same fields, so a
parameter is declared exactly once.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import json
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from spark_dp.errors import ConfigError

__all__ = [
    "add_param_arguments",
    "cli_overrides",
    "load_config_file",
    "param",
    "params_to_dict",
    "parse_spark_conf_overrides",
    "resolve_params",
]

P = TypeVar("P")


# --------------------------------------------------------------------------- declaration


def param(
    default: Any,
    help: str,
    *,
    choices: Sequence[Any] | None = None,
    flag: str | None = None,
    cli: bool = True,
) -> Any:
    """A dataclass field carrying its command-line help.

    Args:
        default: default value (lists are copied per instance).
        help: one sentence for ``--help``; say what a bad choice costs.
        choices: allowed values, enforced by argparse and by :func:`check_choice`.
        flag: command-line flag, default ``--<name with dashes>``.
        cli: set False for parameters only settable from a config file.
    """
    meta = {"help": help, "choices": tuple(choices) if choices else None, "flag": flag, "cli": cli}
    if isinstance(default, list):
        items = list(default)
        return dataclasses.field(default_factory=lambda: list(items), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


# --------------------------------------------------------------------------- files


def load_config_file(path: str | Path) -> dict[str, Any]:
    """Read a YAML (``.yaml``/``.yml``) or JSON (``.json``) mapping.

    Raises:
        ConfigError: the file is missing, unparsable, or not a mapping.
    """
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"config file {str(p)!r} does not exist; pass a path from conf/")
    text = p.read_text(encoding="utf-8")
    try:
        if p.suffix.lower() in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        elif p.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            raise ConfigError(
                f"config file {str(p)!r}: unknown extension {p.suffix!r}; use .yaml, .yml or .json"
            )
    except ConfigError:
        raise
    except Exception as exc:  # yaml/json parse errors carry line numbers
        raise ConfigError(f"config file {str(p)!r} cannot be parsed: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {str(p)!r} must hold a mapping of settings")
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


def _coerce(name: str, value: Any, tp: Any) -> Any:
    base, optional = _base_type(tp)
    if value is None:
        if optional:
            return None
        raise ConfigError(f"parameter {name!r} may not be null")
    origin = typing.get_origin(base)
    try:
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
    hints = typing.get_type_hints(cls)
    merged: dict[str, Any] = {}
    for source, values in (("config file", file_values or {}), ("command line", cli_values or {})):
        for raw_key, value in values.items():
            key = str(raw_key).replace("-", "_")
            if key not in fields:
                hint = difflib.get_close_matches(key, list(fields), n=1)
                extra = f"; did you mean {hint[0]!r}?" if hint else ""
                raise ConfigError(
                    f"unknown parameter {raw_key!r} in {source} for {cls.__name__}{extra} "
                    f"(known: {', '.join(sorted(fields))})"
                )
            if value is None and source == "command line":
                continue
            merged[key] = _coerce(key, value, hints[key])
    return cls(**merged)


def params_to_dict(params: Any) -> dict[str, Any]:
    """Plain JSON-ready dict of a parameter dataclass (tuples become lists)."""
    out = {}
    for f in dataclasses.fields(params):
        v = getattr(params, f.name)
        out[f.name] = list(v) if isinstance(v, tuple) else v
    return out


def add_param_arguments(parser: argparse.ArgumentParser, cls: type) -> None:
    """Add one flag per :func:`param` field of ``cls`` (default ``None`` = not passed)."""
    hints = typing.get_type_hints(cls)
    group = parser.add_argument_group(f"{cls.__name__} parameters")
    for f in dataclasses.fields(cls):
        if not f.metadata.get("cli", True):
            continue
        base, _ = _base_type(hints[f.name])
        default = f.default
        if default is dataclasses.MISSING and f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        kwargs: dict[str, Any] = {
            "dest": f.name,
            "default": None,
            "help": f"{f.metadata.get('help', '')} (default: {default})",
        }
        if f.metadata.get("choices"):
            kwargs["choices"] = list(f.metadata["choices"])
        if base is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif base in (int, float, str):
            kwargs["type"] = base
            kwargs["metavar"] = base.__name__.upper()
        else:  # lists: comma separated
            kwargs["type"] = str
            kwargs["metavar"] = "A,B,..."
        group.add_argument(_flag(f), **kwargs)


def cli_overrides(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The parameter values present in ``args`` (``None`` where the flag was not given)."""
    return {f.name: getattr(args, f.name, None) for f in dataclasses.fields(cls)}
