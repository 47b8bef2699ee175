#!/usr/bin/env python3
"""Static checks of everything under deploy/, the Dockerfile and .dockerignore.

Every file parses, and every port, path and metric name they mention exists:

  * generated files are up to date (deploy/grafana/generate.py --check; the seccomp profile
    against the default profile it is built from, when that is installed);
  * the seccomp profile allows io_uring_setup, io_uring_enter and io_uring_register;
  * the Dockerfile: multi-stage, non-root numeric USER, VOLUME, EXPOSE and HEALTHCHECK match
    deploy/grove.yaml's ports, every COPY source exists and is let through .dockerignore;
  * compose.yaml: valid for docker-compose's schema; ports, mounts (files that exist), seccomp profile, memlock ulimit, a stop grace
    period that covers the drain, Prometheus and Grafana wired to each other and to groved;
  * cluster/compose.yaml: etcd, the map's init, three nodes whose configs are deploy/grove.yaml
    plus a cluster section naming each node and its Compose address, distinct loopback ports,
    the same hardening, Prometheus scraping the three and Grafana's mounts;
  * Prometheus: the scrape target is groved's metrics port, the rule file is mounted;
  * Grafana: provisioning points at the mounted dashboards and the data source;
  * Kubernetes: `kubectl kustomize` renders the kustomization (when kubectl is installed), the
    ConfigMap holds deploy/grove.yaml, probes hit /livez and /readyz on named
    ports that exist, the securityContext is "restricted" (non-root, no privilege escalation,
    drop ALL, seccomp Localhost), the StatefulSet's PVC and mounts match the image, Services and
    the PodMonitor select the pods and name existing ports;
  * every metric name in the dashboard and the alert rules is one groved exports
    (server/metrics/*.cc).

    manifests_test.py --source-dir DIR

Python 3 standard library plus python3-yaml.
"""
import argparse
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import deploy_common as dc  # noqa: E402

failures = []
passed = 0


def check(cond, what):
    global passed
    if cond:
        passed += 1
        print(f"  ok    {what}")
    else:
        print(f"  FAIL  {what}")
        failures.append(what)
    return cond


def load_yaml_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def port_of(addr):
    return int(addr.rsplit(":", 1)[1])


def parse_duration(s):
    m = re.fullmatch(r"(?:(\d+)m)?(?:(\d+)s)?", str(s))
    if not m or not any(m.groups()):
        raise ValueError(f"duration {s!r}")
    return int(m.group(1) or 0) * 60 + int(m.group(2) or 0)


# ---- Dockerfile -----------------------------------------------------------------------------


def dockerfile_instructions(path):
    """(instruction, argument text) with continuations joined and comments dropped."""
    out, cur = [], ""
    with open(path) as f:
        for line in f:
            s = line.rstrip("\n")
            if not cur and (not s.strip() or s.lstrip().startswith("#")):
                continue
            if cur and s.lstrip().startswith("#"):
                continue
            if s.endswith("\\"):
                cur += s[:-1] + " "
                continue
            cur += s
            word, _, rest = cur.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
            cur = ""
    return out


def dockerignore_allows(patterns, path):
    """Whether `path` (relative, '/'-separated) is in the build context: the last matching
    pattern wins; '!' re-includes; a pattern matches the path or any parent directory."""
    allowed = True
    parts = path.split("/")
    prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
    for raw in patterns:
        neg = raw.startswith("!")
        pat = raw[1:] if neg else raw
        pat = pat.rstrip("/")
        for p in prefixes:
            if fnmatch.fnmatchcase(p, pat) or (pat.startswith("**/") and (
                    fnmatch.fnmatchcase(p, pat[3:]) or
                    fnmatch.fnmatchcase(p.split("/")[-1], pat[3:]))):
                allowed = neg
                break
    return allowed


