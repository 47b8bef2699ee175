#!/usr/bin/env python3
"""Tables and plots of the SHORTCUT runs (scripts/bench-shortcut.sh) for docs/benchmarks.md.

    scripts/shortcut_report.py docs/bench-data/shortcut.jsonl [--img docs/img] [--variant hln]

Prints Markdown to stdout and writes docs/img/shortcut-*.png (Debian's python3-matplotlib).
With --variant hln it reads the runs labelled "shortcut-hln ..." and names its plot
shortcut-hln-p50-ratio.png.
"""
import argparse
import json
import os
import re
from collections import defaultdict


def load(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def param(run, name, default=""):
    m = re.search(r"[?&]" + name + r"=([^&]+)", run["target"])
    return m.group(1) if m else default


def label_of(run):
    return run.get("label") or run["config"].get("label", "")


def levels(run):
    c = run["counters"]
    out = []
    for l in range(8):
        p = c.get(f"prefetch_level{l}_predictions")
        if p is None:
            break
        out.append(c[f"prefetch_level{l}_correct"] / p if p else 0.0)
    return out


def fmt(v, d=1):
    return f"{v:.{d}f}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("jsonl", nargs="+")
    ap.add_argument("--img", default="docs/img")
    ap.add_argument("--variant", default="btree")
    a = ap.parse_args()
    tag = "shortcut" if a.variant == "btree" else f"shortcut-{a.variant}"
    runs = [r for path in a.jsonl if os.path.exists(path) for r in load(path)]
    cache = None
    matrix = defaultdict(dict)  # (share, workload, dist, threads) -> prefetch -> run
    for r in runs:
        lab = label_of(r)
        if lab.startswith(f"{tag} share="):
            s = int(lab.split("=")[1])
            key = (s, r["workload"], r["distribution"].split("(")[0], r["config"]["threads"])
            matrix[key][param(r, "prefetch", "none")] = r
            cache = r["config"]["cache_bytes"]
    load_run = next((r for r in runs if label_of(r) == f"{tag} load"), None)

    print(f"| inner nodes cached | workload | thr | {a.variant} p50 / p95 / p99 µs | ops/s | "
          "shortcut p50 / p95 / p99 µs | ops/s | BASE p50 / p95 / p99 µs | ops/s | "
          f"shortcut p50 ÷ {a.variant} |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ratios = defaultdict(dict)
    for key in sorted(matrix):
        s, w, d, t = key
        row = matrix[key]
        cells = []
        for p in ("none", "shortcut", "shortcut_base"):
            r = row.get(p)
            if r is None:
                cells += ["–", "–"]
                continue
            lat = r["latency_us"]
            cells += [f"{fmt(lat['p50_us'])} / {fmt(lat['p95_us'])} / {fmt(lat['p99_us'])}",
                      f"{r['throughput']:.0f}"]
        ratio = "–"
        if "none" in row and "shortcut" in row:
            q = row["shortcut"]["latency_us"]["p50_us"] / row["none"]["latency_us"]["p50_us"]
            ratio = f"{q:.2f}"
            ratios[(w, d, t)][s] = q
        print(f"| {s}% | {w.upper()} {d} | {t} | " + " | ".join(cells) + f" | {ratio} |")

    print()
    print("| inner nodes cached | workload | thr | prediction | accuracy by level (leaf first) | "
          "page reads / op | KiB read / op | prefetches issued / op | wasted / op | "
          "model + map bytes | % of cache |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted(matrix):
        s, w, d, t = key
        for p in ("none", "shortcut", "shortcut_base"):
            r = matrix[key].get(p)
            if r is None:
                continue
            ops = max(1, r["ops"])
            c = r["counters"]
            acc = " / ".join(f"{x:.2f}" for x in levels(r)) or "–"
            model = r["gauges"].get("index_model_bytes", 0)
            print(f"| {s}% | {w.upper()} {d} | {t} | {p} | {acc} | "
                  f"{r['io']['page_reads_per_op']:.2f} | {r['io']['bytes_read_per_op'] / 1024:.2f} | "
                  f"{c.get('prefetch_issued', 0) / ops:.2f} | {c.get('prefetch_wasted', 0) / ops:.2f} | "
                  f"{model:.0f} | {100 * model / cache:.3f} |")

    if load_run:
        g = load_run["gauges"]
        print()
        print(f"Tree after the load: height {g.get('index_height', 0):.0f}, "
              f"{g.get('index_inner_pages', 0):.0f} inner pages "
              f"({g.get('index_inner_bytes', 0) / 2**20:.2f} MiB), "
              f"{g.get('index_leaf_pages', 0):.0f} leaf pages; cache {cache / 2**20:.0f} MiB.")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    os.makedirs(a.img, exist_ok=True)
    if ratios:
        fig, ax = plt.subplots(figsize=(7, 4))
        for (w, d, t), by_share in sorted(ratios.items()):
            xs = sorted(by_share)
            ax.plot(xs, [by_share[x] for x in xs], marker="o", label=f"{w.upper()} {d}, {t} thr")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xlabel("inner nodes the cache may hold (%)")
        ax.set_ylabel(f"p50 latency, shortcut ÷ plain {a.variant}")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(a.img, f"{tag}-p50-ratio.png"), dpi=110)

    ins = [r for r in runs if label_of(r).startswith("shortcut insert-heavy")
           and r["workload"] != "load" and r.get("timeline_detail")]
    if ins:
        fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(7, 6), sharex=True)
        for r in ins:
            upd = label_of(r).split("update=")[1]
            pts = r["timeline_detail"]
            ts = [p["t"] for p in pts]
            ax1.plot(ts, [p["p50_us"] for p in pts], label=f"p50, update={upd}")
            acc = []
            for p in pts:
                c = p.get("counters", {})
                n = c.get("prefetch_level0_predictions", 0)
                acc.append(c.get("prefetch_level0_correct", 0) / n if n else float("nan"))
            ax2.plot(ts, acc, label=f"leaf-level accuracy, update={upd}")
        ax1.set_ylabel("µs")
        ax2.set_ylabel("accuracy")
        ax2.set_xlabel("seconds")
        ax1.legend(fontsize=8)
        ax2.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(a.img, "shortcut-insert-heavy.png"), dpi=110)
        print()
        print("| insert-heavy run | ops/s | p50 / p95 / p99 µs | leaf accuracy first 10 s → "
              "last 10 s | retrains |")
        print("|---|---|---|---|---|")
        for r in ins:
            upd = label_of(r).split("update=")[1]
            pts = r["timeline_detail"]

            def acc(sel):
                n = sum(p.get("counters", {}).get("prefetch_level0_predictions", 0) for p in sel)
                k = sum(p.get("counters", {}).get("prefetch_level0_correct", 0) for p in sel)
                return k / n if n else 0.0
            first = [p for p in pts if p["t"] <= 10]
            last = [p for p in pts if p["t"] > pts[-1]["t"] - 10]
            lat = r["latency_us"]
            print(f"| update={upd} | {r['throughput']:.0f} | {fmt(lat['p50_us'])} / "
                  f"{fmt(lat['p95_us'])} / {fmt(lat['p99_us'])} | {acc(first):.2f} → "
                  f"{acc(last):.2f} | {r['gauges'].get('index.shortcut_retrains_total', 0):.0f} |")


if __name__ == "__main__":
    main()
