#!/usr/bin/env python3
"""The "AHA-tree" section of docs/benchmarks.md from scripts/bench-aha.sh's JSON lines.

    scripts/aha_report.py docs/bench-data/aha.jsonl docs/bench-data/aha-commands.txt \
        [--img docs/img]

With --img (Debian's python3-matplotlib), also docs/img/aha-timeline.png: ops/s over time of
every target through the load, the hot range searches, the hot writes and the searches after
them, one panel per workload; and docs/img/aha-oscillate.png, the oscillating mix over time.

Tables: throughput per workload and target with aha's ratios to btree and RocksDB, against the
issue's targets; the oscillating mix phase by phase; aha's adaptation (time to converge, steps,
leaves turned into pages, runs probed per search) for the two hotspot sizes; the device's ceiling.

With --part oscillate (scripts/bench-aha.sh's oscillate part, aha-oscillate.jsonl), the section
"AHA-tree: oscillating beyond memory" instead: per hotspot size (5%, 15%, 30%, and the 1% that
fits in memory) the whole oscillation and each phase for aha, btree and RocksDB, with device
reads and writes per operation, the hot-only updates over 30% of the keys, and with --img
docs/img/aha-oscillate-beyond.png, ops/s over time, one panel per hotspot size.
"""
import argparse
import json
import os

WORKLOADS = [
    ("load", "load (random inserts)"),
    ("aha-hot-scan", "hot range search"),
    ("aha-hot-update", "hot-only updates"),
    ("aha-hot-scan-after", "hot range search after the updates"),
    ("oscillate", "oscillating mix (all phases)"),
    ("aha-wide-update", "updates over 30% of the keys"),
]
ORDER = ["embedded:aha", "embedded:aha?split=side", "embedded:aha?insert=tree", "embedded:btree",
         "rocksdb"]
NAMES = {
    "embedded:aha": "aha (down)",
    "embedded:aha?split=side": "aha (side)",
    "embedded:aha?insert=tree": "aha (tree insert)",
    "embedded:btree": "btree",
    "rocksdb": "RocksDB",
}


