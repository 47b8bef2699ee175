#!/usr/bin/env python3
"""Plots of `make bench-scale`: how each cost grows from 10^7 to 10^9 records (docs/img/scale.png).

    python3 scripts/scale_plot.py docs/bench-data/scale.jsonl docs/bench-data/scale-disk.jsonl \
        docs/bench-data/scale-admin.jsonl [--out docs/img/scale.png]

Six panels over the number of records (log scale), one line per engine: bulk load rate; cold Get
÷ the device at 1 and 16 threads; durable inserts and their p999, each ÷ RocksDB's, at 16
threads; clean open and recovery; online verify, backup and restore; the peak resident set over
every step against the budget's target. The figures are scale_report.py's (the last run of each
step counts). Needs matplotlib (python3-matplotlib).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale_report import MIB, load, p  # noqa: E402

COLORS = {"btree": "tab:blue", "hln": "tab:green", "rocksdb": "tab:red"}
BUDGET_TARGET_MIB = 1024 * 1.1 + 64  # the bound for a 1 GiB budget


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", default="docs/img/scale.png")
    args = ap.parse_args()
    runs, disk, device, admin = load(args.files)
    sizes = sorted({k[0] for k in runs})
    engines = [e for e in ("btree", "hln", "rocksdb") if any(k[1] == e for k in runs)]

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    ax = axes.flat

    def series(engine, value):
        xs, ys = [], []
        for n in sizes:
            v = value(n, engine)
            if v is not None:
                xs.append(n)
                ys.append(v)
        return xs, ys

    def line(a, engine, value, style="-", label=None):
        xs, ys = series(engine, value)
        if xs:
            a.plot(xs, ys, style, marker="o", color=COLORS[engine], label=label or engine)

    def run(n, e, step):
        return runs.get((n, e, step))

    # Bulk load.
    for e in engines:
        line(ax[0], e, lambda n, e: (run(n, e, "load") or {}).get("throughput", 0) / 1e6 or None)
    ax[0].axhline(5, color="grey", ls=":", label="target 5M/s")
    ax[0].set_title("bulk load, M records/s")

    # Cold Get beside the device.
    for e in engines:
        for t, style in ((1, "-"), (16, "--")):
            def get_ratio(n, e, t=t):
                j, d = run(n, e, f"get-t{t}"), device.get((n, e, f"device-t{t}"))
                return j["throughput"] / d["throughput"] if j and d else None
            line(ax[1], e, get_ratio, style, f"{e} t{t}")
    ax[1].axhline(0.9, color="grey", ls=":", label="target 0.9x")
    ax[1].set_yscale("log")
    ax[1].set_title("cold Get ÷ the device (t1 solid, t16 dashed)")

    # Durable inserts at 16 threads beside RocksDB.
    for e in (x for x in engines if x != "rocksdb"):
        def ins_ratio(n, e):
            j, r = run(n, e, "ins-t16"), run(n, "rocksdb", "ins-t16")
            return j["throughput"] / r["throughput"] if j and r else None

        def p999_ratio(n, e):
            j, r = run(n, e, "ins-t16"), run(n, "rocksdb", "ins-t16")
            a, b = p(j, "insert", "p999_us"), p(r, "insert", "p999_us")
            return a / b if a and b else None
        line(ax[2], e, ins_ratio, "-", f"{e} inserts/s")
        line(ax[2], e, p999_ratio, "--", f"{e} p999")
    ax[2].axhline(1.0, color="grey", ls=":", label="inserts target 1.0x")
    ax[2].axhline(2.0, color="grey", ls="-.", label="p999 bound 2x")
    ax[2].set_title("durable inserts at 16 threads ÷ RocksDB")

    # Open and recovery.
    for e in engines:
        line(ax[3], e, lambda n, e: (run(n, e, "get-t1") or {}).get("target_open", {}).get("seconds"),
             "--", f"{e} clean open")
        line(ax[3], e, lambda n, e: (run(n, e, "recover") or {}).get("target_open", {}).get("seconds"),
             "-", f"{e} recovery")
    ax[3].set_yscale("log")
    ax[3].set_title("clean open (dashed) and recovery after kill -9, s")

    # Online verify, backup and restore.
    for e in (x for x in engines if x != "rocksdb"):
        def adm(key):
            def f(n, e):
                a = admin.get((n, e))
                if not a:
                    return None
                if key == "verify":
                    return a.get("verify", {}).get("seconds")
                if key == "backup":
                    return a["backup"].get("seconds")
                return a.get("restore_wall_seconds")
            return f
        line(ax[4], e, adm("verify"), ":", f"{e} online verify")
        line(ax[4], e, adm("backup"), "-", f"{e} backup")
        line(ax[4], e, adm("restore"), "--", f"{e} restore")
    ax[4].set_yscale("log")
    ax[4].set_title("online verify, backup and restore, s")

    # Peak resident set over every step.
    for e in engines:
        def peak(n, e):
            steps = [v for k, v in runs.items() if k[0] == n and k[1] == e]
            vals = [s.get("memory", {}).get("peak_rss_bytes") for s in steps]
            vals = [v for v in vals if v]
            return max(vals) / MIB if vals else None
        line(ax[5], e, peak)
    ax[5].axhline(BUDGET_TARGET_MIB, color="grey", ls=":", label="budget + 10% + 64 MiB")
    ax[5].set_title("peak RSS over every step, MiB (1 GiB budget)")

    for a in ax:
        a.set_xscale("log")
        a.set_xlabel("records")
        a.grid(True, which="both", alpha=0.3)
        a.legend(fontsize=7)
    fig.tight_layout()
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    fig.savefig(args.out, dpi=100)
    print(f"scale_plot: {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
