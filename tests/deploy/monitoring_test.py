#!/usr/bin/env python3
"""Grove's dashboards and alert rules against a real Prometheus scraping a real groved.

Starts etcd and groved in cluster mode as the only node of a cluster (configured from
deploy/grove.yaml, on free loopback ports, with a small cache so
that the load below reads from disk and checkpoints, and SHORTCUT prefetch on) and Prometheus (Debian's package, with
deploy/prometheus/prometheus.yml's scrape job and deploy/prometheus/alerts.yml, scraping every
second), drives a short mixed load with grovectl (BatchInsert, Put, Get, Delete, Scan, Stats, and
calls refused with INVALID_ARGUMENT and RESOURCE_EXHAUSTED), then checks:

  * promtool accepts the configuration and the rules;
  * every metric name the dashboard and the rules use is exported by this groved;
  * every dashboard query (Grafana variables filled in) evaluates without error and returns
    data, and the dashboard's variable queries find the job and instance;
  * every alert expression evaluates without error, and every rule is healthy in Prometheus;
  * after groved stops, `up` drops to 0 and GroveTargetDown goes pending.

    monitoring_test.py --source-dir DIR --groved FILE --grovectl FILE

Python 3 standard library plus python3-yaml.
"""
import argparse
import json
import math
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploy_common as dc  # noqa: E402

failures = []


