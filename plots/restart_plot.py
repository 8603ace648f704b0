#!/usr/bin/env python3
"""Paper Fig. 17: throughput after a crash and restart, per architecture, with recovery times.

  restart_plot.py RESULTS_DIR NAME

Prints a table (reopen, page-table rebuild, redo, undo, time back to pre-restart throughput)
and, when matplotlib is present, writes results/plots/NAME.png.
"""
import argparse
import glob
import json
import os


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("results")
    parser.add_argument("name")
    args = parser.parse_args()
    runs = []
    for path in sorted(glob.glob(os.path.join(args.results, "*.json"))):
        with open(path) as f:
            result = json.load(f)
        if "restart" in result:
            runs.append((result["config"]["arch"], result["restart"]))
    if not runs:
        print("no restart results in", args.results)
        return
    print(f"{'arch':<12}{'reopen ms':>11}{'page table ms':>15}{'redo ms':>9}{'undo ms':>9}"
          f"{'redo ops':>10}{'back to pre-restart s':>23}")
    for arch, r in runs:
        back = r.get("seconds_to_pre_restart_throughput")
        print(f"{arch:<12}{r['open_seconds'] * 1e3:>11.1f}{r['page_table_rebuild_seconds'] * 1e3:>15.2f}"
              f"{r['redo_seconds'] * 1e3:>9.2f}{r['undo_seconds'] * 1e3:>9.2f}{r['redo_operations']:>10}"
              f"{back if back is not None else float('nan'):>23.2f}")
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("note: no matplotlib; skipping the plot")
        return
    figure, axes = plt.subplots(figsize=(6.4, 3.6))
    for arch, r in runs:
        series = r.get("throughput_series", [])
        xs = [0.0] + [p["seconds_since_reopen"] + r["open_seconds"] for p in series]
        ys = [0.0] + [p["ops_s"] for p in series]
        line, = axes.plot(xs, ys, marker="o", markersize=3, label=arch)
        axes.axhline(r["pre_restart_throughput_ops_s"], color=line.get_color(), linestyle=":",
                     linewidth=1)
    axes.set_xlabel("seconds since restart (reopen + recovery included)")
    axes.set_ylabel("lookups/s")
    axes.set_title("Restart (paper Fig. 17): dotted = throughput before the crash")
    axes.legend(fontsize=8)
    axes.grid(alpha=0.3)
    plots = os.path.join(os.path.dirname(os.path.abspath(args.results)), "plots")
    os.makedirs(plots, exist_ok=True)
    target = os.path.join(plots, args.name + ".png")
    figure.tight_layout()
    figure.savefig(target, dpi=120)
    print("wrote", os.path.relpath(target))


if __name__ == "__main__":
    main()