def check_dockerfile(src, grove_cfg):
    print("Dockerfile and .dockerignore:")
    ins = dockerfile_instructions(os.path.join(src, "Dockerfile"))
    froms = [a for i, a in ins if i == "FROM"]
    check(len(froms) >= 2, f"multi-stage ({len(froms)} FROM lines)")
    check(any(a.startswith("debian:bookworm ") for a in froms), "a debian:bookworm builder stage")
    check(froms[-1].split()[0] == "debian:bookworm-slim", "the runtime stage is debian:bookworm-slim")
    users = [a for i, a in ins if i == "USER"]
    check(users and re.fullmatch(r"[1-9]\d*:\d+", users[-1]) is not None,
          f"non-root numeric USER ({users[-1] if users else None})")
    grpc_port, metrics_port = port_of(grove_cfg["server"]["listen"]), \
        port_of(grove_cfg["server"]["metrics_listen"])
    exposed = {int(p.split("/")[0]) for i, a in ins if i == "EXPOSE" for p in a.split()}
    check(exposed == {grpc_port, metrics_port},
          f"EXPOSE {sorted(exposed)} = deploy/grove.yaml's ports {grpc_port}, {metrics_port}")
    vols = [json.loads(a) if a.startswith("[") else a.split() for i, a in ins if i == "VOLUME"]
    vols = [v for vs in vols for v in vs]
    data_dir = grove_cfg["data_dir"]
    check(any(data_dir == v or data_dir.startswith(v.rstrip("/") + "/") for v in vols),
          f"data_dir {data_dir} is inside a VOLUME ({vols})")
    hc = [a for i, a in ins if i == "HEALTHCHECK"]
    check(hc and "/readyz" in hc[0] and f"127.0.0.1/{metrics_port}" in hc[0],
          f"HEALTHCHECK probes /readyz on the metrics port {metrics_port}")
    ep = [json.loads(a) for i, a in ins if i == "ENTRYPOINT"]
    check(ep and ep[-1][0] == "/usr/local/bin/groved" and "--config" in ep[-1],
          f"ENTRYPOINT runs groved with --config ({ep[-1] if ep else None})")
    config_in_image = ep[-1][ep[-1].index("--config") + 1] if ep else None

    with open(os.path.join(src, ".dockerignore")) as f:
        patterns = [l.strip() for l in f if l.strip() and not l.lstrip().startswith("#")]
    copies = []
    for i, a in ins:
        if i != "COPY" or "--from=" in a:
            continue
        words = [w for w in a.split() if not w.startswith("--")]
        copies += words[:-1]
    for c in copies:
        c = c.rstrip("/")
        if c == ".":
            continue  # the whole context: .dockerignore decides, checked below
        check(os.path.exists(os.path.join(src, c)) and dockerignore_allows(patterns, c),
              f"COPY {c} exists and passes .dockerignore")
    for excluded in ("build", "build/server/groved", "build-asan/x", "tests", ".git", "docs",
                     "data", "deploy/k8s/statefulset.yaml"):
        check(not dockerignore_allows(patterns, excluded), f".dockerignore keeps {excluded} out")
    # What the build stage compiles (GROVED_FROM=source), what the runtime stage copies, and the
    # binaries GROVED_FROM=prebuilt takes.
    for needed in ("CMakeLists.txt", "server/main.cc", "server/CMakeLists.txt",
                   "client/CMakeLists.txt", "config/grove.yaml", "proto/grove/v1/kv.proto",
                   "deploy/grove.yaml", "prebuilt/groved", "prebuilt/grovectl"):
        check(dockerignore_allows(patterns, needed), f".dockerignore lets {needed} in")
    runs = " ".join(a for i, a in ins if i == "RUN")
    check("build/server/groved" in runs and "build/client/grovectl" in runs and
          "prebuilt/groved" in runs,
          "the build stage makes /out/groved and /out/grovectl from source or prebuilt/")
    return {"user": users[-1] if users else "", "volumes": vols, "config": config_in_image,
            "grpc_port": grpc_port, "metrics_port": metrics_port}


# ---- compose, Prometheus, Grafana -----------------------------------------------------------


