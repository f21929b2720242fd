#!/usr/bin/env python3
"""Every link in the packaged Markdown resolves where crates.io and docs.rs
show it (issue 58).

`cargo package --list` says what the published crate holds. In each
packaged Markdown file, every link and image is checked:

- a relative path must be a packaged file (crates.io renders the README,
  and users read the rest from the unpacked crate), and an `#anchor` into
  a Markdown file must be one of its headings;
- an `#anchor` alone must be a heading of the same file;
- a link into this repository on GitHub
  (https://github.com/hashwheel/hashwheel/blob/main/PATH) must name a file
  the repository tracks: that is how a doc points to what the package
  does not ship;
- in the files rustdoc includes (docs/CRATE.md, docs/GUARANTEES.md,
  docs/MIGRATING.md), a relative file link would be broken on docs.rs,
  so none is allowed; their intra-doc links (`Timer::stop`) are rustdoc's
  to check (`cargo doc` with -Dwarnings), and their anchors may name a
  heading of any of them (CRATE.md and GUARANTEES.md are one page).

Usage: scripts/check_package_links.py [--list FILE]
  (FILE: the output of `cargo package --list`; without it the script runs
  that command itself, from the repository root)
"""

import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPOSITORY = "https://github.com/hashwheel/hashwheel"
RUSTDOC_INCLUDED = {"docs/CRATE.md", "docs/GUARANTEES.md", "docs/MIGRATING.md"}
RUST_PATH = re.compile(
    r"^(?:(?:crate|self|super|Self)::)?[A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*"
    r"(?:\(\)|!)?(?:#[\w\-]+)?$"
)


def packaged_files(listing):
    if listing is None:
        out = subprocess.run(
            ["cargo", "package", "--list", "--allow-dirty"],
            cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True,
        ).stdout
    else:
        out = open(listing, encoding="utf-8").read()
    return {line.strip() for line in out.splitlines() if line.strip()}


def tracked_files():
    out = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True
    ).stdout
    return set(out.split())


def without_code(text):
    """Fenced blocks and inline code spans blanked, line breaks kept."""
    lines, fence = [], None
    for line in text.split("\n"):
        m = re.match(r"^\s*(```+|~~~+)", line)
        if fence is None and m:
            fence = m.group(1)[0] * 3
            lines.append(" " * len(line))
        elif fence is not None:
            if line.strip().startswith(fence):
                fence = None
            lines.append(" " * len(line))
        else:
            lines.append(line)
    text = "\n".join(lines)
    # A code span is text: `[a](b)` inside backticks is no link. Keep the
    # span's length so that offsets (line numbers) hold.
    return re.sub(r"`[^`\n]*`", lambda m: "`" + "x" * (len(m.group(0)) - 2) + "`", text)


def slug(heading):
    """GitHub's anchor for a heading."""
    h = heading.strip().lower()
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)
    h = h.replace("`", "")
    h = re.sub(r"<[^>]+>", "", h)
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(path):
    text = open(os.path.join(ROOT, path), encoding="utf-8").read()
    seen, out = {}, set()
    fence = False
    for line in text.split("\n"):
        if re.match(r"^\s*(```|~~~)", line):
            fence = not fence
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fence or not m:
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    for m in re.finditer(r'<a\s+(?:name|id)="([^"]+)"', text):
        out.add(m.group(1))
    return out


def links(text):
    """(offset, target) of every link, image and reference definition."""
    body = without_code(text)
    found = []
    inline = re.compile(
        r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^()\s<>]+(?:\([^()\s]*\))?)>?(?:\s+\"[^\"]*\")?\s*\)",
        re.S,
    )
    for m in inline.finditer(body):
        found.append((m.start(1), m.group(1)))
    for m in re.finditer(r"(?m)^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+\"[^\"]*\")?\s*$", body):
        found.append((m.start(1), m.group(1)))
    for m in re.finditer(r"\b(?:href|src)=\"([^\"]+)\"", body):
        found.append((m.start(1), m.group(1)))
    return found


def main():
    listing = None
    if "--list" in sys.argv[1:]:
        listing = sys.argv[sys.argv.index("--list") + 1]
    os.chdir(ROOT)
    files = packaged_files(listing)
    tracked = tracked_files() | files
    markdown = sorted(f for f in files if f.endswith(".md"))
    rustdoc_anchors = set()
    for f in RUSTDOC_INCLUDED:
        if os.path.exists(f):
            rustdoc_anchors |= anchors(f)
    errors, checked = [], 0
    for md in markdown:
        text = open(md, encoding="utf-8").read()
        own = anchors(md)
        for offset, target in links(text):
            checked += 1
            where = f"{md}:{text.count(chr(10), 0, offset) + 1}"
            if target.startswith(("http://", "https://", "mailto:")):
                prefix = REPOSITORY + "/blob/main/"
                tree = REPOSITORY + "/tree/main/"
                for p in (prefix, tree):
                    if target.startswith(p):
                        path = target[len(p):].split("#")[0].rstrip("/")
                        if path not in tracked and not any(t.startswith(path + "/") for t in tracked):
                            errors.append(f"{where}: {target}: the repository has no {path}")
                continue
            if md in RUSTDOC_INCLUDED:
                if target.startswith("#"):
                    if target[1:] not in rustdoc_anchors:
                        errors.append(f"{where}: {target}: no such heading in the crate's docs")
                    continue
                if RUST_PATH.match(target):
                    continue  # an intra-doc link: rustdoc checks it
                errors.append(
                    f"{where}: {target}: rustdoc includes this file, and a relative link breaks "
                    f"on docs.rs; link to {REPOSITORY}/blob/main/... instead"
                )
                continue
            if target.startswith("#"):
                if target[1:] not in own:
                    errors.append(f"{where}: {target}: no such heading in {md}")
                continue
            path, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(md), path))
            if resolved not in files:
                hint = "" if not os.path.exists(resolved) else " (it is in the repository: link to it there)"
                errors.append(f"{where}: {target}: {resolved} is not in the package{hint}")
                continue
            if anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                errors.append(f"{where}: {target}: no heading #{anchor} in {resolved}")
    if errors:
        print("check_package_links: links that do not resolve in the package:", file=sys.stderr)
        for e in errors:
            print("  " + e, file=sys.stderr)
        return 1
    print(f"check_package_links: {checked} links in {len(markdown)} packaged Markdown files resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
