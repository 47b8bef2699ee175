#!/usr/bin/python3
"""The advisor's validation section of docs/benchmarks.md (scripts/bench-advisor.sh).

    scripts/advisor_report.py RESULTS ADVICE TIMES COMMANDS [--keys SET --value-size B] \
        > docs/bench-data/advisor.md

RESULTS: grove-bench JSON lines of the truth runs (every candidate on each workload at full
size, in rounds; LOAD lines are skipped), labelled "advisor <workload> round <n>" (or
"advisor <workload>" for one round); a candidate's truth is the mean over its rounds. ADVICE: one `grovectl -o json
advise` object per line, with the workload's name, wall seconds and trace size added. TIMES:
"<workload> truth_seconds S memory BYTES" lines. COMMANDS: the commands that produced them.
Runs whose target is not an advice candidate are references (RocksDB) and the device (a
`device?...` target: random 4 KiB reads), shown beside the candidates but never ranked. --keys
and --value-size name a setting other than the first (dense keys, 100-byte values) in the title.
Every figure comes from those files. Standard library only.
"""

import argparse
import json
import re


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def fmt(v, spec="{:,.0f}"):
    return "–" if v is None else spec.format(v)


def short(target):
    return target.replace("embedded:", "")


def slices(c):
    # How many slices measured a candidate in the advice, and half the distance between its
    # fastest and slowest as a share of its rate (advices from before --slices have none).
    rates = c.get("slice_calls_per_sec")
    if not rates:
        return "–"
    if len(rates) == 1:
        return "1"
    return f"{len(rates)} ±{c.get('slice_spread', 0) * 50:.0f}%"


