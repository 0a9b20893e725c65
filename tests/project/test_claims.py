"""The claims register (docs/claims.md) stays honest: every test it names exists, every command-line option
the docs mention is claimed by some row, every feature section is linked from some row, and every row
without a test says why (``gap:``). Fast: reads Markdown and parses test files with ``ast``, imports none."""

from __future__ import annotations

import ast
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
CLAIMS = DOCS / "claims.md"

# Pages whose sections promise features; each `##` section (or the page itself when it has none) must be
# linked from a row. Not listed: index (a table of contents), architecture (where code lives), benchmarks
# (measurements), engines (versions), sdk (generated API reference), claims (this register).
FEATURE_PAGES = (
    "getting-started.md",
    "running-sweeps.md",
    "scenarios.md",
    "gate.md",
    "accuracy.md",
    "moe.md",
    "results.md",
    "statistics.md",
    "history.md",
    "nightly-ci.md",
    "adapters.md",
)

OPTION = re.compile(r"--[a-z][a-z0-9-]+")
# Options the docs mention that are not ours to prove, each with the reason.
NOT_OURS = {
    "--harness-": "the generic prefix of the pytest spellings (`--harness-isolation`, ...), not an option",
    "--lf": "pytest's own --last-failed, shown beside `-m` in an example",
}
NO_TEST = "—"
NODE = re.compile(r"^(tests/[\w/]+\.py)::(\w+)(?:::(\w+))?$")
LINK = re.compile(r"\]\(([^)\s]+)\)")
CELL_SPLIT = re.compile(r"(?<!\\)\|")


@dataclass
class Row:
    line: int
    claim: str
    page: str
    test: str

    def node_ids(self) -> list[str]:
        """The node ids in the test column, without their `(unit)` marks; none for a gap."""
        if self.test.startswith(NO_TEST):
            return []
        return [part.replace("(unit)", "").strip() for part in self.test.split(",") if part.strip()]

    def claimed_options(self) -> set[str]:
        return {o for span in re.findall(r"`([^`]+)`", self.claim) for o in OPTION.findall(span)}

    def links(self) -> list[str]:
        return LINK.findall(self.page)


def parse(markdown: str) -> list[Row]:
    """The rows of the first table whose header is `claim | page | test`."""
    rows, in_table = [], False
    for number, line in enumerate(markdown.splitlines(), 1):
        stripped = line.strip()
        if not stripped.startswith("|"):
            if in_table:
                break
            continue
        cells = [c.strip() for c in CELL_SPLIT.split(stripped.strip("|"))]
        if not in_table:
            in_table = [c.lower() for c in cells] == ["claim", "page", "test"]
            continue
        if set("".join(cells)) <= set("-: "):
            continue  # the separator row
        assert len(cells) == 3, f"claims.md:{number}: expected 3 cells (claim | page | test), got {len(cells)}"
        rows.append(Row(number, *cells))
    return rows


