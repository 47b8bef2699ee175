#!/usr/bin/python3
"""Writes docs/benchmarks.md from the JSON lines of `make bench` (and `make bench-reference`).

    scripts/bench_report.py [--data docs/bench-data] [--out docs/benchmarks.md]

Reads <data>/suite.jsonl and <data>/suite-commands.txt, and, when present,
<data>/reference-10m.jsonl and <data>/reference-10m-commands.txt. Every number in the page
comes from those files; ratios are computed between runs of the same file (one run of the
suite, one machine). Standard library only.
"""

import argparse
import json
import math
import os


def load(path):
    if not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_text(path):
    if not os.path.exists(path):
        return ""
    with open(path, encoding="utf-8") as f:
        return f.read().strip()


def kind(run):
    t = run["target"]
    for k in ("embedded", "rocksdb", "device", "grpc-noop", "grpc"):
        if t.startswith(k):
            return k
    return t


def num(v, fmt="{:,.0f}"):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return fmt.format(v)


def get(run, *path):
    v = run
    for p in path:
        if not isinstance(v, dict) or v.get(p) is None:
            return math.nan
        v = v[p]
    return float(v)


def ratio(a, b):
    return a / b if b and not math.isnan(a) and not math.isnan(b) else math.nan


def geomean(xs):
    xs = [x for x in xs if x and not math.isnan(x) and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else math.nan


def wl(run):
    w = run["workload"]
    return w.upper() if len(w) == 1 else w.upper() if w == "load" else w


def dist(run):
    return "–" if run["workload"] == "load" else run["distribution"]


def machine_section(runs):
    m = runs[0]["machine"]
    loads = [r["machine"].get("loadavg", "").split(" ")[0] for r in runs if "machine" in r]
    rows = [
        ("CPU", f"{m.get('cpu', '?')} × {m.get('cpus', '?')}"),
        ("Memory", m.get("memory", "?")),
        ("Kernel", m.get("kernel", "?")),
        ("Filesystem / device", f"{m.get('filesystem', '?')} on {m.get('block_device', '?')}"
         f" (virtual disk; the kernel reports rotational={m.get('block_device_rotational', '?')})"),
        ("Load average (1 min) when each run started", f"{min(loads)} … {max(loads)}" if loads else "?"),
    ]
    out = ["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows]
    return "\n".join(out)


def setup_section(runs):
    measured = [r for r in runs if r["workload"] != "load" and kind(r) == "embedded"]
    c = (measured or runs)[0]["config"]
    btree = next((r for r in runs if kind(r) == "embedded"), None)
    rocks = next((r for r in runs if kind(r) == "rocksdb"), None)
    lines = [
        f"* **Data:** {c['records']:,} records, {c['key_bytes']}-byte big-endian integer keys "
        f"({c['key_set']}, inserted in {c['key_order']} order), {c['value_bytes']}-byte values: "
        f"{c['data_bytes'] / 2**20:.1f} MiB of keys and values.",
        f"* **Memory budget:** {c['cache_bytes'] / 2**20:.1f} MiB = 1/"
        f"{1 / c['cache_fraction_of_data']:.0f} of the data, for every engine.",
        f"* **IO:** direct IO (O_DIRECT) for data files; durability `wal sync: {c['wal_sync']}` "
        f"(an acknowledged write survives power loss) for Grove and RocksDB alike.",
        f"* **Runs:** {c['threads']} client threads; each run is {c['seconds_per_phase']} s after "
        f"{c['warmup_seconds']} s of unmeasured warm-up; closed loop. LOAD uses "
        f"{next((r['config']['threads'] for r in runs if r['workload'] == 'load'), '?')} threads "
        "and its time includes the settle after it (Grove: a checkpoint; RocksDB: memtable flush "
        "and waiting for compactions).",
    ]
    if btree:
        tc = btree["target_config"]
        lines.append(f"* **Grove:** variant `{tc.get('variant')}`, IO backend "
                     f"`{tc.get('io_backend')}`, 4 KiB pages, buffer pool = the memory budget "
                     f"(inner nodes protected up to {float(tc.get('inner_cache_fraction', 0)):.0%} "
                     "of it).")
    if rocks:
        tc = rocks["target_config"]
        lines.append(f"* **RocksDB:** {tc.get('version')}: block cache "
                     f"{int(tc['block_cache_bytes']) / 2**20:.1f} MiB + 2 memtables of "
                     f"{int(tc['memtable_bytes'].split()[0]) / 2**20:.2f} MiB (= the budget), "
                     f"index and filter blocks in the block cache ({tc.get('index_and_filters', 'whole')}), "
                     f"Bloom filters {tc['bloom_bits_per_key']} bits/key, "
                     f"{tc['block_size']} B blocks, compression {tc['compression']}, direct IO for "
                     f"{tc['direct_io']}, WAL sync {tc['wal_sync']}.")
    dev = [r for r in runs if kind(r) == "device"]
    if dev:
        lines.append(f"* **Device:** one random 4 KiB read per operation on a "
                     f"{int(dev[0]['target_config']['file_bytes']) / 2**20:.0f} MiB file "
                     f"(the size of the B-tree's data file), backend "
                     f"`{dev[0]['target_config']['io_backend']}`, O_DIRECT, one read in flight per "
                     "thread (queue depth = threads).")
    return "\n".join(lines)


def ratio_section(runs):
    engine = {}
    for r in runs:
        if kind(r) in ("embedded", "rocksdb"):
            engine[(kind(r), r["workload"], dist(r))] = r
    device = {r["config"]["threads"]: r for r in runs if kind(r) == "device"}
    threads = next((r["config"]["threads"] for r in runs if kind(r) == "embedded" and
                    r["workload"] != "load"), None)
    dev = device.get(threads)
    dev_tput = get(dev, "throughput") if dev else math.nan
    keys = []
    for r in runs:
        if kind(r) == "embedded":
            keys.append((r["workload"], dist(r)))
    out = ["| workload | requests | btree ops/s | RocksDB ops/s | **btree / RocksDB** | "
           "btree p99 / RocksDB p99 | btree / device | RocksDB / device | btree reads/op | "
           "RocksDB reads/op |",
           "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    by_dist = {}
    latest = []
    for w, d in keys:
        b = engine.get(("embedded", w, d))
        k = engine.get(("rocksdb", w, d))
        if not b or not k:
            continue
        rt = ratio(get(b, "throughput"), get(k, "throughput"))
        if d.startswith("latest"):
            latest.append(rt)
        elif w != "load":
            by_dist.setdefault(d, []).append(rt)
        out.append(
            f"| {wl(b)} | {d} | {num(get(b, 'throughput'))} | {num(get(k, 'throughput'))} | "
            f"**{num(rt, '{:.2f}')}** | "
            f"{num(ratio(get(b, 'latency_us', 'p99_us'), get(k, 'latency_us', 'p99_us')), '{:.2f}')} | "
            f"{num(ratio(get(b, 'throughput'), dev_tput) if w != 'load' else math.nan, '{:.2f}')} | "
            f"{num(ratio(get(k, 'throughput'), dev_tput) if w != 'load' else math.nan, '{:.2f}')} | "
            f"{num(get(b, 'io', 'page_reads_per_op'), '{:.2f}')} | "
            f"{num(get(k, 'io', 'page_reads_per_op'), '{:.2f}')} |")
    notes = []
    for d, xs in by_dist.items():
        # D reads 'latest' in both groups, as YCSB defines it.
        notes.append(f"geometric mean of btree / RocksDB over A–F with {d} requests "
                     f"(D: latest): **{geomean(xs + latest):.2f}**")
    text = "\n".join(out)
    if notes:
        text += "\n\n" + "; ".join(notes) + "."
    if device:
        parts = []
        for qd in sorted(device):
            d = device[qd]
            parts.append(f"queue depth {qd}: **{num(get(d, 'throughput'))} reads/s**, p50 "
                         f"{num(get(d, 'latency_us', 'p50_us'), '{:.0f}')} µs, p99 "
                         f"{num(get(d, 'latency_us', 'p99_us'), '{:.0f}')} µs")
        text += ("\n\nThe device ceiling (random 4 KiB reads, same backend, O_DIRECT): "
                 + "; ".join(parts) + ". \"/ device\" divides operations per second by the "
                 f"device's reads per second at queue depth {threads} (= client threads): for "
                 "read-only runs it is the share of the physical ceiling the engine reaches; "
                 "write-heavy runs also pay for fsyncs and page writes, which the read ceiling "
                 "does not include.")
    grpc = [r for r in runs if kind(r) == "grpc" and r["workload"] != "load"]
    noop = [r for r in runs if kind(r) == "grpc-noop"]
    emb_c = engine.get(("embedded", "c", "uniform"))
    if grpc and noop:
        g, n = grpc[0], noop[0]
        text += (f"\n\nOver gRPC (groved, same budget, YCSB C uniform, {g['config']['threads']} "
                 f"threads): **{num(get(g, 'throughput'))} ops/s** against "
                 f"**{num(get(n, 'throughput'))} no-op RPCs/s** (grpc.health.v1 Check on the same "
                 f"server): Grove over gRPC / no-op = "
                 f"**{ratio(get(g, 'throughput'), get(n, 'throughput')):.2f}**")
        if emb_c:
            text += (f"; Grove over gRPC / embedded = "
                     f"**{ratio(get(g, 'throughput'), get(emb_c, 'throughput')):.2f}**")
        text += ("; p50 " + num(get(g, "latency_us", "p50_us"), "{:.0f}") + " µs vs "
                 + num(get(n, "latency_us", "p50_us"), "{:.0f}") + " µs.")
    return text


def runs_table(runs):
    out = ["| target | workload | requests | thr | ops/s | p50 µs | p99 µs | p999 µs | "
           "page reads/op | page writes/op | KiB read/op | KiB written/op | cache hits | "
           "index memory |",
           "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in runs:
        hit = get(r, "cache_hit_ratio")
        mem = get(r, "index", "memory_bytes")
        out.append(
            f"| {r['target']} | {wl(r)} | {dist(r)} | {r['config']['threads']} | "
            f"{num(get(r, 'throughput'))} | {num(get(r, 'latency_us', 'p50_us'), '{:.0f}')} | "
            f"{num(get(r, 'latency_us', 'p99_us'), '{:.0f}')} | "
            f"{num(get(r, 'latency_us', 'p999_us'), '{:.0f}')} | "
            f"{num(get(r, 'io', 'page_reads_per_op'), '{:.3f}')} | "
            f"{num(get(r, 'io', 'page_writes_per_op'), '{:.3f}')} | "
            f"{num(get(r, 'io', 'bytes_read_per_op') / 1024, '{:.2f}')} | "
            f"{num(get(r, 'io', 'bytes_written_per_op') / 1024, '{:.2f}')} | "
            f"{num(hit * 100, '{:.1f}%')} | "
            f"{num(mem / 1024, '{:,.0f} KiB') if mem > 0 else '–'} |")
    return "\n".join(out)


def per_op_table(runs):
    out = ["| target | workload | requests | op | count | ops/s | p50 µs | p99 µs | p999 µs |",
           "|---|---|---|---|--:|--:|--:|--:|--:|"]
    for r in runs:
        ops = r.get("ops_by_type", {})
        if len(ops) < 2:
            continue
        for name, s in ops.items():
            out.append(f"| {r['target']} | {wl(r)} | {dist(r)} | {name} | {s['count']:,} | "
                       f"{num(s['throughput'])} | {s['p50_us']:.0f} | {s['p99_us']:.0f} | "
                       f"{s['p999_us']:.0f} |")
    return "\n".join(out)


def reference_section(runs, commands):
    loads = [r for r in runs if r["workload"] == "load"]
    reads = [r for r in runs if r["workload"] != "load"]
    c = runs[0]["config"]
    lines = [
        "## Reference run: 10M keys",
        "",
        f"{c['records']:,} keys of 8 bytes (big-endian integers 1..{c['records']:,}) with "
        f"{c['value_bytes']}-byte values ({c['data_bytes'] / 2**20:.0f} MiB), cache = 1/"
        f"{1 / c['cache_fraction_of_data']:.0f} of the data "
        f"({c['cache_bytes'] / 2**20:.1f} MiB), direct IO, btree, `wal sync: {c['wal_sync']}`.",
        "",
        "| run | threads | ops/s | seconds | p50 µs | p99 µs | page reads/op | page writes/op | "
        "tree height | inner nodes | leaves | data file |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for r in loads + reads:
        what = ("LOAD through " + ("Db::BulkLoad" if r["config"].get("load_method") == "bulk" else "Put")
                if r["workload"] == "load" else "Get, uniform")
        name = f"{r.get('label', '')}: {what}" if r.get("label") else what
        g = r.get("gauges", {})
        lines.append(
            f"| {name} | {r['config']['threads']} | {num(get(r, 'throughput'))} | "
            f"{num(get(r, 'seconds'), '{:.1f}')} | "
            f"{num(get(r, 'latency_us', 'p50_us'), '{:.0f}') if r['config'].get('load_method') != 'bulk' else '–'} | "
            f"{num(get(r, 'latency_us', 'p99_us'), '{:.0f}') if r['config'].get('load_method') != 'bulk' else '–'} | "
            f"{num(get(r, 'io', 'page_reads_per_op'), '{:.3f}')} | "
            f"{num(get(r, 'io', 'page_writes_per_op'), '{:.3f}')} | "
            f"{num(g.get('index_height'), '{:.0f}')} | "
            f"{num((g.get('index_inner_bytes') or 0) / 2**20, '{:.2f} MiB')} | "
            f"{num(g.get('index_leaf_pages'), '{:,.0f}')} | "
            f"{num((g.get('data_file_bytes') or 0) / 2**20, '{:.0f} MiB')} |")
    lines += ["", "Commands (from the repository root):", "", "```", commands, "```", ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default="docs/bench-data")
    ap.add_argument("--out", default="docs/benchmarks.md")
    args = ap.parse_args()
    suite = load(os.path.join(args.data, "suite.jsonl"))
    reference = load(os.path.join(args.data, "reference-10m.jsonl"))
    parts = [
        "# Benchmarks",
        "",
        "Generated by `make bench` (`scripts/bench-suite.sh`, then `scripts/bench_report.py`) "
        "from the JSON lines in `docs/bench-data/`; do not edit by hand. How the tool works, its "
        "workloads, key sets and targets, and how to run other comparisons: "
        "[grove-bench.md](grove-bench.md).",
        "",
        "All numbers on this page come from one run of the suite on one machine, and every "
        "comparison is a ratio between runs of that one suite. Absolute numbers are specific to "
        "this machine (a small shared virtual machine); the ratios are what to compare.",
        "",
    ]
    if suite:
        parts += [
            "## Machine", "", machine_section(suite), "",
            "## Setup", "", setup_section(suite), "",
            "## Ratios", "", ratio_section(suite), "",
            "## Plots", "",
            "![throughput](img/bench-throughput.png)", "",
            "![latency](img/bench-latency.png)", "",
            "![IO per operation](img/bench-io.png)", "",
            "## Every run", "",
            "Latencies cover all operations of the run; page reads and writes per operation are "
            "the engine's counters over the measured interval (RocksDB: block-cache misses, and "
            "flush + compaction bytes / 4 KiB); KiB read/written per operation are what the "
            "process moved to and from the block device (`/proc/self/io`, so WAL, checkpoint and "
            "compaction IO are included); index memory is the inner nodes (RocksDB: index and "
            "filter blocks).", "",
            runs_table(suite), "",
            "Per operation type:", "",
            per_op_table(suite), "",
            "## Commands", "",
            "From the repository root, after `make bench-build` (Release build in build-bench/); "
            "`make bench` runs exactly these:",
            "", "```", read_text(os.path.join(args.data, "suite-commands.txt")), "```", "",
        ]
    if reference:
        parts.append(reference_section(
            reference, read_text(os.path.join(args.data, "reference-10m-commands.txt"))))
    # Sections other scripts generate (e.g. scripts/bench-shortcut.sh writes shortcut.md), in
    # name order; each carries its own commands.
    # Sorted by stem, so a section's variants (advisor-osm) follow it (advisor).
    names = os.listdir(args.data) if os.path.isdir(args.data) else []
    for name in sorted(names, key=lambda n: os.path.splitext(n)[0]):
        if name.endswith(".md"):
            parts += ["", read_text(os.path.join(args.data, name)), ""]
    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(parts).rstrip() + "\n")


if __name__ == "__main__":
    main()
