#!/usr/bin/env python3
"""NVM wear like the paper's Figure 16: writes per cache line, lines sorted by writes, both
axes logarithmic, a line per architecture.

  wear_plot.py RESULTS_DIR NAME

Reads the "wear" object of each result (tristore-bench --wear). Writes results/plots/NAME.png.
"""
import argparse

import tristore_results as tr


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("results")
    parser.add_argument("name")
    args = parser.parse_args()

    plt = tr.pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    results = tr.load(args.results)
    for arch, runs in tr.by_arch(results).items():
        wear = runs[0].get("wear")
        if not wear or not wear["sorted_runs"]:
            continue
        label, colour, _ = tr.ARCH_STYLE[arch]
        # Each run of equal counts is a flat step from its first to its last line rank.
        xs, ys, rank = [], [], 1
        for writes, lines in wear["sorted_runs"]:
            xs += [rank, rank + lines - 1]
            ys += [writes, writes]
            rank += lines
        ax.plot(xs, ys, color=colour,
                label=f"{label} ({wear['total_writes']:,} writes)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("NVM cache lines, most written first")
    ax.set_ylabel("writes per cache line")
    ax.set_title("NVM wear (paper Fig. 16): YCSB-R/W, 100 % updates", fontsize=10)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    tr.save(fig, args.name, results)


if __name__ == "__main__":
    main()
