#!/usr/bin/env python3
"""Where a kernel's warps stall, by SASS instruction, from Nsight Compute's
source page.

Input: the CSV that ``ncu --import R.ncu-rep --page source --csv
--print-source sass`` writes for a report taken with ``--section
WarpStateStats --section SourceCounters`` (one kernel). Output: the total
warp-state samples, the stall reasons' shares (ncu's ``stall_*`` columns,
issued and not), and the instructions holding at least ``--min-share``
percent of the samples, in address order: address (low 5 hex digits), share,
times executed, the SASS text and its two largest stall reasons (samples).

Found this way (docs/PERFORMANCE.md, forty-first session): the D 64
``_dkdv``'s wait for a Q tile loaded with no tile of lead (5.5% of the
samples at one branch).

usage (here or on the device machine; no GPU needed):
  python3 bench/sass_hotspots.py d64bwd_sass.csv --min-share 0.5
Exits 2 when the file cannot be read or holds no source table.
"""

from __future__ import annotations

import argparse
import csv
import sys


def number(text: str) -> float:
    """ncu's numbers may carry thousands separators; empty cells are 0."""
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def load(path: str):
    """The header and the instruction rows of the source table."""
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        rows = list(csv.reader(f))
    for i, row in enumerate(rows):
        if "Address" in row and "Source" in row:
            header = row
            body = [r for r in rows[i + 1:] if len(r) >= len(header)]
            return header, body
    return None, []


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("csv", help="ncu --page source --csv --print-source sass")
    p.add_argument("--min-share", type=float, default=0.5,
                   help="percent of all samples an instruction must hold "
                   "to be listed (default 0.5)")
    args = p.parse_args()
    try:
        header, body = load(args.csv)
    except OSError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not header:
        print(f"error: {args.csv}: no source table (Address, Source columns)",
              file=sys.stderr)
        return 2
    col = {name: i for i, name in enumerate(header)}
    samples_col = col.get("Warp Stall Sampling (All Samples)")
    if samples_col is None:
        print(f"error: {args.csv}: no warp-state samples (profile with "
              "--section WarpStateStats --section SourceCounters)",
              file=sys.stderr)
        return 2
    reasons = [h for h in header
               if h.startswith("stall_") and "Not Issued" not in h]
    total = sum(number(r[samples_col]) for r in body)
    if total <= 0:
        print(f"error: {args.csv}: no samples", file=sys.stderr)
        return 2
    shares = {h: sum(number(r[col[h]]) for r in body) for h in reasons}
    print(f"{int(total)} samples, {len(body)} instructions")
    print("  " + "  ".join(
        f"{h[len('stall_'):]} {100 * v / total:.1f}%"
        for h, v in sorted(shares.items(), key=lambda kv: -kv[1]) if v > 0))
    executed = col.get("Instructions Executed")
    for r in body:
        share = 100 * number(r[samples_col]) / total
        if share < args.min_share:
            continue
        top = sorted(((number(r[col[h]]), h) for h in reasons),
                     reverse=True)[:2]
        why = " ".join(f"{h[len('stall_'):]}:{int(v)}" for v, h in top if v)
        count = r[executed] if executed is not None else "-"
        print(f"  {r[col['Address']][-5:]} {share:5.1f}% {count:>12s}  "
              f"{r[col['Source']].strip()[:72]:72s} {why}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
