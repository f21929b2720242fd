#!/usr/bin/env python3
"""Every benchmark figure the docs quote is BENCHMARKS.md's (issue 58).

BENCHMARKS.md is the reference: its tables, each named by a comment
`<!-- table: NAME -->` on a line before it. A figure quoted elsewhere (the
README, docs/*.md, rustdoc in src/, and BENCHMARKS.md's own summary)
carries a tag just before it,

    costs <!--fig:w10.2w.vs-tokio-->0.18× tokio's CPU

and scripts/figures.txt says where the tag's figure comes from, as an
expression over the reference's cells:

    w10.2w.vs-tokio = 1 / T("w10", "tokio::time::timeout", "2 workers")

The check evaluates each expression on today's tables and compares it
with every quote of its key, rounded to the quote's own decimals. So a
figure changed in BENCHMARKS.md fails here until every doc that quotes it
says the same; a table restructured so that a cell is gone fails too.

In the headline docs (README.md, docs/CRATE.md), every ratio (a number
followed by ×) is tagged, and inside the regions marked
`<!-- figures -->` ... `<!-- /figures -->` every number with a unit of
time or size is, unless marked `<!--param-->` (a workload's parameter,
not a measurement) or followed by "tick".

Expressions (Python syntax, nothing else evaluated):
  T(table, row, column, i=0)   the i-th number of a cell
  A(table, rows, columns, idx=None)
                               the numbers of several cells: rows and
                               columns are a label, a list of labels or
                               "*" (every body row / every column but the
                               first); idx picks numbers by position
                               within each cell
  min, max, abs, round, + - * /, and a tuple (low, high) for a range
Row labels are a row's first cell, column labels the header's, each with
its backticks and asterisks taken out.

Usage: scripts/check_figures.py [--list]   (from anywhere in the repository)
"""

import ast
import decimal
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = "BENCHMARKS.md"
MAPPING = os.path.join("scripts", "figures.txt")
HEADLINE_DOCS = ["README.md", os.path.join("docs", "CRATE.md")]
# Docs that may quote figures; the history and the changelog record past
# figures as they were and are not checked.
SKIP_DOCS = {os.path.join("docs", "BENCHMARKS-HISTORY.md")}

NUMBER = r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
CELL_NUMBER = re.compile(r"(?<![\w.^])" + NUMBER)
TAG = re.compile(
    r"<!--\s*fig:(?P<key>[\w.\-]+)\s*-->[\s*]*(?P<a>" + NUMBER + r")"
    r"(?:\s*[–-]\s*(?P<b>" + NUMBER.lstrip("-?") + r"))?"
)
ANY_TAG = re.compile(r"<!--\s*fig:")
PARAM = "<!--param-->"
UNITS = r"(?:×|ns\b|µs\b|ms\b|s\b|bytes\b|B\b|KiB\b|MiB\b)"


class Failure(Exception):
    pass


def plain(text):
    return text.replace("`", "").replace("**", "").strip().strip("*").strip()


def split_row(line):
    """The cells of a Markdown table row (a | inside backticks is text)."""
    cells, cell, code = [], "", False
    line = line.strip()
    if line.startswith("|"):
        line = line[1:]
    if line.endswith("|") and not line.endswith("\\|"):
        line = line[:-1]
    i = 0
    while i < len(line):
        c = line[i]
        if c == "\\" and i + 1 < len(line) and line[i + 1] == "|":
            cell += "|"
            i += 2
            continue
        if c == "`":
            code = not code
        if c == "|" and not code:
            cells.append(cell)
            cell = ""
        else:
            cell += c
        i += 1
    cells.append(cell)
    return [c.strip() for c in cells]


def numbers(text):
    return [float(n.replace(",", "")) for n in CELL_NUMBER.findall(plain(text))]


def read_tables(path):
    """{name: (header, [rows])} of the tables named in the reference."""
    tables = {}
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"\s*<!--\s*table:\s*([\w.\-]+)\s*-->\s*$", lines[i])
        i += 1
        if not m:
            continue
        name = m.group(1)
        if name in tables:
            raise Failure(f"{REFERENCE}: two tables are named {name}")
        while i < len(lines) and not lines[i].strip():
            i += 1
        block = []
        while i < len(lines) and lines[i].lstrip().startswith("|"):
            block.append(lines[i])
            i += 1
        if len(block) < 3 or not re.match(r"^[\s|:\-]+$", block[1]):
            raise Failure(f"{REFERENCE}: the tag table: {name} is not followed by a table")
        header = [plain(c) for c in split_row(block[0])]
        rows = [split_row(b) for b in block[2:]]
        tables[name] = (header, rows)
    return tables


