#!/usr/bin/env python3
"""The "AULID" section of docs/benchmarks.md from scripts/bench-aulid.sh's JSON lines.

    scripts/aulid_report.py docs/bench-data/aulid.jsonl docs/bench-data/aulid-commands.txt \
        [--img docs/img]

With --img (Debian's python3-matplotlib), also docs/img/aulid-sparse.png: ops/s and page reads
per operation by workload, one panel per memory budget, one bar per target.

Tables: per memory budget, throughput and page reads per operation of every target on the
paper's workloads, with aulid's ratios to btree; the hard key sets; the device's ceiling; and the
inner-part figures of each bulk load (inner bytes, DATA-slot depth, pages per lookup by kind).
"""
import argparse
import json
import os

WORKLOADS = [
    ("c", "W1 lookup"),
    ("scan-100", "W2 scan 100"),
    ("read-insert-90", "W4 90/10"),
    ("read-insert-50", "W5 50/50"),
    ("read-insert-10", "W6 10/90"),
    ("insert-only", "W3 insert"),
]
ORDER = ["embedded:aulid", "embedded:btree", "embedded:btree?prefetch=shortcut", "rocksdb"]
NAMES = {
    "embedded:aulid": "aulid",
    "embedded:btree": "btree",
    "embedded:btree?prefetch=shortcut": "btree+SHORTCUT",
    "rocksdb": "RocksDB",
}


