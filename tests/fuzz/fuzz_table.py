#!/usr/bin/env python3
"""Prints the Markdown table of docs/fuzzing.md from a `ctest --preset fuzz -V` log.

Usage: python3 tests/fuzz/fuzz_table.py LOG

For each fuzz.<name> test: the seed files it started from, libFuzzer's final
line (`#N DONE cov: C ft: F corp: K/S exec/s: E rss: R`), and whether the
test passed. A test that crashed has no DONE line; its row says so.
"""
import re
import sys


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    names = {}  # ctest number -> target name
    seeds, done, result = {}, {}, {}
    start = re.compile(r"^\s*Start\s+(\d+): fuzz\.(\S+)")
    seed_line = re.compile(r"^(\d+): -- (\S+): (\d+) seed files")
    done_line = re.compile(r"^(\d+): #(\d+)\s+DONE\s+cov: (\d+) ft: (\d+) corp: (\d+)/(\S+) "
                           r"(?:lim: \d+ )?exec/s: (\d+) rss: (\S+)")
    end = re.compile(r"Test\s+#(\d+): fuzz\.(\S+) \.+\s*(\*+)?(Passed|Failed|Timeout|\S+)")
    with open(sys.argv[1], errors="replace") as log:
        for line in log:
            if m := start.match(line):
                names[m.group(1)] = m.group(2)
            elif m := seed_line.match(line):
                seeds[m.group(2)] = m.group(3)
            elif m := done_line.match(line):
                done[m.group(1)] = m.groups()[1:]
            elif m := end.search(line):
                names[m.group(1)] = m.group(2)
                result[m.group(1)] = m.group(4)
    print("| target | seeds | executions | exec/s | corpus (files/size) | cov | ft | peak RSS | result |")
    print("|---|---:|---:|---:|---|---:|---:|---:|---|")
    for num, name in sorted(names.items(), key=lambda kv: int(kv[0])):
        d = done.get(num)
        if d:
            execs, cov, ft, files, size, eps, rss = d
            row = [execs, eps, f"{files}/{size}", cov, ft, rss]
        else:
            row = ["-"] * 6
        outcome = result.get(num, "?")
        outcome = "no crash" if outcome == "Passed" else outcome
        print(f"| {name} | {seeds.get(name, '?')} | " + " | ".join(row) + f" | {outcome} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