class Reference:
    def __init__(self, tables):
        self.tables = tables

    def _table(self, name):
        if name not in self.tables:
            raise Failure(f"no table named {name!r} in {REFERENCE}")
        return self.tables[name]

    def _rows(self, name, rows):
        header, body = self._table(name)
        if rows == "*":
            return body
        wanted = [rows] if isinstance(rows, str) else list(rows)
        found = []
        for label in wanted:
            match = [r for r in body if plain(r[0]) == label]
            if len(match) != 1:
                labels = ", ".join(repr(plain(r[0])) for r in body)
                raise Failure(
                    f"table {name!r} has {len(match)} rows labelled {label!r} (rows: {labels})"
                )
            found.append(match[0])
        return found

    def _columns(self, name, columns):
        header, _ = self._table(name)
        if columns == "*":
            return list(range(1, len(header)))
        wanted = [columns] if isinstance(columns, str) else list(columns)
        found = []
        for label in wanted:
            match = [j for j, h in enumerate(header) if h == label]
            if len(match) != 1:
                raise Failure(
                    f"table {name!r} has {len(match)} columns headed {label!r} (columns: {header})"
                )
            found.append(match[0])
        return found

    def T(self, table, row, column, i=0):
        (r,) = self._rows(table, row)
        (j,) = self._columns(table, column)
        cell = r[j] if j < len(r) else ""
        nums = numbers(cell)
        if i >= len(nums):
            raise Failure(
                f"table {table!r}, row {row!r}, column {column!r}: no number {i} in {cell!r}"
            )
        return nums[i]

    def A(self, table, rows, columns, idx=None):
        out = []
        cols = self._columns(table, columns)
        for r in self._rows(table, rows):
            for j in cols:
                nums = numbers(r[j] if j < len(r) else "")
                if idx is None:
                    out.extend(nums)
                else:
                    out.extend(nums[k] for k in idx if k < len(nums))
        if not out:
            raise Failure(f"table {table!r}: no numbers in rows {rows!r}, columns {columns!r}")
        return out


ALLOWED_NODES = (
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.Call, ast.Name, ast.Load,
    ast.Constant, ast.Tuple, ast.List, ast.keyword, ast.Add, ast.Sub,
    ast.Mult, ast.Div, ast.USub, ast.UAdd,
)


def evaluate(expr, ref):
    tree = ast.parse(expr, mode="eval")
    for node in ast.walk(tree):
        if not isinstance(node, ALLOWED_NODES):
            raise Failure(f"{expr!r}: {type(node).__name__} is not allowed here")
        if isinstance(node, ast.Name) and node.id not in ("T", "A", "min", "max", "abs", "round"):
            raise Failure(f"{expr!r}: unknown name {node.id}")
    env = {"T": ref.T, "A": ref.A, "min": min, "max": max, "abs": abs, "round": round}
    value = eval(compile(tree, MAPPING, "eval"), {"__builtins__": {}}, env)
    return value


def read_mapping(path):
    mapping = {}
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise Failure(f"{MAPPING}:{n}: expected `key = expression`")
        key, expr = (s.strip() for s in line.split("=", 1))
        if key in mapping:
            raise Failure(f"{MAPPING}:{n}: {key} is defined twice")
        mapping[key] = (expr, n)
    return mapping


def docs():
    """The files that may quote figures, relative to the root."""
    out = ["README.md", REFERENCE]
    for name in sorted(os.listdir(os.path.join(ROOT, "docs"))):
        path = os.path.join("docs", name)
        if name.endswith(".md") and path not in SKIP_DOCS:
            out.append(path)
    for base, dirs, files in os.walk(os.path.join(ROOT, "src")):
        dirs.sort()
        for name in sorted(files):
            if name.endswith(".rs"):
                out.append(os.path.relpath(os.path.join(base, name), ROOT))
    return out


def same(quoted, value):
    q = decimal.Decimal(quoted.replace(",", ""))
    places = -q.as_tuple().exponent if q.as_tuple().exponent < 0 else 0
    v = decimal.Decimal(repr(float(value))).quantize(
        decimal.Decimal(1).scaleb(-places), rounding=decimal.ROUND_HALF_UP
    )
    return v == q, v


def line_of(text, offset):
    return text.count("\n", 0, offset) + 1