def load(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def name(target):
    return NAMES.get(target, target)


def reads(r):
    io = r.get("io") or {}
    v = io.get("page_reads_per_op")
    return "-" if v is None else f"{v:.2f}"


def mib(x):
    return f"{x / 1048576:,.1f} MiB"


def extra(r, key):
    return (r.get("gauges") or {}).get("index." + key)


def budget_name(budget, cache):
    if budget == "min":
        return f"the smallest pool ({mib(cache)}, nothing cached: the paper's setting)"
    return f"memory budget {float(budget) * 100:g}% of the records ({mib(cache)})"


def budget_table(runs, keys, budget):
    label = f"aulid {keys} {budget}"
    sel = [r for r in runs if r.get("label") == label]
    by = {(r["target"], r["workload"]): r for r in sel}
    targets = [t for t in ORDER if any(k[0] == t for k in by)]
    if not targets:
        return []
    cache = sel[0]["config"]["cache_bytes"]
    out = [f"**{keys}, {budget_name(budget, cache)}**", ""]
    head = "| workload | " + " | ".join(f"{name(t)} ops/s" for t in targets)
    head += " | aulid ÷ btree | " + " | ".join(f"{name(t)} reads/op" for t in targets) + " |"
    out += [head, "|---|" + "--:|" * (2 * len(targets) + 1)]
    for w, title in WORKLOADS:
        row = [by.get((t, w)) for t in targets]
        if not any(row):
            continue
        a, b = by.get(("embedded:aulid", w)), by.get(("embedded:btree", w))
        ratio = f"{a['throughput'] / b['throughput']:.2f}" if a and b and b["throughput"] else "-"
        cells = [f"{r['throughput']:,.0f}" if r else "-" for r in row]
        cells += [ratio] + [reads(r) if r else "-" for r in row]
        out.append(f"| {title} | " + " | ".join(cells) + " |")
    return out + [""]


def bounds(runs, labels, ceiling):
    """Which resource bounds each target's lookups (W1), per key set and budget: its device page
    reads per second against the queue-depth-1 ceiling measured in the same run (at least half of
    it: the device; else the CPU)."""
    parts = []
    for label in labels:
        words = (label or "").split()
        if len(words) != 3 or words[0] != "aulid" or words[1] == "device" or words[2] == "load":
            continue
        cells = []
        for t in ORDER:
            r = next((r for r in runs if r.get("label") == label and r["target"] == t
                      and r["workload"] == "c"), None)
            per_op = ((r or {}).get("io") or {}).get("page_reads_per_op")
            if per_op is None:
                continue
            rate = r["throughput"] * per_op
            what = "the device" if rate >= ceiling / 2 else "the CPU"
            cells.append(f"{name(t)} {what} ({rate:,.0f} page reads/s, {rate / ceiling:.0%})")
        if cells:
            parts.append(f"{words[1]} {words[2]}: " + ", ".join(cells))
    if not parts:
        return []
    return [f"What bounds the lookups (W1), from each target's device page reads per second "
            f"against the ceiling of {ceiling:,.0f} random reads/s at queue depth 1 measured in "
            "this run: with one thread, that share is the share of its time spent waiting for "
            "reads (at least half: the device, else the CPU; RocksDB's reads are block-cache "
            "misses, and the ceiling was measured once, at the end of the run): "
            + "; ".join(parts) + ".", ""]


def shape_table(runs):
    loads = [r for r in runs if r["workload"] == "load" and r["target"].startswith("embedded:")]
    seen = set()
    out = ["| key set | tree | leaves | data file | ÷ btree | inner pages | inner bytes | ÷ btree "
           "| bulk load s | DATA-slot depth | entries in packed arrays | in branches |",
           "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    btree = {}

    def keyset(r):
        return r["config"]["key_set"] + ("-sorted" if r["config"]["key_order"] == "sorted" else "")

    def file_bytes(r):
        return (r.get("gauges") or {}).get("data_file_bytes")

    for r in loads:
        if r["target"] == "embedded:btree":
            btree[keyset(r)] = r
    for r in loads:
        keys = keyset(r)
        if (keys, r["target"]) in seen:
            continue
        seen.add((keys, r["target"]))
        ix = r["index"]
        b = btree.get(keys)
        ratio = f"{ix['inner_bytes'] / b['index']['inner_bytes']:.2f}" if b else "-"
        fb, bfb = file_bytes(r), file_bytes(b) if b else None
        fratio = f"{fb / bfb:.2f}" if fb and bfb else "-"
        depth = extra(r, "data_slot_depth")
        packed = extra(r, "entries_packed")
        branch = extra(r, "entries_branch")
        load_s = extra(r, "bulk_load_seconds")
        out.append(
            f"| {keys} | {name(r['target'])} | {ix['leaf_pages']:,.0f} | "
            f"{'-' if fb is None else mib(fb)} | {fratio} | {ix['inner_pages']:,.0f} | "
            f"{mib(ix['inner_bytes'])} | {ratio} | "
            f"{'-' if load_s is None else f'{load_s:.1f}'} | "
            f"{'-' if depth is None else f'{depth:.2f}'} | "
            f"{'-' if packed is None else f'{packed:,.0f}'} | "
            f"{'-' if branch is None else f'{branch:,.0f}'} |")
    return out + [""]


# The paper's Table 2: blocks read per W1 lookup with nothing cached, 200M keys.
PAPER_BLOCKS = {"covid": 2.07, "planet": 2.50, "genome": 2.07, "osm": 2.96}


def lookup_table(runs):
    out = ["| key set | budget | aulid device reads / lookup | pages visited: inner | of them "
           "mixed | packed | branch | leaf | btree device reads / lookup | aulid ÷ btree | btree "
           "pages visited (height) | paper (Table 2, visited) |",
           "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    btree = {(r.get("label"), r["workload"]): r for r in runs if r["target"] == "embedded:btree"}
    height = {r["config"]["key_set"]: r["index"]["height"] for r in runs
              if r["target"] == "embedded:btree" and r["workload"] == "load"}

    def num(v, fmt="{:.3f}"):
        return "-" if v is None else fmt.format(v)

    for r in runs:
        if r["target"] != "embedded:aulid" or r["workload"] != "c":
            continue
        vals = [extra(r, k) for k in ("inner_pages_per_lookup", "mixed_pages_per_lookup",
                                      "packed_pages_per_lookup", "branch_pages_per_lookup",
                                      "leaf_pages_per_lookup")]
        if vals[0] is None:
            continue
        parts = (r.get("label") or "").split()
        budget = parts[2] if len(parts) == 3 else ""
        shown = "min" if budget == "min" else f"{r['config']['cache_fraction_of_data'] * 100:.2g}%"
        a = (r.get("io") or {}).get("page_reads_per_op")
        b = btree.get((r.get("label"), "c"))
        bv = (b.get("io") or {}).get("page_reads_per_op") if b else None
        ratio = f"{a / bv:.2f}" if a is not None and bv else "-"
        keys = r["config"]["key_set"]
        paper = PAPER_BLOCKS.get(keys)
        paper_s = (f"{paper:.2f}" if paper else "2.07-2.96") if budget == "min" else ""
        h = height.get(keys)
        out.append(f"| {keys} | {shown} | {num(a, '{:.2f}')} | " +
                   " | ".join(num(v) for v in vals) + f" | {num(bv, '{:.2f}')} | {ratio} | "
                   f"{'-' if h is None else f'{h:.0f}'} | {paper_s} |")
    return out + [""]


def ratio_summary(runs):
    """aulid ÷ btree per key set and budget, one row per workload: the targets at a glance."""
    cols = []
    for r in runs:
        parts = (r.get("label") or "").split()
        if (len(parts) == 3 and parts[0] == "aulid" and parts[2] != "load" and
                not parts[1].endswith("-sorted") and r["target"] == "embedded:aulid" and
                (parts[1], parts[2]) not in cols):
            cols.append((parts[1], parts[2]))
    if not cols:
        return []
    by = {(r.get("label"), r["target"], r["workload"]): r for r in runs}
    out = ["aulid ÷ btree throughput, every key set and budget (the issue's targets: >= 0.95 at "
           "every budget, >= 1.5 for W1 and >= 1.0 for W1-W6 in the paper's setting):", "",
           "| workload | " + " | ".join(f"{k} {b}" for k, b in cols) + " |",
           "|---|" + "--:|" * len(cols)]
    for w, title in WORKLOADS:
        cells = []
        for k, b in cols:
            a = by.get((f"aulid {k} {b}", "embedded:aulid", w))
            t = by.get((f"aulid {k} {b}", "embedded:btree", w))
            cells.append(f"{a['throughput'] / t['throughput']:.2f}"
                         if a and t and t["throughput"] else "-")
        out.append(f"| {title} | " + " | ".join(cells) + " |")
    return out + [""]


def plot(runs, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    budgets = []
    for r in runs:
        parts = (r.get("label") or "").split()
        if (len(parts) == 3 and parts[1] == "sparse" and parts[2] != "load" and
                parts[2] not in budgets):
            budgets.append(parts[2])
    if not budgets:
        return None
    fig, axes = plt.subplots(2, len(budgets), figsize=(5 * len(budgets), 7), squeeze=False)
    width = 0.2
    for bi, budget in enumerate(budgets):
        sel = {(r["target"], r["workload"]): r for r in runs
               if r.get("label") == f"aulid sparse {budget}"}
        targets = [t for t in ORDER if any(k[0] == t for k in sel)]
        for row, (metric, ylabel) in enumerate([
                (lambda r: r["throughput"], "ops/s"),
                (lambda r: (r.get("io") or {}).get("page_reads_per_op") or 0, "page reads / op")]):
            ax = axes[row][bi]
            for ti, t in enumerate(targets):
                xs, ys = [], []
                for wi, (w, _) in enumerate(WORKLOADS):
                    r = sel.get((t, w))
                    if r:
                        xs.append(wi + (ti - (len(targets) - 1) / 2) * width)
                        ys.append(metric(r))
                ax.bar(xs, ys, width, label=name(t))
            ax.set_xticks(range(len(WORKLOADS)))
            ax.set_xticklabels([title.split()[0] for _, title in WORKLOADS])
            ax.set_ylabel(ylabel)
            if row == 0:
                ax.set_yscale("log")  # RocksDB's memtable inserts are far above the rest
                ax.set_title("sparse, smallest pool" if budget == "min" else
                             f"sparse, budget {float(budget) * 100:g}% of the records")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), frameon=False)
    fig.tight_layout(rect=(0, 0.05, 1, 1))
    path = os.path.join(out_dir, "aulid-sparse.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results")
    ap.add_argument("commands", nargs="?")
    ap.add_argument("--img", help="write the plot into this directory")
    ap.add_argument("--title", default="AULID: learned inner nodes", help="the section's title")
    args = ap.parse_args()
    runs = load(args.results)
    commands = open(args.commands).read().strip() if args.commands else ""
    if not runs:
        return
    first = runs[0]["config"]
    labels = []
    for r in runs:
        if r.get("label") not in labels:
            labels.append(r.get("label"))
    out = [f"## {args.title}", "",
           f"Generated by `scripts/bench-aulid.sh`: {first['records']:,} 8-byte keys with 8-byte "
           "values, bulk loaded, direct IO, `wal.sync: none` (the index is measured, not the "
           "log), one thread, uniform requests; each key set and target bulk loaded once and every "
           "memory budget run on a fresh copy of that load. Reads/op "
           "are the engine's page reads per operation (RocksDB: block-cache misses). W3 inserts "
           "new keys; W4-W6 mix lookups of loaded keys with inserts of new ones.", ""]
    for label in labels:
        parts = (label or "").split()
        if len(parts) == 3 and parts[0] == "aulid" and parts[1] != "device" and parts[2] != "load":
            out += budget_table(runs, parts[1], parts[2])
    out += ratio_summary(runs)
    dev = [r for r in runs if r["target"].startswith("device")]
    if dev:
        out += [f"The device beside them: {dev[-1]['throughput']:,.0f} random 4 KiB reads/s at "
                "queue depth 1 (p50 "
                f"{dev[-1]['latency_us']['p50_us']:.0f} µs): the ceiling of one page read per "
                "operation.", ""]
        out += bounds(runs, labels, dev[-1]["throughput"])
    if args.img and plot(runs, args.img):
        out += ["![AULID vs btree, btree+SHORTCUT and RocksDB](img/aulid-sparse.png)", ""]
    out += ["Inner parts after each bulk load:", ""] + shape_table(runs)
    out += ["aulid's lookups by what they read (W1, counters since the store was opened, "
            "warm-up included):", ""] + lookup_table(runs)
    if commands:
        out += ["Commands (from the repository root, after `make bench-build`):", "", "```",
                commands, "```"]
    print("\n".join(out))


if __name__ == "__main__":
    main()
