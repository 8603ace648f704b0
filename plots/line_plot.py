#!/usr/bin/env python3
"""Throughput (or any field) against one varied setting, a line per architecture.

  line_plot.py RESULTS_DIR NAME --x config.nvm_read_ns --xlabel "NVM latency [ns]"
      [--y throughput_ops_s] [--ylabel ...] [--x-scale mib|percent-of-nvm] [--capacity-lines]
      [--title ...] [--log-y]

--log-y draws throughput on a logarithmic axis (Fig. 8: the gap beyond NVM is small in ops/s).
--capacity-lines draws the DRAM and NVM capacities as dashed vertical lines (paper Fig. 8, 9).
Writes results/plots/NAME.png.
"""
import argparse

import tristore_results as tr


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("results")
    parser.add_argument("name")
    parser.add_argument("--x", required=True)
    parser.add_argument("--xlabel", required=True)
    parser.add_argument("--y", default="throughput_ops_s")
    parser.add_argument("--ylabel", default="throughput [ops/s]")
    parser.add_argument("--x-scale", choices=["none", "mib", "percent-of-nvm"], default="none")
    parser.add_argument("--capacity-lines", action="store_true")
    parser.add_argument("--title", default="")
    parser.add_argument("--log-y", action="store_true")
    args = parser.parse_args()

    results = tr.load(args.results)

    def x_of(result):
        x = tr.get(result, args.x)
        if args.x_scale == "mib":
            return tr.mib(x)
        if args.x_scale == "percent-of-nvm":
            return 100.0 * x / result["config"]["nvm_bytes"]
        return x

    plt = tr.pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for arch, runs in tr.by_arch(results).items():
        label, colour, marker = tr.ARCH_STYLE[arch]
        points = sorted((x_of(r), tr.get(r, args.y)) for r in runs)
        ax.plot([p[0] for p in points], [p[1] for p in points], marker=marker, color=colour,
                label=label)
    if args.capacity_lines:
        config = results[0]["config"]
        for key, text in (("dram_bytes", "DRAM"), ("nvm_bytes", "NVM")):
            ax.axvline(tr.mib(config[key]), color="black", linestyle="--", linewidth=1)
            ax.text(tr.mib(config[key]), 1.0, f" {text}", transform=ax.get_xaxis_transform(),
                    va="top", fontsize=8)
    ax.set_xlabel(args.xlabel)
    ax.set_ylabel(args.ylabel)
    if args.log_y:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    if args.title:
        ax.set_title(args.title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    tr.save(fig, args.name, results)


if __name__ == "__main__":
    main()
