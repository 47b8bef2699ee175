#!/usr/bin/env python3
"""Tables of `make bench-scale` (scripts/bench-scale.sh): docs/bench-data/scale.md's figures.

    scripts/scale_report.py docs/bench-data/scale.jsonl docs/bench-data/scale-disk.jsonl \
        [docs/bench-data/scale-admin.jsonl]

Prints Markdown: load, cold Get beside the device, YCSB E, durable inserts beside RocksDB, open and
recovery, peak memory per step, the engine's fixed structures per record, and (from the admin
lines) the online backup and its restore. Where a step ran more
than once for a size and engine, the last run counts.
"""
import json
import sys

MIB = 1 << 20


def engine_of(j):
    t = j["target"]
    if t.startswith("embedded:"):
        return t.split(":", 1)[1].split("?")[0]
    if t.startswith("device"):
        return "device"
    return t.split("?")[0]


def load(paths):
    """Runs and disk lines by (records, engine, step); a device run is filed under the engine
    whose run came right before it in the file (bench-scale measures the device after each of an
    engine's Get steps)."""
    runs = {}
    disk = {}
    device = {}
    admin = {}
    for path in paths:
        last_engine = None
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                j = json.loads(line)
                if j.get("step") == "admin":
                    admin[(int(j["records"]), j["engine"])] = j
                    continue
                if "disk_bytes" in j:
                    disk[(int(j["records"]), j["engine"], j["step"])] = j
                    continue
                label = j.get("label", "")
                if not label.startswith("scale:"):
                    continue
                _, records, step = label.split(":", 2)
                e = engine_of(j)
                if e == "device":
                    device[(int(float(records)), last_engine, step)] = j
                else:
                    last_engine = e
                    runs[(int(float(records)), e, step)] = j
    return runs, disk, device, admin


def thread_counts(runs, prefix):
    """The N of every step named PREFIX-tN, ascending."""
    return sorted({int(k[2].split("-t")[1]) for k in runs if k[2].startswith(prefix + "-t")})


def size(n):
    e = len(str(n)) - 1
    return f"10^{e}" if n == 10 ** e else f"{n:,}"


def fmt(x, digits=0):
    if x is None:
        return "–"
    if digits == 0:
        return f"{x:,.0f}"
    return f"{x:,.{digits}f}"


def ratio(a, b):
    return fmt(a / b, 2) if a and b else "–"


def p(j, op, q):
    return j["ops_by_type"].get(op, {}).get(q) if j else None