def defined_tests(path: Path) -> set[str]:
    """Top-level test functions as `name`, methods of classes as `Class::name` (no import)."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names |= {
                f"{node.name}::{m.name}" for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
            }
    return names


def unresolved(rows: list[Row], root: Path = ROOT) -> list[str]:
    """Every node id that names no file, or no test in its file."""
    problems, cache = [], {}
    for row in rows:
        for node in row.node_ids():
            match = NODE.match(node)
            if not match:
                problems.append(f"claims.md:{row.line}: {node!r} is not a node id like tests/test_x.py::test_name")
                continue
            file, name, method = match.groups()
            path = root / file
            if not path.is_file():
                problems.append(f"claims.md:{row.line}: {node}: no file {file}")
                continue
            cache.setdefault(path, defined_tests(path))
            wanted = f"{name}::{method}" if method else name
            if wanted not in cache[path]:
                problems.append(f"claims.md:{row.line}: {node}: {file} defines no {wanted}")
    return problems


def documented_options(pages: dict[str, str]) -> dict[str, list[str]]:
    """Option → the pages that mention it, without the exclusions."""
    found: dict[str, list[str]] = {}
    for name, text in pages.items():
        for option in sorted(set(OPTION.findall(text)) - set(NOT_OURS)):
            found.setdefault(option, []).append(name)
    return found


def unclaimed_options(rows: list[Row], pages: dict[str, str]) -> list[str]:
    claimed = set().union(*(row.claimed_options() for row in rows)) if rows else set()
    return [
        f"{option} (mentioned in {', '.join(where)}) appears in no claim: add a row whose claim names it in "
        f"backticks, with its test or `— gap: why`"
        for option, where in sorted(documented_options(pages).items())
        if option not in claimed
    ]


def slug(title: str) -> str:
    """MkDocs' default heading anchor (Python-Markdown's toc slugify)."""
    title = re.sub(r"<[^>]+>", "", title).replace("`", "")
    title = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    title = re.sub(r"[^\w\s-]", "", title).strip().lower()
    return re.sub(r"[-\s]+", "-", title)


def sections(markdown: str) -> list[str]:
    """Anchors of the `##` headings outside code blocks."""
    anchors, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("## "):
            anchors.append(slug(line[3:]))
    return anchors


def uncovered_sections(rows: list[Row], pages: dict[str, str]) -> list[str]:
    linked = {link for row in rows for link in row.links()}
    linked_pages = {link.split("#", 1)[0] for link in linked}
    problems = []
    for page, text in pages.items():
        anchors = sections(text)
        if not anchors and page not in linked_pages:
            problems.append(f"{page} (no ## sections) is linked from no row: add a row with [{page}]({page})")
        for anchor in anchors:
            if f"{page}#{anchor}" not in linked:
                problems.append(f"{page}#{anchor} is linked from no row: add a row with [{page}]({page}#{anchor})")
    return problems


def bad_links(rows: list[Row], pages: dict[str, str]) -> list[str]:
    """Page links to a page that does not exist, or to an anchor it does not have."""
    problems = []
    for row in rows:
        if not row.links():
            problems.append(f"claims.md:{row.line}: the page column links nowhere: [page.md](page.md#section)")
        for link in row.links():
            page, _, anchor = link.partition("#")
            if page not in pages:
                problems.append(f"claims.md:{row.line}: {link}: no page docs/{page}")
            elif anchor and anchor not in sections(pages[page]) + [slug(pages[page].splitlines()[0].lstrip("# "))]:
                problems.append(f"claims.md:{row.line}: {link}: {page} has no section #{anchor}")
    return problems


def gaps_without_reason(rows: list[Row]) -> list[str]:
    out = []
    for row in rows:
        if not row.test:
            out.append(f"claims.md:{row.line}: empty test column: name a test or write `— gap: why`")
        elif row.test.startswith(NO_TEST) and "gap:" not in row.test:
            out.append(f"claims.md:{row.line}: `{NO_TEST}` without `gap: why` (say why no test proves it)")
    return out


def doc_pages() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(DOCS.glob("*.md")) if p != CLAIMS}


# -- the register ---------------------------------------------------------------------------------------


def register() -> list[Row]:
    rows = parse(CLAIMS.read_text(encoding="utf-8"))
    assert rows, "docs/claims.md has no `| claim | page | test |` table"
    return rows


def test_every_named_test_exists():
    problems = unresolved(register())
    assert not problems, "tests named in docs/claims.md that do not exist (fix the node id):\n" + "\n".join(problems)


def test_every_documented_option_is_claimed():
    problems = unclaimed_options(register(), doc_pages())
    assert not problems, "\n".join(problems)


def test_every_feature_section_is_covered():
    pages = doc_pages()
    missing = [p for p in FEATURE_PAGES if p not in pages]
    assert not missing, f"FEATURE_PAGES lists pages that do not exist: {missing}; update tests/project/test_claims.py"
    problems = uncovered_sections(register(), {p: pages[p] for p in FEATURE_PAGES})
    assert not problems, "\n".join(problems)


def test_page_links_resolve():
    problems = bad_links(register(), doc_pages())
    assert not problems, "\n".join(problems)


def test_rows_without_a_test_say_why(capsys):
    rows = register()
    problems = gaps_without_reason(rows)
    assert not problems, "\n".join(problems)
    gaps = [row for row in rows if row.test.startswith(NO_TEST)]
    with capsys.disabled():
        print(f"\nclaims register: {len(rows)} claims, {len(gaps)} gap(s) with no proving test")


def test_claims_is_in_the_site_navigation():
    assert "claims.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), "add docs/claims.md to mkdocs.yml nav"


# -- the checker can fail -------------------------------------------------------------------------------

TABLE = """
# Claims

