#!/usr/bin/python3
"""The advisor's validation section of docs/benchmarks.md (scripts/bench-advisor.sh).

    scripts/advisor_report.py RESULTS ADVICE TIMES COMMANDS > docs/bench-data/advisor.md

RESULTS: grove-bench JSON lines of the truth runs (every candidate on each workload at full
size, in rounds; LOAD lines are skipped), labelled "advisor <workload> round <n>" (or
"advisor <workload>" for one round); a candidate's truth is the mean over its rounds. ADVICE: one `grovectl -o json
advise` object per line, with the workload's name, wall seconds and trace size added. TIMES:
"<workload> truth_seconds S memory BYTES" lines. COMMANDS: the commands that produced them.
Every figure comes from those files. Standard library only.
"""

import json
import re
import sys


def load(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def fmt(v, spec="{:,.0f}"):
    return "–" if v is None else spec.format(v)


def short(target):
    return target.replace("embedded:", "")


def main():
    results_path, advice_path, times_path, commands_path = sys.argv[1:5]
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
    times = {}
    with open(times_path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3:
                times[parts[0]] = float(parts[2])
    with open(commands_path, encoding="utf-8") as f:
        commands = f.read().strip()

    out = []
    out += ["## The advisor", ""]
    out += [
        "`grovectl advise` ([grovectl.md](grovectl.md#advise)) checked against the truth on six "
        "workloads built from config/workloads, one per variant's niche and a mixed one "
        "(`make bench-advisor`, scripts/bench-advisor.sh). For each: groved (btree) held the "
        "full data and served the workload over gRPC while `grovectl trace start` sampled it; "
        "the advisor replayed that trace on every candidate with a quarter of the records and of "
        "the memory (the same share of the data; a larger share where a quarter of the memory "
        "would be under 4 MiB, the smallest budget every candidate runs at), warmed up for a "
        "second and measured over whole passes of the trace for at least 1.5 s; the truth is "
        "every candidate running "
        "the workload itself at full size with the full memory (embedded, bulk loaded, "
        f"`wal.sync: always`, {n_rounds} run{'s' if n_rounds > 1 else ''} each, in turns, "
        "their mean). Targets: the pick reaches at least 90% of "
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
        "| truth's best | pick / best | advice s | truth s | advice / truth | advice / one round |",
        "|---|---:|---:|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    details = []
    for name, a in advice.items():
        runs = truth.get(name, {})
        if not runs:
            continue
        best_target = max(runs, key=lambda t: runs[t]["throughput"])
        pick = a["recommended"]
        pick_tp = runs.get(pick, {}).get("throughput")
        best_tp = runs[best_target]["throughput"]
        ratio = pick_tp / best_tp if pick_tp else None
        truth_s = times.get(name)
        cfg = next(iter(runs.values()))["config"]
        share = cfg["cache_bytes"] / cfg["data_bytes"] if cfg.get("data_bytes") else None
        out.append(
            f"| {name} | {fmt(share, '{:.2f}')} | {fmt(a['trace']['calls'])} "
            f"| {fmt(a.get('records'))} | {short(pick)} "
            f"| {short(best_target)} | {fmt(ratio, '{:.2f}')} "
            f"{'(met)' if ratio is not None and ratio >= 0.9 else '(missed)'} "
            f"| {fmt(a['wall_seconds'], '{:.0f}')} | {fmt(truth_s, '{:.0f}')} "
            f"| {fmt(a['wall_seconds'] / truth_s if truth_s else None, '{:.2f}')} "
            f"| {fmt(a['wall_seconds'] * n_rounds / truth_s if truth_s else None, '{:.2f}')} |")
        # Per workload: the advisor's ranking beside the truth's.
        rank_truth = sorted(runs, key=lambda t: -runs[t]["throughput"])
        d = [f"**{name}** ({a['trace']['calls']:,} traced calls, {a['records']:,} records for "
             f"the advice). {a['why']}", "",
             "| candidate | advice calls/s | advice reads/call | truth ops/s | truth reads/op "
             "| truth / best | rounds apart |",
             "|---|---:|---:|---:|---:|---:|---:|"]
        adv = {c["target"]: c for c in a["candidates"]}
        for t in rank_truth:
            r = runs[t]
            c = adv.get(t, {})
            d.append(
                f"| {short(t)}{' (pick)' if t == pick else ''} | {fmt(c.get('calls_per_sec'))} "
                f"| {fmt(c.get('page_reads_per_call'), '{:.3f}')} | {fmt(r['throughput'])} "
                f"| {fmt(r['reads'], '{:.3f}')} "
                f"| {fmt(r['throughput'] / best_tp, '{:.2f}')} "
                f"| {fmt(r['spread'] * 100 if r['spread'] is not None else None, '{:.0f}%')} |")
        details += d + [""]
    out += [""] + details
    out += ["Commands (from the repository root, after `make bench-build`):", "", "```",
            commands, "```"]
    print("\n".join(out))


if __name__ == "__main__":
    main()
