"""Help that tells the truth: every default a job's ``--help`` or the configuration reference
shows is what a run gets without the flag, and a required parameter shows none.

Driver only (no Spark): each job's ``spark-dp <job> --help`` (and ``calibrate``'s) is read as a
user reads it, and each table row of docs/reference/configuration.md likewise. For every
default shown:

* a parameter of the job's dataclass shows exactly its default, in the form its flag takes
  (``1,3,10`` for a list), and passing that value as the flag, or under the row's config key in
  a config file, resolves to the same parameters as leaving it out (the config rules of
  :func:`spark_dp.config.resolve_params` and the job's own resolution);
* a required parameter (``JobSpec.required``: ε) says "required" and shows no default, and a run
  without it is refused;
* a parameter or flag whose default is ``None`` shows no bare value (``(default: None)``), only
  words saying what leaving it out does (``<output>_work``, "a fresh key from OS entropy");
* any other flag's bare default is argparse's own.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import io
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from spark_dp import cli
from spark_dp.config import params_to_dict, resolve_params
from spark_dp.config_flags import default_text
from spark_dp.errors import ConfigError
from spark_dp.jobs.cli_args import build_parser
from spark_dp.jobs.spec import JobSpec
from spark_dp.partition_selection import PartitionSelectionParams
from tests.support.job_settings import request_of

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference" / "configuration.md"

OPTION = re.compile(r"^  (-\S.*?)(?:\s{2,}(\S.*))?$")
CLAIM = re.compile(r"(?:^|[(;]) ?default:? ([^;)]+)")


def _spec(command: str) -> JobSpec:
    return importlib.import_module(f"spark_dp.jobs.{cli.JOBS[command][0]}").SPEC


def _help_of(argv: list[str]) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert cli.main([*argv, "--help"]) == 0
    return out.getvalue()


def help_entries(text: str) -> dict[str, str]:
    """Each option of argparse's ``--help`` layout: its first flag -> its help, on one line."""
    entries: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        m = OPTION.match(line)
        if m:
            flags = re.findall(r"(?:^|, )(--?[\w-]+)", m.group(1))
            current = entries.setdefault(flags[0], [])
            current.append(m.group(2) or "")
        elif current is not None and line.startswith("   ") and line.strip():
            current.append(line.strip())
        else:
            current = None
    return {flag: " ".join(" ".join(parts).split()) for flag, parts in entries.items()}


def reference_rows(page: str) -> dict[str, dict[str, tuple[str, str]]]:
    """Each job section of the reference: flag -> (config key or "", meaning)."""
    sections: dict[str, dict[str, tuple[str, str]]] = {}
    rows: dict[str, tuple[str, str]] = {}
    for line in page.splitlines():
        heading = re.match(r"^## `spark-dp ([\w-]+)`", line)
        if heading:
            rows = sections.setdefault(heading.group(1), {})
            continue
        if not line.startswith("| `-"):
            continue
        # the meaning's pipes are escaped; a metavar's (`INT|auto`, in a code span) is not
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
        flag = re.match(r"`(--?[\w-]+)`", cells[0])
        assert flag, line
        key = re.match(r"`(\w+)`(?: or `\w+`)?$", cells[-2]) if len(cells) > 2 else None
        meaning = cells[-1].replace("\\|", "|").replace("&lt;", "<").replace("&gt;", ">")
        rows[flag.group(1)] = (key.group(1) if key else "", meaning)
    return sections


def _claims(text: str) -> list[str]:
    return [c.strip() for c in CLAIM.findall(text)]


def _bare(claim: str) -> bool:
    """A value, not words: no space, no placeholder (``<output>_work``, ``$VAR``)."""
    return " " not in claim and not re.search(r"[<$]", claim)


def _base_argv(spec: JobSpec, parser: argparse.ArgumentParser) -> list[str]:
    """The smallest command line the job's parser accepts, with every required parameter."""
    argv = ["--input", "in"] if spec.needs_input else []
    if spec.output == "required":
        argv += ["--output", "out"]
    for name in spec.required:
        argv += [_flag(parser, name), "1"]
    return argv


def _flag(parser: argparse.ArgumentParser, dest: str) -> str:
    (action,) = [a for a in parser._actions if a.dest == dest and a.help != argparse.SUPPRESS]
    return action.option_strings[0]


def _resolved(spec: JobSpec, argv: list[str], conf: Path | None = None) -> dict[str, Any]:
    """The parameters a run of ``argv`` (and config file ``conf``) resolves, without Spark."""
    parser = build_parser(spec)
    args = parser.parse_args([*argv, *(["--config", str(conf)] if conf else [])])
    return params_to_dict(request_of(spec, parser, args).params)


def _as_flag(action: argparse.Action, claim: str) -> list[str]:
    flag = action.option_strings[0]
    if isinstance(action, argparse.BooleanOptionalAction):
        assert claim in ("True", "False"), (flag, claim)
        return [flag if claim == "True" else f"--no-{flag[2:]}"]
    return [flag, claim]


