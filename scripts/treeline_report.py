#!/usr/bin/env python3
"""Markdown tables from the TreeLine benchmark scripts' JSON lines (docs/benchmarks.md, "TreeLine").

    scripts/treeline_report.py docs/bench-data/treeline-56.jsonl            # bench-treeline.sh
    scripts/treeline_report.py --factors docs/bench-data/treeline-factors.jsonl
    scripts/treeline_report.py --forecast docs/bench-data/treeline-forecast.jsonl
"""
import json
import math
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


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] == "--factors":
        factor_tables(load(args[1]))
    elif args and args[0] == "--forecast":
        forecast_tables(load(args[1]))
    else:
        main_tables(load(args[0]))