def main():
    runs, disk, device, admin = load(sys.argv[1:])
    sizes = sorted({k[0] for k in runs})
    engines = [e for e in ("btree", "hln", "rocksdb") if any(k[1] == e for k in runs)]

    def g(records, engine, step):
        return runs.get((records, engine, step))

    out = []
    w = out.append
    w("### Load\n")
    w("| records | engine | records/s | peak RSS MiB | bytes on disk / record | ÷ RocksDB |")
    w("|---|---|--:|--:|--:|--:|")
    for n in sizes:
        rocks = disk.get((n, "rocksdb", "load"))
        for e in engines:
            j = g(n, e, "load")
            d = disk.get((n, e, "load"))
            if not j:
                continue
            per = d["disk_bytes"] / n if d else None
            rper = rocks["disk_bytes"] / n if rocks else None
            w(f"| {size(n)} | {e} | {fmt(j['throughput'])} | "
              f"{fmt(j['memory']['peak_rss_bytes'] / MIB)} | {fmt(per, 1)} | "
              f"{ratio(per, rper) if e != 'rocksdb' else '–'} |")
    w("")
    w("### Cold Get, uniform, beside the device at the same queue depth\n")
    threads = thread_counts(runs, "get")
    head = " | ".join(f"t{t} Get/s | ÷ device" for t in threads)
    w(f"| records | engine | {head} | pages read / Get (t1) |")
    w("|---|---|" + "--:|--:|" * len(threads) + "--:|")
    for n in sizes:
        for e in engines:
            cells = []
            any_run = False
            for t in threads:
                j = g(n, e, f"get-t{t}")
                dv = device.get((n, e, f"device-t{t}"))
                any_run |= j is not None
                cells.append(f"{fmt(j['throughput'] if j else None)} | "
                             f"{ratio(j['throughput'] if j else None, dv['throughput'] if dv else None)}")
            if not any_run:
                continue
            j1 = g(n, e, f"get-t{threads[0]}")
            reads = j1.get("io", {}).get("page_reads_per_op") if j1 else None
            w(f"| {size(n)} | {e} | " + " | ".join(cells) + f" | {fmt(reads, 2)} |")
    w("")
    w("### YCSB E uniform (16 threads) and durable inserts (wal.sync always)\n")
    ins = thread_counts(runs, "ins")
    head = " | ".join(f"t{t} inserts/s | ÷ RocksDB | p999 ms | ÷ RocksDB" for t in ins)
    w(f"| records | engine | E ops/s | {head} | checkpoint p99 s (t16) | writers' pause p99 ms (t16) |")
    w("|---|---|--:|" + "--:|--:|--:|--:|" * len(ins) + "--:|--:|")
    for n in sizes:
        for e in engines:
            je = g(n, e, "e")
            cells = []
            for t in ins:
                j = g(n, e, f"ins-t{t}")
                r = g(n, "rocksdb", f"ins-t{t}")
                p999 = p(j, "insert", "p999_us")
                rp999 = p(r, "insert", "p999_us")
                cells.append(
                    f"{fmt(j['throughput'] if j else None)} | "
                    f"{ratio(j['throughput'] if j else None, r['throughput'] if r else None) if e != 'rocksdb' else '–'} | "
                    f"{fmt(p999 / 1000 if p999 else None, 1)} | "
                    f"{ratio(p999, rp999) if e != 'rocksdb' else '–'}")
            j16 = g(n, e, f"ins-t{ins[-1]}") if ins else None
            gauges = j16.get("gauges", {}) if j16 else {}
            ck = gauges.get("checkpoint_p99_seconds")
            pause = gauges.get("checkpoint_pause_p99_seconds")  # builds from 8354a44 on
            pause_ms = fmt(pause * 1000, 0) if pause is not None and e != "rocksdb" else "–"
            w(f"| {size(n)} | {e} | {fmt(je['throughput'] if je else None)} | " + " | ".join(cells) +
              f" | {fmt(ck, 2) if e != 'rocksdb' else '–'} | {pause_ms} |")
    w("")
    w("### Open, recovery and memory\n")
    w("| records | engine | clean open s | recovery s | records replayed | peak RSS MiB (max over steps) | epoch table B/record | allocator B/record | index inner B/record | index model B/record |")
    w("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for n in sizes:
        for e in engines:
            steps = {k[2]: v for k, v in runs.items() if k[0] == n and k[1] == e}
            if not steps:
                continue
            first_get = next((steps[s] for s in (f"get-t{t}" for t in threads) if s in steps), None)
            rec = steps.get("recover")
            peak = max(v["memory"]["peak_rss_bytes"] for s, v in steps.items() if s != "crash-load")
            peak = max([peak] + [v["target_open"]["peak_rss_bytes"] for v in steps.values()])
            gg = (first_get or {}).get("gauges", {})

            def per(key):
                v = gg.get(key)
                return fmt(v / n, 3) if v is not None else "–"
            replayed = rec.get("gauges", {}).get("recovery_replayed_records") if rec else None
            w(f"| {size(n)} | {e} | {fmt(first_get['target_open']['seconds'] if first_get else None, 2)} | "
              f"{fmt(rec['target_open']['seconds'] if rec else None, 2)} | {fmt(replayed)} | "
              f"{fmt(peak / MIB)} | {per('memory_epoch_table_bytes')} | "
              f"{per('memory_allocator_bytes')} | {per('index_inner_bytes')} | "
              f"{per('index_model_bytes')} |")
    if admin:
        w("")
        w("### Online backup and restore\n")
        w("| records | engine | online verify s (pages preserved) | backup s | backup MiB/s | "
          "pages preserved | restore: checksums s | copy s | open s (records replayed) | "
          "verify s | pages verified |")
        w("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for n in sizes:
            for e in engines:
                a = admin.get((n, e))
                if not a:
                    continue
                b, r = a["backup"], a["restore"]
                mib_s = (b["data_bytes"] + b["wal_bytes"]) / MIB / b["seconds"] if b["seconds"] else None
                v = a.get("verify")
                online = (f"{fmt(v['seconds'], 1)} ({fmt(v['pages_preserved'])})" if v else "–")
                w(f"| {size(n)} | {e} | {online} | {fmt(b['seconds'], 1)} | {fmt(mib_s)} | "
                  f"{fmt(b['pages_preserved'])} | {fmt(r['check_seconds'], 1)} | "
                  f"{fmt(r['copy_seconds'], 1)} | {fmt(r['open_seconds'], 1)} "
                  f"({fmt(r['replayed_records'])}) | {fmt(r['verify_seconds'], 1)} | "
                  f"{fmt(r['pages_checked'])} |")
    print("\n".join(out))


if __name__ == "__main__":
    main()