def check_compose(src, grove_cfg, image):
    print("deploy/compose.yaml:")
    deploy = os.path.join(src, "deploy")
    (compose,) = load_yaml_docs(os.path.join(deploy, "compose.yaml"))
    services = compose.get("services", {})
    if shutil.which("docker-compose"):
        # From deploy/, as docs/operations.md says: docker-compose reads the seccomp profile
        # relative to the current directory.
        r = subprocess.run(["docker-compose", "-p", "grove", "config", "-q"], cwd=deploy,
                           capture_output=True, text=True)
        check(r.returncode == 0, "docker-compose config accepts the file (the Compose schema)"
              + (": " + (r.stdout + r.stderr).strip() if r.returncode else ""))
    else:
        print("  note  docker-compose not installed: the Compose schema was not checked")
    check({"groved", "prometheus", "grafana"} <= set(services),
          f"services groved, prometheus, grafana ({sorted(services)})")
    g = services["groved"]
    check(g.get("build", {}).get("dockerfile") == "Dockerfile" and
          os.path.isfile(os.path.join(deploy, g["build"]["context"], "Dockerfile")),
          "groved is built from the Dockerfile")
    ports = [p.split(":") for p in g.get("ports", [])]
    container_ports = {int(p[-1]) for p in ports}
    check(container_ports == {image["grpc_port"], image["metrics_port"]},
          f"groved publishes the container ports {sorted(container_ports)} of grove.yaml")
    check(all(len(p) == 3 and p[0] == "127.0.0.1" for p in ports),
          "published ports bind the host's loopback only")
    mounts = {}
    for v in g.get("volumes", []):
        parts = v.split(":")
        mounts[parts[1]] = (parts[0], parts[2:] if len(parts) > 2 else [])
    cfg_src, cfg_opts = mounts.get(image["config"], (None, []))
    check(cfg_src is not None and os.path.isfile(os.path.join(deploy, cfg_src)) and
          "ro" in cfg_opts, f"the config is mounted read-only at {image['config']} from "
          f"{cfg_src}")
    if cfg_src:
        with open(os.path.join(deploy, cfg_src)) as f:
            check(yaml.safe_load(f) == grove_cfg, "the mounted config is deploy/grove.yaml")
    check(any(t in image["volumes"] and s in compose.get("volumes", {})
              for t, (s, _) in mounts.items()), "a named volume on the image's VOLUME")
    seccomp = [o.split("=", 1)[1] for o in g.get("security_opt", []) if o.startswith("seccomp=")]
    check(seccomp and os.path.isfile(os.path.join(deploy, seccomp[0])) and
          os.path.basename(seccomp[0]) == "seccomp-grove.json",
          f"security_opt seccomp={seccomp[0] if seccomp else None} exists")
    check("no-new-privileges:true" in g.get("security_opt", []), "no-new-privileges")
    check(g.get("cap_drop") == ["ALL"], "cap_drop: ALL")
    check(str(g.get("user", "")) == image["user"], f"user {g.get('user')} = the image's USER")
    memlock = g.get("ulimits", {}).get("memlock")
    check(memlock is not None, f"ulimits.memlock set ({memlock})")
    s = grove_cfg["server"]
    need = s.get("shutdown_delay_seconds", 0) + s.get("drain_seconds", 15)
    grace = parse_duration(g.get("stop_grace_period", "10s"))
    check(grace >= need + 5, f"stop_grace_period {grace} s covers shutdown_delay + drain "
          f"({need} s) and the final checkpoint")
    hc = " ".join(g.get("healthcheck", {}).get("test", []))
    check("/readyz" in hc and f"127.0.0.1/{image['metrics_port']}" in hc,
          "healthcheck probes /readyz on the metrics port")

    p = services["prometheus"]
    pmounts = {v.split(":")[1]: v.split(":")[0] for v in p.get("volumes", [])}
    cfg_flag = [a.split("=", 1)[1] for a in p.get("command", []) if a.startswith("--config.file=")]
    check(cfg_flag and cfg_flag[0] in pmounts and
          os.path.isfile(os.path.join(deploy, pmounts[cfg_flag[0]])),
          f"prometheus --config.file {cfg_flag[0] if cfg_flag else None} is mounted from a file")
    with open(os.path.join(deploy, pmounts[cfg_flag[0]])) as f:
        pcfg = yaml.safe_load(f)
    for rf in pcfg.get("rule_files", []):
        check(rf in pmounts and os.path.isfile(os.path.join(deploy, pmounts[rf])),
              f"rule file {rf} is mounted from {pmounts.get(rf)}")
    targets = [t for j in pcfg["scrape_configs"] if j["job_name"] == "grove"
               for sc in j.get("static_configs", []) for t in sc["targets"]]
    check(targets == [f"groved:{image['metrics_port']}"],
          f"the grove job scrapes groved's metrics port ({targets})")
    check(all(j.get("metrics_path", "/metrics") == "/metrics" for j in pcfg["scrape_configs"]),
          "metrics_path /metrics")
    listen = [a.split("=", 1)[1] for a in p.get("command", [])
              if a.startswith("--web.listen-address=")]
    prom_port = port_of(listen[0]) if listen else 9090

    gr = services["grafana"]
    gmounts = {v.split(":")[1]: v.split(":")[0] for v in gr.get("volumes", [])}
    for target, source in gmounts.items():
        if source.startswith("./"):
            check(os.path.exists(os.path.join(deploy, source)),
                  f"grafana mount {target} from {source} exists")
    ds_dir = gmounts.get("/etc/grafana/provisioning/datasources")
    db_dir = gmounts.get("/etc/grafana/provisioning/dashboards")
    check(ds_dir and db_dir, "grafana provisioning directories are mounted")
    for fn in sorted(os.listdir(os.path.join(deploy, ds_dir))):
        (ds,) = load_yaml_docs(os.path.join(deploy, ds_dir, fn))
        for d in ds["datasources"]:
            check(d["type"] == "prometheus" and d["url"] == f"http://prometheus:{prom_port}",
                  f"data source {d['name']} points at the prometheus service ({d['url']})")
    for fn in sorted(os.listdir(os.path.join(deploy, db_dir))):
        (prov,) = load_yaml_docs(os.path.join(deploy, db_dir, fn))
        for prv in prov["providers"]:
            path = prv["options"]["path"]
            host = gmounts.get(path)
            check(host is not None and os.path.isdir(os.path.join(deploy, host)) and
                  any(f.endswith(".json") for f in os.listdir(os.path.join(deploy, host))),
                  f"dashboard provider {prv['name']} reads {path}, mounted from {host}")
    home = gr.get("environment", {}).get("GF_DASHBOARDS_DEFAULT_HOME_DASHBOARD_PATH")
    if home:
        d, fn = os.path.split(home)
        check(d in gmounts and os.path.isfile(os.path.join(deploy, gmounts[d], fn)),
              f"home dashboard {home} exists")


