#!/usr/bin/env python3
"""Tables of make bench-scale-get: btree and hln cold Get beside the device, round by round.

  python3 scripts/scale_get_report.py docs/bench-data/scale-get.jsonl > docs/bench-data/scale-get.md

For each size, thread count and round: each engine's Gets/s, page reads per Get and median, the
device's reads/s over each engine's data file and over the smaller file, and the ratios the issue's
targets are stated in (engine / device on its own file, hln / btree).
"""
import collections
import json
import sys


def main(path):
    runs = collections.OrderedDict()  # (records, threads, round) -> step -> run
    for line in open(path):
        j = json.loads(line)
        parts = j.get("label", "").split(":")
        if len(parts) != 4 or parts[0] != "scale-get":
            continue
        _, records, rnd, step = parts
        name, _, threads = step.rpartition("-t")
        runs.setdefault((records, int(threads), int(rnd)), {})[name] = j

    print("| records | threads | round | btree Get/s | hln Get/s | device, btree's file | "
          "device, hln's file | device, small file | btree / device | hln / device | "
          "hln / btree | reads per Get (btree, hln) | median µs (btree, hln, device) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (records, threads, rnd), steps in runs.items():
        def tput(name):
            return steps[name]["throughput"] if name in steps else None

        def cell(v, fmt="{:,.0f}"):
            return "–" if v is None else fmt.format(v)

        def ratio(a, b):
            return None if a is None or b is None or b == 0 else a / b

        def p50(name):
            if name not in steps:
                return None
            return steps[name]["ops_by_type"].get("read", {}).get("p50_us")

        def reads(name):
            return None if name not in steps else steps[name]["io"]["page_reads_per_op"]

        b, h = tput("btree-get"), tput("hln-get")
        db, dh, ds = tput("device-btree-file"), tput("device-hln-file"), tput("device-small-file")
        print(f"| {float(records):.0e} | {threads} | {rnd} | {cell(b)} | {cell(h)} | {cell(db)} | "
              f"{cell(dh)} | {cell(ds)} | {cell(ratio(b, db), '{:.2f}x')} | "
              f"{cell(ratio(h, dh), '{:.2f}x')} | {cell(ratio(h, b), '{:.2f}x')} | "
              f"{cell(reads('btree-get'), '{:.2f}')}, {cell(reads('hln-get'), '{:.2f}')} | "
              f"{cell(p50('btree-get'), '{:.0f}')}, {cell(p50('hln-get'), '{:.0f}')}, "
              f"{cell(p50('device-btree-file'), '{:.0f}')} |")


if __name__ == "__main__":
    main(sys.argv[1])
