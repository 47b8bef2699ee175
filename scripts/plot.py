#!/usr/bin/python3
"""PNG charts from grove-bench JSON lines.

    scripts/plot.py RESULTS.jsonl [MORE.jsonl ...] --out docs/img --prefix bench

writes, for the runs in the files:

    <prefix>-throughput.png   ops/s per workload, one bar per target, one panel per distribution
                              (LOAD in its own panel); device runs are drawn as horizontal lines
    <prefix>-latency.png      p99 latency bars with the p50 marked, same layout
    <prefix>-io.png           page reads per op, KiB read per op and KiB written per op
    <prefix>-timeline-N.png   throughput over time for every run with more than one phase

Series are named after the target (and the thread count when a target ran with several).
Needs Debian's python3-matplotlib; everything else is the standard library.
"""

import argparse
import json
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402


def load_runs(paths):
    runs = []
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    runs.append(json.loads(line))
                except json.JSONDecodeError as e:
                    print(f"{path}:{n}: skipped, not JSON ({e})", file=sys.stderr)
    return runs


def target_name(run):
    t = run.get("target", "?")
    if t.startswith("device"):
        return "device"
    if t.startswith("grpc-noop"):
        return "grpc-noop"
    if t.startswith("grpc"):
        return "grpc"
    return t


def series_names(runs):
    """Target name, plus the thread count where one target ran with several."""
    threads = {}
    for r in runs:
        threads.setdefault(target_name(r), set()).add(r["config"]["threads"])
    names = {}
    for r in runs:
        t = target_name(r)
        suffix = f" ({r['config']['threads']} thr)" if len(threads[t]) > 1 else ""
        names[id(r)] = t + suffix
    return names


def panels(runs):
    """Distribution -> workloads in first-seen order; LOAD gets its own panel."""
    order = {}
    for r in runs:
        if target_name(r) == "device":
            continue
        dist = "LOAD" if r["workload"] == "load" else r["distribution"]
        order.setdefault(dist, [])
        if r["workload"] not in order[dist]:
            order[dist].append(r["workload"])
    return order


def value(run, *path):
    v = run
    for p in path:
        if not isinstance(v, dict) or p not in v or v[p] is None:
            return math.nan
        v = v[p]
    return float(v)