# ---- Kubernetes ------------------------------------------------------------------------------


def check_k8s(src, grove_cfg, image):
    print("deploy/k8s:")
    kdir = os.path.join(src, "deploy", "k8s")
    docs = []
    for fn in sorted(os.listdir(kdir)):
        if fn.endswith((".yaml", ".yml")):
            for d in load_yaml_docs(os.path.join(kdir, fn)):
                check("kind" in d and ("apiVersion" in d), f"{fn}: {d.get('kind')} "
                      f"{d.get('metadata', {}).get('name', '')} parses")
                docs.append((fn, d))
    by_kind = {}
    for fn, d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    kust = by_kind.get("Kustomization", [{}])[0]
    for r in kust.get("resources", []):
        check(os.path.isfile(os.path.join(kdir, r)), f"kustomization resource {r} exists")

    if shutil.which("kubectl"):
        r = subprocess.run(["kubectl", "kustomize", kdir], capture_output=True, text=True,
                           timeout=120)
        rendered = [d for d in yaml.safe_load_all(r.stdout) if d] if r.returncode == 0 else []
        kinds = sorted(d["kind"] for d in rendered)
        check(r.returncode == 0 and kinds == ["ConfigMap", "Service", "Service", "StatefulSet"],
              f"kubectl kustomize renders {kinds}" + (f": {r.stderr.strip()}" if r.returncode
                                                      else ""))
        images = [c["image"] for d in rendered if d["kind"] == "StatefulSet"
                  for c in d["spec"]["template"]["spec"]["containers"]]
        check(images and all(":" in i for i in images), f"the rendered image is tagged {images}")
    else:
        print("  note  kubectl not installed: kustomization.yaml was not rendered")

    (cm,) = by_kind["ConfigMap"]
    cm_cfg = yaml.safe_load(cm["data"]["grove.yaml"])
    check(cm_cfg == grove_cfg, "ConfigMap grove.yaml = deploy/grove.yaml")

    (sts,) = by_kind["StatefulSet"]
    spec = sts["spec"]
    pod = spec["template"]["spec"]
    labels = spec["template"]["metadata"]["labels"]
    check(all(labels.get(k) == v for k, v in spec["selector"]["matchLabels"].items()),
          "StatefulSet selector matches its pod labels")
    check(spec["serviceName"] in [s["metadata"]["name"] for s in by_kind["Service"]],
          f"serviceName {spec['serviceName']} is a Service")
    (c,) = [c for c in pod["containers"] if c["name"] == "groved"]
    named = {p["name"]: p["containerPort"] for p in c["ports"]}
    check(named == {"grpc": image["grpc_port"], "metrics": image["metrics_port"]},
          f"container ports {named} = grove.yaml's")
    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/livez")):
        pr = c.get(probe, {})
        hg = pr.get("httpGet", {})
        port = named.get(hg.get("port"), hg.get("port"))
        check(hg.get("path") == path and port == image["metrics_port"],
              f"{probe}: GET {hg.get('path')} on port {hg.get('port')} ({port})")
    psc, csc = pod.get("securityContext", {}), c.get("securityContext", {})
    check(psc.get("runAsNonRoot") is True and csc.get("runAsNonRoot", True) is True,
          "runAsNonRoot")
    uid, gid = (int(x) for x in image["user"].split(":"))
    check(psc.get("runAsUser") == uid and psc.get("runAsGroup") == gid,
          f"runAsUser/runAsGroup {psc.get('runAsUser')}:{psc.get('runAsGroup')} = the image's "
          f"USER")
    check(psc.get("fsGroup") == gid, "fsGroup makes the volume writable for the group")
    check(csc.get("allowPrivilegeEscalation") is False, "allowPrivilegeEscalation: false")
    check(csc.get("capabilities", {}).get("drop") == ["ALL"], "capabilities drop ALL")
    check(csc.get("readOnlyRootFilesystem") is True, "readOnlyRootFilesystem")
    sp = psc.get("seccompProfile", {})
    check(sp.get("type") == "Localhost" and
          os.path.basename(sp.get("localhostProfile", "")) == "seccomp-grove.json",
          f"seccompProfile Localhost {sp.get('localhostProfile')}")
    s = grove_cfg["server"]
    need = s.get("shutdown_delay_seconds", 0) + s.get("drain_seconds", 15)
    check(pod.get("terminationGracePeriodSeconds", 30) >= need + 5,
          f"terminationGracePeriodSeconds {pod.get('terminationGracePeriodSeconds')} covers "
          f"the drain ({need} s) and the final checkpoint")
    mounts = {m["name"]: m for m in c["volumeMounts"]}
    vct = [t["metadata"]["name"] for t in spec.get("volumeClaimTemplates", [])]
    check(vct and all(v in mounts for v in vct), f"volumeClaimTemplates {vct} are mounted")
    data_mount = [m["mountPath"] for n, m in mounts.items() if n in vct]
    check(data_mount and data_mount[0] in image["volumes"] and
          grove_cfg["data_dir"].startswith(data_mount[0] + "/"),
          f"the PVC is mounted at the image's VOLUME {data_mount} and holds data_dir")
    vols = {v["name"]: v for v in pod.get("volumes", [])}
    cfg_mounts = [m for n, m in mounts.items() if vols.get(n, {}).get("configMap")]
    check(cfg_mounts and cfg_mounts[0].get("readOnly") is True and
          os.path.join(cfg_mounts[0]["mountPath"], "grove.yaml") == image["config"] and
          vols[cfg_mounts[0]["name"]]["configMap"]["name"] == cm["metadata"]["name"],
          f"the ConfigMap is mounted read-only where the image reads {image['config']}")
    mem_limit = c.get("resources", {}).get("limits", {}).get("memory", "")
    m = re.fullmatch(r"(\d+)(Mi|Gi)", mem_limit)
    limit_bytes = int(m.group(1)) << (20 if m.group(2) == "Mi" else 30) if m else 0
    cache = grove_cfg.get("cache_bytes", "256MiB")
    cm_ = re.fullmatch(r"(\d+)(MiB|GiB)", str(cache))
    cache_bytes = int(cm_.group(1)) << (20 if cm_.group(2) == "MiB" else 30)
    check(limit_bytes > cache_bytes, f"memory limit {mem_limit} is above cache_bytes {cache}")

    for svc in by_kind["Service"]:
        sel = svc["spec"]["selector"]
        check(all(labels.get(k) == v for k, v in sel.items()),
              f"Service {svc['metadata']['name']} selects the grove pods")
        for p in svc["spec"]["ports"]:
            tp = p.get("targetPort", p["port"])
            check(tp in named or tp in named.values(),
                  f"Service {svc['metadata']['name']} port {p['port']} -> {tp} exists")
    for pm in by_kind.get("PodMonitor", []):
        sel = pm["spec"]["selector"]["matchLabels"]
        check(all(labels.get(k) == v for k, v in sel.items()), "PodMonitor selects the grove pods")
        for ep in pm["spec"]["podMetricsEndpoints"]:
            check(ep["port"] in named and ep.get("path", "/metrics") == "/metrics",
                  f"PodMonitor scrapes port {ep['port']} path {ep.get('path')}")
            relabel_job = [r for r in ep.get("relabelings", [])
                           if r.get("targetLabel") == "job"]
            check(relabel_job and relabel_job[0].get("replacement") == "grove",
                  "PodMonitor sets job=\"grove\" (what the alert rules select)")


