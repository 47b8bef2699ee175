// FaultInjectionBackend::SimulatePowerLoss: rewrites files from their undo records. See the
// "Power-loss model" in fault_backend.h.

#include <algorithm>
#include <string>
#include <vector>

#include "io/fault_backend.h"

namespace grove {

using OpKind = FaultInjectionBackend::OpKind;

namespace {

constexpr uint64_t kSectorSize = 512;

// Opens `path` buffered and read-write for rewriting.
StatusOr<std::unique_ptr<File>> OpenForRewrite(IoBackend* backend, const std::string& path) {
  FileOptions options;  // buffered: undo records have arbitrary offsets and lengths
  return backend->OpenFile(path, options);
}

}  // namespace

Status FaultInjectionBackend::RevertAll(const FileNode& node) {
  GROVE_ASSIGN_OR_RETURN(std::unique_ptr<File> file, OpenForRewrite(inner_.get(), node.path));
  // Newest first: each record restores the state just before its op, so after the oldest one the
  // file is exactly as of its last sync, size included.
  for (auto it = node.undo.rbegin(); it != node.undo.rend(); ++it) {
    if (!it->old_bytes.empty()) GROVE_RETURN_IF_ERROR(file->Write(it->offset, it->old_bytes));
    GROVE_RETURN_IF_ERROR(file->Truncate(it->old_size));
    if (it->kind == OpKind::kWrite) ++counters_.unsynced_writes_dropped;
  }
  return file->Sync();
}

Status FaultInjectionBackend::Tear(const FileNode& node) {
  GROVE_ASSIGN_OR_RETURN(std::unique_ptr<File> file, OpenForRewrite(inner_.get(), node.path));
  GROVE_ASSIGN_OR_RETURN(const uint64_t size, file->Size());

  // Restores [from, to) of `record`'s range to its old content (zeros past the old end of file),
  // never past the current end of file: sizes stay as they are in this mode.
  auto revert = [&](const UndoRecord& record, uint64_t from, uint64_t to) -> Status {
    to = std::min(to, size);
    if (from >= to) return Status::Ok();
    std::string bytes(to - from, '\0');
    const uint64_t old_end = record.offset + record.old_bytes.size();
    if (from < old_end) {
      const uint64_t n = std::min(to, old_end) - from;
      bytes.replace(0, n, record.old_bytes, from - record.offset, n);
    }
    return file->Write(from, bytes);
  };

  for (auto it = node.undo.rbegin(); it != node.undo.rend(); ++it) {
    const UndoRecord& record = *it;
    if (record.kind != OpKind::kWrite) continue;  // size changes persist in this mode
    const uint64_t begin = record.offset;
    const uint64_t end = record.offset + record.len;
    switch (rng_() % 3) {
      case 0:
        ++counters_.unsynced_writes_kept;
        break;
      case 1:
        GROVE_RETURN_IF_ERROR(revert(record, begin, end));
        ++counters_.unsynced_writes_dropped;
        break;
      default:
        // Sector by sector on absolute boundaries, as a device persists them.
        for (uint64_t s = begin; s < end; s = (s / kSectorSize + 1) * kSectorSize) {
          const uint64_t sector_end = std::min(end, (s / kSectorSize + 1) * kSectorSize);
          if (rng_() & 1) GROVE_RETURN_IF_ERROR(revert(record, s, sector_end));
        }
        ++counters_.unsynced_writes_torn;
        break;
    }
  }
  return file->Sync();
}

Status FaultInjectionBackend::SimulatePowerLoss(PowerLoss mode) {
  MutexLock order(&order_mu_);
  MutexLock lock(&mu_);
  Status result;
  auto note = [&result](Status s) {
    if (!s.ok() && result.ok()) result = std::move(s);
  };
  auto count_writes = [](const FileNode& node) {
    return static_cast<uint64_t>(
        std::count_if(node.undo.begin(), node.undo.end(),
                      [](const UndoRecord& r) { return r.kind == OpKind::kWrite; }));
  };

  // Files whose directory entry never became durable. std::map order plus the seeded generator
  // make every choice reproducible.
  std::vector<std::string> vanished;
  for (const auto& [path, node] : nodes_) {
    if (!node->create_unsynced) continue;
    const bool vanish =
        mode == PowerLoss::kDropUnsynced || (mode == PowerLoss::kTearUnsynced && (rng_() & 1) != 0);
    if (!vanish) continue;
    counters_.unsynced_writes_dropped += count_writes(*node);
    vanished.push_back(path);
  }
  for (const std::string& path : vanished) {
    Status s = inner_->DeleteFile(path);
    if (!s.IsNotFound()) note(std::move(s));
    nodes_.erase(path);
  }

  for (const auto& [path, node] : nodes_) {
    if (node->undo.empty()) continue;
    switch (mode) {
      case PowerLoss::kDropUnsynced:
        note(RevertAll(*node).WithContext("power loss: " + path));
        break;
      case PowerLoss::kTearUnsynced:
        note(Tear(*node).WithContext("power loss: " + path));
        break;
      case PowerLoss::kKeepUnsynced:
        counters_.unsynced_writes_kept += count_writes(*node);
        break;
    }
  }

  if (!vanished.empty()) {
    // Make the deletions themselves durable, directory by directory.
    std::vector<std::string> dirs;
    for (const std::string& path : vanished) {
      const size_t slash = path.find_last_of('/');
      dirs.push_back(slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash));
    }
    std::sort(dirs.begin(), dirs.end());
    dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
    for (const std::string& dir : dirs) note(inner_->SyncDir(dir));
  }

  for (auto& [path, node] : nodes_) {
    node->undo.clear();
    node->create_unsynced = false;
  }
  crashed_ = false;
  crash_armed_ = false;
  crash_budget_ = 0;
  return result;
}

}  // namespace grove
