"""Helpers shared by the deploy tests: the PromQL expressions Grove ships and the metric names
they use, the metric names groved exports, and small process and HTTP utilities."""
import json
import os
import re
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request

SKIP = 77  # ctest SKIP_RETURN_CODE

# Values the tests give Grafana's variables when a dashboard query is run against Prometheus.
GRAFANA_VARS = {"$__rate_interval": "1m", "$job": "grove", "$instance": ".*"}


def dashboard_files(source_dir):
    d = os.path.join(source_dir, "deploy", "grafana", "dashboards")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".json"))


def dashboard_queries(source_dir):
    """(dashboard file, panel title, expr as written) for every panel query."""
    out = []
    for path in dashboard_files(source_dir):
        with open(path) as f:
            dash = json.load(f)
        for panel in dash["panels"]:
            for nested in [panel] + panel.get("panels", []):
                for t in nested.get("targets", []):
                    out.append((os.path.basename(path), nested["title"], t["expr"]))
    return out


def substitute(expr):
    for k, v in sorted(GRAFANA_VARS.items(), key=lambda kv: -len(kv[0])):
        expr = expr.replace(k, v)
    return expr


def alert_rules(source_dir):
    """(alert name, expr) from deploy/prometheus/alerts.yml."""
    import yaml
    with open(os.path.join(source_dir, "deploy", "prometheus", "alerts.yml")) as f:
        doc = yaml.safe_load(f)
    return [(r.get("alert") or r.get("record"), r["expr"]) for g in doc["groups"] for r in g["rules"]]


_KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or",
    "unless", "offset", "inf", "nan", "atan2",
}


def metric_names(expr):
    """Metric names an expression selects. Good for the expressions Grove writes: strings,
    label matchers, ranges and grouping clauses are removed, then every remaining identifier
    that is not a function call, keyword or number is a metric name."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    e = re.sub(r"\{[^}]*\}", " ", e)
    e = re.sub(r"\[[^\]]*\]", " ", e)
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        word = m.group(0)
        rest = e[m.end():].lstrip()
        if rest.startswith("("):
            continue  # a function or aggregation
        if word.lower() in _KEYWORDS or word.startswith("$"):
            continue
        if m.start() > 0 and (e[m.start() - 1].isdigit() or e[m.start() - 1] == "."):
            continue  # part of a number such as 1e-9
        names.add(word)
    return names


def exported_metric_names(source_dir):
    """Metric families groved's metrics code registers (server/metrics/*.cc), with the
    _bucket/_sum/_count series of histograms, plus Prometheus's own `up`."""
    names, histograms = set(), set()
    mdir = os.path.join(source_dir, "server", "metrics")
    for fn in sorted(os.listdir(mdir)):
        if not fn.endswith(".cc"):
            continue
        with open(os.path.join(mdir, fn)) as f:
            text = f.read()
        for m in re.finditer(r'"((?:grove|grpc_server)_[a-z0-9_]+)"', text):
            names.add(m.group(1))
        for m in re.finditer(r'Histogram\(\s*"([a-z0-9_]+)"', text):
            histograms.add(m.group(1))
        for m in re.finditer(r'BuildHistogram\(\)\s*\.Name\("([a-z0-9_]+)"\)', text):
            histograms.add(m.group(1))
    for h in histograms:
        names |= {h + "_bucket", h + "_sum", h + "_count"}
    names.add("up")
    return names, histograms


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=5):
    """(status, body); status 0 when the connection failed."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except (urllib.error.URLError, ConnectionError, socket.timeout, TimeoutError):
        return 0, ""


def wait_for(what, fn, timeout, interval=0.2, proc=None):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = fn()
        if value:
            return value
        if proc is not None and proc.poll() is not None:
            raise AssertionError(f"{what}: the process exited with status {proc.returncode}")
        time.sleep(interval)
    raise AssertionError(f"{what}: not within {timeout} s")


def stop(proc, timeout=30):
    if proc is None or proc.poll() is not None:
        return proc.returncode if proc else None
    proc.terminate()
    try:
        return proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()
