#!/usr/bin/env python3
"""Checks that every relative link in the repository's documentation leads
somewhere: README.md, docs/*.md and the other READMEs a reader follows
(deploy/, dashboards/).

    check_links.py REPOSITORY
    check_links.py --self-test

A link is `[text](target)`, `![alt](target)` or a reference definition
`[name]: target`, outside code blocks and code spans. A target with a
scheme (https:, mailto:) is not followed. The path part must name a file or
directory that exists, relative to the page; an anchor (`#part`) must be a
heading of the page it leads to, as GitHub names headings (lower case,
punctuation dropped, spaces made hyphens, a repeated name numbered -1, -2).
Prints one line per broken link and exits 1 if there is any.
"""
import os
import re
import sys
import tempfile

PAGES = ["README.md", "docs/*.md", "deploy/README.md", "dashboards/README.md"]

INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
FENCE = re.compile(r"^\s{0,3}(```|~~~)")


def pages(root):
    found = []
    for pattern in PAGES:
        directory, _, name = pattern.rpartition("/")
        base = os.path.join(root, directory)
        if "*" in name:
            suffix = name.replace("*", "")
            if os.path.isdir(base):
                found += sorted(os.path.join(base, n) for n in os.listdir(base)
                                if n.endswith(suffix))
        elif os.path.isfile(os.path.join(base, name)):
            found.append(os.path.join(base, name))
    return found


def prose_lines(text):
    """(line number, line) outside fenced and indented code blocks, with code
    spans blanked out. An indented block is four spaces in after a blank
    line, and lasts while lines stay so (or blank); a list item's text
    continued at four spaces follows a line of text and is not one."""
    fenced = False
    previous_blank = True
    in_indented = False
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        blank = not line.strip()
        if line.startswith("    ") and (previous_blank or in_indented):
            in_indented = True
            previous_blank = blank
            continue
        if not blank:
            in_indented = False
        previous_blank = blank
        yield number, re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), line)


def slug(heading):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        names = set()
        counts = {}
        with open(path, encoding="utf-8") as f:
            text = f.read()
        fenced = False
        for line in text.split("\n"):
            if FENCE.match(line):
                fenced = not fenced
                continue
            m = None if fenced else re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            base = slug(m.group(1))
            n = counts.get(base, 0)
            counts[base] = n + 1
            names.add(base if n == 0 else f"{base}-{n}")
        cache[path] = names
    return cache[path]


def check_page(page, root):
    problems = []
    with open(page, encoding="utf-8") as f:
        text = f.read()
    where = os.path.relpath(page, root)
    for number, line in prose_lines(text):
        targets = [m.group(1) for m in INLINE.finditer(line)]
        m = REFERENCE.match(line)
        if m:
            targets.append(m.group(1))
        for target in targets:
            if not target or SCHEME.match(target):
                continue
            path, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
            if not os.path.exists(dest):
                problems.append(f"{where}:{number}: {target}: no such file")
                continue
            if anchor and dest.endswith(".md") and os.path.isfile(dest):
                if anchor not in anchors(dest):
                    problems.append(f"{where}:{number}: {target}: no heading "
                                    f"#{anchor} in {os.path.relpath(dest, root)}")
    return problems


def check(root):
    found = pages(root)
    problems = []
    for page in found:
        problems += check_page(page, root)
    if not found:
        problems.append(f"{root}: no README.md or docs/*.md")
    return problems, len(found)


def self_test():
    """A page with each kind of broken link, beside links that are fine."""
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        os.makedirs(os.path.join(tmp, "docs", "images"))
        with open(os.path.join(tmp, "docs", "images", "a.png"), "w") as f:
            f.write("")
        with open(os.path.join(tmp, "docs", "topic.md"), "w") as f:
            f.write("# Topic\n\n## What it does (`--flag`)\n\n## Again\n\n## Again\n\n"
                    "[back](../README.md#overview)\n")
        with open(os.path.join(tmp, "README.md"), "w") as f:
            f.write("# Project\n\n## Overview\n\n"
                    "[fine](docs/topic.md) [fine](docs/topic.md#what-it-does---flag) "
                    "[fine](docs/topic.md#again-1) [fine](#overview) "
                    "![fine](docs/images/a.png) [web](https://example.org/x.md)\n"
                    "[gone](docs/gone.md)\n"
                    "[bad anchor](docs/topic.md#what-it-does)\n"
                    "[bad own anchor](#nowhere)\n"
                    "![gone picture](docs/images/b.png)\n"
                    "[ref]: docs/also-gone.md\n\n"
                    "`[code span](docs/not-a-link.md)`\n\n"
                    "    [indented code](docs/not-a-link.md)\n\n"
                    "```\n[fenced](docs/not-a-link.md)\n```\n")
        problems, _ = check(tmp)
        want = ["README.md:6: docs/gone.md", "README.md:7: docs/topic.md#what-it-does",
                "README.md:8: #nowhere", "README.md:9: docs/images/b.png",
                "README.md:10: docs/also-gone.md"]
        for w in want:
            if not any(p.startswith(w + ":") for p in problems):
                failures.append(f"not caught: {w} (got {problems})")
        if len(problems) != len(want):
            failures.append(f"want {len(want)} problems, got {problems}")
    for f in failures:
        print(f"FAIL: {f}")
    if not failures:
        print(f"self-test: {len(want)} broken links caught, none of the good ones")
    return 1 if failures else 0


def main(argv):
    if argv[1:] == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(f"usage: {argv[0]} REPOSITORY | --self-test", file=sys.stderr)
        return 2
    problems, count = check(argv[1])
    for p in problems:
        print(p)
    if not problems:
        print(f"links in {count} pages: ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
