#!/usr/bin/env python3
"""Prints the reliability suite's JSON summary lines (one object per line) as Markdown tables.

    python3 scripts/reliability_tables.py report.jsonl

Lines come from tests/reliability/report.h (EmitReport) and scripts/fuzz.sh; see
docs/reliability.md for what each field means.
"""
import json
import re
import sys
from collections import defaultdict


# Tests run in temporary directories; their paths say nothing about Grove.
TEST_DIR = re.compile(r"/tmp/grove-test-[A-Za-z0-9]+")


def cell(v):
    """A table cell: one line, test directories named as such."""
    return TEST_DIR.sub("<test dir>", str(v)).replace("\n", " ").replace("|", "\\|")


def table(rows, columns):
    if not rows:
        return
    print("| " + " | ".join(columns) + " |")
    print("|" + "|".join("---" for _ in columns) + "|")
    for r in rows:
        cells = []
        for c in columns:
            v = r.get(c, "")
            if isinstance(v, float):
                v = f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"
            elif isinstance(v, (dict, list)):
                v = json.dumps(v, separators=(",", ":"))
            cells.append(cell(v))
        print("| " + " | ".join(cells) + " |")
    print()


def main(path):
    by_test = defaultdict(list)
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                r = json.loads(line)
                by_test[r.get("test", "?")].append(r)

    if by_test["torture"]:
        print("### Kill -9 torture\n")
        table(by_test["torture"], ["sync", "cycles", "kills_during_recovery", "ops_acked",
                                   "ops_failed", "inflight_resolved_new", "inflight_resolved_old",
                                   "acked_lost", "phantoms", "corrupt", "torn_batches",
                                   "recovery_ms_p50", "recovery_ms_p99", "ready_ms_p50",
                                   "ready_ms_p99", "duration_s"])
    if by_test["crash_points"]:
        print("### Crash points\n")
        table(by_test["crash_points"], ["variant", "mode", "ios_in_workload", "classes",
                                        "crash_runs", "inflight_step_applied",
                                        "unsynced_writes_dropped", "unsynced_writes_torn",
                                        "unsynced_writes_kept", "violations"])
        for r in by_test["crash_points"]:
            print(f"Hits per crash point class, variant {r['variant']} (runs: drop / tear / keep):\n")
            rows = [{"class": c, "drop": m.get("drop", 0), "tear": m.get("tear", 0),
                     "keep": m.get("keep", 0)} for c, m in sorted(r["hits"].items())]
            table(rows, ["class", "drop", "tear", "keep"])
    for name in ("crash_during_recovery", "unsynced_power_loss"):
        if by_test[name]:
            print(f"### {name}\n")
            cols = [k for k in by_test[name][0].keys() if k not in ("test", "hits")]
            table(by_test[name], cols)
            for r in by_test[name]:
                if "hits" in r:
                    rows = [{"class": c, "runs": n} for c, n in sorted(r["hits"].items())]
                    table(rows, ["class", "runs"])
    if by_test["corruption"]:
        print("### Corruption\n")
        table(by_test["corruption"], ["class", "injected", "refused_open", "detected_on_read",
                                      "no_effect", "wrong_data", "wrong_status"])
    for r in by_test["io_faults"]:
        print("### IO faults\n")
        table([r], ["mode", "runs", "acked_lost", "failed_step_visible_after_recovery"])
        print("Outcomes per boundary (runs), by fault:\n")
        faults = ["EIO once", "EIO forever", "ENOSPC once", "ENOSPC forever"]
        rows = []
        for boundary, by_fault in sorted(r["outcomes"].items()):
            row = {"boundary": boundary}
            for fault in faults:
                outcomes = by_fault.get(fault, {})
                row[fault] = "; ".join(f"{o} {n}" for o, n in sorted(outcomes.items()))
            rows.append(row)
        table(rows, ["boundary"] + faults)
    for name in ("disk_full", "disk_full_injected", "hostile_input",
                 "linearizability", "fuzz"):
        if by_test[name]:
            print(f"### {name}\n")
            cols = []
            for r in by_test[name]:
                for k in r:
                    if k != "test" and k not in cols:
                        cols.append(k)
            table(by_test[name], cols)


if __name__ == "__main__":
    main(sys.argv[1])
