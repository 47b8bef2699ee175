// grovectl cluster move: moves a range of the shard map to another node while both keep serving
// (docs/cluster.md, "Moving a range"). The protocol, step by step:
//
//   1. map: the range is moving to the target (a new move id); the owner starts recording the
//      keys written into it, the target accepts writes marked with the move id for it
//   2. the target's leftovers of an earlier attempt are deleted
//   3. copy: a scan of the range at the owner, written to the target in batches
//   4. catch-up: the keys the owner recorded meanwhile, read again at the owner and written to
//      the target, round after round until a round finds few
//   5. map: fenced; the owner refuses writes to the range (clients retry) once the writes it
//      admitted before have finished; the last recorded keys are copied
//   6. map: the target owns the range (one etcd transaction); the old owner is its cleanup node
//   7. the old owner drops its copy; map: cleanup done
//
// Every map change is a transaction on the map as read. Interrupted (a node, the mover or etcd
// killed), the range stays with its owner: run the command again to restart the copy under a
// new move id (a fenced range is unfenced by that), or --abort to end the move.
//
// A replicated range moves one replica instead, through Raft (grovectl/replicas.cc): a replica
// added on the target, leadership passed to it, the old replica removed.

#include <chrono>
#include <map>
#include <ostream>
#include <thread>

#include "grove/v1/metadata.h"

#include "cluster/members.h"
#include "cluster/shard_map.h"
#include "grovectl/commands.h"