# ---- seccomp, generated files, metric names ---------------------------------------------------


def check_generated(src):
    print("generated files and the seccomp profile:")
    r = subprocess.run([sys.executable, os.path.join(src, "deploy", "grafana", "generate.py"),
                        "--check"], capture_output=True, text=True)
    check(r.returncode == 0, "deploy/grafana/dashboards is what generate.py writes: "
          + (r.stdout + r.stderr).strip())
    with open(os.path.join(src, "deploy", "seccomp-grove.json")) as f:
        prof = json.load(f)
    allowed = {n for rule in prof["syscalls"] if rule["action"] == "SCMP_ACT_ALLOW"
               and not rule.get("args") and not rule.get("includes") for n in rule["names"]}
    denied = {n for rule in prof["syscalls"] if rule["action"] != "SCMP_ACT_ALLOW"
              for n in rule["names"]}
    uring = {"io_uring_setup", "io_uring_enter", "io_uring_register"}
    check(uring <= allowed and not uring & denied, "seccomp-grove.json allows io_uring_*")
    check(prof["defaultAction"] == "SCMP_ACT_ERRNO", "and blocks everything not listed")
    base = "/usr/share/containers/seccomp.json"
    if os.path.exists(base):
        r = subprocess.run([sys.executable, os.path.join(src, "scripts", "make-seccomp-profile.py"),
                            "--check"], capture_output=True, text=True)
        check(r.returncode == 0, "seccomp-grove.json = the default profile + io_uring: "
              + (r.stdout + r.stderr).strip())
        with open(base) as f:
            b = json.load(f)
        check(not uring & {n for rule in b["syscalls"] if rule["action"] == "SCMP_ACT_ALLOW"
                           for n in rule["names"]},
              "the default profile itself does not allow io_uring (so the fallback is needed)")
    else:
        print(f"  note  {base} not installed: the profile was not compared with it")