def strip_code_blocks(text):
    """The text with fenced code blocks blanked (line numbers kept)."""
    out, fence = [], False
    for line in text.split("\n"):
        if line.lstrip().startswith("```"):
            fence = not fence
            out.append("")
        else:
            out.append("" if fence else line)
    return "\n".join(out)


def coverage(path, text, errors):
    """Untagged figures in a headline doc."""
    body = strip_code_blocks(text)
    tagged = set()
    for m in TAG.finditer(body):
        tagged.add(m.start("a"))
    regions = [
        (m.start(1), m.end(1))
        for m in re.finditer(r"<!--\s*figures\s*-->(.*?)<!--\s*/figures\s*-->", body, re.S)
    ]
    figure = r"(?<![\w.,\-–])" + NUMBER + r"(?:\s*[–-]\s*" + NUMBER.lstrip("-?") + r")?"

    def check(m, why):
        if m.start() in tagged or PARAM in body[max(0, m.start() - len(PARAM) - 2):m.start()]:
            return
        errors.append(
            f"{path}:{line_of(body, m.start())}: {m.group(0).strip()!r} is {why} but has no fig: tag"
        )

    for m in re.finditer(figure + r"(?=\s*×)", body):
        check(m, "a ratio")
    for m in re.finditer(figure + r"(?=\s*" + UNITS + r")", body):
        if not any(start <= m.start() < end for start, end in regions):
            continue
        after = body[m.end():m.end() + 16]
        if re.match(r"\s*\S+[\s-]tick", after):
            continue
        check(m, "a figure in a `<!-- figures -->` region")
    opens = len(re.findall(r"<!--\s*figures\s*-->", body))
    closes = len(re.findall(r"<!--\s*/figures\s*-->", body))
    if opens != closes:
        errors.append(f"{path}: {opens} `<!-- figures -->` against {closes} `<!-- /figures -->`")


def main():
    os.chdir(ROOT)
    listing = "--list" in sys.argv[1:]
    errors = []
    try:
        ref = Reference(read_tables(REFERENCE))
        mapping = read_mapping(MAPPING)
    except Failure as e:
        print(f"check_figures: {e}", file=sys.stderr)
        return 1
    values = {}
    for key, (expr, n) in mapping.items():
        try:
            values[key] = evaluate(expr, ref)
        except Failure as e:
            errors.append(f"{MAPPING}:{n}: {key}: {e}")
        except Exception as e:  # a typo in an expression
            errors.append(f"{MAPPING}:{n}: {key}: {type(e).__name__}: {e}")
    used = set()
    quotes = 0
    for path in docs():
        text = open(path, encoding="utf-8").read()
        found = list(TAG.finditer(text))
        if len(found) != len(ANY_TAG.findall(text)):
            spans = {m.start() for m in found}
            for m in ANY_TAG.finditer(text):
                if m.start() not in spans:
                    errors.append(f"{path}:{line_of(text, m.start())}: a fig: tag not followed by a figure")
        for m in found:
            quotes += 1
            key = m.group("key")
            used.add(key)
            where = f"{path}:{line_of(text, m.start())}"
            if key not in mapping:
                errors.append(f"{where}: fig:{key} is not in {MAPPING}")
                continue
            if key not in values:
                continue
            value = values[key]
            quoted = [m.group("a")] + ([m.group("b")] if m.group("b") else [])
            expected = list(value) if isinstance(value, (tuple, list)) else [value]
            if len(quoted) != len(expected):
                errors.append(
                    f"{where}: fig:{key} quotes {'–'.join(quoted)}, but the reference gives "
                    f"{len(expected)} figure(s): {expected}"
                )
                continue
            for q, v in zip(quoted, expected):
                ok, rounded = same(q, v)
                if not ok:
                    errors.append(
                        f"{where}: fig:{key} quotes {q}, the reference gives {rounded} "
                        f"({mapping[key][0]} = {v:g})"
                    )
            if listing:
                print(f"{where}: {key} = {'–'.join(quoted)}")
        if path in HEADLINE_DOCS:
            coverage(path, text, errors)
    for key in sorted(set(mapping) - used):
        errors.append(f"{MAPPING}:{mapping[key][1]}: {key} is quoted nowhere")
    if errors:
        print("check_figures: the docs and BENCHMARKS.md disagree:", file=sys.stderr)
        for e in errors:
            print("  " + e, file=sys.stderr)
        return 1
    print(f"check_figures: {quotes} quoted figures match BENCHMARKS.md ({len(mapping)} keys)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