def _check_param(
    spec: JobSpec, parser: argparse.ArgumentParser, action: argparse.Action, text: str
) -> None:
    field = {f.name: f for f in dataclasses.fields(spec.params_cls)}[action.dest]
    flag, claims = action.option_strings[0], _claims(text)
    base = _base_argv(spec, parser)
    if field.name in spec.required:
        assert "required" in text and not claims, (flag, text)
        without = [a for a in base if a not in (flag, "1")]
        with pytest.raises(ConfigError, match="is required"):
            _resolved(spec, without)
        return
    default = field.default
    if default is dataclasses.MISSING:
        default = field.default_factory()  # type: ignore[misc]
    if default is None:
        assert not any(_bare(c) for c in claims), (flag, text)
        return
    assert claims == [default_text(default)], (flag, claims, default)
    plain = _resolved(spec, base)  # the job's resolution, without the flag
    library = resolve_params(spec.params_cls, {}, {n: plain[n] for n in spec.required})
    assert plain[field.name] == params_to_dict(library)[field.name], flag
    assert _resolved(spec, [*base, *_as_flag(action, claims[0])]) == plain, flag


def _check_flag(action: argparse.Action, text: str) -> None:
    """A flag of the shared vocabulary: a bare default shown is argparse's."""
    claims = _claims(text)
    flag = action.option_strings[0]
    assert not any(c.lower() == "none" for c in claims), (flag, text)
    if action.required:
        assert not claims, (flag, text)
    for claim in claims:
        if _bare(claim):
            assert claim == str(action.default), (flag, claim, action.default)


@pytest.mark.parametrize("command", list(cli.JOBS))
def test_every_default_a_job_s_help_shows_is_the_run_s(command):
    spec = _spec(command)
    parser = build_parser(spec)
    entries = help_entries(_help_of([command]))
    fields = {f.name for f in dataclasses.fields(spec.params_cls)}
    shown = [a for a in parser._actions if a.option_strings and a.help != argparse.SUPPRESS]
    assert {a.option_strings[0] for a in shown} <= set(entries)  # every flag was read
    for action in shown:
        text = entries[action.option_strings[0]]
        assert "default: None" not in text, (action.option_strings, text)
        if action.dest in fields:
            _check_param(spec, parser, action, text)
        else:
            _check_flag(action, text)


def test_calibrate_s_help_says_epsilon_is_required():
    entries = help_entries(_help_of(["calibrate"]))
    assert "required" in entries["--epsilon"] and not _claims(entries["--epsilon"])
    assert _claims(entries["--delta"]) == [str(PartitionSelectionParams().delta)]
    assert cli.main(["calibrate", "--delta", "1e-5"]) == 2  # and it is


def test_every_default_the_reference_shows_is_the_run_s(tmp_path):
    sections = reference_rows(REFERENCE.read_text(encoding="utf-8"))
    assert set(sections) >= {"partition-selection", "distinct-count", "contribution-bounding"}
    checked = 0
    for command, rows in sections.items():
        spec = _spec(command)
        parser = build_parser(spec)
        fields = {f.name for f in dataclasses.fields(spec.params_cls)}
        for flag, (key, meaning) in rows.items():
            action = parser._option_string_actions[flag]
            assert "default: None" not in meaning, (command, flag)
            if action.dest not in fields:
                _check_flag(action, meaning)
                continue
            _check_param(spec, parser, action, meaning)
            claims = _claims(meaning)
            if not claims or not _bare(claims[0]):
                continue  # required, or words saying what leaving it out does
            # the same value under the row's config key, as a YAML file gives it
            conf = tmp_path / f"{command}-{key}.yaml"
            conf.write_text(f"{key}: {claims[0]}\n")
            base = _base_argv(spec, parser)
            assert _resolved(spec, base, conf) == _resolved(spec, base), (command, key)
            checked += 1
    assert checked >= 30


def test_the_parsers_of_the_help_layout_read_what_they_claim():
    """The readers above, on a known layout: a wrapped help, two flags, a placeholder."""
    text = (
        "options:\n"
        "  --epsilon FLOAT       total ε (at most 100)\n"
        "                        (required)\n"
        "  --keep, --no-keep     keep it (default: False)\n"
        "  --work-dir PATH\n"
        "                        state (default <output>_work)\n"
    )
    entries = help_entries(text)
    assert entries["--epsilon"] == "total ε (at most 100) (required)"
    assert _claims(entries["--keep"]) == ["False"]
    assert _claims(entries["--work-dir"]) == ["<output>_work"]
    assert not _bare("<output>_work") and _bare("1,3,10")
    assert yaml.safe_load("k: 1,3,10") == {"k": "1,3,10"}  # a list default, as a config gives it
