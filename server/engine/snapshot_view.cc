#include "engine/snapshot_view.h"

#include <algorithm>
#include <vector>

namespace grove {
namespace {

Status ReadOnly(const std::string& path) {
  return Status::FailedPrecondition(path + " is a snapshot: it cannot be written");
}

class SnapshotFile final : public File {
 public:
  SnapshotFile(std::string path, uint64_t size, const SnapshotBackend::ReadFn* read)
      : path_(std::move(path)), size_(size), read_(read) {}

  const std::string& path() const override { return path_; }
  Status Read(uint64_t offset, size_t n, char* buf, size_t* bytes_read) override {
    *bytes_read = 0;
    if (offset >= size_) return Status::Ok();
    return (*read_)(offset, static_cast<size_t>(std::min<uint64_t>(n, size_ - offset)), buf,
                    bytes_read);
  }
  Status Write(uint64_t, Slice) override { return ReadOnly(path_); }
  Status Sync() override { return Status::Ok(); }  // nothing was written
  Status Truncate(uint64_t) override { return ReadOnly(path_); }
  Status Allocate(uint64_t, uint64_t) override { return ReadOnly(path_); }
  StatusOr<uint64_t> Size() override { return size_; }
  int fd() const override { return -1; }

 private:
  const std::string path_;
  const uint64_t size_;
  const SnapshotBackend::ReadFn* const read_;
};

// Runs every op through its File on Submit, in order; nothing is ever in flight after it.
class FileQueue final : public IoQueue {
 public:
  ~FileQueue() override {
    for (IoOp* op : pending_) {
      op->status = Status::Aborted("io queue destroyed before Submit");
      op->done = true;
    }
  }
  void Push(IoOp* op) override {
    op->status = Status::Ok();
    op->bytes = 0;
    op->done = false;
    pending_.push_back(op);
  }
  void Submit() override {
    for (IoOp* op : pending_) Run(op);
    pending_.clear();
  }
  void Wait(IoOp* op) override {
    if (!op->done) Submit();
  }
  void WaitAll() override { Submit(); }
  size_t Poll() override { return 0; }
  size_t InFlight() const override { return 0; }

 private:
  static void Run(IoOp* op) {
    if (op->file == nullptr) {
      op->status = Status::InvalidArgument("io op without a file");
    } else if (op->kind == IoOp::Kind::kRead) {
      size_t got = 0;
      op->status = op->file->Read(op->offset, op->len, op->buf, &got);
      op->bytes = static_cast<uint32_t>(got);
    } else {
      op->status = op->file->Write(op->offset, Slice(op->buf, op->len));
      if (op->status.ok()) op->bytes = op->len;
    }
    op->done = true;
  }

  std::vector<IoOp*> pending_;
};

}  // namespace

StatusOr<std::unique_ptr<File>> SnapshotBackend::OpenFile(const std::string& path,
                                                          const FileOptions& options) {
  if (path != path_) return inner_->OpenFile(path, options);
  if (!options.read_only) return ReadOnly(path_);
  return std::unique_ptr<File>(new SnapshotFile(path_, size_, &read_));
}

Status SnapshotBackend::DeleteFile(const std::string& path) {
  if (path == path_) return ReadOnly(path_);
  return inner_->DeleteFile(path);
}

Status SnapshotBackend::RenameFile(const std::string& from, const std::string& to) {
  if (from == path_ || to == path_) return ReadOnly(path_);
  return inner_->RenameFile(from, to);
}

StatusOr<std::vector<std::string>> SnapshotBackend::ListDir(const std::string& path) {
  GROVE_ASSIGN_OR_RETURN(std::vector<std::string> names, inner_->ListDir(path));
  const size_t slash = path_.rfind('/');
  if (slash != std::string::npos && path_.compare(0, slash, path) == 0 && path.size() == slash) {
    const std::string name = path_.substr(slash + 1);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  return names;
}

bool SnapshotBackend::FileExists(const std::string& path) {
  return path == path_ || inner_->FileExists(path);
}

std::unique_ptr<IoQueue> SnapshotBackend::AcquireQueue() {
  return std::unique_ptr<IoQueue>(new FileQueue());
}

}  // namespace grove