namespace grove::grovectl {
namespace {

using Clock = std::chrono::steady_clock;

// Calls at a time that read changed keys again at the owner during catch-up.
constexpr int kRereadThreads = 8;

double SecondsSince(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

class Mover {
 public:
  Mover(const ClusterArgs& args, const MoveArgs& m, client::Format key_format, std::ostream& out,
        std::ostream& err, cluster::EtcdClient* etcd)
      : args_(args), m_(m), key_format_(key_format), out_(out), err_(err), etcd_(etcd) {}

  int Run();

 private:
  // Prints `what: status` and returns the exit code for it.
  int Fail(const std::string& what, const Status& s) {
    err_ << "grovectl: cluster move: " << what << ": " << s.ToString() << "\n";
    return s.code() == StatusCode::kInvalidArgument ? kExitUsage : kExitFailed;
  }
  int Fail(const std::string& what, const grpc::Status& s) {
    err_ << "grovectl: cluster move: " << what << ": " << s.error_message() << " (gRPC "
         << static_cast<int>(s.error_code()) << ")\n"
         << "  the range stays with its owner: run the same command again to restart the move, "
            "or add --abort to end it\n";
    return kExitFailed;
  }
  std::string Describe(const cluster::ShardRange& r) const {
    return "[" + (r.start.empty() ? "-inf" : client::Encode(key_format_, r.start)) + ", " +
           (r.end.empty() ? "+inf" : client::Encode(key_format_, r.end)) + ")";
  }
  // A Client of node `name` sending the map version and the given metadata.
  grpc::Status NodeClient(const std::string& name, uint64_t version,
                          std::vector<std::pair<std::string, std::string>> metadata,
                          std::unique_ptr<client::Client>* c) {
    auto it = addresses_.find(name);
    if (it == addresses_.end() || it->second.empty()) {
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                          "node '" + name + "' has never registered an address");
    }
    client::ClientOptions o = m_.node_options;
    o.address = it->second;
    o.metadata = std::move(metadata);
    o.metadata.emplace_back(v1::kMapVersionMetadata, std::to_string(version));
    return client::Client::Create(o, c);
  }
  // Deletes every key of `r` at `c` (the calls' metadata says on what grounds).
  grpc::Status DeleteAll(client::Client* c, const cluster::ShardRange& r, uint64_t* deleted) {
    std::string from = r.start;
    while (true) {
      client::DeleteRangeOutcome o;
      grpc::Status s = c->DeleteRange(from, r.end, 0, &o);
      if (!s.ok()) return s;
      *deleted += o.deleted;
      if (!o.more) return s;
      from = o.resume_key;
    }
  }
  // Writes `batch` to the target and paces the copy.
  grpc::Status Flush(client::Client* target, std::vector<client::Mutation>* batch) {
    if (batch->empty()) return grpc::Status::OK;
    grpc::Status s = target->BatchInsert(*batch);
    copied_ += batch->size();
    batch->clear();
    if (m_.max_keys_per_second > 0) {
      const auto due =
          started_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                         static_cast<double>(copied_) / m_.max_keys_per_second));
      std::this_thread::sleep_until(due);
    }
    return s;
  }
  // Adds the current state of `key` at the owner to `batch`.
  grpc::Status Reread(client::Client* owner, const std::string& key,
                      std::vector<client::Mutation>* batch) {
    std::string value;
    bool found = false;
    client::ValueInfo info;
    grpc::Status s = owner->Get(key, &value, &found, &info);
    if (!s.ok()) return s;
    const uint64_t now =
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count());
    if (found && (info.expires_ms == 0 || info.expires_ms > now)) {
      client::Mutation put(client::Mutation::Type::kPut, key, std::move(value));
      if (info.expires_ms != 0) put.ttl = std::chrono::milliseconds(info.expires_ms - now);
      batch->push_back(std::move(put));
    } else {
      batch->push_back(client::Mutation(client::Mutation::Type::kDelete, key, ""));
    }
    return grpc::Status::OK;
  }
  // Takes every recorded change from the owner and copies it; *taken receives how many. The
  // keys of each batch are read again at the owner by kRereadThreads calls at a time.
  grpc::Status CatchUp(client::Client* owner, client::Client* target, uint64_t move_id,
                       uint64_t token, uint64_t* taken) {
    *taken = 0;
    while (true) {
      v1::MoveChangesResponse changes;
      grpc::Status s = owner->MoveChanges(move_id, token, m_.batch_keys, &changes);
      if (!s.ok()) return s;
      const int n = changes.keys_size();
      std::vector<std::vector<client::Mutation>> parts(kRereadThreads);
      std::vector<grpc::Status> errors(kRereadThreads);
      std::vector<std::thread> readers;
      for (int t = 0; t < kRereadThreads && t < n; ++t) {
        readers.emplace_back([&, t] {
          for (int i = t; i < n && errors[t].ok(); i += kRereadThreads) {
            errors[t] = Reread(owner, changes.keys(i), &parts[t]);
          }
        });
      }
      for (std::thread& r : readers) r.join();
      std::vector<client::Mutation> batch;
      for (int t = 0; t < kRereadThreads; ++t) {
        if (!errors[t].ok()) return errors[t];
        for (client::Mutation& m : parts[t]) batch.push_back(std::move(m));
      }
      *taken += static_cast<uint64_t>(n);
      if (s = Flush(target, &batch); !s.ok()) return s;
      if (n == 0 || changes.remaining() == 0) return grpc::Status::OK;
    }
  }
  // Applies `edit` to the map; false (with the message written) when it fails.
  bool Edit(const std::string& what, const std::function<Status(cluster::ShardMap*)>& edit,
            cluster::ShardMap* result) {
    auto updated = cluster::UpdateShardMap(etcd_, args_.cluster, 0, edit);
    if (!updated.ok()) {
      Fail(what, updated.status());
      return false;
    }
    *result = std::move(*updated);
    return true;
  }

  int Abort(const cluster::ShardRange& r);
  int Cleanup(const cluster::ShardRange& r, uint64_t version);

  const ClusterArgs& args_;
  const MoveArgs& m_;
  const client::Format key_format_;
  std::ostream& out_;
  std::ostream& err_;
  cluster::EtcdClient* const etcd_;
  std::map<std::string, std::string> addresses_;
  Clock::time_point started_ = Clock::now();
  uint64_t copied_ = 0;
};

int Mover::Abort(const cluster::ShardRange& r) {
  if (!r.moving()) {
    err_ << "grovectl: cluster move --abort: range " << Describe(r) << " is not moving\n";
    return kExitFailed;
  }
  cluster::ShardMap map;
  if (!Edit(
          "abort", [&](cluster::ShardMap* mm) { return mm->AbortMove(r.start); }, &map)) {
    return kExitFailed;
  }
  // The target's partial copy: it neither owns nor receives the range any more.
  std::unique_ptr<client::Client> target;
  uint64_t dropped = 0;
  grpc::Status s =
      NodeClient(r.moving_to, map.version(), {{v1::kDropForeignMetadata, "1"}}, &target);
  if (s.ok()) s = DeleteAll(target.get(), r, &dropped);
  if (!s.ok()) {
    err_ << "grovectl: cluster move --abort: the move is aborted, but node '" << r.moving_to
         << "' kept its partial copy (" << s.error_message()
         << "); it serves none of it, and a later move to it deletes it first\n";
    return kExitFailed;
  }
  out_ << "aborted the move of range " << Describe(r) << " to " << r.moving_to << " (dropped "
       << dropped << " copied keys there); " << r.owner << " keeps it; map version "
       << map.version() << "\n";
  return kExitOk;
}

