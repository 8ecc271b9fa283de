#!/usr/bin/env python3
"""A list-scheduling model of the causal forward's tile orders (no GPU).

Each query tile of a causal forward costs its key blocks (tile t of n:
ceil(min((t + 1) block_m, T) / block_n)) plus a fixed per-tile cost `c`
(in key blocks: the block start, the first loads, the epilogue). The
model compares, on the standard grid (B x H = 16k / T x 2048 / D), the
makespan in key blocks of:

- greedy: one block per tile in the longest-first launch order of
  longestFirstBlock (lib/Conversion/FAToGPU/WgmmaFragments.h), each started
  on the multiprocessor that frees first (the hardware's block scheduler),
  with the one-tile kernel's per-tile cost (--c-block, default 1.75);
- lpt-strided: the persistent kernel taking that same order strided (block
  x: positions x, x + G, ...), with the persistent per-tile cost (--c-turn,
  default 0.5);
- pairs-strided: the persistent kernel taking pairs (n - 1 - x, x) strided
  (what WgmmaForward.cpp's persistent mode takes when n is even and the
  pairs are at least as many as the blocks).

The per-tile costs are estimates from the nineteenth to thirty-sixth
sessions' measurements (docs/PERFORMANCE.md), not measurements of the
persistent kernel; the model shows how the orders balance, not their
speed. Prints one line per (D, T), and which order the persistent kernel
takes there.
"""
import argparse
import heapq


def longest_first(tiles, entries, rows, row_bytes, l2_bytes=32 << 20):
    """(tile, entry) of each launch index, as longestFirstBlock maps them."""
    section = max((l2_bytes // row_bytes) // max(rows, 1), 1)
    order = []
    for launch in range(tiles * entries):
        cx, cy = launch % tiles, launch // tiles
        first = cy // section * section
        r = cx + (cy - first) * tiles
        width = min(section, entries - first)
        rank = r // width
        order.append((tiles - 1 - rank, first + r - rank * width))
    return order


def key_blocks(tile, block_m, block_n, seqlen):
    return -(-min((tile + 1) * block_m, seqlen) // block_n)


def greedy(costs, blocks):
    free = [0.0] * blocks
    for cost in costs:
        heapq.heappush(free, heapq.heappop(free) + cost)
    return max(free)


def strided(costs, blocks):
    total = [0.0] * blocks
    for i, cost in enumerate(costs):
        total[i % blocks] += cost
    return max(total)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--blocks", type=int, default=132,
                    help="resident blocks (H100/H200: 132 multiprocessors)")
    ap.add_argument("--c-block", type=float, default=1.75)
    ap.add_argument("--c-turn", type=float, default=0.5)
    args = ap.parse_args()
    g = args.blocks
    print("D   T      tiles  ideal   greedy  lpt-strided  pairs-strided  "
          "persistent's choice")
    for d, block_m, block_n in ((128, 128, 128), (64, 192, 128)):
        row_bytes = 2 * d * 2  # a K row and a V row, 2-byte elements
        for t in (2048, 4096, 8192, 16384):
            entries = 16384 // t * 2048 // d
            n = -(-t // block_m)
            order = longest_first(n, entries, t, row_bytes)
            blocks = [key_blocks(tile, block_m, block_n, t)
                      for tile, _ in order]
            ideal = sum(blocks) / g
            pairs = []
            for _ in range(entries):
                for x in range((n + 1) // 2):
                    y = n - 1 - x
                    pair = key_blocks(y, block_m, block_n, t) + (
                        key_blocks(x, block_m, block_n, t) if y != x else 0)
                    pairs.append(pair + args.c_turn * (2 if y != x else 1))
            use_pairs = n % 2 == 0 and n // 2 * entries >= g
            print(f"{d:<4}{t:<7}{n * entries:<7}{ideal:<8.1f}"
                  f"{greedy([b + args.c_block for b in blocks], g):<8.1f}"
                  f"{strided([b + args.c_turn for b in blocks], g):<13.1f}"
                  f"{strided(pairs, g):<15.1f}"
                  f"{'pairs' if use_pairs else 'lpt-strided'}")


if __name__ == "__main__":
    main()
