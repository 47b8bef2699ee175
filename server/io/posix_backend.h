#pragma once

// PosixBackend: the part of IoBackend that psync and uring share. Files are PosixFiles and
// directory operations are plain system calls; subclasses provide Name() and AcquireQueue().
//
// Thread safety: every method may be called concurrently.

#include <memory>
#include <string>
#include <vector>

#include "grove/io_backend.h"

namespace grove {

class PosixBackend : public IoBackend {
 public:
  StatusOr<std::unique_ptr<File>> OpenFile(const std::string& path,
                                           const FileOptions& options) override;
  Status DeleteFile(const std::string& path) override;
  Status RenameFile(const std::string& from, const std::string& to) override;
  Status CreateDir(const std::string& path) override;
  Status SyncDir(const std::string& path) override;
  // Sorted, without "." and "..".
  StatusOr<std::vector<std::string>> ListDir(const std::string& path) override;
  bool FileExists(const std::string& path) override;
};

}  // namespace grove
