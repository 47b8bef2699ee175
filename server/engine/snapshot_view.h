#pragma once

// The IO a snapshot of a live database is read through. Db::VerifyOnline opens the newest
// checkpoint C0 of a database that keeps serving as a second database, read-only
// (Options::read_only), in a scratch directory whose data file is not a file: its reads come from
// the live data file as it stood when C0 became durable (pages a checkpoint or a direct write
// has overwritten since come from where they were copied first, engine/backup.cc), and its
// writes fail.
//
// SnapshotBackend is an IoBackend over `inner` in which that one path opens such a file and
// every other path is `inner`'s. Its queues run each op through the op's File (Read, Write), one
// after another on the submitting thread, so that no read of the snapshot goes around it by the
// descriptor (the io_uring and psync queues use File::fd()).
//
// Thread safety: as IoBackend; the read function must be safe to call from any thread.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "grove/io_backend.h"

namespace grove {

class SnapshotBackend final : public IoBackend {
 public:
  // Reads [offset, offset + n) of the snapshot's data file into buf (page-aligned offset and
  // length); *got is short only past the snapshot's end.
  using ReadFn = std::function<Status(uint64_t offset, size_t n, char* buf, size_t* got)>;

  SnapshotBackend(std::shared_ptr<IoBackend> inner, std::string snapshot_path, uint64_t size,
                  ReadFn read)
      : inner_(std::move(inner)),
        path_(std::move(snapshot_path)),
        size_(size),
        read_(std::move(read)) {}

  std::string_view Name() const override { return "snapshot"; }
  StatusOr<std::unique_ptr<File>> OpenFile(const std::string& path,
                                           const FileOptions& options) override;
  Status DeleteFile(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status CreateDir(const std::string& path) override { return inner_->CreateDir(path); }
  Status SyncDir(const std::string& path) override { return inner_->SyncDir(path); }
  StatusOr<std::vector<std::string>> ListDir(const std::string& path) override;
  bool FileExists(const std::string& path) override;
  std::unique_ptr<IoQueue> AcquireQueue() override;

 private:
  const std::shared_ptr<IoBackend> inner_;
  const std::string path_;
  const uint64_t size_;
  const ReadFn read_;
};

}  // namespace grove
