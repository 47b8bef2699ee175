#!/usr/bin/env python3
"""Markdown tables from the TreeLine benchmark scripts' JSON lines (docs/benchmarks.md, "TreeLine").

    scripts/treeline_report.py docs/bench-data/treeline-56.jsonl            # bench-treeline.sh
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
        if r["target"].startswith("device"):
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
        if t.startswith("device") or r["workload"] == "load":
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


def capture(fn, *args):
    buf = iolib.StringIO()
    with contextlib.redirect_stdout(buf):
        fn(*args)
    return buf.getvalue().rstrip()


def commands(d, name):
    path = os.path.join(d, name)
    return open(path).read().rstrip() if os.path.exists(path) else ""


def section(d):
    out = ["## TreeLine: record cache, page groups and insert forecasting", "",
           "Generated by `make bench-treeline` (`scripts/bench-treeline.sh`, "
           "`scripts/bench-treeline-factors.sh`, then `scripts/treeline_report.py --section`). "
           "Every engine gets a memory budget of a third of the data (TreeLine: a quarter of it "
           "for the buffer pool, the rest for the record cache; btree and RocksDB: all of it as "
           "page or block cache), direct IO, `wal.sync: always` (RocksDB: `WriteOptions::sync`), "
           "4 client threads, 12 s per run after 3 s of warm-up. LOAD is a bulk load (the paper "
           "starts every run from a loaded database; RocksDB ingests SST files); the Put-loaded "
           "run below measures the insert path. Reads/op are device page reads per operation "
           "(RocksDB: block-cache misses); KiB written/op is what the process wrote to the device "
           "(WAL, checkpoints, compaction). The device line is random 4 KiB reads of a file as "
           "large as btree's, one read in flight per thread.", ""]
    for value, title in (("56", "64-byte records (8-byte keys, 56-byte values)"),
                         ("1016", "1 KiB records (8-byte keys, 1016-byte values)")):
        path = os.path.join(d, f"treeline-{value}.jsonl")
        if not os.path.exists(path):
            continue
        runs = load(path)
        if not runs:
            continue
        n = runs[0]["config"]["records"]
        out += [f"### {title}", "",
                f"{n:,} records, dense keys.", "",
                capture(main_tables, runs), "",
                f"![throughput](img/treeline-{value}-throughput.png)", "",
                f"![IO per operation](img/treeline-{value}-io.png)", "",
                "Where each run's time goes: device page reads per second against the device "
                "line (a scan's multi-page read counts its pages but is one IO, so scans can "
                "pass it), and the WAL's sync pipeline (syncs per second x median sync time; "
                "near 1 the log device is always syncing, which bounds every write-heavy run of "
                "every engine with `wal.sync: always`):", "",
                capture(bounds_table, runs), "",
                "```", commands(d, f"treeline-{value}-commands.txt"), "```", ""]
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
                "default (the paper's Fig. 8 setting); btree for scale. Records/write-back 0 "
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
    else:
        main_tables(load(args[0]))
