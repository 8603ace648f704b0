#!/usr/bin/env python3
"""Paper Fig. 17: throughput over time across a crash (kill -9) and restart, per architecture.

  restart_plot.py RESULTS_DIR NAME

Reads every tristore-bench --restart JSON in RESULTS_DIR, prints a table (pre-crash rate,
reopen and its phases, time to 90 % of the pre-crash rate) and, when matplotlib is present,
writes results/plots/NAME.png: per workload, throughput (log scale) and throughput relative
to the pre-crash rate over time, 0 = the kill.
"""
import argparse
import glob
import json
import os

import tristore_results as tr

ARCH_ORDER = ["3tier", "basic-nvm", "nvm-direct", "ssd-bm"]
COLORS = {"3tier": "tab:red", "basic-nvm": "tab:blue", "nvm-direct": "tab:green",
          "ssd-bm": "tab:gray"}


def load_runs(directory):
    runs = []
    for path in sorted(glob.glob(os.path.join(directory, "*.json"))):
        with open(path) as f:
            result = json.load(f)
        if "restart" in result and "series" in result["restart"]:
            runs.append(result)
    order = {arch: i for i, arch in enumerate(ARCH_ORDER)}
    runs.sort(key=lambda r: (r["config"]["workload"], order.get(r["config"]["arch"], 99)))
    return runs


def ms(seconds):
    return f"{seconds * 1e3:.2f}"


def secs(value):
    return "never" if value is None else f"{value:.2f}"


def print_table(runs):
    header = (f"{'workload':<9}{'arch':<11}{'pre-crash/s':>12}{'cv':>6}{'reopen ms':>10}"
              f"{'pt ms':>7}{'log ms':>8}{'anal ms':>8}{'redo ms':>8}{'other ms':>9}{'undo ms':>8}"
              f"{'redo ops':>9}"
              f"{'losers':>7}{'to 50% s':>9}{'to 90% s':>9}{'90% 0.5s-mean':>14}{'warm reads s':>13}")
    print(header)
    for r in runs:
        x, p, w = r["restart"], r["restart"]["phases"], r["restart"]["recovery_work"]
        print(f"{r['config']['workload']:<9}{r['config']['arch']:<11}"
              f"{x['pre_crash_throughput_ops_s']:>12.0f}{x['pre_crash_interval_cv']:>6.2f}"
              f"{ms(x['reopen_seconds']):>10}{ms(p['page_table_rebuild_seconds']):>7}"
              f"{ms(p['log_open_seconds']):>8}{ms(p['analysis_seconds']):>8}"
              f"{ms(p['redo_seconds']):>8}{ms(p.get('other_seconds', 0)):>9}"
              f"{ms(p['undo_seconds']):>8}{w['redo_operations']:>9}"
              f"{w['losers']:>7}{secs(x['seconds_to_half']):>9}"
              f"{secs(x['seconds_to_threshold']):>9}{secs(x['seconds_to_threshold_smoothed']):>14}"
              f"{secs(x['seconds_to_warm_reads']) if 'seconds_to_warm_reads' in x else '-':>13}")
    print("to 50 %/90 %: seconds from the reopen to the end of the first sampling interval at that "
          "fraction of the pre-crash rate (0.5s-mean: of the mean over 0.5 s); warm reads: to the "
          "first interval reading no more NVM lines and SSD pages per operation than before the "
          "crash (+10 %); cv: the pre-crash intervals' coefficient of variation")


def describe(config):
    mib = 1024 * 1024
    data = (f"{config['warehouses']} warehouse(s)" if "warehouses" in config
            else f"{config['records']} records, {config['distribution']}")
    return f"{data}, DRAM {config['dram_bytes'] // mib} MiB, NVM {config['nvm_bytes'] // mib} MiB"


def midpoints(series):
    return [p["t_s"] - p["seconds"] / 2 for p in series]


