#!/usr/bin/env python3
"""Throughput against worker threads (--threads), one panel per workload, a line per architecture.

  scaling_plot.py RESULTS_DIR NAME

Results are named PANEL_ARCH_tTHREADS.json; PANEL (ycsb-dram, ycsb-nvm, ycsb-ssd, ycsb-rw, tpcc,
tpcc-nvm, ycsb-nvm-lat) picks the panel; four panels to a row.
The two-thread points are labelled with their speed-up over the one-thread run.
Writes results/plots/NAME.png.
"""
import argparse
import os

import tristore_results as tr

PANELS = {
    "ycsb-dram": "YCSB-RO, data in DRAM",
    "ycsb-nvm": "YCSB-RO, data beyond DRAM",
    "ycsb-ssd": "YCSB-RO uniform, beyond NVM",
    "ycsb-rw": "YCSB-RW 50 % updates",
    "tpcc": "TPC-C",
    "tpcc-nvm": "TPC-C, data in NVM",
    "ycsb-nvm-lat": "YCSB-RO, NVM reads 500 ns",
}
PANELS_PER_ROW = 4


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("results")
    parser.add_argument("name")
    args = parser.parse_args()

    results = tr.load(args.results)
    by_panel = {}
    for result in results:
        panel = os.path.basename(result["_file"]).split("_")[0]
        by_panel.setdefault(panel, []).append(result)
    panels = [p for p in PANELS if p in by_panel]

    plt = tr.pyplot()
    columns = min(len(panels), PANELS_PER_ROW)
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4 * columns, 3.4 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, panel in zip(axes.flat, panels):
        runs = by_panel[panel]
        for arch, arch_runs in tr.by_arch(runs).items():
            label, colour, marker = tr.ARCH_STYLE[arch]
            points = sorted((r["config"]["threads"], r["throughput_ops_s"]) for r in arch_runs)
            ax.plot([p[0] for p in points], [p[1] for p in points], marker=marker, color=colour,
                    label=label)
            one = dict(points).get(1)
            for threads, ops in points:
                if one and threads == 2:
                    ax.annotate(f"{ops / one:.2f}x", (threads, ops), fontsize=7,
                                textcoords="offset points", xytext=(3, 3), color=colour)
        config = runs[0]["config"]
        tpcc = panel.startswith("tpcc")
        detail = f"{config['warehouses']} warehouses" if tpcc else f"~{tr.mib(runs[0]['data_bytes']):.0f} MiB"
        if panel != "tpcc":  # TPC-C in DRAM needs no budget named
            detail += f", DRAM {tr.mib(config['dram_bytes']):.0f} MiB"
        ax.set_title(f"{PANELS[panel]} ({detail})", fontsize=9)
        ax.set_xlabel("worker threads (2 cores)")
        ax.set_ylabel("throughput [tx/s]" if tpcc else "throughput [ops/s]")
        ax.set_xticks(sorted({r["config"]["threads"] for r in runs}))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    tr.save(fig, args.name, results, varies_along="as the panel titles say")


if __name__ == "__main__":
    main()
