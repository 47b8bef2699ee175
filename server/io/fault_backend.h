#pragma once

// FaultInjectionBackend: an IoBackend for tests that wraps a real one (uring or psync) and can
//   * fail chosen operations with an errno (EIO, ENOSPC, ...), optionally after writing half of
//     the data (a short, torn write), selected by operation kind, path substring, skip and count;
//   * "crash" after exactly N mutating operations: from then on every operation fails with
//     Status::Internal("simulated crash") without touching the disk;
//   * simulate a power loss afterwards, rewriting the files the way the disk could look after one.
//
// Mutating operations (each one increments mutating_ops() and is shown to the observer first):
//   kWrite (File::Write and IoQueue writes), kSync (File::Sync), kAllocate, kTruncate,
//   kCreate (OpenFile with create=true when the file does not exist yet), kDelete, kRename,
//   kSyncDir. Reads, opening existing files, CreateDir, ListDir and FileExists are not counted;
//   they still fail once the backend has crashed (FileExists then answers false).
//
// Power-loss model (what SimulatePowerLoss rewrites):
//   * Before each write, truncate or allocate reaches the inner file, an undo record is taken: the
//     old bytes of the overlapped range (read through a separate buffered descriptor) and the old
//     file size. A successful File::Sync of the file makes its records durable (drops them).
//   * kDropUnsynced replays every undo record newest-first: each file's bytes and size return to
//     exactly what they were at its last successful Sync. Files created since the last SyncDir of
//     their directory are deleted.
//   * kTearUnsynced decides per unsynced write, with the seeded generator: kept, dropped (old
//     bytes restored), or torn (each 512-byte sector, on absolute sector boundaries, independently
//     kept or restored). File sizes are left as they are (as if size metadata had been journaled
//     while data was lost); restored bytes past the pre-write end of file become zeros. Each file
//     created since its directory's last SyncDir independently survives or vanishes. Where
//     unsynced writes overlap, every byte still holds a value it had at some moment between the
//     last sync and the crash.
//   * kKeepUnsynced keeps everything (a process crash with an intact page cache).
//   Then the crashed state is cleared, CrashAfter is disarmed and every file counts as synced, so
//   the same backend can reopen the data. Rules stay installed.
//
// Simplifications (deliberate; state them in tests that depend on them):
//   * Deletes and renames are durable at once: a power loss never brings back a deleted or
//     renamed-away name. A renamed file takes its unsynced writes and its "created but not
//     dir-synced" flag to the new name, so a file that was created, renamed and never dir-synced
//     still vanishes on kDropUnsynced.
//   * CreateDir is durable at once and is not a mutating operation.
//   * Directory membership is matched on lexically normalised paths: open files and sync
//     directories with consistently spelled paths (both absolute, or both relative).
//   * Undo records hold old bytes in memory, so truncating a large file away costs its size.
//   * Queue writes are recorded at Submit; concurrent overlapping in-flight writes to the same
//     range (an engine bug anyway) have an unspecified undo order.
//
// Thread safety: every method is safe to call concurrently. Mutating operations are serialised
// through one lock (index order == disk order), which is fine for tests. The observer runs on the
// thread that issued the operation, under that lock: it may call CrashAfter, AddRule, crashed(),
// mutating_ops() and counters(), but must not issue IO through this backend (that would deadlock).
// SimulatePowerLoss requires that no File or IoQueue of this backend is in use.

#include <cerrno>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "grove/io_backend.h"

#include "util/mutex.h"

namespace grove {

class FaultFile;
class FaultQueue;

class FaultInjectionBackend : public IoBackend {
 public:
  // `seed` drives every random choice (only kTearUnsynced makes any).
  FaultInjectionBackend(std::shared_ptr<IoBackend> inner, uint64_t seed);
  ~FaultInjectionBackend() override;

  enum class OpKind {
    kRead,
    kWrite,
    kSync,
    kAllocate,
    kTruncate,
    kCreate,
    kDelete,
    kRename,
    kSyncDir
  };
  static std::string_view OpKindName(OpKind kind);  // "read", "write", ...

  // Injects errors into matching ops. Every installed rule counts every op it matches; the first
  // rule (in AddRule order) that decides to fail an op supplies the error.
  struct Rule {
    OpKind kind;                // which operation
    std::string path_contains;  // "" matches every path (kRename: either name)
    int error = EIO;            // errno to fail with (EIO, ENOSPC, ...)
    uint64_t skip = 0;          // let this many matching ops succeed first
    int64_t count = -1;         // then fail this many (-1: forever)
    bool short_write = false;   // kWrite only: write the first half (rounded down to 512 bytes
                                // for direct files) then fail; IoOp::bytes reports the half
  };
  void AddRule(const Rule& rule);
  void ClearRules();

  // The next `n` mutating ops succeed (unless a rule fails them); the one after crashes the
  // backend: it and every later op of any kind fail with Status::Internal("simulated crash").
  // Ops already submitted to the inner queue before the crash still complete.
  void CrashAfter(uint64_t n);
  bool crashed() const;
  // Mutating ops issued since construction, counting the op that triggered the crash but none
  // issued after it.
  uint64_t mutating_ops() const;