def plot(runs, target):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # The paper's workload (YCSB lookups) first.
    workloads = sorted({r["config"]["workload"] for r in runs}, key=lambda w: (w == "tpcc", w))
    figure, axes = plt.subplots(3, len(workloads), figsize=(6.4 * len(workloads), 9.0),
                                squeeze=False, sharex="col")
    for column, workload in enumerate(workloads):
        top, bottom, reads = axes[0][column], axes[1][column], axes[2][column]
        these = [r for r in runs if r["config"]["workload"] == workload]
        # The log axis cannot show zero: the seconds without throughput sit on its floor.
        floor = min(r["restart"]["pre_crash_throughput_ops_s"] for r in these) / 20
        for r in these:
            arch, x = r["config"]["arch"], r["restart"]
            pre = x["pre_crash_throughput_ops_s"]
            before, after = x["series"]["before_crash"], x["series"]["after_restart"]
            color = COLORS.get(arch)
            first_op = x["crash_to_reopen_seconds"] + x["recovery_seconds"]
            # The gap between the kill and the first interval after the restart is drawn at zero.
            xs = midpoints(before) + [0.0, first_op] + midpoints(after)
            ys = [p["ops_s"] for p in before] + [0.0, 0.0] + [p["ops_s"] for p in after]
            reached = x["seconds_to_threshold"]
            label = (f"{arch}: recovery {x['recovery_seconds'] * 1e3:.0f} ms, 90 % after "
                     f"{'never' if reached is None else f'{reached:.2f} s'}")
            top.plot(xs, [max(y, floor) for y in ys], color=color, linewidth=1.2, label=label)
            top.axhline(pre, color=color, linestyle=":", linewidth=0.8)
            bottom.plot(xs, [y / pre for y in ys], color=color, linewidth=1.2)
            # Counters do not depend on the machine's load: the warm-up as reads per operation.
            for name, style in (("nvm_lines_read", "-"), ("ssd_pages_read", "--")):
                for side in (before, after):  # no line across the crash
                    points = [(t, p[name] / p["ops"]) for t, p in zip(midpoints(side), side)
                              if p["ops"] > 0 and p[name] > 0]
                    if points:
                        reads.plot(*zip(*points), color=color, linestyle=style, linewidth=1)
            warm = x.get("seconds_to_warm_reads")
            if warm is not None:
                reads.axvline(warm + x["crash_to_reopen_seconds"], color=color, linewidth=0.8,
                              linestyle=":")
            if reached is not None:
                at = reached + x["crash_to_reopen_seconds"]
                bottom.plot([at], [next(p["ops_s"] for p in after
                                        if abs(p["t_s"] - at) < 1e-6) / pre],
                            marker="o", color=color, markersize=4)
        for axis in (top, bottom, reads):
            axis.axvline(0, color="black", linewidth=0.8)
            axis.grid(alpha=0.3)
        top.set_yscale("log")
        top.set_ylim(bottom=floor)
        top.set_ylabel("ops/s (log)")
        top.set_title(f"{workload}: {describe(these[0]['config'])}\n"
                      f"kill -9 at 0, reopen, the same workload; dotted: pre-crash rate",
                      fontsize=8)
        top.legend(fontsize=7, loc="lower left")
        bottom.axhline(0.9, color="black", linestyle="--", linewidth=0.8)
        bottom.set_ylim(0, 1.4)
        bottom.set_ylabel("relative to pre-crash rate")
        bottom.set_xlabel("dot: the first interval at 90 %", fontsize=8)
        reads.set_yscale("log")
        reads.set_ylabel("per operation: NVM lines read (solid),\nSSD pages read (dashed)",
                         fontsize=8)
        reads.set_xlabel("seconds since the crash (dotted: reads per operation back to the "
                         "pre-crash ones)", fontsize=8)
        sample_ms = runs[0]["restart"]["sample_seconds"] * 1e3
        bottom.text(0.99, 0.03, f"{sample_ms:.0f} ms intervals", transform=bottom.transAxes,
                    ha="right", fontsize=7)
    figure.suptitle("Restart (paper Fig. 17): throughput across a crash and restart", fontsize=10)
    figure.tight_layout()
    figure.text(0.0, 0.0, tr.nvm_model(runs), fontsize=7, va="top", ha="left")
    figure.savefig(target, dpi=120, bbox_inches="tight")
    print("wrote", os.path.relpath(target))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("results")
    parser.add_argument("name")
    args = parser.parse_args()
    runs = load_runs(args.results)
    if not runs:
        print("no restart results in", args.results)
        return
    print_table(runs)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("note: no matplotlib; skipping the plot")
        return
    plots = os.path.join(os.path.dirname(os.path.abspath(args.results)), "plots")
    os.makedirs(plots, exist_ok=True)
    plot(runs, os.path.join(plots, args.name + ".png"))


if __name__ == "__main__":
    main()
