#pragma once

// Helpers shared by the WAL tests: an in-memory File for the format tests, backend creation, and
// replay into a vector.

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "grove/io_backend.h"
#include "grove/logger.h"
#include "grove/options.h"

#include "wal/wal.h"

namespace grove::wal::testing {

// A File over a std::string, for tests of the log format that need no disk. Only Read and Write
// matter; the rest are trivial.
class StringFile final : public File {
 public:
  explicit StringFile(std::string contents = "") : contents_(std::move(contents)) {}

  const std::string& path() const override { return path_; }
  Status Read(uint64_t offset, size_t n, char* buf, size_t* bytes_read) override {
    *bytes_read = 0;
    if (offset >= contents_.size()) return Status::Ok();
    *bytes_read = std::min<size_t>(n, contents_.size() - offset);
    std::memcpy(buf, contents_.data() + offset, *bytes_read);
    return Status::Ok();
  }
  Status Write(uint64_t offset, Slice data) override {
    if (contents_.size() < offset + data.size()) contents_.resize(offset + data.size());
    std::memcpy(contents_.data() + offset, data.data(), data.size());
    return Status::Ok();
  }
  Status Sync() override { return Status::Ok(); }
  Status Truncate(uint64_t size) override {
    contents_.resize(size);
    return Status::Ok();
  }
  Status Allocate(uint64_t offset, uint64_t len) override {
    if (contents_.size() < offset + len) contents_.resize(offset + len);
    return Status::Ok();
  }
  StatusOr<uint64_t> Size() override { return static_cast<uint64_t>(contents_.size()); }
  int fd() const override { return -1; }

  std::string& contents() { return contents_; }

 private:
  std::string path_ = "<memory>";
  std::string contents_;
};

inline const char* BackendName(IoBackendKind kind) {
  return kind == IoBackendKind::kUring ? "uring" : "psync";
}

// A real backend, or null (with the reason in *why) when the kind is unavailable here.
inline std::shared_ptr<IoBackend> MakeBackend(IoBackendKind kind, std::string* why) {
  StatusOr<std::shared_ptr<IoBackend>> io = NewIoBackend({.kind = kind}, nullptr);
  if (!io.ok()) {
    *why = io.status().ToString();
    return nullptr;
  }
  return *io;
}

struct Replayed {
  Status status;
  ReplayResult result;
  std::vector<std::pair<Lsn, std::string>> records;
};

inline Replayed ReplayAll(IoBackend* io, const std::string& dir, Lsn from,
                          const WalOptions& options) {
  Replayed out;
  StatusOr<ReplayResult> r =
      Wal::Replay(io, dir, from, options, nullptr, [&](Lsn lsn, Slice payload) {
        out.records.emplace_back(lsn, std::string(payload));
        return Status::Ok();
      });
  out.status = r.status();
  if (r.ok()) out.result = *r;
  return out;
}

// A payload that identifies itself: "<tag>:<n>:" followed by filler up to `size` bytes.
inline std::string MakePayload(const std::string& tag, uint64_t n, size_t size) {
  std::string p = tag + ":" + std::to_string(n) + ":";
  while (p.size() < size) p.push_back(static_cast<char>('a' + (p.size() * 7 + n) % 26));
  p.resize(std::max(size, p.size()));
  return p;
}

}  // namespace grove::wal::testing
