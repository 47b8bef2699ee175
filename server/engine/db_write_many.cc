// DbImpl::WriteMany: a caller's writes on distinct keys share one group commit.
//
// The writes are cut into groups in call order. A group holds writes whose keys (operations and
// conditions) are all distinct, whose room fits a quarter of the write room, and none of which is
// applied stepwise; a write that shares a key with the open group, or would overflow it, closes
// it first. A group runs as one write would: lock the stripes of all its keys (sorted, so it
// cannot deadlock with other writers), check each write's conditions, reserve room for all,
// append all records with Wal::AppendMany (one fdatasync under kAlways), apply each, unlock. A
// write whose conditions fail drops out of its group and changes nothing. Large (stepwise) writes
// run alone through CommitWrite, as from Write().

#include <algorithm>
#include <unordered_set>

#include <fmt/format.h>

#include "engine/db_impl.h"

namespace grove {

struct DbImpl::GroupedWrite {
  WriteRequest* request;
  const WriteOptions* options;
  CheckedWrite checked;
};

void DbImpl::WriteMany(std::span<WriteRequest> writes) {
  const WriteOptions defaults;
  std::vector<GroupedWrite> group;
  std::unordered_set<Slice> keys;  // every key the open group touches
  uint64_t pages = 0;              // the open group's room
  auto close_group = [&] {
    if (!group.empty()) CommitWriteGroup(&group);
    group.clear();
    keys.clear();
    pages = 0;
  };
  for (WriteRequest& w : writes) {
    GroupedWrite g{&w, w.options != nullptr ? w.options : &defaults, {}};
    w.status = CheckWrite(*w.batch, *g.options, &g.checked);
    if (!w.status.ok() || g.checked.empty) continue;
    if (g.checked.stepwise) {
      close_group();
      w.status = CommitWrite(*w.batch, *g.options, g.checked, w.result);
      continue;
    }
    const bool shares_key = std::any_of(g.checked.keys.begin(), g.checked.keys.end(),
                                        [&](Slice k) { return keys.contains(k); });
    if (shares_key || pages + g.checked.need.total > dirty_room_->Cap() / 4) close_group();
    keys.insert(g.checked.keys.begin(), g.checked.keys.end());
    pages += g.checked.need.total;
    group.push_back(std::move(g));
  }
  close_group();
}

void DbImpl::CommitWriteGroup(std::vector<GroupedWrite>* group) {
  std::vector<Slice> all;
  for (const GroupedWrite& g : *group)
    all.insert(all.end(), g.checked.keys.begin(), g.checked.keys.end());
  const std::vector<uint32_t> stripes = KeyLocks::StripesOf(all);
  key_locks_.Lock(stripes);

  // Conditions first: a write whose conditions fail (or that only checks conditions) is done.
  std::vector<GroupedWrite*> logged;
  uint64_t pages = 0;
  Clock::time_point room_deadline = Clock::time_point::max();
  for (GroupedWrite& g : *group) {
    g.request->status = CheckConditions(*g.options, g.request->result);
    if (!g.request->status.ok() || g.request->batch->Empty()) continue;
    logged.push_back(&g);
    pages += g.checked.need.total;
    room_deadline = std::min(room_deadline, RoomDeadline(*g.options));
  }

  if (!logged.empty()) {
    Room room(this);
    Status s = dirty_room_->Reserve(pages, room_deadline);
    if (s.ok()) {
      room.Add(pages);
      GatePass pass(&gate_);
      s = CheckWritable();
      if (s.ok()) {
        std::vector<Slice> payloads;
        std::vector<bool> no_sync;
        payloads.reserve(logged.size());
        for (const GroupedWrite* g : logged) {
          payloads.push_back(g->request->batch->Encoded());
          no_sync.push_back(!g->options->sync);
        }
        const std::vector<StatusOr<Lsn>> lsns = wal_->AppendMany(payloads, &no_sync);
        Status failed;  // after a failed apply the Db is fail-stopped: apply nothing more
        for (size_t k = 0; k < logged.size(); ++k) {
          WriteRequest* w = logged[k]->request;
          if (!lsns[k].ok()) {
            // As LogAndApply: the log fail-stops on EIO and fsync failures.
            if (lsns[k].status().code() == StatusCode::kInternal) {
              SetBackgroundError(lsns[k].status());
            }
            w->status = lsns[k].status();
          } else if (!failed.ok()) {
            w->status = failed;
          } else {
            w->status = ApplyBatch(*lsns[k], *w->batch, &room, /*stepwise=*/false,
                                   /*in_gate=*/true);
            if (!w->status.ok()) {
              failed = w->status.WithContext(
                  fmt::format("write LSN {} was logged but could not be applied", *lsns[k]));
              SetBackgroundError(failed);
            } else if (w->result != nullptr) {
              w->result->version = *lsns[k];
            }
          }
        }
      }
    }
    if (!s.ok()) {
      for (GroupedWrite* g : logged) g->request->status = s;
    }
  }
  key_locks_.Unlock(stripes);

  for (const GroupedWrite& g : *group) {
    if (g.request->status.ok()) CountWrite(g.checked);
  }
  MaybeScheduleCheckpoint();
}

}  // namespace grove