  struct OpInfo {
    OpKind kind;
    std::string path;    // kRename: the old name
    uint64_t offset;     // kWrite/kAllocate: offset; kTruncate: the new size
    uint64_t len;        // kWrite/kAllocate: length
    uint64_t index;      // 0-based position among mutating ops (== mutating_ops() before it)
    std::string target;  // kRename: the new name; empty otherwise
  };
  // Called before each mutating op, in index order, from the thread that issues it (see the
  // thread-safety note above). Calling CrashAfter(0) from it crashes right at that op.
  void SetObserver(std::function<void(const OpInfo&)> observer);

  enum class PowerLoss { kDropUnsynced, kTearUnsynced, kKeepUnsynced };
  // See "Power-loss model" above. Returns the first IO error met while rewriting files (the
  // rewrite still goes on for the other files).
  Status SimulatePowerLoss(PowerLoss mode);

  struct Counters {
    uint64_t reads = 0;                    // reads requested (File and queue), failed ones too
    uint64_t writes = 0;                   // writes requested
    uint64_t syncs = 0;                    // File::Sync calls
    uint64_t injected_errors = 0;          // ops failed by a rule
    uint64_t unsynced_writes_dropped = 0;  // by SimulatePowerLoss, incl. writes to vanished files
    uint64_t unsynced_writes_torn = 0;
    uint64_t unsynced_writes_kept = 0;
  };
  Counters counters() const;

  // IoBackend.
  std::string_view Name() const override { return name_; }  // "fault(<inner name>)"
  StatusOr<std::unique_ptr<File>> OpenFile(const std::string& path,
                                           const FileOptions& options) override;
  Status DeleteFile(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status CreateDir(const std::string& path) override;
  Status SyncDir(const std::string& path) override;
  StatusOr<std::vector<std::string>> ListDir(const std::string& path) override;
  bool FileExists(const std::string& path) override;
  std::unique_ptr<IoQueue> AcquireQueue() override;

 private:
  friend class FaultFile;
  friend class FaultQueue;

  // One change that has not been synced yet, undoable.
  struct UndoRecord {
    OpKind kind;            // kWrite, kTruncate or kAllocate
    uint64_t offset;        // write/allocate offset; truncate: the new size
    uint64_t len;           // bytes written (0 for truncate)
    std::string old_bytes;  // previous content of [offset, offset + old_bytes.size())
    uint64_t old_size;      // file size before the change
  };
  // Durability state of one file (an inode, so it follows renames). Fields are guarded by mu_.
  struct FileNode {
    std::string path;
    std::vector<UndoRecord> undo;  // unsynced changes, oldest first
    bool create_unsynced = false;  // created since the last SyncDir of its directory
  };
  struct RuleState {
    Rule rule;
    uint64_t matched = 0;
  };
  // The decision on a mutating op.
  struct Verdict {
    Status status;             // OK: go ahead
    bool short_write = false;  // with a non-OK status: write half first, then fail
  };

  static Status CrashStatus() { return Status::Internal("simulated crash"); }

  // Counts the op, runs the observer, applies the crash budget and the rules.
  Verdict BeginMutation(OpKind kind, const std::string& path, uint64_t offset, uint64_t len,
                        const std::string& target = "") GROVE_REQUIRES(order_mu_)
      GROVE_EXCLUDES(mu_);
  // For reads: counts, checks the crash state and the kRead rules.
  Status CheckRead(const std::string& path) GROVE_EXCLUDES(mu_);
  // For other non-mutating ops: fails only when crashed.
  Status CheckAlive() const GROVE_EXCLUDES(mu_);
  Verdict MatchRules(OpKind kind, const std::string& path, const std::string& target)
      GROVE_REQUIRES(mu_);

  void AppendUndo(FileNode* node, UndoRecord record) GROVE_EXCLUDES(mu_);
  void MarkSynced(FileNode* node) GROVE_EXCLUDES(mu_);
  void RegisterFile(const File* file) GROVE_EXCLUDES(mu_);
  void UnregisterFile(const File* file) GROVE_EXCLUDES(mu_);
  // The FaultFile behind `file` if it was opened through this backend and is still open.
  FaultFile* FindFile(const File* file) GROVE_EXCLUDES(mu_);

  // SimulatePowerLoss helpers (fault_power_loss.cc).
  Status RevertAll(const FileNode& node) GROVE_REQUIRES(mu_);
  Status Tear(const FileNode& node) GROVE_REQUIRES(mu_);

  const std::shared_ptr<IoBackend> inner_;
  const std::string name_;

  // Serialises mutating ops end to end, so undo records are taken in the order the disk sees.
  Mutex order_mu_ GROVE_ACQUIRED_BEFORE(mu_);
  mutable Mutex mu_;
  std::mt19937_64 rng_ GROVE_GUARDED_BY(mu_);
  std::vector<RuleState> rules_ GROVE_GUARDED_BY(mu_);
  std::function<void(const OpInfo&)> observer_ GROVE_GUARDED_BY(mu_);
  bool crashed_ GROVE_GUARDED_BY(mu_) = false;
  bool crash_armed_ GROVE_GUARDED_BY(mu_) = false;
  uint64_t crash_budget_ GROVE_GUARDED_BY(mu_) = 0;
  uint64_t mutating_ops_ GROVE_GUARDED_BY(mu_) = 0;
  Counters counters_ GROVE_GUARDED_BY(mu_);
  std::map<std::string, std::shared_ptr<FileNode>> nodes_ GROVE_GUARDED_BY(mu_);  // by current path
  std::unordered_set<const File*> live_files_ GROVE_GUARDED_BY(mu_);
};

}  // namespace grove
