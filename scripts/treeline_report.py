#!/usr/bin/env python3
"""Markdown tables from scripts/bench-treeline.sh's JSON lines (docs/benchmarks.md, "TreeLine").

    scripts/treeline_report.py docs/bench-data/treeline-56.jsonl
"""
import json
import sys


def main(path):
    runs = [json.loads(l) for l in open(path) if l.strip()]
    by = {}
    for r in runs:
        by[(r["target"].split("?")[0], r["workload"], r["distribution"])] = r
    device = [r for r in runs if r["target"].startswith("device")]
    rows = []
    seen = []
    for r in runs:
        k = (r["workload"], r["distribution"])
        if r["target"].startswith("device") or k in seen:
            continue
        seen.append(k)
    print("| workload | distribution | treeline ops/s | btree ops/s | RocksDB ops/s "
          "| treeline / btree | treeline / RocksDB | treeline reads/op | btree reads/op "
          "| treeline KiB written/op | btree KiB written/op |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w, d in seen:
        t = by.get(("embedded:treeline", w, d))
        b = by.get(("embedded:btree", w, d))
        x = by.get(("rocksdb", w, d))
        def ops(r):
            return f"{r['throughput']:,.0f}" if r else "-"
        def ratio(a, c):
            return f"{a['throughput'] / c['throughput']:.2f}" if a and c and c["throughput"] else "-"
        def io(r, key):
            return f"{r['io'][key]:.2f}" if r and isinstance(r.get("io"), dict) else "-"
        def kib(r):
            return (f"{r['io']['bytes_written_per_op'] / 1024:.2f}"
                    if r and isinstance(r.get("io"), dict) else "-")
        print(f"| {w} | {d} | {ops(t)} | {ops(b)} | {ops(x)} | {ratio(t, b)} | {ratio(t, x)} "
              f"| {io(t, 'page_reads_per_op')} | {io(b, 'page_reads_per_op')} | {kib(t)} | {kib(b)} |")
    for r in device:
        print(f"\nDevice: random 4 KiB reads at queue depth {r['config']['threads']}: "
              f"{r['throughput']:,.0f} reads/s.")
    t = [r for r in runs if r["target"].startswith("embedded:treeline")]
    if t:
        last = t[-1]
        extra = {k[len("index."):]: v for k, v in last.get("gauges", {}).items()
                 if k.startswith("index.")}
        if extra:
            keys = ["segments", "data_pages", "overflow_pages", "segment_efficiency",
                    "records_per_writeback", "reorganisations_total", "overflows_created_total"]
            print("\nTreeLine at the end of the run: " +
                  ", ".join(f"{k} {extra[k]:.3g}" for k in keys if k in extra) + ".")


if __name__ == "__main__":
    main(sys.argv[1])
