"""Citations inside the repository resolve: code cites ``docs/design/*.md#anchor``, never a
specification outside the repository (a clone has none), and every such link names a page and an
anchor that exist. Pure text checks, no Spark."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("spark_dp", "tests", "bench", "jobs", "conf")
TEXT_SUFFIXES = {".py", ".yaml", ".yml", ".md", ".txt", ".properties", ".cfg"}

# "spec §2.4", "spec partition_selection.md", "spec A9", "the spec's", "../shared/spec/...".
EXTERNAL = re.compile(
    r"\bspec(?:ification)?s?\b[ \t]*(?:§|\w+\.md|[APTCE]\d)|\bthe spec\b|\bspec's\b|"
    r"\.\./shared|shared/spec|STYLE\.md",
    re.IGNORECASE,
)
# A bare "§2.4" must be a paper's section: a paper is named just before it on the line.
SECTION = re.compile(r"§[ \t]?\d")
PAPER = re.compile(r"\[[AB]\]|[Pp]aper|Sec\.|Knop|Steinke|Ganesh|Chen|et al")
LINK = re.compile(r"docs/design/([\w-]+)\.md((?:#[\w-]+)(?:,? #[\w-]+)*)?")
# this file spells the patterns it forbids
SELF = Path(__file__).resolve()


def _scanned_files() -> list[Path]:
    return [
        p
        for root in SCANNED
        for p in sorted((ROOT / root).rglob("*"))
        if p.is_file()
        and p.suffix in TEXT_SUFFIXES
        and "__pycache__" not in p.parts
        and p.resolve() != SELF
    ]


def _prose(path: Path) -> list[tuple[int, str]]:
    """(line, text) of what a reader reads: comments and strings of a Python module (never its
    identifiers, e.g. a ``JobSpec`` named ``spec``), every line of any other text file."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return list(enumerate(text.splitlines(), 1))
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.COMMENT, tokenize.STRING):
            for k, line in enumerate(tok.string.splitlines()):
                out.append((tok.start[0] + k, line))
    return out


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    return set(re.findall(r"\{#([\w-]+)\}", text)) | set(re.findall(r'<a id="([\w-]+)"', text))


def test_no_citation_of_a_specification_outside_the_repository():
    found = []
    for path in _scanned_files():
        for n, line in _prose(path):
            bare = [m for m in SECTION.finditer(line) if not PAPER.search(line[: m.start()])]
            if EXTERNAL.search(line) or bare:
                found.append(f"{path.relative_to(ROOT)}:{n}: {line.strip()}")
    assert found == [], "cite docs/design/<note>.md#<anchor> instead:\n" + "\n".join(found)


def test_every_design_link_names_a_page_and_an_anchor_that_exist():
    pages = {p.stem: _anchors(p) for p in (ROOT / "docs" / "design").glob("*.md")}
    broken = []
    for path in [*_scanned_files(), *sorted((ROOT / "docs").rglob("*.md"))]:
        for n, line in _prose(path):
            for m in LINK.finditer(line):
                page, anchors = m.group(1), re.findall(r"#([\w-]+)", m.group(2) or "")
                if page not in pages:
                    broken.append(f"{path.relative_to(ROOT)}:{n}: no page {page}.md")
                    continue
                broken += [
                    f"{path.relative_to(ROOT)}:{n}: {page}.md has no anchor #{a}"
                    for a in anchors
                    if a not in pages[page]
                ]
    assert broken == []


@pytest.mark.parametrize(
    ("line", "cites"),
    [
        ("Chen et al. 2025, Alg. 4; spec partition_selection.md §2.4.", True),
        ("the cap = 0 rule (spec A7)", True),
        ("accepts the spec's underscores", True),
        ("Rank of every incidence (§3.3)", True),
        ("fixed-graph DP ([B] §2, §4) that reads only ids", False),
        ("Knop & Steinke 2023, eq. (2) and §1.1", False),
        ("the keys of docs/design/bounding.md#orders", False),
    ],
)
def test_the_patterns_tell_a_spec_citation_from_a_paper_citation(line: str, cites: bool):
    bare = [m for m in SECTION.finditer(line) if not PAPER.search(line[: m.start()])]
    assert bool(EXTERNAL.search(line) or bare) is cites
