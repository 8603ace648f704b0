#!/usr/bin/env python3
"""One bar per run (architecture or 3tier variant): throughput, and NVM lines read per operation.

  architecture_bars.py RESULTS_DIR NAME [--relative-to basic-nvm] [--title ...]

The default experiment and the drill-down (paper Fig. 10) use it. --relative-to shows
throughput as a multiple of that variant's, as the paper's Fig. 10 does. Writes
results/plots/NAME.png.
"""
import argparse

import tristore_results as tr


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("results")
    parser.add_argument("name")
    parser.add_argument("--relative-to", default="")
    parser.add_argument("--title", default="")
    args = parser.parse_args()

    results = tr.load(args.results)
    names = [tr.label(r) for r in results]
    throughput = [r["throughput_ops_s"] for r in results]
    lines_per_op = [r["counters"]["nvm_lines_read"] / max(r["ops"], 1) for r in results]
    colours = [tr.ARCH_STYLE.get(r["config"]["arch"], ("", "tab:purple", ""))[1] for r in results]
    ylabel = "throughput [ops/s]"
    if args.relative_to:
        base = [t for r, t in zip(results, throughput) if tr.label(r) == args.relative_to]
        if base and base[0] > 0:
            throughput = [t / base[0] for t in throughput]
            ylabel = f"throughput relative to {args.relative_to}"

    plt = tr.pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(7, 5), sharex=True)
    positions = range(len(results))
    top.bar(positions, throughput, color=colours)
    top.set_ylabel(ylabel)
    for x, t in zip(positions, throughput):
        top.text(x, t, f"{t:.2f}" if args.relative_to else f"{t:,.0f}", ha="center", va="bottom",
                 fontsize=7)
    bottom.bar(positions, lines_per_op, color=colours)
    bottom.set_ylabel("NVM lines read / op")
    bottom.set_xticks(list(positions))
    bottom.set_xticklabels(names, rotation=20, ha="right", fontsize=8)
    for ax in (top, bottom):
        ax.grid(axis="y", alpha=0.3)
    if args.title:
        top.set_title(args.title, fontsize=10)
    tr.save(fig, args.name, results)


if __name__ == "__main__":
    main()
