"""Reading tristore-bench JSON results and the paper's plot conventions, shared by plots/*.py."""
import json
import os
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
PLOTS_DIR = ROOT / "results" / "plots"

# (label, colour, marker) per architecture, in the paper's legend order.
ARCH_STYLE = {
    "main-memory": ("Main Memory", "tab:green", "s"),
    "nvm-direct": ("NVM Direct", "tab:red", "^"),
    "basic-nvm": ("Basic NVM BM", "tab:orange", "o"),
    "ssd-bm": ("SSD BM", "tab:gray", "v"),
    "3tier": ("3 Tier BM", "tab:blue", "D"),
}


def pyplot():
    """matplotlib's pyplot on the file-only backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def load(directory):
    """Every result in directory/*.json, sorted by file name; unreadable files are reported."""
    results = []
    for path in sorted(pathlib.Path(directory).glob("*.json")):
        try:
            with open(path) as f:
                result = json.load(f)
        except (OSError, ValueError) as error:
            print(f"skipping {path}: {error}", file=sys.stderr)
            continue
        result["_file"] = path.name
        results.append(result)
    if not results:
        sys.exit(f"error: no results in {directory}; run the experiment script first")
    return results


def get(result, dotted):
    """result['a']['b'] for 'a.b'."""
    value = result
    for part in dotted.split("."):
        value = value[part]
    return value


def variant(result):
    """The architecture, with the 3tier optimisations that are switched off."""
    config = result["config"]
    name = config["arch"]
    off = [flag for flag, key in (("cl", "cache_line_grained"), ("mini", "mini_pages"),
                                  ("swizzle", "swizzling")) if not config.get(key, True)]
    return name + "".join(f" -{flag}" for flag in off)


def label(result):
    """The run's file name without its ordering prefix: "03_plus-mini-pages.json" -> "plus-mini-pages"."""
    return re.sub(r"^\d+_", "", pathlib.Path(result["_file"]).stem)


def by_arch(results):
    """{arch: [results]} in the paper's legend order."""
    groups = {}
    for result in results:
        groups.setdefault(result["config"]["arch"], []).append(result)
    return {arch: groups[arch] for arch in ARCH_STYLE if arch in groups}


def mib(n):
    return n / (1024 * 1024)


def nvm_model(results, varies_along="x axis"):
    """One line naming the NVM emulation the runs had: latencies per line and the simulated LLC.

    A setting that differs between the runs (Fig. 12 varies the latency) is named as varying,
    along varies_along."""

    def setting(key, show):
        values = sorted({r["config"].get(key, 0) for r in results if r["config"]["arch"] != "main-memory"})
        if not values:
            return "-"
        if len(values) == 1:
            return show(values[0])
        if len(values) == 2:
            return f"{show(values[0])} or {show(values[1])} ({varies_along})"
        return f"varies ({varies_along})"

    read = setting("nvm_read_ns", lambda ns: f"{ns} ns")
    write = setting("nvm_write_ns", lambda ns: f"{ns} ns")
    llc = setting("llc_bytes", lambda b: f"{mib(b):g} MiB" if b else "this machine's")
    return (f"NVM model: DRAM under /dev/shm, per cache line read {read}, written {write}, "
            f"simulated LLC {llc}")


def save(fig, name, results=None, varies_along="x axis"):
    """Writes results/plots/NAME.png; with results, the NVM model goes beneath the figure."""
    if results:
        fig.text(0.0, -0.02, nvm_model(results, varies_along), fontsize=7, va="top", ha="left")
    PLOTS_DIR.mkdir(parents=True, exist_ok=True)
    path = PLOTS_DIR / f"{name}.png"
    fig.savefig(path, dpi=120, bbox_inches="tight")
    print(f"wrote {os.path.relpath(path, os.getcwd())}")
    return path
