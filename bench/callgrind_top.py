#!/usr/bin/env python3
"""Functions of a callgrind profile by instructions, for bench/profile.sh.

callgrind_annotate splits a function by the source file of its inlined parts when the binary
has line tables; this puts them back together per function: self costs are summed, inclusive
costs take the largest part (a part's inclusive cost can hold another part's, so a sum would
count twice; the largest part is the function's own body and holds its calls).

Usage: callgrind_top.py FILE [--inclusive] [--top N]   the PROGRAM TOTALS line and the top N
       callgrind_top.py FILE --sha                        Ir in SHA-256 block functions
"""
import re
import subprocess
import sys
from collections import defaultdict

LINE = re.compile(r"^\s*([\d,]+) \([ \d.]+%\)\s+(.*?):(.*?)(?: \[(.*)\])?$")
# SHA-256's block functions: ring's (named) and OpenSSL's libcrypto (the hash floor; its
# assembly has no symbols, so the whole library counts, SHA256_Update and the block code).
SHA = re.compile(r"sha256_block_data_order|libcrypto")


def main() -> int:
    args = sys.argv[1:]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    path = args[0]
    inclusive = "--inclusive" in args
    top = int(args[args.index("--top") + 1]) if "--top" in args else 45
    cmd = ["callgrind_annotate", "--auto=no", "--threshold=100"]
    if inclusive:
        cmd.append("--inclusive=yes")
    out = subprocess.run(cmd + [path], capture_output=True, text=True, check=True).stdout
    total = 0
    by_fn: dict = defaultdict(int)
    objects: dict = {}
    for line in out.splitlines():
        if "PROGRAM TOTALS" in line:
            total = int(line.split()[0].replace(",", ""))
            continue
        m = LINE.match(line)
        if not m:
            continue
        ir = int(m.group(1).replace(",", ""))
        fn, obj = m.group(3), (m.group(4) or "")
        by_fn[fn] = max(by_fn[fn], ir) if inclusive else by_fn[fn] + ir
        if obj or fn not in objects:
            objects[fn] = obj.rsplit("/", 1)[-1]
    if "--sha" in args:
        sha = sum(ir for fn, ir in by_fn.items() if SHA.search(fn) or SHA.search(objects[fn]))
        # In the inclusive view the callers would count too: only the self view is summed.
        print(sha)
        return 0
    print(f"{total:>15,}  (100.0%)  PROGRAM TOTALS")
    for fn, ir in sorted(by_fn.items(), key=lambda kv: -kv[1])[:top]:
        print(f"{ir:>15,}  ({100 * ir / max(total, 1):5.2f}%)  {fn}  [{objects[fn]}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