def bar_chart(runs, out, metric, ylabel, title, log=True, marker=None, device_lines=True):
    names = series_names(runs)
    layout = panels(runs)
    if not layout:
        return None
    engine_series = []
    for r in runs:
        n = names[id(r)]
        if target_name(r) != "device" and n not in engine_series:
            engine_series.append(n)
    widths = [max(2, len(w)) for w in layout.values()]
    fig, axes = plt.subplots(1, len(layout), figsize=(2.2 + 1.1 * sum(widths), 4.2),
                             gridspec_kw={"width_ratios": widths}, squeeze=False)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, (dist, workloads) in zip(axes[0], layout.items()):
        bar_w = 0.8 / max(1, len(engine_series))
        for si, s in enumerate(engine_series):
            xs, ys, ms = [], [], []
            for wi, w in enumerate(workloads):
                for r in runs:
                    rd = "LOAD" if r["workload"] == "load" else r["distribution"]
                    if names[id(r)] == s and r["workload"] == w and rd == dist:
                        xs.append(wi + (si - (len(engine_series) - 1) / 2) * bar_w)
                        ys.append(metric(r))
                        ms.append(marker(r) if marker else math.nan)
            if xs:
                ax.bar(xs, ys, bar_w, label=s, color=colors[si % len(colors)])
                if marker:
                    ax.plot(xs, ms, "k_", markersize=10)
        if device_lines and dist != "LOAD":
            for di, r in enumerate(x for x in runs if target_name(x) == "device"):
                ax.axhline(metric(r), linestyle="--", linewidth=1,
                           color=colors[(len(engine_series) + di) % len(colors)],
                           label=f"device, QD {r['config']['threads']}")
        ax.set_xticks(range(len(workloads)))
        ax.set_xticklabels([w.upper() if len(w) == 1 else w for w in workloads])
        ax.set_title(dist)
        if log:
            ax.set_yscale("log")
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel(ylabel)
    handles, labels = [], []
    for ax in axes[0]:
        for h, l in zip(*ax.get_legend_handles_labels()):
            if l not in labels:
                handles.append(h)
                labels.append(l)
    fig.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)), frameon=False)
    fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def io_chart(runs, out):
    names = series_names(runs)
    engine = [r for r in runs if target_name(r) not in ("device", "grpc-noop")]
    if not engine:
        return None
    labels = []
    for r in engine:
        w = r["workload"].upper() if len(r["workload"]) == 1 else r["workload"]
        d = r["distribution"][:4] if r["workload"] != "load" else ""
        key = f"{w} {d}".strip()
        if key not in labels:
            labels.append(key)
    series = []
    for r in engine:
        if names[id(r)] not in series:
            series.append(names[id(r)])
    metrics = [("page reads / op", lambda r: value(r, "io", "page_reads_per_op")),
               ("KiB read / op", lambda r: value(r, "io", "bytes_read_per_op") / 1024),
               ("KiB written / op", lambda r: value(r, "io", "bytes_written_per_op") / 1024)]
    fig, axes = plt.subplots(len(metrics), 1, figsize=(max(6, 0.7 * len(labels) + 2), 8),
                             sharex=True)
    bar_w = 0.8 / len(series)
    for ax, (ylabel, f) in zip(axes, metrics):
        for si, s in enumerate(series):
            xs, ys = [], []
            for r in engine:
                if names[id(r)] != s:
                    continue
                w = r["workload"].upper() if len(r["workload"]) == 1 else r["workload"]
                d = r["distribution"][:4] if r["workload"] != "load" else ""
                xs.append(labels.index(f"{w} {d}".strip()) + (si - (len(series) - 1) / 2) * bar_w)
                ys.append(f(r))
            ax.bar(xs, ys, bar_w, label=s)
        ax.set_ylabel(ylabel)
        ax.grid(axis="y", alpha=0.3)
    axes[-1].set_xticks(range(len(labels)))
    axes[-1].set_xticklabels(labels, rotation=45, ha="right")
    axes[0].legend(frameon=False)
    fig.suptitle("IO per operation (device bytes from /proc/self/io, pages from engine counters)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def timeline_charts(runs, out_dir, prefix):
    written = []
    for r in runs:
        if "phases" not in r or "timeline" not in r:
            continue
        n = len(written) + 1
        fig, ax = plt.subplots(figsize=(8, 3.5))
        pts = r["timeline"]
        phases = r["phases"]
        for pi, p in enumerate(phases):
            xs = [t for t, _, ph in pts if ph == pi]
            ys = [v for _, v, ph in pts if ph == pi]
            if xs:
                ax.plot(xs, ys, drawstyle="steps-post", label=f"{pi + 1}: {p['name']}")
        ax.set_xlabel("seconds")
        ax.set_ylabel("ops/s")
        ax.set_title(f"{target_name(r)}: {r['workload']} ({r['description']})")
        ax.grid(alpha=0.3)
        ax.legend(frameon=False, fontsize="small")
        fig.tight_layout()
        path = os.path.join(out_dir, f"{prefix}-timeline-{n}.png")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+", help="grove-bench JSON-lines files")
    ap.add_argument("--out", default=".", help="directory for the PNG files")
    ap.add_argument("--prefix", default="bench", help="file name prefix")
    args = ap.parse_args()
    runs = load_runs(args.results)
    if not runs:
        sys.exit("no runs in " + ", ".join(args.results))
    os.makedirs(args.out, exist_ok=True)
    p = os.path.join(args.out, args.prefix)
    written = [
        bar_chart(runs, p + "-throughput.png", lambda r: value(r, "throughput"), "ops/s (log)",
                  "Throughput"),
        bar_chart(runs, p + "-latency.png", lambda r: value(r, "latency_us", "p99_us"),
                  "µs (log): bar p99, tick p50", "Latency of all operations",
                  marker=lambda r: value(r, "latency_us", "p50_us"), device_lines=False),
        io_chart(runs, p + "-io.png"),
    ]
    written += timeline_charts(runs, args.out, args.prefix)
    for w in written:
        if w:
            print(w)


if __name__ == "__main__":
    main()
