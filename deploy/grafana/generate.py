#!/usr/bin/env python3
"""Generates Grove's Grafana dashboard, deploy/grafana/dashboards/grove.json.

The JSON is output: change the panels here and run this script; never edit the JSON by hand.
The test suite checks that the committed JSON is what this script writes, and evaluates every
query against a real Prometheus scraping groved.

    deploy/grafana/generate.py            # write the dashboard
    deploy/grafana/generate.py --check    # exit 1 if the committed file is stale
    deploy/grafana/generate.py --list     # print every panel's queries (title<TAB>expr)

Every query selects on the dashboard variables $job and $instance and uses $__rate_interval for
rates; the metric names are those of docs/server.md ("Metrics"). Python 3 standard library only.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "dashboards", "grove.json")

UID = "grove-overview"
SEL = 'job=~"$job", instance=~"$instance"'
KV = SEL + ', grpc_service="grove.v1.KV"'
KV_ERR = KV + ', grpc_code!="OK"'
RI = "$__rate_interval"
PAGE_BYTES = 4096  # grove_page_{reads,writes}_total count 4 KiB pages


def rate(metric, sel=SEL, by=None):
    expr = f"rate({metric}{{{sel}}}[{RI}])"
    if by is None:
        return expr
    return f"sum by ({by}) ({expr})"


def quantile(q, bucket_metric, sel, by):
    return (f"histogram_quantile({q}, sum by ({by}, le) "
            f"(rate({bucket_metric}{{{sel}}}[{RI}])))")


# ---- panel builders -------------------------------------------------------------------------


class Dashboard:
    def __init__(self):
        self.panels = []
        self.next_id = 1
        self.y = 0
        self.x = 0
        self.row_h = 0

    def row(self, title):
        self._newline()
        self.panels.append({
            "type": "row", "title": title, "id": self._id(), "collapsed": False, "panels": [],
            "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y},
        })
        self.y += 1

    def _id(self):
        i = self.next_id
        self.next_id += 1
        return i

    def _newline(self):
        if self.x:
            self.y += self.row_h
            self.x = 0
            self.row_h = 0

    def _place(self, w, h):
        if self.x + w > 24:
            self._newline()
        pos = {"h": h, "w": w, "x": self.x, "y": self.y}
        self.x += w
        self.row_h = max(self.row_h, h)
        return pos

    def _targets(self, queries):
        out = []
        for i, (expr, legend) in enumerate(queries):
            out.append({
                "refId": chr(ord("A") + i),
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "expr": expr,
                "legendFormat": legend,
                "range": True,
                "instant": False,
            })
        return out

    def timeseries(self, title, description, unit, queries, w=8, h=8, stack=False, min0=True):
        defaults = {
            "unit": unit,
            "custom": {
                "drawStyle": "line", "lineWidth": 1, "fillOpacity": 10, "showPoints": "never",
                "spanNulls": False,
                "stacking": {"mode": "normal" if stack else "none", "group": "A"},
            },
        }
        if min0:
            defaults["min"] = 0
        self.panels.append({
            "type": "timeseries", "title": title, "description": description, "id": self._id(),
            "gridPos": self._place(w, h),
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "targets": self._targets(queries),
            "fieldConfig": {"defaults": defaults, "overrides": []},
            "options": {
                "legend": {"displayMode": "list", "placement": "bottom", "showLegend": True},
                "tooltip": {"mode": "multi", "sort": "desc"},
            },
        })

    def stat(self, title, description, unit, queries, w=4, h=4, text_mode="value",
             mappings=None, thresholds=None):
        self.panels.append({
            "type": "stat", "title": title, "description": description, "id": self._id(),
            "gridPos": self._place(w, h),
            "datasource": {"type": "prometheus", "uid": "${datasource}"},
            "targets": self._targets(queries),
            "fieldConfig": {
                "defaults": {
                    "unit": unit,
                    "mappings": mappings or [],
                    "thresholds": thresholds or {
                        "mode": "absolute", "steps": [{"color": "green", "value": None}]},
                },
                "overrides": [],
            },
            "options": {
                "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                "textMode": text_mode, "colorMode": "value", "graphMode": "none",
                "justifyMode": "auto", "orientation": "auto",
            },
        })


def build():
    d = Dashboard()

    # ---- Overview ----
    d.row("Overview")
    d.stat("Ready", "grove_ready: 1 while groved serves (engine open, not draining).", "none",
           [(f"grove_ready{{{SEL}}}", "{{instance}}")],
           mappings=[{"type": "value", "options": {
               "0": {"text": "not ready", "color": "red"},
               "1": {"text": "ready", "color": "green"}}}],
           thresholds={"mode": "absolute", "steps": [
               {"color": "red", "value": None}, {"color": "green", "value": 1}]})
    d.stat("Scrape up", "Prometheus reached the metrics port at the last scrape.", "none",
           [(f"up{{{SEL}}}", "{{instance}}")],
           mappings=[{"type": "value", "options": {
               "0": {"text": "down", "color": "red"}, "1": {"text": "up", "color": "green"}}}],
           thresholds={"mode": "absolute", "steps": [
               {"color": "red", "value": None}, {"color": "green", "value": 1}]})
    d.stat("IO backend", "The active IO backend: uring (io_uring) or psync (pread/pwrite "
           "threads, the fallback when io_uring is blocked, e.g. by a container's seccomp "
           "profile).", "none",
           [(f"grove_io_backend_info{{{SEL}}}", "{{backend}}")], text_mode="name")
    d.stat("Index variant", "The index variant of the database.", "none",
           [(f"grove_index_info{{{SEL}}}", "{{variant}}")], text_mode="name")
    d.stat("Version", "groved version.", "none",
           [(f"grove_build_info{{{SEL}}}", "{{version}}")], text_mode="name")
    d.stat("Requests/s", "grove.v1.KV calls completed per second, all methods.", "reqps",
           [(f"sum({rate('grpc_server_handled_total', KV)})", "requests/s")])

    # ---- RPCs ----
    d.row("RPCs (grove.v1.KV)")
    d.timeseries("Requests/s by method", "Completed calls per second, by method.", "reqps",
                 [(rate("grpc_server_handled_total", KV, "grpc_method"), "{{grpc_method}}")])
    d.timeseries("Errors/s by method and code", "Calls that ended with a status other than OK.",
                 "reqps",
                 [(rate("grpc_server_handled_total", KV_ERR, "grpc_method, grpc_code"),
                   "{{grpc_method}} {{grpc_code}}")])
    d.timeseries("Error ratio by method", "Share of calls not OK, by method.", "percentunit",
                 [(rate("grpc_server_handled_total", KV_ERR, "grpc_method") + " / "
                   + rate("grpc_server_handled_total", KV, "grpc_method"), "{{grpc_method}}")])
    for q, name in ((0.5, "p50"), (0.99, "p99"), (0.999, "p99.9")):
        d.timeseries(f"Latency {name} by method",
                     f"{name} of grpc_server_handling_seconds (request to status), by method. "
                     "Scan is a stream: its time includes the client's reading.", "s",
                     [(quantile(q, "grpc_server_handling_seconds_bucket", KV, "grpc_method"),
                       "{{grpc_method}}")])
    d.timeseries("In-flight requests", "KV calls being handled (limit: "
                 "limits.max_inflight_requests).", "none",
                 [(f"grove_inflight_requests{{{SEL}}}", "{{instance}}")])
    d.timeseries("Limit rejections/s", "Calls refused by a configured limit, by its field.",
                 "reqps",
                 [(rate("grove_limit_rejections_total", SEL, "limit"), "{{limit}}")])
    d.timeseries("Engine operations/s", "Engine calls by kind (write = an atomic batch, scan = "
                 "an iterator).", "ops",
                 [(rate("grove_operations_total", SEL, "op"), "{{op}}")])

    # ---- Engine IO ----
    d.row("Engine IO")
    d.timeseries("Page reads/s by cause", "4 KiB pages read from disk, by cause.", "short",
                 [(rate("grove_page_reads_total", SEL, "cause"), "{{cause}}")], stack=True)
    d.timeseries("Page writes/s by cause", "4 KiB pages written, by cause.", "short",
                 [(rate("grove_page_writes_total", SEL, "cause"), "{{cause}}")], stack=True)
    d.timeseries("Disk bytes/s", "Bytes read and written by the engine: pages (4 KiB each), the "
                 "log, and checkpoints (double-write, in place and manifest; part of the page "
                 "writes).", "Bps",
                 [(f"sum({rate('grove_page_reads_total')}) * {PAGE_BYTES}", "page reads"),
                  (f"sum({rate('grove_page_writes_total')}) * {PAGE_BYTES}", "page writes"),
                  (f"sum({rate('grove_wal_written_bytes_total')})", "log writes"),
                  (f"sum({rate('grove_checkpoint_written_bytes_total')})", "checkpoint writes")])

    # ---- Cache and prefetch ----
    d.row("Buffer pool and prefetch")
    hits = rate("grove_cache_hits_total", SEL, "instance")
    misses = rate("grove_cache_misses_total", SEL, "instance")
    d.timeseries("Cache hit ratio", "Buffer pool lookups that found the page in memory.",
                 "percentunit", [(f"{hits} / ({hits} + {misses})", "{{instance}}")])
    d.timeseries("Cache memory", "Buffer pool budget, pages held, and modified pages waiting for "
                 "a checkpoint.", "bytes",
                 [(f"sum(grove_cache_capacity_bytes{{{SEL}}})", "capacity"),
                  (f"sum(grove_cache_resident_bytes{{{SEL}}})", "resident"),
                  (f"sum(grove_cache_dirty_bytes{{{SEL}}})", "dirty")])
    d.timeseries("Cache lookups/s", "Hits, misses and evictions per second.", "short",
                 [(f"sum({rate('grove_cache_hits_total')})", "hits"),
                  (f"sum({rate('grove_cache_misses_total')})", "misses"),
                  (f"sum({rate('grove_cache_evictions_total')})", "evictions")])
    issued = rate("grove_prefetch_issued_pages_total", SEL, "instance")
    d.timeseries("Prefetch accuracy and waste", "Of the pages read ahead: share confirmed by a "
                 "traversal (accuracy) and share dropped unused (waste). Empty while nothing is "
                 "prefetched (variants without prefetch).", "percentunit",
                 [(f"{rate('grove_prefetch_used_pages_total', SEL, 'instance')} / {issued}",
                   "accuracy {{instance}}"),
                  (f"{rate('grove_prefetch_wasted_pages_total', SEL, 'instance')} / {issued}",
                   "waste {{instance}}")])
    d.timeseries("Prefetch pages/s", "Pages read ahead, confirmed and dropped.", "short",
                 [(f"sum({rate('grove_prefetch_issued_pages_total')})", "issued"),
                  (f"sum({rate('grove_prefetch_used_pages_total')})", "used"),
                  (f"sum({rate('grove_prefetch_wasted_pages_total')})", "wasted")])
    d.timeseries("Checksum failures", "Pages that failed the checksum, own-id or epoch check "
                 "(each is a DATA_LOSS answer and an error in the log).", "short",
                 [(f"sum by (instance) (increase(grove_checksum_failures_total{{{SEL}}}[{RI}]))",
                   "{{instance}}")])

    # ---- WAL and checkpoints ----
    d.row("Write-ahead log and checkpoints")
    d.timeseries("WAL fsync latency", "fdatasync latency of the log (grove_wal_sync_duration_"
                 "seconds).", "s",
                 [(quantile(q, "grove_wal_sync_duration_seconds_bucket", SEL, "instance"),
                   f"{name} {{{{instance}}}}")
                  for q, name in ((0.5, "p50"), (0.99, "p99"), (0.999, "p99.9"))])
    d.timeseries("WAL syncs and group commits/s", "fdatasync calls and group commits (one log "
                 "write each) per second; records appended per second.", "short",
                 [(f"sum({rate('grove_wal_syncs_total')})", "syncs"),
                  (f"sum({rate('grove_wal_group_commits_total')})", "group commits"),
                  (f"sum({rate('grove_wal_records_total')})", "records")])
    d.timeseries("WAL segments", "Live log segment files.", "short",
                 [(f"grove_wal_segments{{{SEL}}}", "{{instance}}")])
    d.timeseries("Records per log sync", "Log records each fdatasync made durable: writers "
                 "sharing a group commit (grove_wal_records_per_sync), mean and p99.", "short",
                 [(f"{rate('grove_wal_records_per_sync_sum', SEL, 'instance')} / "
                   f"{rate('grove_wal_records_per_sync_count', SEL, 'instance')}",
                   "mean {{instance}}"),
                  (quantile(0.99, "grove_wal_records_per_sync_bucket", SEL, "instance"),
                   "p99 {{instance}}")])
    d.timeseries("Checkpoint duration", "Duration of checkpoints (p50, p99) and the mean.", "s",
                 [(quantile(0.5, "grove_checkpoint_duration_seconds_bucket", SEL, "instance"),
                   "p50 {{instance}}"),
                  (quantile(0.99, "grove_checkpoint_duration_seconds_bucket", SEL, "instance"),
                   "p99 {{instance}}"),
                  (f"{rate('grove_checkpoint_duration_seconds_sum', SEL, 'instance')} / "
                   f"{rate('grove_checkpoint_duration_seconds_count', SEL, 'instance')}",
                   "mean {{instance}}")])
    d.timeseries("Checkpoints", "Checkpoints and failed checkpoints in each interval.", "short",
                 [(f"sum by (instance) (increase(grove_checkpoints_total{{{SEL}}}[{RI}]))",
                   "done {{instance}}"),
                  (f"sum by (instance) (increase(grove_checkpoint_failures_total{{{SEL}}}[{RI}]))",
                   "failed {{instance}}")])
    d.timeseries("Log to replay", "LSNs between the recovery redo point and the log's end: what a "
                 "restart would replay.", "short",
                 [(f"grove_wal_next_lsn{{{SEL}}} - grove_checkpoint_redo_lsn{{{SEL}}}",
                   "{{instance}}")])

    d.timeseries("Writes waiting for room", "Writes that found no dirty-page room and waited "
                 "(for a write in flight or a checkpoint to end), and checkpoints such a write "
                 "ran itself because none was running.", "short",
                 [(f"sum by (instance) (increase(grove_write_room_waits_total{{{SEL}}}[{RI}]))",
                   "waits {{instance}}"),
                  (f"sum by (instance) (increase(grove_write_room_checkpoints_total{{{SEL}}}[{RI}]))",
                   "checkpoints run by writers {{instance}}")])
    d.timeseries("Wait for room", "How long writes short of dirty-page room waited (p99) and the "
                 "mean.", "s",
                 [(quantile(0.99, "grove_write_room_wait_seconds_bucket", SEL, "instance"),
                   "p99 {{instance}}"),
                  (f"{rate('grove_write_room_wait_seconds_sum', SEL, 'instance')} / "
                   f"{rate('grove_write_room_wait_seconds_count', SEL, 'instance')}",
                   "mean {{instance}}")])

    # ---- Index and memory ----
    d.row("Index and storage")
    d.timeseries("Index height", "Index levels including the leaves.", "short",
                 [(f"grove_index_height{{{SEL}}}", "{{instance}}")])
    d.timeseries("Index pages", "Inner and leaf pages.", "short",
                 [(f"sum(grove_index_inner_pages{{{SEL}}})", "inner"),
                  (f"sum(grove_index_leaf_pages{{{SEL}}})", "leaf")])
    d.timeseries("Index memory", "Inner nodes (what must stay cached for one-IO lookups), "
                 "learned models held in memory, and the structures that grow with the data file "
                 "(epoch table, allocator), next to the buffer pool budget.", "bytes",
                 [(f"sum(grove_index_inner_bytes{{{SEL}}})", "inner nodes"),
                  (f"sum(grove_index_model_bytes{{{SEL}}})", "models"),
                  (f"sum(grove_memory_bytes{{{SEL}}}) by (structure)", "{{structure}}"),
                  (f"sum(grove_cache_capacity_bytes{{{SEL}}})", "cache budget")])
    d.timeseries("Keys", "Keys in the index (where the variant tracks it) and values stored out "
                 "of line.", "short",
                 [(f"sum(grove_index_entries{{{SEL}}})", "keys"),
                  (f"sum(grove_blob_values{{{SEL}}})", "out-of-line values")])
    d.timeseries("Data file", "Data file size, free space inside it, and pages holding "
                 "out-of-line values.", "bytes",
                 [(f"sum(grove_data_file_bytes{{{SEL}}})", "size"),
                  (f"sum(grove_data_file_free_bytes{{{SEL}}})", "free inside"),
                  (f"sum(grove_blob_bytes{{{SEL}}})", "out-of-line values")])
    d.timeseries("Last recovery: records replayed", "Log records replayed by the last start.",
                 "short", [(f"grove_recovery_replayed_records{{{SEL}}}", "{{instance}}")])
    d.timeseries("Last recovery: duration", "Time the last start took to recover.", "s",
                 [(f"grove_recovery_duration_seconds{{{SEL}}}", "{{instance}}")])

    # ---- Data lifecycle: expiry, range deletes, backups ----
    d.row("Expiry and backups")
    d.timeseries("Expired keys/s", "Reads that met a key past its time to live (it read as "
                 "absent), and expired keys the background sweep removed.", "ops",
                 [(f"sum({rate('grove_expired_reads_total')})", "expired reads"),
                  (f"sum({rate('grove_expired_keys_removed_total')})", "removed by the sweep")])
    d.timeseries("Expiry sweeps", "Whole sweeps over the key space per hour, and whether keys "
                 "with a time to live may exist (sweeps run while they may).", "short",
                 [(f"sum(increase(grove_expiry_sweeps_total{{{SEL}}}[1h]))", "sweeps per hour"),
                  (f"max(grove_expiry_sweeping{{{SEL}}})", "sweeping")])
    d.stat("Last backup", "When the last online backup (grovectl backup) completed; "
           "'No backup' until one completed since groved started.", "dateTimeFromNow",
           [(f"max(grove_backup_last_completion_timestamp_seconds{{{SEL}}}) * 1000", "")],
           w=8, h=8, mappings=[{"type": "value", "options": {"0": {"text": "No backup"}}}])
    d.timeseries("Backups", "Online backups completed and failed per hour, one running, and the "
                 "last one's duration.", "short",
                 [(f"sum(increase(grove_backups_total{{{SEL}}}[1h]))", "completed per hour"),
                  (f"sum(increase(grove_backup_failures_total{{{SEL}}}[1h]))", "failed per hour"),
                  (f"max(grove_backup_running{{{SEL}}})", "running"),
                  (f"max(grove_backup_last_duration_seconds{{{SEL}}})", "last duration (s)")])

    # ---- Cluster (docs/cluster.md; the series exist only on nodes in cluster mode) ----
    d.row("Cluster")
    d.timeseries("Nodes registered", "Nodes holding their liveness key in etcd (a node that lost "
                 "its lease drops to 0 until it claims its name again).", "short",
                 [(f"sum(grove_cluster_registered{{{SEL}}})", "registered"),
                  (f"count(grove_cluster_registered{{{SEL}}})", "nodes scraped")], w=6)
    d.timeseries("Shard map version", "The shard map version each node decides ownership by; "
                 "a node below the others has not seen the latest change (etcd unreachable?).",
                 "short", [(f"max(grove_cluster_map_version{{{SEL}}})", "newest"),
                           (f"min(grove_cluster_map_version{{{SEL}}})", "oldest")], w=6)
    d.timeseries("Owned ranges", "Ranges of the shard map each node owns.", "short",
                 [(f"grove_cluster_owned_ranges{{{SEL}}}", "{{instance}}")], w=6)
    d.timeseries("Not-owner refusals/s", "Calls refused OUT_OF_RANGE because a key was another "
                 "node's: clients routing by a stale map (they refresh and resend) or not "
                 "routing at all.", "ops",
                 [(rate("grove_cluster_not_owner_total", by="instance"), "{{instance}}")], w=6)
    d.timeseries("etcd lease keep-alives/s", "Keep-alives of the nodes' liveness leases, by "
                 "result; failures mean etcd did not answer.", "ops",
                 [(rate("grove_cluster_keepalives_total", by="result"), "{{result}}")], w=8)
    d.timeseries("Range moves", "Moves of a node's ranges under way (grovectl cluster move), and "
                 "the keys written into them that the mover has not copied yet: it copies them "
                 "in rounds, then fences the range and switches.", "short",
                 [(f"sum(grove_cluster_moves_recording{{{SEL}}})", "moves under way"),
                  (f"sum(grove_cluster_move_recorded_keys{{{SEL}}})", "keys to catch up")], w=8)
    d.timeseries("Raft leaders", "Replicated ranges whose group each node leads (a range has "
                 "one leader; a range with none is electing).", "short",
                 [(f"sum by (instance) (grove_raft_leader{{{SEL}}})", "{{instance}}"),
                  (f"count(count by (range) (grove_raft_leader{{{SEL}}}))", "ranges")], w=6)
    d.timeseries("Raft elections", "Elections per range over 5 minutes: the increase of its "
                 "term (a leader lost, paused or cut off).", "short",
                 [(f"max by (range) (delta(grove_raft_term{{{SEL}}}[5m]))", "range {{range}}")],
                 w=6)
    d.timeseries("Raft follower lag", "On each leader: the entries each replica does not hold "
                 "yet (the leader's own series reads 0). A follower that stays behind is slow, "
                 "down, or installing a snapshot.",
                 "short",
                 [(f"max by (range, replica) (grove_raft_follower_lag_entries{{{SEL}}})",
                   "range {{range}} replica {{replica}}"),
                  (f"max(grove_raft_commit_index{{{SEL}}} - grove_raft_applied_index{{{SEL}}})",
                   "commit - applied (worst replica)")], w=6)
    d.timeseries("Raft proposals/s", "Writes proposed to the ranges' groups, by outcome; failed "
                 "ones were refused (not leader) or lost their leader mid-way.", "ops",
                 [(rate("grove_raft_proposals_total", by="result"), "{{result}}")], w=6)
    d.timeseries("Raft read barriers/s", "Linearizable reads of replicated ranges that waited for "
                 "a barrier, and the barriers run for them: reads arriving together share one.",
                 "ops", [(rate("grove_raft_read_barriers_total", by="kind"), "{{kind}}")], w=6)

    # ---- TreeLine (variant-specific figures; empty for other variants) ----
    def tl(name):
        return f'grove_index_variant_stat{{{SEL},variant="treeline",name="{name}"}}'

    def tl_rate(name):
        return f"rate({tl(name)}[{RI}])"

    d.row("TreeLine")
    d.timeseries("Record cache", "Bytes held against the record cache's capacity, and dirty "
                 "entries (writes that have not reached their page).", "bytes",
                 [(f"sum({tl('cache_bytes')})", "held"),
                  (f"sum({tl('cache_capacity_bytes')})", "capacity")])
    d.timeseries("Record cache entries", "Entries and dirty entries of the record cache.",
                 "short",
                 [(f"sum({tl('cache_entries')})", "entries"),
                  (f"sum({tl('cache_dirty_entries')})", "dirty")])
    d.timeseries("Record cache hits and evictions/s", "Lookups the cache answered or missed; "
                 "clean and dirty evictions (a dirty one costs a page write-back).", "ops",
                 [(f"sum({tl_rate('cache_hits_total')})", "hits"),
                  (f"sum({tl_rate('cache_misses_total')})", "misses"),
                  (f"sum({tl_rate('cache_clean_evictions_total')})", "clean evictions"),
                  (f"sum({tl_rate('cache_dirty_evictions_total')})", "dirty evictions")])
    d.timeseries("Write-backs/s", "Page write-backs and the records they carried: records per "
                 "write-back is the batching the record cache buys.", "ops",
                 [(f"sum({tl_rate('writebacks_total')})", "write-backs"),
                  (f"sum({tl_rate('writeback_records_total')})", "records")])
    d.timeseries("Reorganisations/s", "Segment reorganisations and overflow pages created.",
                 "ops",
                 [(f"sum({tl_rate('reorganisations_total')})", "reorganisations"),
                  (f"sum({tl_rate('overflows_created_total')})", "overflows created")])
    d.timeseries("Segments and pages", "Segments, data pages and overflow pages; segment "
                 "efficiency is the share of data pages in multi-page segments.", "short",
                 [(f"sum({tl('segments')})", "segments"),
                  (f"sum({tl('data_pages')})", "data pages"),
                  (f"sum({tl('overflow_pages')})", "overflow pages")])

    # ---- AULID (variant-specific figures; empty for other variants) ----
    def au(name):
        return f'grove_index_variant_stat{{{SEL},variant="aulid",name="{name}"}}'

    def au_rate(name):
        return f"rate({au(name)}[{RI}])"

    d.row("AULID")
    d.timeseries("Pages per lookup", "Inner pages by kind (mixed-node slot pages, packed-array "
                 "slabs, branch pages) and leaf pages read per lookup, since the store opened: "
                 "one per mixed level, one for a packed array or branch, one leaf.", "short",
                 [(f"avg({au('mixed_pages_per_lookup')})", "mixed"),
                  (f"avg({au('packed_pages_per_lookup')})", "packed array"),
                  (f"avg({au('branch_pages_per_lookup')})", "branch"),
                  (f"avg({au('leaf_pages_per_lookup')})", "leaf")])
    d.timeseries("Structure changes/s", "Leaf splits and merges, mixed nodes created by "
                 "conversion, Adjust rebuilds, packed-array promotions, branch splits.", "ops",
                 [(f"sum({au_rate('smo_split_total')})", "leaf splits"),
                  (f"sum({au_rate('smo_merge_total')})", "leaf merges"),
                  (f"sum({au_rate('smo_create_total')})", "nodes created"),
                  (f"sum({au_rate('smo_adjust_total')})", "adjust rebuilds"),
                  (f"sum({au_rate('smo_promotion_total')})", "promotions"),
                  (f"sum({au_rate('smo_branch_split_total')})", "branch splits")])
    d.timeseries("Inner part", "Inner entries (one per run of leaves) and the pages of slab "
                 "and branch kind; inner bytes are on the Index row.", "short",
                 [(f"sum({au('inner_entries')})", "entries"),
                  (f"sum({au('slab_pages')})", "slab pages"),
                  (f"sum({au('branch_pages')})", "branch pages")])
    d.timeseries("DATA-slot depth", "Mean mixed-node depth of the inner entries (1: the root), "
                 "as of the last bulk load or Verify.", "short",
                 [(f"avg({au('data_slot_depth')})", "{{instance}}")])

    # ---- AHA-tree (variant-specific figures; empty for other variants) ----
    def ah(name):
        return f'grove_index_variant_stat{{{SEL},variant="aha",name="{name}"}}'

    def ah_rate(name):
        return f"rate({ah(name)}[{RI}])"

    d.row("AHA-tree")
    d.timeseries("Root buffer by level", "Key and cell bytes held in each disk level of the root "
                 "buffer (level 0 takes flushed memtables; the last is the largest).", "bytes",
                 [(f"sum({ah(f'root_level{i}_bytes')})", f"level {i}") for i in range(3)])
    d.timeseries("Memtables", "Bytes in the active memtable and in frozen ones waiting for their "
                 "flush, against the size at which a memtable is frozen.", "bytes",
                 [(f"sum({ah('memtable_bytes')})", "active"),
                  (f"sum({ah('frozen_memtable_bytes')})", "frozen"),
                  (f"max({ah('memtable_freeze_bytes')})", "freeze at")])
    d.timeseries("Flushes and compactions/s", "Memtable flushes and compactions; write stalls "
                 "are writes held back because flushes or level 0 fell behind.", "ops",
                 [(f"sum({ah_rate('flushes_total')})", "flushes"),
                  (f"sum({ah_rate('compactions_total')})", "compactions"),
                  (f"sum({ah_rate('write_stalls_total')})", "write stalls")])
    d.timeseries("Compaction bytes/s", "Bytes compactions read and wrote, and flushed memtable "
                 "bytes: their ratio to the write rate is the write amplification.", "Bps",
                 [(f"sum({ah_rate('compaction_bytes_read_total')})", "read"),
                  (f"sum({ah_rate('compaction_bytes_written_total')})", "written"),
                  (f"sum({ah_rate('flush_bytes_total')})", "flushed")])
    d.timeseries("Runs", "Sorted runs by level of the root buffer, and retired runs whose extents "
                 "wait for a durable checkpoint or their last reader.", "short",
                 [(f"sum({ah(f'root_level{i}_runs')})", f"level {i}") for i in range(3)]
                 + [(f"sum({ah('retired_runs')})", "retired")])
    d.timeseries("Buffers probed per lookup", "Runs a point lookup consulted, since the store "
                 "opened (a Bloom filter answers most of them without a data page).", "short",
                 [(f"avg({ah('runs_probed_per_get')})", "{{instance}}")])
    d.timeseries("Tree buffers by depth", "Key and cell bytes held in node buffers below the "
                 "root, by depth (1: the root's children); the deepest are the leaves' buffers.",
                 "bytes", [(f"sum({ah(f'depth{i}_buffer_bytes')})", f"depth {i}")
                           for i in range(1, 5)])
    d.timeseries("Tree changes/s", "Push-downs (a node's bottom level moved to its children), "
                 "runs cut at a routing key on the way, leaf and inner splits, node buffer "
                 "compactions.", "ops",
                 [(f"sum({ah_rate('pushdowns_total')})", "push-downs"),
                  (f"sum({ah_rate('runs_cut_total')})", "runs cut"),
                  (f"sum({ah_rate('leaf_splits_total')})", "leaf splits"),
                  (f"sum({ah_rate('inner_splits_total')})", "inner splits"),
                  (f"sum({ah_rate('node_compactions_total')})", "node compactions")])
    d.timeseries("Tree nodes", "Leaves and inner nodes below the root, and leaves adapted to "
                 "a hot range (their data in B+-tree leaf pages).", "short",
                 [(f"sum({ah('leaves')})", "leaves"), (f"sum({ah('inner_nodes')})", "inner"),
                  (f"sum({ah('adapted_leaves')})", "adapted")])
    d.timeseries("Adaptation", "1 while a hot range adapts (its buffers emptied, its leaves "
                 "turned into pages), and how long the last adaptation took, from the first "
                 "range search that asked for it to convergence.", "short",
                 [(f"max({ah('adaptation_in_progress')})", "in progress"),
                  (f"max({ah('last_adaptation_seconds')})", "last (s)"),
                  (f"max({ah('hot_ranges')})", "hot ranges")])
    d.timeseries("Leaf page fill", "Adapted leaves' pages by fill (tenths of a page): even "
                 "allocation piles them at the top, sound remedy spreads them over half to full.",
                 "short", [(f"sum({ah(f'leaf_pages_fill_{b}')})", label) for b, label in
                           [("lt50", "< 50%"), ("50", "50-60%"), ("60", "60-70%"),
                            ("70", "70-80%"), ("80", "80-90%"), ("90", "90-100%")]])
    d.timeseries("Writes into adapted leaves/s", "Versions merged straight into adapted leaves' "
                 "pages at flushes (insert: tree), and merges of adapted leaves' buffers into "
                 "their pages (batch insert) and leaf transformations.", "ops",
                 [(f"sum({ah_rate('tree_inserts_total')})", "tree inserts"),
                  (f"sum({ah_rate('page_merges_total')})", "page merges"),
                  (f"sum({ah_rate('leaf_transforms_total')})", "leaf transforms")])
    d.timeseries("Buffers probed per range search", "Runs a range search opened besides the "
                 "memtables and leaf pages, since the store opened: 0 inside an adapted range.",
                 "short", [(f"avg({ah('runs_probed_per_scan')})", "{{instance}}")])

    return {
        "uid": UID,
        "title": "Grove",
        "description": "groved: RPCs, engine IO, buffer pool, prefetch, log, checkpoints, index. "
                       "Generated by deploy/grafana/generate.py; do not edit.",
        "tags": ["grove"],
        "editable": False,
        "graphTooltip": 1,
        "refresh": "30s",
        "schemaVersion": 39,
        "version": 1,
        "time": {"from": "now-1h", "to": "now"},
        "timepicker": {},
        "timezone": "browser",
        "annotations": {"list": []},
        "links": [],
        "templating": {"list": [
            {"name": "datasource", "label": "Data source", "type": "datasource",
             "query": "prometheus", "current": {}, "hide": 0, "refresh": 1,
             "includeAll": False, "multi": False, "options": []},
            {"name": "job", "label": "Job", "type": "query",
             "datasource": {"type": "prometheus", "uid": "${datasource}"},
             "query": {"query": "label_values(grove_build_info, job)", "refId": "job"},
             "definition": "label_values(grove_build_info, job)",
             "refresh": 2, "includeAll": True, "allValue": ".*", "multi": True,
             "current": {}, "hide": 0, "options": [], "sort": 1},
            {"name": "instance", "label": "Instance", "type": "query",
             "datasource": {"type": "prometheus", "uid": "${datasource}"},
             "query": {"query": 'label_values(grove_build_info{job=~"$job"}, instance)',
                       "refId": "instance"},
             "definition": 'label_values(grove_build_info{job=~"$job"}, instance)',
             "refresh": 2, "includeAll": True, "allValue": ".*", "multi": True,
             "current": {}, "hide": 0, "options": [], "sort": 1},
        ]},
        "panels": d.panels,
    }


def queries(dashboard):
    """(panel title, expr) for every query of every panel."""
    for p in dashboard["panels"]:
        for t in p.get("targets", []):
            yield p["title"], t["expr"]


def render(dashboard):
    return json.dumps(dashboard, indent=2, sort_keys=True) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if the committed file is stale")
    ap.add_argument("--list", action="store_true", help="print title<TAB>expr per query")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    dashboard = build()
    text = render(dashboard)
    if args.list:
        for title, expr in queries(dashboard):
            print(f"{title}\t{expr}")
        return 0
    if args.check:
        try:
            with open(args.out) as f:
                current = f.read()
        except FileNotFoundError:
            current = None
        if current != text:
            print(f"{os.path.relpath(args.out)} is stale: run deploy/grafana/generate.py",
                  file=sys.stderr)
            return 1
        print(f"{os.path.relpath(args.out)}: up to date")
        return 0
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text)
    n = sum(1 for _ in queries(dashboard))
    print(f"wrote {os.path.relpath(args.out)}: {len(dashboard['panels'])} panels, {n} queries")
    return 0


if __name__ == "__main__":
    sys.exit(main())