int Mover::Cleanup(const cluster::ShardRange& r, uint64_t version) {
  std::unique_ptr<client::Client> old;
  uint64_t dropped = 0;
  grpc::Status s = NodeClient(r.cleanup_node, version, {{v1::kDropForeignMetadata, "1"}}, &old);
  if (s.ok()) s = DeleteAll(old.get(), r, &dropped);
  if (!s.ok()) return Fail("dropping the old owner's copy at " + r.cleanup_node, s);
  cluster::ShardMap map;
  if (!Edit(
          "cleanup", [&](cluster::ShardMap* mm) { return mm->CleanupDone(r.start); }, &map)) {
    return kExitFailed;
  }
  out_ << "dropped " << dropped << " keys of range " << Describe(r) << " at " << r.cleanup_node
       << "; map version " << map.version() << "\n";
  return kExitOk;
}

int Mover::Run() {
  auto stored = cluster::ReadShardMap(etcd_, args_.cluster);
  if (!stored.ok()) return Fail("reading the shard map", stored.status());
  if (!*stored) {
    return Fail("reading the shard map",
                Status::FailedPrecondition("cluster '" + args_.cluster + "' has no shard map"));
  }
  auto index = (*stored)->map.RangeAt(m_.start);
  if (!index.ok()) return Fail("RANGE", index.status());
  const cluster::ShardRange r = (*stored)->map.ranges()[*index];
  if (r.replicated()) {
    if (m_.abort) {
      return Fail("--abort", Status::InvalidArgument(
                                 "range " + Describe(r) +
                                 " is replicated: its move has nothing to abort (run it again "
                                 "to finish it, or cluster remove-replica to take back a replica "
                                 "it added)"));
    }
    ReplicaArgs replica{"move", m_.start, m_.node, m_.from, m_.catch_up_seconds};
    return RunClusterReplicas(args_, replica, key_format_, out_, err_);
  }
  if (!m_.from.empty()) {
    return Fail("--from", Status::InvalidArgument("range " + Describe(r) +
                                                  " is not replicated: its owner is where it "
                                                  "moves from"));
  }
  auto nodes = cluster::ListNodes(etcd_, args_.cluster);
  if (!nodes.ok()) return Fail("reading the members", nodes.status());
  for (const cluster::NodeStatus& n : *nodes) addresses_[n.name] = n.address;

  if (m_.abort) return Abort(r);
  if (r.owner == m_.node && !r.moving()) {
    if (!r.cleanup_node.empty()) return Cleanup(r, (*stored)->map.version());
    out_ << "range " << Describe(r) << " is owned by " << m_.node << " already\n";
    return kExitOk;
  }
  if (addresses_.count(m_.node) == 0) {
    return Fail("NODE", Status::InvalidArgument("no node '" + m_.node + "' in cluster '" +
                                                args_.cluster + "'"));
  }

  // 1. The move begins (or begins again, unfenced, under a new id).
  uint64_t move_id = 0;
  cluster::ShardMap map;
  if (!Edit(
          "starting the move",
          [&](cluster::ShardMap* mm) -> Status {
            auto id = mm->StartMove(m_.start, m_.node);
            if (!id.ok()) return id.status();
            move_id = *id;
            return Status::Ok();
          },
          &map)) {
    return kExitFailed;
  }
  const std::string owner_name = r.owner;
  std::unique_ptr<client::Client> owner, target;
  grpc::Status s = NodeClient(owner_name, map.version(), {}, &owner);
  if (s.ok()) {
    s = NodeClient(m_.node, map.version(), {{v1::kMoveIngestMetadata, std::to_string(move_id)}},
                   &target);
  }
  if (!s.ok()) return Fail("connecting", s);
  out_ << "moving range " << Describe(r) << " from " << owner_name << " to " << m_.node << " (move "
       << move_id << ", map version " << map.version() << ")\n";

  // 2. Leftovers of an earlier attempt at the target.
  uint64_t leftovers = 0;
  if (s = DeleteAll(target.get(), r, &leftovers); !s.ok()) {
    return Fail("clearing the target's earlier copy", s);
  }
  // The owner's record of changes: it began when the owner saw the map above.
  v1::MoveChangesResponse first;
  if (s = owner->MoveChanges(move_id, 0, 0, &first); !s.ok()) {
    return Fail("starting the owner's record", s);
  }
  const uint64_t token = first.token();

  // 3. The copy.
  started_ = Clock::now();
  std::vector<client::Mutation> batch;
  uint64_t batch_bytes = 0;
  grpc::Status write_error;
  const uint64_t now_ms =
      static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count());
  client::ScanRange range;
  range.start = r.start;
  range.end = r.end;
  s = owner->ScanWithExpiry(range, [&](std::string_view k, std::string_view v, uint64_t e) {
    if (e != 0 && e <= now_ms) return true;  // expired: nothing to copy
    client::Mutation put(client::Mutation::Type::kPut, std::string(k), std::string(v));
    if (e != 0) put.ttl = std::chrono::milliseconds(e - now_ms);
    batch_bytes += k.size() + v.size();
    batch.push_back(std::move(put));
    if (batch.size() >= m_.batch_keys || batch_bytes >= (1u << 20)) {
      batch_bytes = 0;
      write_error = Flush(target.get(), &batch);
      return write_error.ok();
    }
    return true;
  });
  if (s.ok() && write_error.ok()) write_error = Flush(target.get(), &batch);
  if (!s.ok()) return Fail("copying (reading the owner)", s);
  if (!write_error.ok()) return Fail("copying (writing the target)", write_error);
  const uint64_t snapshot_keys = copied_;
  const double copy_seconds = SecondsSince(started_);

  // 4. Catch-up while writes go on.
  uint64_t caught_up = 0;
  for (int round = 0; round < 20; ++round) {
    uint64_t taken = 0;
    if (s = CatchUp(owner.get(), target.get(), move_id, token, &taken); !s.ok()) {
      return Fail("catching up", s);
    }
    caught_up += taken;
    if (taken < m_.batch_keys) break;
  }

  // 5. Fence, then the last changes.
  if (!Edit(
          "fencing", [&](cluster::ShardMap* mm) { return mm->Fence(m_.start, move_id); }, &map)) {
    return kExitFailed;
  }
  const auto fenced_at = Clock::now();
  std::unique_ptr<client::Client> fenced_owner;
  s = NodeClient(owner_name, map.version(), {}, &fenced_owner);
  uint64_t last = 0;
  if (s.ok()) s = CatchUp(fenced_owner.get(), target.get(), move_id, token, &last);
  if (!s.ok()) return Fail("the last changes", s);

  // 6. The switch.
  if (!Edit(
          "switching", [&](cluster::ShardMap* mm) { return mm->Switch(m_.start, move_id); },
          &map)) {
    return kExitFailed;
  }
  const double fenced_seconds = SecondsSince(fenced_at);
  out_ << "switched: " << m_.node << " owns range " << Describe(r) << " (map version "
       << map.version() << "); copied " << snapshot_keys << " keys in " << copy_seconds
       << " s, then " << caught_up + last << " changed keys; writes to the range waited "
       << fenced_seconds << " s\n";
  if (leftovers > 0) {
    out_ << "  (deleted " << leftovers << " keys an earlier attempt left at " << m_.node << ")\n";
  }

  // 7. The old owner's copy.
  auto after = map.RangeAt(m_.start);
  if (!after.ok()) return Fail("cleanup", after.status());
  return Cleanup(map.ranges()[*after], map.version());
}

}  // namespace

int RunClusterMove(const ClusterArgs& args, const MoveArgs& move, client::Format key_format,
                   std::ostream& out, std::ostream& err) {
  std::unique_ptr<cluster::EtcdClient> etcd = ConnectEtcd(args, err);
  if (etcd == nullptr) return kExitUsage;
  if (move.batch_keys == 0 || move.batch_keys > 10000) {
    err << "grovectl: cluster move: --batch: 1..10000 keys\n";
    return kExitUsage;
  }
  Mover mover(args, move, key_format, out, err, etcd.get());
  return mover.Run();
}

}  // namespace grove::grovectl
