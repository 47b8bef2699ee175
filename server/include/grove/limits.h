#pragma once

// The limits an engine holds its Options to, named once. options.h's defaults sit inside them,
// the one validator (options/check_options.h) enforces them for Db::Open and for a grove.yaml
// before anything opens, and docs/server.md lists them.

#include <cstdint>

namespace grove::limits {

inline constexpr uint64_t kPageBytes = 4096;  // the data file's page (page/page.h kPageSize)
// A page's payload once its header (page/page.h kPageHeaderSize, 24 bytes) is taken: what one
// page of an out-of-line value holds (engine/value_cell.h kBlobChunk).
inline constexpr uint64_t kBlobChunkBytes = kPageBytes - 24;

inline constexpr uint64_t kMinCacheBytes = 1ull << 20;

inline constexpr uint32_t kMaxKeyBytes = 1024;          // limits.max_key_bytes at most
inline constexpr uint32_t kMaxValueBytes = 1'000'000;   // limits.max_value_bytes at most
inline constexpr uint32_t kMaxInlineValueBytes = 1024;  // inline_value_bytes at most
// Two of the largest leaf cells must fit in one page, or a split could not make room; 1880
// leaves room for a cell's header, version and expiry (grove/index.h, MaxCellBytes).
inline constexpr uint32_t kMaxKeyPlusInlineBytes = 1880;
inline constexpr uint32_t kMaxBatchEntries = 1'000'000;  // limits.max_batch_entries at most
inline constexpr uint64_t kMinBatchBytes = 1024;         // limits.max_batch_bytes at least

inline constexpr uint32_t kMaxScanReadaheadPages = 256;
// What a grove.yaml may ask of the IO backend (io.queue_depth, io.psync_threads); the backend
// itself, built by an embedding program, accepts more (and psync_threads 0: no workers).
inline constexpr uint32_t kMaxIoQueueDepth = 4096;
inline constexpr uint32_t kMaxPsyncThreads = 256;

// Writers may keep up to twice this fraction of the cache dirty; past it too little stays for
// reads.
inline constexpr double kMaxDirtyFraction = 0.45;
inline constexpr uint64_t kMinWalBytes = 1ull << 20;  // wal.segment_bytes, checkpoint.wal_bytes
inline constexpr uint32_t kMaxBatchIntervalUs = 10'000'000;
inline constexpr double kMaxIntervalSeconds = 86400.0 * 365;  // checkpoint and expiry intervals
inline constexpr uint64_t kMinSweepKeysPerSecond = 100;

}  // namespace grove::limits
