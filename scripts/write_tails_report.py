#!/usr/bin/env python3
"""The write-tails table (docs/bench-data/scale-tails-table.md) from scripts/bench-write-tails.sh.

  python3 scripts/write_tails_report.py docs/bench-data/scale-tails.jsonl > docs/bench-data/scale-tails-table.md

One row per budget and engine: durable inserts per second, p99, p999 and the longest insert at
each thread count, each Grove figure beside RocksDB's in the same run (the last line of each label
wins, so a rerun replaces its rows), and for Grove at 16 threads what the engine's own counters
say the writers waited for: checkpoints, the checkpoint's pause, waits for dirty room, log syncs.
"""
import json
import sys

MIB = 1 << 20


def budget_bytes(b):
    units = {"KiB": 1 << 10, "MiB": MIB, "GiB": 1 << 30}
    for u, m in units.items():
        if b.endswith(u):
            return float(b[: -len(u)]) * m
    return float(b)


def fmt(x, digits=0):
    if x is None:
        return "–"
    return f"{x:,.{digits}f}"


def main():
    rows = {}
    for path in sys.argv[1:]:
        with open(path) as f:
            for line in f:
                d = json.loads(line)
                parts = d.get("label", "").split(":")
                if len(parts) != 4 or parts[0] != "tails":
                    continue
                _, budget, engine, step = parts
                rows[(budget, engine, step)] = d
    budgets = sorted({k[0] for k in rows}, key=budget_bytes)
    engines = [e for e in ("btree", "hln", "rocksdb") if any(k[1] == e for k in rows)]
    threads = sorted({int(k[2][5:]) for k in rows if k[2].startswith("ins-t")})
    w = print
    head = "| budget | engine |"
    align = "|---|---|"
    for t in threads:
        head += f" t{t} inserts/s | ÷ RocksDB | p99 ms | p999 ms | ÷ RocksDB | max ms |"
        align += "--:|--:|--:|--:|--:|--:|"
    w(head)
    w(align)
    for b in budgets:
        for e in engines:
            line = f"| {b} | {e} |"
            for t in threads:
                d = rows.get((b, e, f"ins-t{t}"))
                r = rows.get((b, "rocksdb", f"ins-t{t}"))
                if not d:
                    line += " – | – | – | – | – | – |"
                    continue
                lat = d["latency_us"]
                ratio = ratio999 = None
                if r and e != "rocksdb":
                    ratio = d["throughput"] / r["throughput"]
                    ratio999 = lat["p999_us"] / r["latency_us"]["p999_us"]
                line += (f" {fmt(d['throughput'])} | {fmt(ratio, 2)} | {fmt(lat['p99_us'] / 1e3, 1)} |"
                         f" {fmt(lat['p999_us'] / 1e3, 1)} | {fmt(ratio999, 2)} |"
                         f" {fmt(lat['max_us'] / 1e3)} |")
            w(line)
    w("")
    w("What Grove's writers waited for at 16 threads (the engine's own counters and histograms):\n")
    w("| budget | engine | checkpoints | checkpoint pause p99 ms | write-room waits | "
      "log sync p99 ms | page reads / insert | KiB written / insert | cache hit ratio |")
    w("|---|---|--:|--:|--:|--:|--:|--:|--:|")
    t = max(threads) if threads else 16
    for b in budgets:
        for e in engines:
            if e == "rocksdb":
                continue
            d = rows.get((b, e, f"ins-t{t}"))
            if not d:
                continue
            c, g, io = d.get("counters", {}), d.get("gauges", {}), d.get("io", {})
            pause = g.get("checkpoint_pause_p99_seconds")
            sync = g.get("wal_sync_p99_seconds")
            written = io.get("bytes_written_per_op")
            w(f"| {b} | {e} | {fmt(c.get('checkpoints'))} | "
              f"{fmt(pause * 1e3 if pause is not None else None, 1)} | "
              f"{fmt(c.get('write_room_waits'))} | {fmt(sync * 1e3 if sync is not None else None, 2)} | "
              f"{fmt(io.get('page_reads_per_op'), 2)} | "
              f"{fmt(written / 1024 if written is not None else None, 1)} | "
              f"{fmt(d.get('cache_hit_ratio'), 3)} |")


if __name__ == "__main__":
    main()