def check(cond, what):
    if cond:
        print(f"  ok    {what}")
    else:
        print(f"  FAIL  {what}")
        failures.append(what)
    return cond


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--groved", required=True)
    ap.add_argument("--grovectl", required=True)
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    src = os.path.abspath(args.source_dir)
    start = time.monotonic()

    prometheus = shutil.which("prometheus")
    promtool = shutil.which("promtool")
    if not prometheus or not promtool:
        print("FAIL: prometheus/promtool not found (scripts/install-deps.sh installs Debian's "
              "prometheus package)")
        return 1
    etcd = shutil.which("etcd") or ("/usr/bin/etcd" if os.path.exists("/usr/bin/etcd") else None)
    if not etcd:
        print("FAIL: etcd not found (scripts/install-deps.sh installs Debian's etcd-server)")
        return 1

    work = tempfile.mkdtemp(prefix="grove-monitoring-test.")
    procs = {}
    try:
        return run(args, src, prometheus, promtool, etcd, work, procs, start)
    finally:
        for p in procs.values():
            dc.stop(p)
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def run(args, src, prometheus, promtool, etcd, work, procs, start):
    grpc_port, metrics_port, prom_port = dc.free_port(), dc.free_port(), dc.free_port()
    raft_port = dc.free_port()
    etcd_port, etcd_peer = dc.free_port(), dc.free_port()

    # ---- etcd, so that groved runs in cluster mode and the Cluster row has series -------------
    etcd_log = open(os.path.join(work, "etcd.log"), "w")
    procs["etcd"] = subprocess.Popen(
        [etcd, "--name", "mon", "--data-dir", os.path.join(work, "etcd"),
         "--listen-client-urls", f"http://127.0.0.1:{etcd_port}",
         "--advertise-client-urls", f"http://127.0.0.1:{etcd_port}",
         "--listen-peer-urls", f"http://127.0.0.1:{etcd_peer}",
         "--initial-advertise-peer-urls", f"http://127.0.0.1:{etcd_peer}",
         "--initial-cluster", f"mon=http://127.0.0.1:{etcd_peer}"],
        stdout=etcd_log, stderr=subprocess.STDOUT)
    etcd_ep = f"127.0.0.1:{etcd_port}"
    dc.wait_for("etcd answers", lambda: subprocess.run(
        [args.grovectl, "cluster", "--etcd", etcd_ep, "--cluster", "mon", "status"],
        capture_output=True).returncode == 0, 60, proc=procs["etcd"])
    # One range, replicated by Raft on this node alone: the Raft panels have series too.
    r = subprocess.run([args.grovectl, "cluster", "--etcd", etcd_ep, "--cluster", "mon", "init",
                        "--owner", "mon-1", "--replicas", "mon-1", "--replication-factor", "1"],
                       capture_output=True, text=True)
    check(r.returncode == 0, "grovectl cluster init: " + (r.stdout + r.stderr).strip())
    grpc_addr = f"127.0.0.1:{grpc_port}"
    metrics_addr = f"127.0.0.1:{metrics_port}"
    prom = f"http://127.0.0.1:{prom_port}"

    # ---- groved, configured from the container config --------------------------------------
    with open(os.path.join(src, "deploy", "grove.yaml")) as f:
        cfg = yaml.safe_load(f)
    cfg["data_dir"] = os.path.join(work, "data")
    cfg["cache_bytes"] = "4MiB"  # smaller than the data: reads go to disk, checkpoints run
    cfg.setdefault("checkpoint", {})["dirty_fraction"] = 0.25
    # Batches small enough that their worst case fits in what writes may keep dirty in a 4 MiB
    # cache (WorstCaseWritePages in grove/options.h); grovectl load below sends batches this size.
    cfg.setdefault("limits", {}).update({"max_batch_entries": 100, "max_batch_bytes": "256KiB"})
    # SHORTCUT's path prefetch, so that the prefetch panels have something to show; a prefetch
    # pays off when at least one predicted page is not cached.
    cfg["index"] = {"variant": "btree",
                    "params": {"prefetch": "shortcut", "shortcut_min_uncached": 1}}
    cfg["server"].update({"listen": grpc_addr, "metrics_listen": metrics_addr,
                          "shutdown_delay_seconds": 0, "drain_seconds": 5})
    # Cluster mode: one node that owns every key (the map made above), its replica of the range
    # on a Raft transport of its own.
    cfg["cluster"] = {"etcd_endpoints": [etcd_ep], "name": "mon", "node_name": "mon-1",
                      "advertise_address": grpc_addr, "lease_ttl_seconds": 5,
                      "raft": {"listen": f"127.0.0.1:{raft_port}"}}
    grove_cfg = os.path.join(work, "grove.yaml")
    with open(grove_cfg, "w") as f:
        yaml.safe_dump(cfg, f)
    groved_log = open(os.path.join(work, "groved.log"), "w")
    procs["groved"] = subprocess.Popen([args.groved, "--config", grove_cfg],
                                       stdout=groved_log, stderr=subprocess.STDOUT)
    dc.wait_for("groved /readyz", lambda: dc.http_get(f"http://{metrics_addr}/readyz")[0] == 200,
                60, proc=procs["groved"])
    print(f"groved ready on {grpc_addr}, metrics {metrics_addr}")

    # ---- Prometheus with the shipped scrape job and rules -------------------------------------
    with open(os.path.join(src, "deploy", "prometheus", "prometheus.yml")) as f:
        pcfg = yaml.safe_load(f)
    pcfg["global"].update({"scrape_interval": "1s", "evaluation_interval": "1s"})
    pcfg["rule_files"] = [os.path.join(src, "deploy", "prometheus", "alerts.yml")]
    jobs = [j for j in pcfg["scrape_configs"] if j["job_name"] == "grove"]
    check(len(jobs) == 1, "prometheus.yml has the scrape job 'grove'")
    jobs[0]["static_configs"] = [{"targets": [metrics_addr]}]
    pcfg["scrape_configs"] = jobs
    prom_cfg = os.path.join(work, "prometheus.yml")
    with open(prom_cfg, "w") as f:
        yaml.safe_dump(pcfg, f)

    print("promtool:")
    for argv in ([promtool, "check", "config", prom_cfg],
                 [promtool, "check", "rules", pcfg["rule_files"][0]]):
        r = subprocess.run(argv, capture_output=True, text=True)
        check(r.returncode == 0, " ".join(argv[1:3]) + ": " + (r.stdout + r.stderr).strip()
              .replace("\n", " | "))

    prom_log = open(os.path.join(work, "prometheus.log"), "w")
    procs["prometheus"] = subprocess.Popen(
        [prometheus, f"--config.file={prom_cfg}",
         f"--storage.tsdb.path={os.path.join(work, 'tsdb')}",
         f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"],
        stdout=prom_log, stderr=subprocess.STDOUT)
    dc.wait_for("prometheus ready", lambda: dc.http_get(prom + "/-/ready")[0] == 200, 60,
                proc=procs["prometheus"])

    def api(path, **params):
        status, body = dc.http_get(prom + path + "?" + urllib.parse.urlencode(params, doseq=True),
                                   timeout=10)
        try:
            return json.loads(body)
        except ValueError:
            return {"status": "error", "error": f"HTTP {status}: {body[:200]}"}

    def target_up():
        t = api("/api/v1/targets")
        return any(a["health"] == "up" for a in t.get("data", {}).get("activeTargets", []))

    dc.wait_for("prometheus scrapes groved", target_up, 30)
    print(f"prometheus on {prom} scrapes groved ({time.monotonic() - start:.1f} s)")

    # ---- a short load ----------------------------------------------------------------------
    load_start = time.monotonic()
    ctl = [args.grovectl, "--addr", grpc_addr, "--retries", "1"]

    def grovectl(*argv, ok=True):
        r = subprocess.run(ctl + list(argv), capture_output=True, text=True, timeout=60)
        if ok and r.returncode != 0:
            raise AssertionError(f"grovectl {' '.join(argv)}: {r.returncode} {r.stderr.strip()}")
        return r

    rng = random.Random(7)
    n = 40000
    csv = os.path.join(work, "load.csv")
    with open(csv, "w") as f:
        for i in range(n):
            # Every 100th value goes out of line (over inline_value_bytes).
            size = 1500 if i % 100 == 0 else 120
            f.write(f"user{i:08d},{rng.randbytes(size // 2).hex()}\n")
    r = grovectl("load", csv, "--no-progress", "--batch-entries", "100",
                 "--batch-bytes", "200000")
    print("load: " + (r.stdout + r.stderr).strip().splitlines()[-1])
    for i in range(20):
        grovectl("put", f"single{i:04d}", f"value {i}")
    for i in range(5):
        grovectl("delete", f"single{i:04d}")
    for i in range(3):
        grovectl("scan", "--start", f"user{rng.randrange(n):08d}", "--limit", "2000")
    grovectl("stats")
    # Refused calls: a key over limits.max_key_bytes (RESOURCE_EXHAUSTED, a limit rejection) and
    # a scan whose start is after its end (INVALID_ARGUMENT).
    r = grovectl("put", "k" * 200, "v", ok=False)
    check(r.returncode == 1 and "RESOURCE_EXHAUSTED" in r.stderr,
          "an oversized key is refused with RESOURCE_EXHAUSTED")
    r = grovectl("scan", "--start", "b", "--end", "a", ok=False)
    check(r.returncode == 1 and "INVALID_ARGUMENT" in r.stderr,
          "a scan with start after end is refused with INVALID_ARGUMENT")
    # Point reads over the whole key space until the load has run 20 s: most miss the cache.
    gets = 0
    while time.monotonic() - load_start < 20 or gets < 100:
        grovectl("get", f"user{rng.randrange(n):08d}")
        gets += 1
    print(f"load done: {n} records loaded, 20 puts, 5 deletes, 3 scans, {gets} gets, "
          f"2 refused calls ({time.monotonic() - load_start:.1f} s)")
    time.sleep(3)  # a few more scrapes

    # ---- names -----------------------------------------------------------------------------
    print("metric names:")
    live = set(api("/api/v1/label/__name__/values", **{"match[]": f'{{job="grove"}}'})
               .get("data", []))
    live.add("up")
    queries = dc.dashboard_queries(src)
    rules = dc.alert_rules(src)
    used = set()
    for _, _, expr in queries:
        used |= dc.metric_names(expr)
    for _, expr in rules:
        used |= dc.metric_names(expr)
    missing = sorted(used - live)
    check(not missing, f"all {len(used)} metric names used by the dashboard and the rules are "
          f"exported by groved" + (f"; missing: {', '.join(missing)}" if missing else ""))

    # ---- dashboard queries ------------------------------------------------------------------
    print(f"dashboard queries ({len(queries)}), Grafana variables: {dc.GRAFANA_VARS}:")
    nan_panels = []
    served = cfg["index"]["variant"]
    for dash, title, expr in queries:
        q = dc.substitute(expr)
        res = api("/api/v1/query", query=q)
        if res.get("status") != "success":
            check(False, f"{title}: {q}: {res.get('error')}")
            continue
        series = res["data"]["result"]
        # A variant's own row (grove_index_variant_stat{variant="..."}) has data only while that
        # variant serves; for the others the query must be valid and select nothing.
        m = re.search(r'variant="([a-z0-9_]+)"', q)
        if m and m.group(1) != served:
            check(len(series) == 0, f"{title}: valid, empty while {served} serves  {q}")
            continue
        values = [float(s["value"][1]) for s in series]
        shown = ", ".join(f"{v:.4g}" for v in values[:4]) + (" ..." if len(values) > 4 else "")
        if values and all(math.isnan(v) for v in values):
            nan_panels.append(title)
        check(len(series) > 0, f"{title}: {len(series)} series [{shown}]  {q}")
    for var, label in (("job", "job"), ("instance", "instance")):
        res = api(f"/api/v1/label/{label}/values", **{"match[]": "grove_build_info"})
        vals = res.get("data", [])
        check(res.get("status") == "success" and vals,
              f"variable ${var} (label_values(grove_build_info, {label})): {vals}")
    if nan_panels:
        print(f"  note: NaN (0/0: nothing to divide) in: {', '.join(sorted(set(nan_panels)))}")

    # ---- alert rules ------------------------------------------------------------------------
    print(f"alert rule expressions ({len(rules)}):")
    for name, expr in rules:
        res = api("/api/v1/query", query=expr)
        n_series = len(res.get("data", {}).get("result", [])) if res.get("status") == "success" \
            else None
        check(res.get("status") == "success",
              f"{name}: evaluates ({n_series} series now)" if n_series is not None
              else f"{name}: {res.get('error')}")

    def rule_health():
        groups = api("/api/v1/rules").get("data", {}).get("groups", [])
        rs = [r for g in groups for r in g["rules"]]
        if len(rs) == len(rules) and all(r.get("lastEvaluation", "").startswith("20") for r in rs):
            return rs
        return None

    rs = dc.wait_for("every rule evaluated", rule_health, 15)
    for r in rs:
        check(r["health"] == "ok" and not r.get("lastError"),
              f"rule {r['name']}: health {r['health']}, state {r.get('state')}"
              + (f", error {r['lastError']}" if r.get("lastError") else ""))
    firing = [r["name"] for r in rs if r.get("state") == "firing"]
    check(not firing, f"no alert fires on a healthy server under load (firing: {firing})")

    # ---- target down -----------------------------------------------------------------------
    print("target down:")
    rc = dc.stop(procs["groved"])
    check(rc == 0, f"groved exits 0 after SIGTERM (got {rc})")

    def down():
        res = api("/api/v1/query", query='up{job="grove"} == 0')
        return res.get("status") == "success" and res["data"]["result"]

    dc.wait_for("up == 0 after groved stopped", down, 20)
    check(True, 'up{job="grove"} == 0 once groved is gone')

    def pending():
        alerts = api("/api/v1/alerts").get("data", {}).get("alerts", [])
        return [a for a in alerts if a["labels"].get("alertname") == "GroveTargetDown"]

    a = dc.wait_for("GroveTargetDown pending", pending, 20)
    check(a[0]["state"] in ("pending", "firing"), f"GroveTargetDown is {a[0]['state']}")

    elapsed = time.monotonic() - start
    if failures:
        print(f"\n{len(failures)} check(s) failed ({elapsed:.1f} s); logs: groved.log, "
              f"prometheus.log in the work directory (--keep)")
        for f in failures:
            print("  - " + f)
        for name in ("groved.log", "prometheus.log"):
            path = os.path.join(work, name)
            if os.path.exists(path):
                print(f"--- {name} (last 30 lines)")
                with open(path) as fh:
                    print("".join(fh.readlines()[-30:]))
        return 1
    print(f"\nmonitoring test: passed ({elapsed:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
