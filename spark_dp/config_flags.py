"""Command-line flags derived from a parameter dataclass's :func:`spark_dp.config.param` fields.

One flag per field (its name, or the shared vocabulary's ``flag=``), hidden deprecated aliases
that warn until :data:`spark_dp.config.ALIASES_REMOVED_IN`, and :class:`SpellingAction`, which
makes two spellings of one parameter given different values a usage error. The values the user
passed go back to :func:`spark_dp.config.resolve_params` through :func:`cli_overrides`.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from spark_dp.config import ALIASES_REMOVED_IN, base_type, flag_of, is_int_or_word

if TYPE_CHECKING:
    from spark_dp.dp.registry import Registry

__all__ = [
    "SpellingAction",
    "add_param_arguments",
    "cli_overrides",
    "default_text",
    "deprecation_warnings",
    "name_flags",
]


class SpellingAction(argparse.Action):
    """Stores a value, noting the spelling of the flag that gave it: two spellings of one
    parameter (its flag and a deprecated alias, or two names of one option) given different
    values are a usage error (exit code 2), never a silent last-one-wins. With ``new_flag`` it
    is a deprecated alias, noted in ``deprecated_flags`` for the warning."""

    def __init__(
        self, option_strings: Sequence[str], dest: str, *, new_flag: str | None = None, **kw: Any
    ):
        super().__init__(option_strings, dest, **kw)
        self.new_flag = new_flag

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        spelling = option_string or self.option_strings[0]
        given = dict(getattr(namespace, "flag_spellings", None) or {})
        mine = dict(given.get(self.dest, {}))
        for other, before in mine.items():
            if other != spelling and before != values:
                parser.error(
                    f"{other} {before} and {spelling} {values} set the same parameter to "
                    "different values; give it once"
                )
        given[self.dest] = {**mine, spelling: values}
        namespace.flag_spellings = given
        setattr(namespace, self.dest, values)
        if self.new_flag is not None:
            notes = list(getattr(namespace, "deprecated_flags", None) or [])
            namespace.deprecated_flags = [*notes, (spelling, self.new_flag)]


def name_flags(message: str, cls: type) -> str:
    """``message`` with a leading parameter name spelled as its flag where they differ:
    ``beta must ...`` becomes ``--truncation-beta (beta) must ...``.
    """
    for f in dataclasses.fields(cls):
        flag = flag_of(f)
        if flag != "--" + f.name.replace("_", "-") and message.startswith(f"{f.name} "):
            return f"{flag} ({f.name}){message[len(f.name) :]}"
    return message


def deprecation_warnings(args: argparse.Namespace) -> list[str]:
    """One sentence per deprecated flag the user passed: ``use <the new flag>``, or what the
    note says when there is no new flag (a flag whose effect became the default)."""
    return [
        f"{old} is deprecated and will be removed in {ALIASES_REMOVED_IN}; "
        + (f"use {new}" if new.startswith("--") else new)
        for old, new in getattr(args, "deprecated_flags", None) or []
    ]


def default_text(value: Any) -> str | None:
    """A parameter's default as its flag takes it (``1,3,10`` for a list), ``None`` for none."""
    if value is None:
        return None
    if isinstance(value, (tuple, list)):
        return ",".join(map(str, value))
    return str(value)


def add_param_arguments(
    parser: argparse.ArgumentParser,
    cls: type,
    registries: Mapping[str, Registry[Any, Any]] | None = None,
    required: Sequence[str] = (),
) -> None:
    """Add one flag per :func:`param` field of ``cls`` (default ``None`` = not passed), and a
    hidden :class:`SpellingAction` per old name (a deprecated alias).

    ``registries`` maps a field (``algorithm``, ``method``) to the registry whose names are its
    choices; the help then lists each name with its summary. The help of a field in
    ``required`` says "required" and shows no default (the job refuses a run without it); a
    field whose default is ``None`` shows none either (its help says what leaving it out does).
    """
    registries = registries or {}
    hints = typing.get_type_hints(cls)
    group = parser.add_argument_group(f"{cls.__name__} parameters")
    for f in dataclasses.fields(cls):
        if not f.metadata.get("cli", True):
            continue
        base, _ = base_type(hints[f.name])
        default = f.default
        if default is dataclasses.MISSING and f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        aliases = tuple(f.metadata.get("aliases") or ())
        shown = default_text(default)
        notes = [
            "required" if f.name in required else (shown and f"default: {shown}"),
            aliases and f"replaces {', '.join(aliases)}",
        ]
        told = "; ".join(n for n in notes if n)
        kwargs: dict[str, Any] = {
            "dest": f.name,
            "default": None,
            "help": f"{f.metadata.get('help', '')}" + (f" ({told})" if told else ""),
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
        elif aliases or base in (int, float, str) or is_int_or_word(base):
            kind = base if base in (int, float, str) else str  # int | str: resolve_params coerces
            kwargs["type"] = kind
            kwargs.setdefault("metavar", f.metadata.get("metavar") or kind.__name__.upper())
            if aliases:
                kwargs["action"] = SpellingAction
        else:  # lists: comma separated
            kwargs["type"] = str
            kwargs["metavar"] = "A,B,..."
        group.add_argument(flag_of(f), **kwargs)
        for alias in aliases:
            extra = {k: v for k, v in kwargs.items() if k in ("type", "choices", "metavar")}
            group.add_argument(
                alias,
                dest=f.name,
                default=None,
                help=argparse.SUPPRESS,
                action=SpellingAction,
                new_flag=flag_of(f),
                **extra,
            )


def cli_overrides(args: argparse.Namespace, cls: type) -> dict[str, Any]:
    """The parameter values present in ``args`` (``None`` where the flag was not given)."""
    return {f.name: getattr(args, f.name, None) for f in dataclasses.fields(cls)}