def check_metric_names(src):
    print("metric names:")
    exported, histograms = dc.exported_metric_names(src)
    check(len(exported) > 40, f"{len(exported)} series names found in server/metrics")
    for where, items in (("dashboard", [(t, e) for _, t, e in dc.dashboard_queries(src)]),
                         ("alert rules", dc.alert_rules(src))):
        used = set()
        for _, expr in items:
            used |= dc.metric_names(expr)
        unknown = sorted(used - exported)
        check(not unknown, f"the {where} use {len(used)} metric names, all exported"
              + (f"; unknown: {unknown}" if unknown else ""))
    for _, title, expr in dc.dashboard_queries(src):
        for h in histograms:
            if re.search(rf"\b{h}\b(?!_)", expr):
                check(False, f"{title}: histogram {h} used without _bucket/_sum/_count")


def check_cluster_compose(src, grove_cfg, image):
    print("deploy/cluster/compose.yaml:")
    cdir = os.path.join(src, "deploy", "cluster")
    (compose,) = load_yaml_docs(os.path.join(cdir, "compose.yaml"))
    services = compose.get("services", {})
    nodes = sorted(n for n in services if n.startswith("node-"))
    check(nodes == ["node-1", "node-2", "node-3"] and
          {"etcd", "init", "prometheus", "grafana"} <= set(services),
          f"services etcd, init, three nodes, prometheus, grafana ({sorted(services)})")
    host_ports = []
    for n in nodes:
        g = services[n]
        ports = [p.split(":") for p in g.get("ports", [])]
        host_ports += [int(p[1]) for p in ports]
        check({int(p[-1]) for p in ports} == {image["grpc_port"], image["metrics_port"]} and
              all(len(p) == 3 and p[0] == "127.0.0.1" for p in ports),
              f"{n} publishes the image's ports on the host's loopback ({g.get('ports')})")
        mounts = {v.split(":")[1]: v.split(":")[0] for v in g.get("volumes", [])}
        cfg_src = mounts.get(image["config"])
        check(cfg_src is not None and os.path.isfile(os.path.join(cdir, cfg_src)),
              f"{n} mounts its config at {image['config']} from {cfg_src}")
        if not cfg_src or not os.path.isfile(os.path.join(cdir, cfg_src)):
            continue
        with open(os.path.join(cdir, cfg_src)) as f:
            cfg = yaml.safe_load(f)
        cl = cfg.pop("cluster", {})
        check(cfg == grove_cfg, f"{n}: the config is deploy/grove.yaml plus a cluster section")
        check(cl.get("node_name") == n and cl.get("name") == "grove" and
              cl.get("etcd_endpoints") == ["etcd:2379"] and
              cl.get("advertise_address") == f"{n}:{image['grpc_port']}",
              f"{n}: cluster section names it, etcd and its Compose address ({cl})")
        raft = cl.get("raft", {})
        check(raft.get("listen") == "0.0.0.0:7402" and
              raft.get("advertise_address") == f"{n}:7402" and
              not any(p[-1] == "7402" for p in ports),
              f"{n}: Raft on port 7402 of the Compose network, advertised by name, not "
              f"published ({raft})")
        check(any(t in image["volumes"] and v in compose.get("volumes", {})
                  for t, v in mounts.items()), f"{n}: a named volume on the image's VOLUME")
        seccomp = [o.split("=", 1)[1] for o in g.get("security_opt", [])
                   if o.startswith("seccomp=")]
        check(seccomp and os.path.isfile(os.path.join(cdir, seccomp[0])) and
              "no-new-privileges:true" in g.get("security_opt", []) and
              g.get("cap_drop") == ["ALL"] and str(g.get("user", "")) == image["user"],
              f"{n}: seccomp profile exists, no-new-privileges, cap_drop ALL, the image's user")
    check(len(host_ports) == len(set(host_ports)), f"host ports are distinct ({host_ports})")
    init = " ".join(services["init"].get("command", []))
    check("init --owner node-1" in init and "--split 55=node-2" in init and
          "--split aa=node-3" in init and "--replicas node-1,node-2,node-3" in init,
          "init lays the key space out over the three nodes, each range replicated on all three")
    p = services["prometheus"]
    pmounts = {v.split(":")[1]: v.split(":")[0] for v in p.get("volumes", [])}
    for target, source in pmounts.items():
        if source.startswith("."):
            check(os.path.exists(os.path.join(cdir, source)),
                  f"prometheus mount {target} from {source} exists")
    with open(os.path.join(cdir, pmounts["/etc/prometheus/prometheus.yml"])) as f:
        pcfg = yaml.safe_load(f)
    targets = [t for j in pcfg["scrape_configs"] if j["job_name"] == "grove"
               for sc in j.get("static_configs", []) for t in sc["targets"]]
    check(targets == [f"{n}:{image['metrics_port']}" for n in nodes],
          f"the grove job scrapes the three nodes ({targets})")
    for target, source in ({v.split(":")[1]: v.split(":")[0]
                            for v in services["grafana"].get("volumes", [])}).items():
        if source.startswith("."):
            check(os.path.exists(os.path.join(cdir, source)),
                  f"grafana mount {target} from {source} exists")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source-dir", required=True)
    args = ap.parse_args()
    src = os.path.abspath(args.source_dir)
    with open(os.path.join(src, "deploy", "grove.yaml")) as f:
        grove_cfg = yaml.safe_load(f)
    image = check_dockerfile(src, grove_cfg)
    check_compose(src, grove_cfg, image)
    check_cluster_compose(src, grove_cfg, image)
    check_k8s(src, grove_cfg, image)
    check_generated(src)
    check_metric_names(src)
    print(f"\nmanifests test: {passed} passed, {len(failures)} failed")
    for f in failures:
        print("  - " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
