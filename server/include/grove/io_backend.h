#pragma once

// IoBackend: the only way from the engine to the disk (the analogue of LevelDB's Env).
//
// Two shapes of access:
//   * File: synchronous calls (read, write, sync, allocate) for logs, manifests and checkpoints.
//   * IoQueue: asynchronous page IO in the push/submit/poll shape. A caller pushes any number of
//     IoOps, submits them to the device in one batch, and then waits for the ones it needs. The
//     B+-tree's path prefetch and the buffer pool's batched reads are built on it.
//
// Backends: "uring" (liburing; one ring per leased queue), "psync" (pread/pwrite; multi-op batches
// spread over a small thread pool), and a fault-injecting wrapper for tests (io/fault_backend.h).
//
// Direct IO: a File opened with FileOptions::direct uses O_DIRECT; then every offset, length and
// buffer address must be a multiple of kIoAlignment (4 KiB). AlignedBuffer provides such memory.
//
// Thread safety: IoBackend and File are safe for concurrent use. An IoQueue is used by one thread
// at a time; AcquireQueue() hands each caller its own lease, returned to the backend's pool when
// the lease is destroyed. The backend must outlive every File and IoQueue it created.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "grove/logger.h"
#include "grove/slice.h"
#include "grove/status.h"

namespace grove {

inline constexpr size_t kIoAlignment = 4096;

struct FileOptions {
  bool create = false;     // create the file when it does not exist
  bool direct = false;     // O_DIRECT: aligned offsets, lengths and buffers required
  bool read_only = false;  // open O_RDONLY
};

class File {
 public:
  virtual ~File() = default;

  virtual const std::string& path() const = 0;

  // Reads up to `n` bytes at `offset` into `buf`. Stops early only at end of file; *bytes_read says
  // how many bytes arrived.
  virtual Status Read(uint64_t offset, size_t n, char* buf, size_t* bytes_read) = 0;

  // Writes all of `data` at `offset`. A short write is continued for the remainder; if the
  // remainder fails, that error is returned and the file may hold a prefix of `data`.
  virtual Status Write(uint64_t offset, Slice data) = 0;

  // fdatasync. A failure means the kernel may have dropped dirty data: callers treat it as
  // fail-stop and never retry as if it had succeeded.
  virtual Status Sync() = 0;

  // Sets the file size.
  virtual Status Truncate(uint64_t size) = 0;

  // Reserves [offset, offset+len) on disk (fallocate mode 0; the file grows if needed), so that a
  // full disk shows up here rather than in a later write.
  virtual Status Allocate(uint64_t offset, uint64_t len) = 0;

  virtual StatusOr<uint64_t> Size() = 0;

  // The OS descriptor, for backends that submit IO themselves.
  virtual int fd() const = 0;
};

// One asynchronous read or write. The caller owns the op and its buffer until the op is done.
struct IoOp {
  enum class Kind : uint8_t { kRead, kWrite };

  Kind kind = Kind::kRead;
  File* file = nullptr;
  uint64_t offset = 0;
  char* buf = nullptr;
  uint32_t len = 0;
  uint64_t tag = 0;  // free for the caller

  // Set by the queue when the op completes. A read that ends early at end of file is OK with
  // bytes < len; a short write completes with an error status.
  Status status;
  uint32_t bytes = 0;
  bool done = false;

  static IoOp Read(File* f, uint64_t offset, char* buf, uint32_t len, uint64_t tag = 0) {
    IoOp op;
    op.kind = Kind::kRead;
    op.file = f;
    op.offset = offset;
    op.buf = buf;
    op.len = len;
    op.tag = tag;
    return op;
  }
  static IoOp Write(File* f, uint64_t offset, char* buf, uint32_t len, uint64_t tag = 0) {
    IoOp op = Read(f, offset, buf, len, tag);
    op.kind = Kind::kWrite;
    return op;
  }
};

// Completion is marked (op->done, InFlight()) only inside Wait, WaitAll and Poll on the owner's
// thread, never asynchronously: poll or wait rather than spin on op->done. Wait on an op that was
// pushed but not submitted submits first; ops never submitted complete kAborted on destruction.
class IoQueue {
 public:
  virtual ~IoQueue() = default;  // waits for every submitted op, then returns the lease

  // Queues `op` (resets its completion fields). Nothing reaches the device before Submit().
  virtual void Push(IoOp* op) = 0;

  // Sends every pushed op to the device in one submission. Errors setting up the submission are
  // reported on the ops themselves (they complete with the error), so Submit never loses an op.
  virtual void Submit() = 0;

  // Blocks until `op` (pushed and submitted on this queue) is done, completing others on the way.
  virtual void Wait(IoOp* op) = 0;

  // Blocks until every submitted op is done.
  virtual void WaitAll() = 0;

  // Completes whatever has finished, without blocking. Returns how many ops completed.
  virtual size_t Poll() = 0;

  // Ops submitted and not yet completed.
  virtual size_t InFlight() const = 0;
};

class IoBackend {
 public:
  virtual ~IoBackend() = default;

  // "uring", "psync", or "fault(<inner>)".
  virtual std::string_view Name() const = 0;

  virtual StatusOr<std::unique_ptr<File>> OpenFile(const std::string& path,
                                                   const FileOptions& options) = 0;
  virtual Status DeleteFile(const std::string& path) = 0;
  virtual Status RenameFile(const std::string& from, const std::string& to) = 0;
  virtual Status CreateDir(const std::string& path) = 0;  // OK when it exists
  // fsyncs a directory so that creates, renames and deletes in it are durable.
  virtual Status SyncDir(const std::string& path) = 0;
  virtual StatusOr<std::vector<std::string>> ListDir(const std::string& path) = 0;  // names only
  virtual bool FileExists(const std::string& path) = 0;

  // Leases an IO queue to the calling thread.
  virtual std::unique_ptr<IoQueue> AcquireQueue() = 0;

  // Convenience: runs `ops` as one batch on a leased queue and waits for all of them.
  void RunBatch(IoOp* const* ops, size_t n);
};

enum class IoBackendKind { kAuto, kUring, kPsync };

struct IoBackendOptions {
  IoBackendKind kind = IoBackendKind::kAuto;
  uint32_t queue_depth = 128;  // io_uring ring entries per queue
  uint32_t psync_threads = 4;  // worker threads for multi-op psync batches
};

// Creates a backend. kAuto tries io_uring and falls back to psync when a ring cannot be set up
// (e.g. under a seccomp profile that blocks io_uring), logging which one is active and why.
StatusOr<std::shared_ptr<IoBackend>> NewIoBackend(const IoBackendOptions& options, Logger* logger);

// Heap memory aligned to kIoAlignment, zero-initialised unless made by Uninitialized(). Movable,
// not copyable.
class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t size);
  // The same without zeroing, for a buffer whose every byte is written before it is read (a
  // checkpoint's arena): allocating it touches none of its memory, so a large one costs neither
  // the time to clear it nor resident memory before it is used.
  static AlignedBuffer Uninitialized(size_t size);
  ~AlignedBuffer();
  AlignedBuffer(AlignedBuffer&& other) noexcept;
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept;
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  char* data() { return data_; }
  const char* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  AlignedBuffer(size_t size, bool zero);

  char* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace grove
