#!/usr/bin/env python3
"""The TreeLine memory split measured: fixed against adaptive, beside btree and RocksDB.

    scripts/treeline_split_report.py DIR > docs/bench-data/treeline_split.md

DIR holds what scripts/bench-treeline.sh wrote with OUT=DIR, PARTS="tables sweep" and
SWEEP_PARAM=buffer_pool_max_share: treeline-<value>-<sync>-t<threads>.jsonl (TreeLine with its
default, fixed split, btree, RocksDB, the device) and treeline-<value>-sweep-buffer_pool_max_share
.jsonl (TreeLine with the split free to move), each with its -commands.txt. Not a test.
"""
import glob
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from treeline_report import capture, commands, geomean, load, main_tables, sweep_table  # noqa: E402

POINT = ["a", "b", "c", "d", "f"]
SIZES = {"56": "64-byte records", "1016": "1 KiB records"}


def key(r):
    return (r["workload"], r["distribution"])


def io(r, k):
    return r.get("io", {}).get(k) if r else None


def gm(xs):
    """Geometric mean of the ratios a run pair gave (a missing run gives none)."""
    return geomean([x for x in xs if x])


def f2(x):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"


def table(table_path, sweep_path):
    runs = load(table_path)
    sweep = load(sweep_path)
    by = {}
    for r in runs:
        if r["target"].startswith("device") or r["workload"] in ("load", "age"):
            continue
        by[(r["target"].split("?")[0], *key(r))] = r
    adaptive = {key(r): r for r in sweep if r["workload"] not in ("load", "age")}
    device = [r for r in runs if r["target"].startswith("device")]
    out = ["| workload | distribution | fixed ops/s | adaptive ops/s | btree ops/s | RocksDB ops/s "
           "| adaptive / fixed | fixed / btree | adaptive / btree | adaptive / RocksDB "
           "| reads/op fixed | adaptive | btree | KiB written/op fixed | adaptive "
           "| adaptive pool share at the end |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    ratios = {"uniform": [], "zipfian(0.99)": []}
    for r in runs:
        if r["target"] != "embedded:treeline" or r["workload"] in ("load", "age"):
            continue
        k = key(r)
        a = adaptive.get(k)
        b = by.get(("embedded:btree", *k))
        x = by.get(("rocksdb", *k))
        g = (a or {}).get("gauges", {})
        share = None
        if "index.buffer_pool_split_bytes" in g and "index.cache_capacity_bytes" in g:
            total = g["index.buffer_pool_split_bytes"] + g["index.cache_capacity_bytes"]
            share = g["index.buffer_pool_split_bytes"] / total if total else None
        thr = lambda z: z["throughput"] if z else None
        rat = lambda p, q: p["throughput"] / q["throughput"] if p and q and q["throughput"] else None
        if r["workload"] in POINT and k[1] in ratios:
            ratios[k[1]].append((rat(a, r), rat(r, b), rat(a, b), rat(a, x), rat(r, x)))
        out.append("| " + " | ".join([
            r["workload"], r["distribution"],
            *(f"{thr(z):,.0f}" if thr(z) else "-" for z in (r, a, b, x)),
            f2(rat(a, r)), f2(rat(r, b)), f2(rat(a, b)), f2(rat(a, x)),
            f2(io(r, "page_reads_per_op")), f2(io(a, "page_reads_per_op")), f2(io(b, "page_reads_per_op")),
            f2((io(r, "bytes_written_per_op") or 0) / 1024 if r else None),
            f2((io(a, "bytes_written_per_op") or 0) / 1024 if a else None),
            f2(share)]) + " |")
    out.append("")
    for dist, rows in ratios.items():
        if not rows:
            continue
        cols = list(zip(*rows))
        out.append(f"Geometric means over the point workloads A, B, C, F (D reads latest), {dist}: adaptive / "
                   f"fixed {f2(gm(cols[0]))}; fixed / btree {f2(gm(cols[1]))}, adaptive "
                   f"/ btree {f2(gm(cols[2]))}; adaptive / RocksDB {f2(gm(cols[3]))}, "
                   f"fixed / RocksDB {f2(gm(cols[4]))}; lowest adaptive / btree "
                   f"{f2(min((c for c in cols[2] if c), default=None))}, lowest fixed / btree "
                   f"{f2(min((c for c in cols[1] if c), default=None))}.")
        out.append("")
    if device:
        out.append(f"Device: random 4 KiB reads at queue depth {device[0].get('config', {}).get('threads', '?')}: "
                   f"{device[0]['throughput']:,.0f} reads/s.")
        out.append("")
    return "\n".join(out)


def abab(path):
    """Runs labelled before/after (in turns) and btree: throughput per workload, both rounds."""
    runs = load(path)
    labels = []
    for r in runs:
        if r["label"] not in labels:
            labels.append(r["label"])
    by = {}
    for r in runs:
        by.setdefault((r["label"], *key(r)), []).append(r)
    keys = []
    for r in runs:
        if key(r) not in keys:
            keys.append(key(r))
    out = ["| workload | distribution | " + " | ".join(f"{l} ops/s" for l in labels) +
           " | after / before | after / btree | p999 us before | after | btree | reads/op before "
           "| after | KiB written/op before | after | records per write-back before | after |",
           "|---|---|" + "---:|" * (len(labels) + 11)]
    for k in keys:
        cells = []
        mean = {}
        for l in labels:
            rs = by.get((l, *k), [])
            mean[l] = sum(x["throughput"] for x in rs) / len(rs) if rs else None
            cells.append(" / ".join(f"{x['throughput']:,.0f}" for x in rs) or "-")
        rpw = lambda l: ((by.get((l, *k)) or [{}])[-1].get("gauges", {})
                         .get("index.records_per_writeback"))
        avg = lambda l, f: (sum(f(x) for x in by.get((l, *k), [])) / len(by.get((l, *k), []))
                            if by.get((l, *k)) else None)
        reads = lambda x: x["io"]["page_reads_per_op"]
        wkib = lambda x: x["io"]["bytes_written_per_op"] / 1024
        ratio = lambda a, b: a / b if a and b else None
        p999 = lambda x: x["latency_us"]["p999_us"]
        tail = lambda l: f"{avg(l, p999):,.0f}" if by.get((l, *k)) else "-"
        out.append("| " + " | ".join([*k, *cells, f2(ratio(mean.get("after"), mean.get("before"))),
                                      f2(ratio(mean.get("after"), mean.get("btree"))),
                                      tail("before"), tail("after"), tail("btree"),
                                      f2(avg("before", reads)), f2(avg("after", reads)),
                                      f2(avg("before", wkib)), f2(avg("after", wkib)),
                                      f2(rpw("before")), f2(rpw("after"))]) + " |")
    return "\n".join(out)


def main():
    d = sys.argv[1]
    out = ["## TreeLine: the memory split, dirty_share and write-back reads in one submission", "",
           "Generated by `make bench-treeline-split` (`scripts/bench-treeline-split.sh`, then "
           "`scripts/treeline_split_report.py`) "
           "(commands below) on the starting databases of `make bench-treeline` (loaded, aged). "
           "In each table, TreeLine with its default fixed split (`buffer_pool_share` 0.05) runs "
           "first, then btree, RocksDB and the device, then TreeLine with the split free to move "
           "(`buffer_pool_max_share` 0.9), each from a fresh copy of its starting database "
           "through YCSB A, B, C, F, D, E, uniform then zipfian. A third of the data in memory, "
           "direct IO. The pool share at the end is the adaptive run's buffer pool as a share of "
           "`cache_bytes` when that workload ended (0.05 to 0.9).", ""]
    for path in sorted(glob.glob(os.path.join(d, "treeline-*-t*.jsonl"))):
        m = re.match(r"treeline-(\d+)-(\w+)-t(\d+)\.jsonl", os.path.basename(path))
        if not m:
            continue
        value, sync, threads = m.groups()
        sweep = os.path.join(d, f"treeline-{value}-sweep-buffer_pool_max_share.jsonl")
        title = (f"### {SIZES.get(value, value + '-byte values')}, `wal.sync: {sync}`, "
                 f"{threads} threads")
        cfg = load(sweep)[0]["config"] if os.path.exists(sweep) else {}
        if cfg.get("wal_sync") != sync or str(cfg.get("threads")) != threads:
            # No free-split run beside this table: the table as the TreeLine section prints it.
            out += [title + " (fixed split only)", "", capture(main_tables, load(path)), "",
                    "```", commands(d, os.path.basename(path).replace(".jsonl", "-commands.txt")),
                    "```", ""]
            continue
        out += [title, "", table(path, sweep), "```"]
        for c in (path, sweep):
            out.append(commands(d, os.path.basename(c).replace(".jsonl", "-commands.txt")))
        out += ["```", ""]
    name = "treeline-1016-sweep-dirty_share"
    if os.path.exists(os.path.join(d, name + ".jsonl")):
        out += ["### 1 KiB records: `dirty_share` (`wal.sync: always`, 16 threads)", "",
                "After the tables above, from the same starting database; the default, 0.5, is "
                "the fixed runs of the table (earlier in the session, so compare with care):", "",
                capture(sweep_table, load(os.path.join(d, name + ".jsonl"))), "", "```",
                commands(d, name + "-commands.txt"), "```", ""]
    name = "treeline-1016-sweep"
    if os.path.exists(os.path.join(d, name + ".jsonl")):
        runs = load(os.path.join(d, name + ".jsonl"))
        ckpt = ["| buffer_pool_share | workload | distribution | ops/s | checkpoints | pages per "
                "checkpoint |", "|---:|---|---|---:|---:|---:|"]
        for r in runs:
            g = {**r.get("gauges", {}), **r.get("counters", {})}
            n = g.get("checkpoints") or 0
            pages = g.get("checkpoint_pages_written") or 0
            share = r["target"].split("=")[-1] if "=" in r["target"] else "default"
            ckpt.append(f"| {share} | {r['workload']} | {r['distribution']} | "
                        f"{r['throughput']:,.0f} | {n:.0f} | {pages / n if n else 0:,.0f} |")
        out += ["### 1 KiB records: `buffer_pool_share` for writes (`wal.sync: none`, 16 threads)",
                "", "A and F only, from the same starting database: the pool holds the pages "
                "write-backs dirty until a checkpoint writes them (no-steal), so its size sets "
                "how often checkpoints run under writes:", "", capture(sweep_table, runs), "",
                "\n".join(ckpt), "", "```", commands(d, name + "-commands.txt"), "```", ""]
    name = "treeline-1016-writeback-batch"
    if os.path.exists(os.path.join(d, name + ".jsonl")):
        out += ["### 1 KiB records: a write-back round's pages read in one submission", "",
                "The background thread's write-back rounds before (`grove-bench-before`, built "
                "from commit d1ba84e: one page read at a time, at queue depth 1) and after (the "
                "round's victims chosen first and their base pages read with one `LoadMany`), "
                "in turns from fresh copies of the same starting database, then btree; "
                "`wal.sync: always`, 16 threads, both rounds' figures shown:", "",
                abab(os.path.join(d, name + ".jsonl")), "", "```",
                commands(d, name + "-commands.txt"), "```", ""]
    print("\n".join(out).rstrip())


if __name__ == "__main__":
    main()
