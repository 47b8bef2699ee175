#pragma once

// ReplayReader: recovery's read-ahead. Replaying the log one record at a time reads each
// record's leaf at queue depth 1, so a recovery after a crash under a large random-write load is
// bound by the device's latency (at 10^7 records and 200K records to replay: 17 s, one read per
// record). The reader holds a window of decoded records; when it is full, kReaders threads
// look up the window's keys at once (Index::Get: a read, which brings the pages holding the key
// into the cache and changes nothing; not Prepare, which some variants use for admission control
// and may wait in), and only then are the records applied, in log order, by the caller's
// function. What the window holds is only read ahead; applying stays serial and in order, so
// checkpoints during replay and their redo points are unchanged.
//
// A read-ahead that fails is ignored: applying the record reads the same page and reports the
// error with its LSN.
//
// Thread safety: one recovery thread calls Add and Drain; the reader's threads only call
// Index::Get, which is safe beside other reads.

#include <cstddef>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "grove/index.h"
#include "grove/status.h"
#include "grove/write_batch.h"

#include "io/worker_pool.h"

namespace grove {

class ReplayReader {
 public:
  using Apply = std::function<Status(Lsn, const WriteBatch&)>;

  static constexpr size_t kReaders = 16;
  static constexpr size_t kWindowKeys = 512;

  // `cache_pages`: the buffer pool's size. The window holds at most one key per eight pages of
  // it, so that pages read ahead are still cached when their records are applied (a key can
  // touch more than one page: inner nodes, multi-page leaves).
  ReplayReader(Index* index, uint64_t cache_pages);

  // Queues a record; applies the window (after reading it ahead) when it is full.
  Status Add(Lsn lsn, WriteBatch batch, const Apply& apply);
  // Reads ahead and applies what is queued.
  Status Drain(const Apply& apply);

 private:
  void ReadAhead();

  Index* const index_;
  const size_t window_keys_;
  std::vector<std::pair<Lsn, WriteBatch>> records_;
  size_t keys_ = 0;
  std::unique_ptr<WorkerPool> readers_;  // started with the first window
};

}  // namespace grove
