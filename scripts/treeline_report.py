#!/usr/bin/env python3
"""Markdown tables from the TreeLine benchmark scripts' JSON lines (docs/benchmarks.md, "TreeLine").

    scripts/treeline_report.py docs/bench-data/treeline-56-always-t4.jsonl  # one table
    scripts/treeline_report.py --sweep docs/bench-data/treeline-56-sweep.jsonl
    scripts/treeline_report.py --factors docs/bench-data/treeline-factors.jsonl
    scripts/treeline_report.py --forecast docs/bench-data/treeline-forecast.jsonl
    scripts/treeline_report.py --section docs/bench-data > docs/bench-data/treeline.md

--section prints the whole "TreeLine" section of docs/benchmarks.md from whatever of the files
above exist in the directory, with their commands (scripts/bench_report.py includes it).
"""
import contextlib
import io as iolib
import json
import math
import os
import re
import sys

POINT = ["a", "b", "c", "d", "f"]


def load(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def ops(r):
    return f"{r['throughput']:,.0f}" if r else "-"


def ratio(a, c):
    return f"{a['throughput'] / c['throughput']:.2f}" if a and c and c["throughput"] else "-"


def io(r, key, scale=1.0):
    if not r or not isinstance(r.get("io"), dict) or key not in r["io"]:
        return "-"
    return f"{r['io'][key] / scale:.2f}"


def extra(r):
    return {k[len("index."):]: v for k, v in r.get("gauges", {}).items() if k.startswith("index.")}


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main_tables(runs):
    by = {}
    order = []
    for r in runs:
        if r["target"].startswith("device") or r["workload"] in ("load", "age"):
            continue
        by[(r["target"].split("?")[0], r["workload"], r["distribution"])] = r
        k = (r["workload"], r["distribution"])
        if k not in order:
            order.append(k)
    print("| workload | distribution | treeline ops/s | btree ops/s | RocksDB ops/s "
          "| treeline / btree | treeline / RocksDB | reads/op treeline | btree | RocksDB "
          "| KiB written/op treeline | btree | RocksDB |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w, d in order:
        t = by.get(("embedded:treeline", w, d))
        b = by.get(("embedded:btree", w, d))
        x = by.get(("rocksdb", w, d))
        cols = [ops(t), ops(b), ops(x), ratio(t, b), ratio(t, x)]
        cols += [io(r, "page_reads_per_op") for r in (t, b, x)]
        cols += [io(r, "bytes_written_per_op", 1024) for r in (t, b, x)]
        print(f"| {w} | {d} | " + " | ".join(cols) + " |")

    def ratios(other, dist, workloads):
        out = []
        for w in workloads:
            t = by.get(("embedded:treeline", w, dist))
            o = by.get((other, w, dist))
            if t and o and o["throughput"]:
                out.append(t["throughput"] / o["throughput"])
        return out

    print()
    for dist in ("zipfian(0.99)", "uniform"):
        rx = ratios("rocksdb", dist, POINT)
        rb = ratios("embedded:btree", dist, POINT)
        if rx or rb:
            print(f"Geometric mean over the point workloads (A, B, C, D, F), {dist}: "
                  f"treeline / RocksDB {geomean(rx):.2f}, treeline / btree {geomean(rb):.2f}.")
    for dist in ("uniform", "zipfian(0.99)"):
        e = ratios("rocksdb", dist, ["e"])
        if e:
            print(f"YCSB E {dist}: treeline / RocksDB {e[0]:.2f}.")
    for r in runs:
        if r["target"].startswith("device"):
            print(f"\nDevice: random 4 KiB reads at queue depth {r['config']['threads']}: "
                  f"{r['throughput']:,.0f} reads/s.")
    t = [r for r in runs if r["target"].startswith("embedded:treeline")]
    if t:
        x = extra(t[-1])
        keys = ["segments", "data_pages", "overflow_pages", "segment_efficiency",
                "records_per_writeback", "reorganisations_total", "overflows_created_total"]
        if x:
            print("\nTreeLine at the end of the run: " +
                  ", ".join(f"{k} {x[k]:.3g}" for k in keys if k in x) + ".")


def factor_tables(runs):
    targets = []
    by = {}
    for r in runs:
        if r["target"] not in targets:
            targets.append(r["target"])
        by[(r["target"], r["workload"])] = r
    workloads = [w for w in ["load", "a", "b", "c", "e"] if any((t, w) in by for t in targets)]
    base = "embedded:treeline"
    print("| configuration | " + " | ".join(f"{w} ops/s" for w in workloads) +
          " | geomean vs default (A, B, C, E) | reads/op A | KiB written/op A | records/write-back |")
    print("|---|" + "---:|" * (len(workloads) + 4))
    for t in targets:
        cells = [ops(by.get((t, w))) for w in workloads]
        rs = [by[(t, w)]["throughput"] / by[(base, w)]["throughput"]
              for w in ("a", "b", "c", "e") if (t, w) in by and (base, w) in by]
        a = by.get((t, "a"))
        rpw = extra(a).get("records_per_writeback") if a else None
        name = t.replace("embedded:", "")
        print(f"| {name} | " + " | ".join(cells) + f" | {geomean(rs):.2f} | "
              f"{io(a, 'page_reads_per_op')} | {io(a, 'bytes_written_per_op', 1024)} | "
              f"{'-' if rpw is None else f'{rpw:.1f}'} |")


def forecast_tables(runs):
    print("| forecasting | load ops/s | read-insert ops/s | reorganisations (run) | "
          "overflows created (run) | forecast epochs | segments | data pages | "
          "KiB written/op |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    loads = {}
    for r in runs:
        on = "forecasting=true" in r["target"]
        if r["workload"] == "load":
            loads[on] = r
            continue
        x = extra(r)
        l = extra(loads.get(on, {}))
        reorg = x.get("reorganisations_total", 0) - l.get("reorganisations_total", 0)
        ovf = x.get("overflows_created_total", 0) - l.get("overflows_created_total", 0)
        print(f"| {'on' if on else 'off'} | {ops(loads.get(on))} | {ops(r)} | {reorg:,.0f} | "
              f"{ovf:,.0f} | {x.get('forecast_epochs_total', 0):.0f} | "
              f"{x.get('segments', 0):,.0f} | {x.get('data_pages', 0):,.0f} | "
              f"{io(r, 'bytes_written_per_op', 1024)} |")


def bounds_table(runs):
    """Which resource each TreeLine run leans on: device reads against the device's ceiling, and
    the WAL's sync pipeline (syncs per second x median sync time: 1.0 = always syncing)."""
    device = [r for r in runs if r["target"].startswith("device")]
    ceiling = device[0]["throughput"] if device else None
    print("| workload | distribution | engine | ops/s | device reads/s | ÷ device ceiling "
          "| WAL syncs/s | sync busy |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for r in runs:
        t = r["target"].split("?")[0]
        if t.startswith("device") or r["workload"] in ("load", "age"):
            continue
        name = t.replace("embedded:", "")
        reads = r["io"]["page_reads_per_op"] * r["throughput"] if isinstance(r.get("io"), dict) else 0
        secs = r["seconds"] or 1
        syncs = r.get("counters", {}).get("wal_syncs", 0) / secs
        p50 = r.get("gauges", {}).get("wal_sync_p50_seconds")
        busy = f"{syncs * p50:.2f}" if p50 else "-"
        share = f"{reads / ceiling:.2f}" if ceiling else "-"
        print(f"| {r['workload']} | {r['distribution']} | {name} | {r['throughput']:,.0f} | "
              f"{reads:,.0f} | {share} | {syncs:,.0f} | {busy} |")


# The paper's figures (Yu et al., PVLDB 16(1), 2022; ../shared/specs/treeline.md), WAL off,
# 16 threads, Amazon keys: geometric means of TreeLine / RocksDB over the zipfian point
# workloads (Fig. 5: 1.62 at 64 B, 2.99 at 1 KiB), the 100% read workload C (§7: 2.4x and 5x;
# the paper does not say which distribution), uniform point workloads (§5.2.3: 1.45 over both
# sizes) and YCSB E (§5.2.2, three-dataset average). The per-workload bars of Fig. 5 exist only
# as a plot.
PAPER = {
    "56": {"zipf": 1.62, "c": 2.4, "uniform": 1.45, "e_zipf": 1.74, "e_uniform": 2.21},
    "1016": {"zipf": 2.99, "c": 5.0, "uniform": 1.45, "e_zipf": 1.88, "e_uniform": 2.50},
}


def index_runs(runs):
    by = {}
    for r in runs:
        if r["target"].startswith("device") or r["workload"] in ("load", "age"):
            continue
        by[(r["target"].split("?")[0], r["workload"], r["distribution"])] = r
    return by


def tl_ratios(by, other, dist, workloads):
    out = []
    for w in workloads:
        t = by.get(("embedded:treeline", w, dist))
        o = by.get((other, w, dist))
        if t and o and o["throughput"]:
            out.append(t["throughput"] / o["throughput"])
    return out


def fmt(x):
    return "-" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.2f}"


def summary_rows(d, value):
    """One row per table file of this record size: the issue's targets beside the paper's."""
    rows = []
    for sync in ("always", "none"):
        for threads in (4, 16):
            path = os.path.join(d, f"treeline-{value}-{sync}-t{threads}.jsonl")
            if not os.path.exists(path):
                continue
            by = index_runs(load(path))
            z = "zipfian(0.99)"
            c_x = tl_ratios(by, "rocksdb", z, ["c"])
            c_b = tl_ratios(by, "embedded:btree", z, ["c"])
            worst = min(tl_ratios(by, "embedded:btree", z, POINT) +
                        tl_ratios(by, "embedded:btree", "uniform", POINT) or [float("nan")])
            rows.append((sync, threads, geomean(tl_ratios(by, "rocksdb", z, POINT)),
                         geomean(tl_ratios(by, "rocksdb", "uniform", POINT)),
                         c_x[0] if c_x else None,
                         geomean(tl_ratios(by, "embedded:btree", z, POINT)),
                         c_b[0] if c_b else None, worst))
    return rows


def summary(d):
    print("| records | wal.sync | threads | TL / RocksDB zipfian A-F (paper) | uniform (paper) "
          "| C zipfian (paper C) | TL / btree zipfian A-F | C zipfian | lowest TL / btree, "
          "any point run |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for value, name in (("56", "64 B"), ("1016", "1 KiB")):
        p = PAPER[value]
        for sync, threads, zx, ux, cx, zb, cb, worst in summary_rows(d, value):
            print(f"| {name} | {sync} | {threads} | {fmt(zx)} ({p['zipf']}) | {fmt(ux)} "
                  f"({p['uniform']}) | {fmt(cx)} ({p['c']}) | {fmt(zb)} | {fmt(cb)} | "
                  f"{fmt(worst)} |")


def load_table(runs):
    """The starting database of every run: the load, the aging, and what they left."""
    print("| engine | step | records or updates | ops/s | settle s | bytes on disk | "
          "KiB written/op | RocksDB files per level |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for r in runs:
        g = r.get("gauges", {})
        levels = ", ".join(f"L{i} {g[f'files_L{i}']:.0f}" for i in range(7)
                           if g.get(f"files_L{i}"))
        size = g.get("data_file_bytes")
        print(f"| {r['target'].replace('embedded:', '')} | {r['workload']} | {r['ops']:,} | "
              f"{r['throughput']:,.0f} | {r.get('settle_seconds', 0):.1f} | "
              f"{'-' if size is None else f'{size / 2**20:,.0f} MiB'} | "
              f"{io(r, 'bytes_written_per_op', 1024)} | {levels or '-'} |")


def sweep_table(runs):
    """One TreeLine parameter over values (each run's target is embedded:treeline?PARAM=VALUE):
    ops/s per workload, and geometric means against the best value."""
    values = []
    by = {}
    order = []
    param = "buffer_pool_share"
    for r in runs:
        if r["workload"] in ("load", "age") or r["target"].startswith("device"):
            continue
        t = r["target"]
        value = "default"
        if "?" in t:
            param, value = t.split("?", 1)[1].split("&")[0].split("=", 1)
        if value not in values:
            values.append(value)
        k = (r["workload"], r["distribution"])
        if k not in order:
            order.append(k)
        by[(value, k)] = r
    short = "share" if param == "buffer_pool_share" else param
    print("| workload | distribution | " +
          " | ".join(f"{short} {v} ops/s | reads/op" for v in values) + " |")
    print("|---|---|" + "---:|---:|" * len(values))
    for k in order:
        cells = []
        for v in values:
            r = by.get((v, k))
            cells += [ops(r), io(r, "page_reads_per_op")]
        print(f"| {k[0]} | {k[1]} | " + " | ".join(cells) + " |")
    for dist in ("zipfian(0.99)", "uniform"):
        gm = []
        for v in values:
            xs = [by[(v, (w, dist))]["throughput"] for w in POINT if (v, (w, dist)) in by]
            gm.append(geomean(xs) if xs else float("nan"))
        best = max(gm) if gm else float("nan")
        print(f"\nGeometric mean over the point workloads, {dist}, relative to the best {short}: " +
              ", ".join(f"{v}: {g / best:.2f}" for v, g in zip(values, gm)) + ".")
    gm = []
    for v in values:
        xs = [by[(v, k)]["throughput"] for k in order if (v, k) in by]
        gm.append(geomean(xs) if xs else float("nan"))
    best = max(gm) if gm else float("nan")
    print(f"Geometric mean over every run (E included), relative to the best {short}: " +
          ", ".join(f"{v}: {g / best:.2f}" for v, g in zip(values, gm)) + ".")
    # What the record cache held at the end of each value's C runs: its dirty share says how much
    # of it the write phases before had left to records nobody reads.
    held = []
    for v in values:
        r = by.get((v, ("c", "uniform")))
        x = extra(r) if r else {}
        if x.get("cache_entries"):
            held.append(f"{v}: {x['cache_dirty_entries'] / x['cache_entries']:.2f}")
    if held:
        print("Dirty share of the record cache after C uniform: " + ", ".join(held) + ".")


def cache_table(runs):
    """The record cache before and after (bench-treeline-cache.sh): one row per run, in order."""
    workloads = []
    for r in runs:
        if r["workload"] not in workloads:
            workloads.append(r["workload"])
    print("| binary | target | " + " | ".join(f"{w.upper()} zipfian ops/s | reads/op"
                                            for w in workloads) + " |")
    print("|---|---|" + "---:|---:|" * len(workloads))
    rows = []
    for r in runs:
        key = (r.get("label", ""), r["target"])
        if not rows or rows[-1][0] != key or r["workload"] in rows[-1][1]:
            rows.append((key, {}))
        rows[-1][1][r["workload"]] = r
    for (label, target), by in rows:
        cells = []
        for w in workloads:
            cells += [ops(by.get(w)), io(by.get(w), "page_reads_per_op")]
        print(f"| {label} | {target.replace('embedded:', '')} | " + " | ".join(cells) + " |")


def capture(fn, *args):
    buf = iolib.StringIO()
    with contextlib.redirect_stdout(buf):
        fn(*args)
    return buf.getvalue().rstrip()


def commands(d, name):
    path = os.path.join(d, name)
    return open(path).read().rstrip() if os.path.exists(path) else ""


def run_seconds(d):
    """'N s after W s of warm-up', from the first table file's settings."""
    for value in ("56", "1016"):
        for sync in ("always", "none"):
            for threads in (4, 16):
                path = os.path.join(d, f"treeline-{value}-{sync}-t{threads}.jsonl")
                if os.path.exists(path):
                    c = load(path)[0]["config"]
                    return (f"{c.get('seconds_per_phase') or 0:g} s after "
                            f"{c.get('warmup_seconds') or 0:g} s of warm-up")
    return "fixed durations"


def section(d):
    out = ["## TreeLine: record cache, page groups and insert forecasting", "",
           "Generated by `make bench-treeline` (`scripts/bench-treeline.sh`, "
           "`scripts/bench-treeline-factors.sh`, then `scripts/treeline_report.py --section`), in "
           "the paper's protocol: every engine bulk-loads the records (RocksDB ingests SST files) "
           "and is then aged by as many uniform updates as there are records, in batches, and "
           "settles (a checkpoint; a flush and the compaction backlog), so RocksDB has several "
           "levels. In each table, every engine starts from a fresh copy of that database and runs the "
           "workloads in turn (A, B, C, F, D, E; each with uniform, then zipfian requests), as "
           "the paper runs its workloads after loading. Every engine gets a memory "
           "budget of a third of the data: TreeLine splits it by `buffer_pool_share` (buffer "
           "pool; the rest is the record cache; 0.25 in the tables, the default when they ran, "
           "0.05 since the sweep below), btree gives all of it to its buffer pool, "
           "RocksDB splits it as the paper's Table 3 does (two memtables of 15.7%, block cache "
           "68.6%; index and filter blocks in the block cache). Direct IO. Each table is one "
           "`wal.sync` mode for every engine (`always`: equal durability, Grove's default; "
           "`none`: the paper's setting, which runs with the log off) and one thread count; runs "
           f"of {run_seconds(d)}. Reads/op are device page reads per operation (RocksDB: "
           "block-cache misses); KiB written/op is what the process wrote to the device (WAL, "
           "checkpoints, compaction). The device line is random 4 KiB reads of a file as large "
           "as btree's, with as many reads in flight as there are threads.", "",
           "### Summary", "",
           "TreeLine / RocksDB and TreeLine / btree, geometric means over the point workloads "
           "(A, B, C, D, F), with the paper's figures (WAL off, 16 threads) in brackets; the "
           "paper gives C as 2.4x (64 B) and 5x (1 KiB) without naming a distribution:", "",
           capture(summary, d), ""]
    path = os.path.join(d, "treeline-cache.jsonl")
    if os.path.exists(path):
        out += ["### The record cache, before and after", "",
                "Zipfian B and C at 1 KiB, 4 threads, from copies of the same starting database, "
                "with a grove-bench built before the record cache's rebuild (one mutex, an "
                "ordered map of every entry, values copied under the lock) and one built after "
                "it (hash shards, cells shared by reference, an ordered index of dirty entries "
                "only), alternating, each under `perf record` (`scripts/bench-treeline-cache.sh`):",
                "", capture(cache_table, load(path)), "",
                "No device line runs beside it: the comparison is of CPU per operation at equal "
                "page reads, read from the profiles. When a round's btree run falls with the "
                "others at the same reads per operation, the device set that round's pace. "
                "The most sampled symbols of each profile (cpu-clock; kernel symbols are the "
                "device's and the scheduler's):", "",
                "```", commands(d, "treeline-cache-perf.txt"), "```", "",
                "```", commands(d, "treeline-cache-commands.txt"), "```", ""]
    for value, title in (("56", "64-byte records (8-byte keys, 56-byte values)"),
                         ("1016", "1 KiB records (8-byte keys, 1016-byte values)")):
        path = os.path.join(d, f"treeline-{value}-load.jsonl")
        if os.path.exists(path):
            runs = load(path)
            n = runs[0]["config"]["records"] if runs else 0
            out += [f"### {title}", "", f"{n:,} records, dense keys. The starting database:", "",
                    capture(load_table, runs), "",
                    "```", commands(d, f"treeline-{value}-load-commands.txt"), "```", ""]
        for sync in ("always", "none"):
            for threads in (4, 16):
                name = f"treeline-{value}-{sync}-t{threads}"
                path = os.path.join(d, name + ".jsonl")
                if not os.path.exists(path):
                    continue
                runs = load(path)
                plots = []
                if os.path.exists(os.path.join(os.path.dirname(d.rstrip("/")), "img",
                                               name + "-throughput.png")):
                    plots = [f"![throughput](img/{name}-throughput.png)", "",
                             f"![IO per operation](img/{name}-io.png)", ""]
                out += [f"#### {title.split(' (')[0]}, `wal.sync: {sync}`, {threads} threads", "",
                        capture(main_tables, runs), ""] + plots + [
                        "Where each run's time goes: device page reads per second against the "
                        "device line (a scan's multi-page read counts its pages but is one IO, "
                        "so scans can pass it), and the WAL's sync pipeline (syncs per second x "
                        "median sync time; near 1 the log device is always syncing):", "",
                        capture(bounds_table, runs), "",
                        "```", commands(d, name + "-commands.txt"), "```", ""]
        path = os.path.join(d, f"treeline-{value}-sweep.jsonl")
        if os.path.exists(path):
            runs = load(path)
            out += [f"#### {title.split(' (')[0]}: `buffer_pool_share`", "",
                    "TreeLine alone, each share from a copy of the same starting database "
                    "(the rest of the budget is the record cache). The ratios are between "
                    "TreeLine's own settings in one run; btree, RocksDB and the device in the "
                    "same setting (`wal.sync: none`, 4 threads) are in the table of that name "
                    "above, where the bounds table says what each workload leans on:", "",
                    capture(sweep_table, runs), "",
                    "```", commands(d, f"treeline-{value}-sweep-commands.txt"), "```", ""]
        path = os.path.join(d, f"treeline-{value}-sweep-dirty_share.jsonl")
        if os.path.exists(path):
            runs = load(path)
            out += [f"#### {title.split(' (')[0]}: `dirty_share`", "",
                    "TreeLine alone, each value from a copy of the same starting database: how "
                    "much of the record cache may stay dirty before the background thread "
                    "writes cold dirty records back (1: never, the paper's behaviour):", "",
                    capture(sweep_table, runs), "",
                    "```", commands(d, f"treeline-{value}-sweep-dirty_share-commands.txt"),
                    "```", ""]
    # Settings no paper figure names (another record size, key set or budget): a check that
    # the results hold off the named settings.
    for name in sorted(os.listdir(d)):
        m = re.fullmatch(r"treeline-(\d+)-([a-z]+)-m([0-9.]+)-(always|none)-t(\d+)\.jsonl", name)
        if not m:
            continue
        value, keys, fraction, sync, threads = m.groups()
        runs = load(os.path.join(d, name))
        by = index_runs(runs)
        z = tl_ratios(by, "rocksdb", "zipfian(0.99)", POINT)
        out += [f"### Off the named settings: {int(value) + 8}-byte records, `{keys}` keys, "
                f"{float(fraction):.0%} of the data in memory, `wal.sync: {sync}`, {threads} "
                "threads", "",
                "The same protocol (load, age, one copy per engine); TreeLine at its current "
                "defaults. TreeLine / RocksDB over the zipfian point workloads: "
                f"{fmt(geomean(z))}.", "",
                capture(main_tables, runs), "",
                capture(bounds_table, runs), "",
                "```", commands(d, name.replace(".jsonl", "-commands.txt")), "```", ""]
    path = os.path.join(d, "treeline-56-put.jsonl")
    if os.path.exists(path):
        loads = [r for r in load(path) if r["workload"] == "load"]
        out += ["### Loading by Put", "",
                "2,000,000 64-byte records inserted by Put in random order with 8 threads "
                "(`--load-method put`, otherwise the settings above), each engine from empty (the LOAD "
                "runs of these commands; their other runs predate the scan change and are not "
                "shown):", "",
                "| engine | ops/s | p50 µs | p99 µs | KiB written/op |", "|---|---:|---:|---:|---:|"]
        for r in loads:
            out.append(f"| {r['target'].replace('embedded:', '')} | {r['throughput']:,.0f} | "
                       f"{r['latency_us']['p50_us']:,.0f} | {r['latency_us']['p99_us']:,.0f} | "
                       f"{io(r, 'bytes_written_per_op', 1024)} |")
        out += ["", "```", commands(d, "treeline-56-put-commands.txt"), "```", ""]
    path = os.path.join(d, "treeline-factors.jsonl")
    if os.path.exists(path):
        runs = load(path)
        out += ["### Factor analysis", "",
                "1 KiB records, zipfian requests, each switch turned the other way from the "
                "default (the paper's Fig. 8 setting); btree for scale. These runs and the "
                "forecasting ones below are from a build before the record cache's rebuild "
                "and without aging (`scripts/bench-treeline-factors.sh`). Records/write-back 0 "
                "means no dirty record was evicted during A (the record cache held every write "
                "of the run), so a write-back switch changed nothing the run could see, and its "
                "difference from the default is this machine's run-to-run spread:", "",
                capture(factor_tables, runs), "",
                "```", commands(d, "treeline-factors-commands.txt"), "```", ""]
    path = os.path.join(d, "treeline-forecast.jsonl")
    if os.path.exists(path):
        runs = load(path)
        out += ["### Insert forecasting", "",
                "64-byte records on the clustered synthetic `osm` key set (inserts land where "
                "the data is dense, a stand-in for the paper's taxi pick-ups), loaded by Put, "
                "then the same fixed count of 50% read (latest) / 50% insert operations with "
                "forecasting off and on; reorganisations and overflow pages counted over the "
                "read-insert run:", "",
                capture(forecast_tables, runs), "",
                "```", commands(d, "treeline-forecast-commands.txt"), "```", ""]
    print("\n".join(out).rstrip())


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--factors":
        factor_tables(load(args[1]))
    elif args and args[0] == "--forecast":
        forecast_tables(load(args[1]))
    elif args and args[0] == "--section":
        section(args[1])
    elif args and args[0] == "--sweep":
        sweep_table(load(args[1]))
    else:
        main_tables(load(args[0]))