def load(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def name(target):
    return NAMES.get(target, target)


def gauge(r, key):
    return (r.get("gauges") or {}).get("index." + key)


def stable(r, tail=0.5):
    """Mean ops/s over the last `tail` of the timeline (the stable phase)."""
    tl = r.get("timeline") or []
    if not tl:
        return r["throughput"]
    part = tl[int(len(tl) * (1 - tail)):]
    return sum(p[1] for p in part) / len(part)


def first(r, seconds=5):
    """Mean ops/s over the first seconds (the unstable phase while aha adapts)."""
    tl = [p for p in (r.get("timeline") or []) if p[0] <= seconds]
    if not tl:
        return r["throughput"]
    return sum(p[1] for p in tl) / len(tl)


def throughput_table(runs):
    by = {(r["target"], r["workload"]): r for r in runs if r.get("label") == "aha 1pct"}
    out = ["| workload | " + " | ".join(name(t) for t in ORDER) +
           " | aha / btree | aha / RocksDB | cache hits, device reads per op (" +
           ", ".join(name(t) for t in ORDER) + ") |", "|---|" + "--:|" * (len(ORDER) + 2) + "---|"]
    for w, title in WORKLOADS:
        cells, vals = [], {}
        for t in ORDER:
            r = by.get((t, w))
            if r is None:
                cells.append("-")
                continue
            v = stable(r) if w.startswith("aha-hot-scan") else r["throughput"]
            vals[t] = v
            cells.append(f"{v:,.0f}")
        a, b, k = vals.get("embedded:aha"), vals.get("embedded:btree"), vals.get("rocksdb")
        rb = f"{a / b:.2f}x" if a and b else "-"
        rk = f"{a / k:.2f}x" if a and k else "-"
        io = []
        for t in ORDER:
            r = by.get((t, w))
            if r is None:
                io.append("-")
                continue
            reads = (r.get("io") or {}).get("page_reads_per_op")
            io.append(f"{100 * r.get('cache_hit_ratio', 0):.0f}%"
                      + ("" if reads is None else f" {reads:.2f}"))
        out.append(f"| {title} | " + " | ".join(cells) + f" | {rb} | {rk} | " + ", ".join(io) + " |")
    return "\n".join(out)


def io_of(r):
    return (r.get("io") or {}).get("page_reads_per_op"), r.get("cache_hit_ratio")


def bounds_text(runs):
    """What bounds each line, from the run's own cache and device figures."""
    sel = [r for r in runs if r.get("label") == "aha 1pct"]

    def span(workloads, f):
        vals = [f(r) for r in sel if r["workload"] in workloads and f(r) is not None]
        return (min(vals), max(vals)) if vals else (None, None)
    scans = ("aha-hot-scan", "aha-hot-scan-after")
    hit_lo, _ = span(scans, lambda r: r.get("cache_hit_ratio"))
    _, scan_reads = span(scans, lambda r: io_of(r)[0])
    _, upd_reads = span(("aha-hot-update",), lambda r: io_of(r)[0])
    parts = ["What bounds each line, from the same run's counters:"]
    if hit_lo is not None and scan_reads is not None:
        parts.append(f"the range searches find {100 * hit_lo:.0f}% or more of their pages cached and "
                     f"read at most {scan_reads:.2f} pages from the device per 1000-key search,")
    if upd_reads is not None:
        parts.append(f"the hot updates at most {upd_reads:.2f} pages per operation,")
    parts.append("so both are CPU-bound and their ratios compare code paths (every write also "
                 "appends to the WAL, the same cost for every target). The loads are bound "
                 "by the device for btree (a read and page writes per insert with a tenth of the "
                 "data in memory) and by the CPU and sequential writes for aha and RocksDB "
                 "(memtables, runs written whole). RocksDB's hit ratio counts its own block cache "
                 "only.")
    return " ".join(parts)


def oscillate_table(runs):
    rs = {r["target"]: r for r in runs if r["workload"] == "oscillate" and r.get("phases")}
    if not rs:
        return ""
    phases = max(len(r["phases"]) for r in rs.values())
    out = ["| phase | " + " | ".join(name(t) for t in ORDER if t in rs) + " | aha / btree |",
           "|---|" + "--:|" * (len([t for t in ORDER if t in rs]) + 1)]
    for i in range(phases):
        cells, vals, title = [], {}, ""
        for t in ORDER:
            if t not in rs:
                continue
            ph = rs[t]["phases"]
            if i >= len(ph):
                cells.append("-")
                continue
            title = f"{i + 1}. {ph[i]['name']}"
            vals[t] = ph[i]["throughput"]
            cells.append(f"{vals[t]:,.0f}")
        a, b = vals.get("embedded:aha"), vals.get("embedded:btree")
        out.append(f"| {title} | " + " | ".join(cells) + f" | {a / b:.2f}x |" if a and b else
                   f"| {title} | " + " | ".join(cells) + " | - |")
    return "\n".join(out)


def adaptation_table(runs):
    out = ["| run | hotspot | first 5 s (ops/s) | stable (ops/s) | first adaptation (s) | "
           "adapting in all (s) | adapted leaves | leaf pages | height | runs probed per search |",
           "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|"]
    for r in runs:
        if not r["target"].startswith("embedded:aha") or not r["workload"].startswith("aha-hot-scan"):
            continue
        w = r["workload"]
        size = w.rsplit("-", 1)[1].replace("pct", "%") if w.endswith("pct") else "1%"
        secs = gauge(r, "first_adaptation_seconds")
        total = gauge(r, "adaptation_seconds_total")
        out.append(
            f"| {name(r['target'])} {r['workload']} | {size} | {first(r):,.0f} | {stable(r):,.0f} | "
            f"{'-' if secs is None else f'{secs:.2f}'} | "
            f"{'-' if total is None else f'{total:.2f}'} | {gauge(r, 'adapted_leaves') or 0:.0f} | "
            f"{gauge(r, 'leaf_pages') or 0:.0f} | {(r.get('gauges') or {}).get('index_height', 0):.0f} | "
            f"{gauge(r, 'runs_probed_per_scan') or 0:.2f} |")
    return "\n".join(out)


def device_line(runs):
    dev = [r for r in runs if r["target"].startswith("device")]
    if not dev:
        return ""
    return (f"The device, in the same run: {dev[-1]['throughput']:,.0f} random 4 KiB reads/s at "
            "queue depth 1.")


def timeline_axis(ax, title):
    """The look every ops/s-over-time panel shares."""
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("s")
    ax.set_ylabel("ops/s")
    ax.set_yscale("log")
    ax.grid(True, alpha=0.3)


def plot(runs, out_dir):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sel = [r for r in runs if r.get("label") == "aha 1pct"]
    panels = [(w, t) for w, t in WORKLOADS if w not in ("oscillate", "aha-wide-update")]
    fig, axes = plt.subplots(1, len(panels), figsize=(16, 3.6))
    for ax, (w, title) in zip(axes, panels):
        for t in ORDER:
            rs = [r for r in sel if r["target"] == t and r["workload"] == w]
            if not rs or not rs[-1].get("timeline"):
                continue
            tl = rs[-1]["timeline"]
            ax.plot([p[0] for p in tl], [p[1] for p in tl], label=name(t))
        timeline_axis(ax, title)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(out_dir, "aha-timeline.png")
    fig.savefig(path, dpi=90)
    paths = [path]
    osc = [r for r in sel if r["workload"] == "oscillate" and r.get("timeline")]
    if osc:
        fig, ax = plt.subplots(figsize=(12, 3.6))
        for t in ORDER:
            rs = [r for r in osc if r["target"] == t]
            if rs:
                tl = rs[-1]["timeline"]
                ax.plot([p[0] for p in tl], [p[1] for p in tl], label=name(t))
        timeline_axis(ax, "oscillating mix: 90/10 then 10/90 range search/update, twice, 60 s phases")
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(out_dir, "aha-oscillate.png")
        fig.savefig(path, dpi=90)
        paths.append(path)
    return paths


OSC_WORKLOADS = [("oscillate-5pct", "5%"), ("oscillate-15pct", "15%"), ("oscillate-30pct", "30%"),
                 ("oscillate", "1% (in memory)")]
OSC_ORDER = ["embedded:aha", "embedded:aha?split=side", "embedded:aha?insert=tree", "embedded:btree",
             "rocksdb"]
BASELINES = ["embedded:btree", "rocksdb"]


def ratio_columns(targets):
    """(aha target, baseline) pairs for the ratio columns: each aha setting of the run against each
    baseline in it; a lone aha setting is called "aha" in their headers."""
    ahas = [t for t in targets if t.startswith("embedded:aha")]
    return [(t, b) for t in ahas for b in BASELINES if b in targets], len(ahas) == 1


def ratio_header(pairs, lone):
    return "".join(f" | {'aha' if lone else name(t)} / {name(b)}" for t, b in pairs)


def ratio(a, b):
    return f"{a / b:.2f}x" if a and b else "-"


def io_cell(io):
    """Device page reads and writes per operation, as "reads/writes"."""
    if not io:
        return "-"
    return f"{io.get('page_reads_per_op', 0):.2f}/{io.get('page_writes_per_op', 0):.2f}"


def phase_io(r, i):
    """Device reads and writes per operation in phase i, from the timeline's counter deltas
    (--timeline-counters page_reads,page_writes); None without them."""
    tl, detail = r.get("timeline") or [], r.get("timeline_detail") or []
    reads = writes = ops = 0.0
    prev_t = 0.0
    for point, d in zip(tl, detail):
        dt = point[0] - prev_t
        prev_t = point[0]
        c = d.get("counters")
        if point[2] != i or c is None:
            continue
        reads += c.get("page_reads", 0)
        writes += c.get("page_writes", 0)
        ops += point[1] * dt
    if ops <= 0:
        return None
    return {"page_reads_per_op": reads / ops, "page_writes_per_op": writes / ops}


def oscillate_beyond_tables(runs):
    """One table per hotspot size: the whole oscillation, then each phase."""
    out = []
    by = {(r["target"], r["workload"]): r for r in runs if r.get("label") == "aha oscillate"}
    targets = [t for t in OSC_ORDER if any(k[0] == t for k in by)]
    pairs, lone = ratio_columns(targets)
    for w, size in OSC_WORKLOADS:
        rs = {t: by[(t, w)] for t in targets if (t, w) in by}
        if not rs:
            continue
        out.append(f"**Hotspot {size}** (`config/workloads/{w}.yaml`)\n")
        out.append("| phase | " + " | ".join(name(t) for t in targets) + ratio_header(pairs, lone) +
                   " | device reads/writes per op (" + ", ".join(name(t) for t in targets) + ") |")
        out.append("|---|" + "--:|" * (len(targets) + len(pairs)) + "---|")
        rows = [("whole oscillation", {t: r["throughput"] for t, r in rs.items()},
                 {t: r.get("io") for t, r in rs.items()})]
        phases = max(len(r.get("phases") or []) for r in rs.values())
        for i in range(phases):
            vals, ios, title = {}, {}, ""
            for t, r in rs.items():
                ph = r.get("phases") or []
                if i < len(ph):
                    title = f"{i + 1}. {ph[i]['name']}"
                    vals[t] = ph[i]["throughput"]
                    ios[t] = phase_io(r, i)
            rows.append((title, vals, ios))
        for title, vals, ios in rows:
            cells = [f"{vals[t]:,.0f}" if t in vals else "-" for t in targets]
            ratios = "".join(f" | {ratio(vals.get(t), vals.get(b))}" for t, b in pairs)
            out.append(f"| {title} | " + " | ".join(cells) + ratios + " | " +
                       ", ".join(io_cell(ios.get(t)) for t in targets) + " |")
        out.append("")
    upd = {t: by[(t, "aha-wide-update")] for t in targets if (t, "aha-wide-update") in by}
    if upd:
        tput = {t: r["throughput"] for t, r in upd.items()}
        out.append("Hot-only updates over 30% of the keys (`aha-wide-update.yaml`, 20 s): " +
                   ", ".join(f"{name(t)} {r['throughput']:,.0f} ops/s ({io_cell(r.get('io'))} "
                             "device reads/writes per op)" for t, r in upd.items()) + "; " +
                   ", ".join(f"{'aha' if lone else name(t)} / {name(b)} "
                             f"{ratio(tput.get(t), tput.get(b))}" for t, b in pairs) + ".\n")
    return "\n".join(out)


def oscillate_bounds(runs):
    """Which resource bounds each target on each hotspot: the device when its page reads per
    second come near the device's random-read ceiling measured in the run, else the CPU."""
    dev = [r for r in runs if r["target"].startswith("device")]
    if not dev:
        return ""
    ceiling = dev[-1]["throughput"]
    parts = []
    for w, size in OSC_WORKLOADS:
        cells = []
        for t in OSC_ORDER:
            r = next((r for r in runs if r["target"] == t and r["workload"] == w), None)
            if r is None:
                continue
            per_s = (r.get("io") or {}).get("page_reads_per_op", 0) * r["throughput"]
            what = "the device" if per_s >= 0.5 * ceiling else "the CPU"
            cells.append(f"{name(t)} {what} ({per_s:,.0f} page reads/s)")
        if cells:
            parts.append(f"{size}: " + ", ".join(cells))
    return ("What bounds each target over the whole oscillation, from its device page reads per "
            f"second against the ceiling of {ceiling:,.0f} random reads/s measured in this run "
            "(at least half of it: the device; reads run ahead in batches, so a target can pass "
            "the queue-depth-1 ceiling; aha's and RocksDB's include their compactions' sequential "
            "reads, so for them the device is an upper estimate): " + "; ".join(parts) + ".\n")


def plot_beyond(runs, out_dir, name_):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    sel = [r for r in runs if r.get("label") == "aha oscillate"]
    panels = [(w, s) for w, s in OSC_WORKLOADS if any(r["workload"] == w for r in sel)]
    if not panels:
        return []
    fig, axes = plt.subplots(len(panels), 1, figsize=(12, 2.6 * len(panels)), squeeze=False)
    for ax, (w, size) in zip(axes[:, 0], panels):
        for t in OSC_ORDER:
            rs = [r for r in sel if r["target"] == t and r["workload"] == w and r.get("timeline")]
            if rs:
                tl = rs[-1]["timeline"]
                ax.plot([p[0] for p in tl], [p[1] for p in tl], label=name(t))
        timeline_axis(ax, f"hotspot {size}: 90/10 then 10/90 range search/update, twice")
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(out_dir, f"{name_}-beyond.png" if name_ == "aha-oscillate" else f"{name_}.png")
    fig.savefig(path, dpi=90)
    return [path]


def main_oscillate(runs, a):
    cfg = next((r["config"] for r in runs if r["workload"] == "load"), {})
    names = [name(t) for t in OSC_ORDER if any(r["target"] == t for r in runs)]
    present = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else "".join(names)
    print(f"## {a.title}\n")
    print(f"`PARTS=oscillate make bench-aha` (scripts/bench-aha.sh): {cfg.get('records', '?'):,} "
          f"records of {cfg.get('value_bytes', '?')}-byte values with `{cfg.get('key_set', '?')}` "
          f"keys loaded by random inserts, memory {cfg.get('cache_bytes', 0) / 1048576:.1f} MiB "
          f"({cfg.get('cache_fraction_of_data', 0):.0%} of the data), one thread, direct "
          "IO, `wal.sync: none`, " + present + " in the same run, each loaded once and then "
          "run through the oscillations in this order. An oscillation is 90% range searches of "
          "1000 keys and 10% updates, then 10/90, twice, each phase on a hotspot at a new random "
          "start; the paper's regime is a hot range larger than the memory (5%, 15%, 30% of the "
          "data), the 1% one fits. Phases last 30 s (the 1%'s 60 s), the paper's 300. Hotspots "
          "in this run: " + ", ".join(size for w, size in OSC_WORKLOADS
                                      if any(r["workload"] == w for r in runs)) + ".\n")
    print(oscillate_beyond_tables(runs))
    line = device_line(runs)
    if line:
        print(line + "\n")
        print(oscillate_bounds(runs))
    if a.img:
        for path in plot_beyond(runs, a.img, a.name):
            print(f"![ops/s over time]({os.path.relpath(path, 'docs')})\n")
    print("Commands:\n\n```")
    print(open(a.commands).read().strip())
    print("```\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("commands")
    ap.add_argument("--img")
    ap.add_argument("--part", choices=["hot", "oscillate"], default="hot")
    ap.add_argument("--title", default="AHA-tree: oscillating beyond memory")
    ap.add_argument("--name", default="aha-oscillate", help="the plot's file name, without .png")
    a = ap.parse_args()
    runs = load(a.results)
    if a.part == "oscillate":
        main_oscillate(runs, a)
        return
    cfg = next((r["config"] for r in runs if r["workload"] == "load"), {})
    print("## AHA-tree: adapting to a hot range\n")
    print(f"`make bench-aha` (scripts/bench-aha.sh): {cfg.get('records', '?'):,} records of "
          f"{cfg.get('value_bytes', '?')}-byte values loaded by random inserts, then range searches "
          "of 1000 keys with 99% on a 1% hotspot, updates on the hotspot only, and the searches "
          f"again; memory {cfg.get('cache_bytes', 0) / 1048576:.1f} MiB (a tenth of the data), "
          "one thread, direct IO, `wal.sync: none`, every target in the same run. Range-search "
          "figures are the stable phase (the last half of the workload); aha's first seconds are "
          "in the adaptation table.\n")
    print(throughput_table(runs) + "\n")
    print(bounds_text(runs) + "\n")
    osc = oscillate_table(runs)
    if osc:
        print("The oscillating mix (config/workloads/oscillate.yaml: 90% range searches and 10% "
              "updates, then 10/90, twice, each phase 60 s on a 1% hotspot at a new random start; "
              "aha must detect each new hotspot from the searches), phase by phase:\n")
        print(osc + "\n")
    print(adaptation_table(runs) + "\n")
    line = device_line(runs)
    if line:
        print(line + "\n")
    if a.img:
        for path in plot(runs, a.img):
            print(f"![ops/s over time]({os.path.relpath(path, 'docs')})\n")
    print("Commands:\n\n```")
    print(open(a.commands).read().strip())
    print("```\n")


if __name__ == "__main__":
    main()