| claim | page | test |
|---|---|---|
| `--launches N` runs N launches | [statistics.md](statistics.md#launches) | tests/test_x.py::test_real, tests/test_x.py::test_gone (unit) |
| a method in a class | [gate.md](gate.md) | tests/test_x.py::TestGroup::test_method |
| `--ab\\|--cd` pipes stay in one cell | [gate.md](gate.md#nope) | — gap: nothing runs it |
| no reason given | [nowhere.md](nowhere.md) | — |
"""

PAGES = {
    "statistics.md": "# Statistics\n\n## Launches\n\n`--launches`, `--fdr` and `--harness-` options; `--lf`\n",
    "gate.md": "# The gate\n\n```\n## not a heading\n```\n",
    "moe.md": "# MoE\n\n## Routing\n",
}


def write_tests(root: Path) -> None:
    (root / "tests").mkdir()
    (root / "tests" / "test_x.py").write_text(
        "def test_real():\n    pass\n\nclass TestGroup:\n    def test_method(self):\n        pass\n"
    )


def test_parser_reads_cells_marks_and_escaped_pipes():
    rows = parse(TABLE)
    assert [r.line for r in rows] == [6, 7, 8, 9]
    assert rows[0].node_ids() == ["tests/test_x.py::test_real", "tests/test_x.py::test_gone"]
    assert rows[0].claimed_options() == {"--launches"} and rows[0].links() == ["statistics.md#launches"]
    assert rows[2].node_ids() == [] and rows[2].claimed_options() == {"--ab", "--cd"}


def test_a_row_naming_a_missing_test_or_file_is_reported(tmp_path):
    write_tests(tmp_path)
    rows = parse(TABLE)
    rows.append(Row(10, "x", "[gate.md](gate.md)", "tests/test_missing.py::test_y, not-a-node-id"))
    problems = unresolved(rows, tmp_path)
    assert problems == [
        "claims.md:6: tests/test_x.py::test_gone: tests/test_x.py defines no test_gone",
        "claims.md:10: tests/test_missing.py::test_y: no file tests/test_missing.py",
        "claims.md:10: 'not-a-node-id' is not a node id like tests/test_x.py::test_name",
    ]


def test_a_documented_option_no_claim_names_is_reported():
    problems = unclaimed_options(parse(TABLE), PAGES)
    assert len(problems) == 1 and problems[0].startswith("--fdr (mentioned in statistics.md) appears in no claim")


def test_an_uncovered_section_or_page_is_reported():
    problems = uncovered_sections(parse(TABLE)[:1], PAGES)
    assert problems == [
        "gate.md (no ## sections) is linked from no row: add a row with [gate.md](gate.md)",
        "moe.md#routing is linked from no row: add a row with [moe.md](moe.md#routing)",
    ]


def test_broken_links_and_gaps_without_a_reason_are_reported():
    rows = parse(TABLE)
    assert bad_links(rows, PAGES) == [
        "claims.md:8: gate.md#nope: gate.md has no section #nope",
        "claims.md:9: nowhere.md: no page docs/nowhere.md",
    ]
    assert gaps_without_reason(rows) == ["claims.md:9: `—` without `gap: why` (say why no test proves it)"]


def test_slugs_match_mkdocs_anchors():
    assert slug("Reports, baselines and the regression check (`harness gate`)") == (
        "reports-baselines-and-the-regression-check-harness-gate"
    )
    assert slug("Crashes, hangs and interruptions: what the harness guarantees") == (
        "crashes-hangs-and-interruptions-what-the-harness-guarantees"
    )
    assert slug("The main job: three engines, one verdict each, a report") == (
        "the-main-job-three-engines-one-verdict-each-a-report"
    )