def main():
    ap = argparse.ArgumentParser()
    for name in ("results", "advice", "times", "commands"):
        ap.add_argument(name)
    ap.add_argument("--keys", default="dense")
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--min-memory", type=int, default=8 << 20)
    args = ap.parse_args()
    results_path, advice_path, times_path, commands_path = (
        args.results, args.advice, args.times, args.commands)
    rounds = {}
    for r in load(results_path):
        if r.get("workload") == "load":
            continue
        name = re.sub(r" round \d+$", "", r.get("label", "").replace("advisor ", "", 1))
        rounds.setdefault(name, {}).setdefault(r["target"], []).append(r)
    # Per workload and candidate: the first run's config, the mean throughput and reads over its
    # rounds, and how far its rounds were apart.
    truth = {}
    n_rounds = 1
    for name, by_target in rounds.items():
        for target, runs in by_target.items():
            n_rounds = max(n_rounds, len(runs))
            tps = [x["throughput"] for x in runs]
            reads = [x.get("io", {}).get("page_reads_per_op") for x in runs]
            reads = [x for x in reads if x is not None]
            truth.setdefault(name, {})[target] = {
                "config": runs[0]["config"],
                "throughput": sum(tps) / len(tps),
                "spread": (max(tps) - min(tps)) / (sum(tps) / len(tps)) if len(tps) > 1 else None,
                "reads": sum(reads) / len(reads) if reads else None,
                "rounds": len(tps),
            }
    advice = {a["workload"]: a for a in load(advice_path)}
    candidates = {c["target"] for a in advice.values() for c in a["candidates"]}
    times = {}
    with open(times_path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3:
                times[parts[0]] = float(parts[2])
    with open(commands_path, encoding="utf-8") as f:
        commands = f.read().strip()

    first_setting = args.keys == "dense" and args.value_size == 100
    out = []
    if first_setting:
        out += ["## The advisor", ""]
    else:
        out += [f"## The advisor, a second setting: {args.keys} keys, {args.value_size}-byte values",
                "",
                "The same validation as [the first](#the-advisor) with another key set and record "
                f"size (`KEYS={args.keys} VALUE={args.value_size} NAME=... make bench-advisor`).",
                ""]
    out += [
        "`grovectl advise` ([grovectl.md](grovectl.md#advise)) checked against the truth on six "
        "workloads built from config/workloads, one per variant's niche and a mixed one "
        "(`make bench-advisor`, scripts/bench-advisor.sh). For each: groved (btree) held the "
        "full data and served the workload over gRPC while `grovectl trace start` sampled it; "
        "the advisor replayed that trace on every candidate with a quarter of the records and of "
        "the memory (the same share of the data; a larger share where a quarter of the memory "
        f"would be under {args.min_memory / 2**20:g} MiB), warmed up for a second and measured "
        "over whole passes of the trace for at least 1.5 s, in slices taken in turns with every "
        "candidate open (`--slices`, four unless a pass took longer); the truth is "
        "every candidate running "
        "the workload itself at full size with the full memory (embedded, bulk loaded, "
        f"`wal.sync: always`, {n_rounds} run{'s' if n_rounds > 1 else ''} each, in turns, "
        "their mean). RocksDB at the same budget and the raw device (random 4 KiB reads, as "
        "many at once as the runs' threads, over a file the size of btree's) ran in every round "
        "beside them, so each ratio has its baseline and ceiling from the same minutes. "
        "Targets: the pick reaches at least 90% of "
        "the best candidate's throughput in the truth runs, and the advice takes at most a tenth "
        "of the truth runs' time.",
        "",
    ]
    if "from an earlier run of this script" in commands:
        out += [
            "The advice below was redone (`TRUTH=0 make bench-advisor`: new traces, new advice) "
            "against the truth runs of an earlier run on the same machine the same day; the truth "
            "runs do not involve the advisor's code.",
            "",
        ]
    out += [
        "| workload | memory / data | trace calls | advice records | advisor's pick "
        "| truth's best | pick / best | best / RocksDB | best's reads / device's "
        "| advice s | truth s | advice / truth | advice / one round |",
        "|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    details = []
    for name, a in advice.items():
        all_runs = truth.get(name, {})
        runs = {t: r for t, r in all_runs.items() if t in candidates}
        refs = {t: r for t, r in all_runs.items()
                if t not in candidates and not t.startswith("device")}
        device = next((r for t, r in all_runs.items() if t.startswith("device")), None)
        if not runs:
            continue
        best_target = max(runs, key=lambda t: runs[t]["throughput"])
        pick = a["recommended"]
        pick_tp = runs.get(pick, {}).get("throughput")
        best_tp = runs[best_target]["throughput"]
        ratio = pick_tp / best_tp if pick_tp else None
        rocks_tp = refs.get("rocksdb", {}).get("throughput")

        def device_share(r):
            # The device reads a run issued per second, as a share of what the device served.
            if not device or r.get("reads") is None:
                return None
            return r["throughput"] * r["reads"] / device["throughput"]
        truth_s = times.get(name)
        cfg = next(iter(runs.values()))["config"]
        share = cfg["cache_bytes"] / cfg["data_bytes"] if cfg.get("data_bytes") else None
        out.append(
            f"| {name} | {fmt(share, '{:.2f}')} | {fmt(a['trace']['calls'])} "
            f"| {fmt(a.get('records'))} | {short(pick)} "
            f"| {short(best_target)} | {fmt(ratio, '{:.2f}')} "
            f"{'(met)' if ratio is not None and ratio >= 0.9 else '(missed)'} "
            f"| {fmt(best_tp / rocks_tp if rocks_tp else None, '{:.2f}')} "
            f"| {fmt(device_share(runs[best_target]), '{:.2f}')} "
            f"| {fmt(a['wall_seconds'], '{:.0f}')} | {fmt(truth_s, '{:.0f}')} "
            f"| {fmt(a['wall_seconds'] / truth_s if truth_s else None, '{:.2f}')} "
            f"| {fmt(a['wall_seconds'] * n_rounds / truth_s if truth_s else None, '{:.2f}')} |")
        # Per workload: the advisor's ranking beside the truth's.
        rank_truth = sorted(runs, key=lambda t: -runs[t]["throughput"])
        d = [f"**{name}** ({a['trace']['calls']:,} traced calls, {a['records']:,} records for "
             f"the advice). {a['why']}", "",
             "| candidate | advice calls/s | advice slices | advice reads/call | truth ops/s "
             "| truth reads/op | truth / best | reads / device's | rounds apart |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        adv = {c["target"]: c for c in a["candidates"]}
        for t in rank_truth:
            r = runs[t]
            c = adv.get(t, {})
            d.append(
                f"| {short(t)}{' (pick)' if t == pick else ''} | {fmt(c.get('calls_per_sec'))} "
                f"| {slices(c)} "
                f"| {fmt(c.get('page_reads_per_call'), '{:.3f}')} | {fmt(r['throughput'])} "
                f"| {fmt(r['reads'], '{:.3f}')} "
                f"| {fmt(r['throughput'] / best_tp, '{:.2f}')} "
                f"| {fmt(device_share(r), '{:.2f}')} "
                f"| {fmt(r['spread'] * 100 if r['spread'] is not None else None, '{:.0f}%')} |")
        for t, r in sorted(refs.items()):
            d.append(
                f"| {short(t)} (reference) | – | – | – | {fmt(r['throughput'])} "
                f"| {fmt(r['reads'], '{:.3f}')} | {fmt(r['throughput'] / best_tp, '{:.2f}')} "
                f"| {fmt(device_share(r), '{:.2f}')} "
                f"| {fmt(r['spread'] * 100 if r['spread'] is not None else None, '{:.0f}%')} |")
        if device:
            d.append(
                f"| device (random 4 KiB reads) | – | – | – | {fmt(device['throughput'])} reads/s "
                f"| 1.000 | – | 1.00 "
                f"| {fmt(device['spread'] * 100 if device['spread'] is not None else None, '{:.0f}%')} |")
        details += d + [""]
    out += [""] + details
    out += ["Commands (from the repository root, after `make bench-build`):", "", "```",
            commands, "```"]
    print("\n".join(out))


if __name__ == "__main__":
    main()
