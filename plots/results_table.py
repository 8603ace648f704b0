#!/usr/bin/env python3
"""A text table of results: one row per run.

  results_table.py RESULTS_DIR [--relative-to VARIANT] [--markdown]

Columns: run, throughput, (relative throughput), NVM lines read and written, SSD pages read and
written, all over the measured phase. The default experiment prints it; the scan-overhead
experiment (paper section 5.4.2) uses --relative-to basic-nvm.
"""
import argparse

import tristore_results as tr


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("results")
    parser.add_argument("--relative-to", default="")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()

    results = tr.load(args.results)
    base = None
    if args.relative_to:
        matches = [r["throughput_ops_s"] for r in results if tr.label(r) == args.relative_to]
        base = matches[0] if matches and matches[0] > 0 else None
    header = ["run", "ops/s"] + (["relative"] if base else []) + [
        "nvm lines read", "nvm lines written", "ssd pages read", "ssd pages written"]
    rows = []
    for r in results:
        c = r["counters"]
        row = [tr.label(r), f"{r['throughput_ops_s']:,.0f}"]
        if base:
            row.append(f"{100.0 * r['throughput_ops_s'] / base:.1f} %")
        row += [f"{c['nvm_lines_read']:,}", f"{c['nvm_lines_written']:,}",
                f"{c['ssd_pages_read']:,}", f"{c['ssd_pages_written']:,}"]
        rows.append(row)
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    if args.markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "|".join("---" for _ in header) + "|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
        return
    print("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths))))
    for row in rows:
        print("  ".join(x.ljust(w) if i == 0 else x.rjust(w) for i, (x, w) in enumerate(zip(row, widths))))


if __name__ == "__main__":
    main()
