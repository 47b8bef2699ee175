// device: the physical ceiling. Every operation, whatever its type, is one random 4 KiB read of
// a preallocated, fully written file, through the same IoBackend kind (uring or psync) and the
// same O_DIRECT setting as the engine. Each worker thread keeps one read in flight, so the queue
// depth equals --threads, which is also the most a synchronous engine Get can have outstanding.
// The page is a hash of the key, so skewed distributions re-read the same pages (O_DIRECT: no
// cache) at full device cost.
//
// `device?file=PATH` reads an existing file instead (opened read-only, never written), over its
// whole length: an engine's own data file, so that the engine and the device are measured over
// the same span of the disk. A virtual disk whose host caches part of what it stores reads a
// small file faster than a large one, so a ceiling measured on a smaller file flatters the device.

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "grove/io_backend.h"

#include "bench/key_set.h"
#include "bench/parse.h"
#include "bench/rng.h"
#include "bench/system_info.h"
#include "bench/target.h"

namespace grove::bench {
namespace {

constexpr uint32_t kPage = 4096;

class DeviceSession final : public Session {
 public:
  DeviceSession(File* file, uint64_t pages, std::unique_ptr<IoQueue> queue,
                std::atomic<uint64_t>* reads)
      : file_(file), pages_(pages), queue_(std::move(queue)), buf_(kPage), reads_(reads) {}

  Status Read(Slice key, std::string*, bool* found) override {
    *found = true;
    return ReadPage(key);
  }
  Status Write(Slice key, Slice) override { return ReadPage(key); }
  Status Scan(Slice start, Slice, uint32_t, uint64_t* entries) override {
    *entries = 1;
    return ReadPage(start);
  }

 private:
  Status ReadPage(Slice key) {
    const uint64_t page = FnvHash64(DecodeKey(key)) % pages_;
    IoOp op = IoOp::Read(file_, page * kPage, buf_.data(), kPage);
    queue_->Push(&op);
    queue_->Submit();
    queue_->Wait(&op);
    reads_->fetch_add(1, std::memory_order_relaxed);
    return op.status;
  }

  File* const file_;
  const uint64_t pages_;
  std::unique_ptr<IoQueue> queue_;
  AlignedBuffer buf_;
  std::atomic<uint64_t>* reads_;
};

class DeviceTarget final : public Target {
 public:
  // `existing`: read the file at `path` as it is (its size is `bytes` once opened); otherwise
  // prepare a file of `bytes` there.
  DeviceTarget(std::string path, uint64_t bytes, bool existing, const TargetOptions& o)
      : path_(std::move(path)), bytes_(bytes / kPage * kPage), existing_(existing), options_(o) {}

  Status Open() {
    IoBackendOptions io;
    io.queue_depth = options_.queue_depth;
    if (options_.io_backend == "uring") {
      io.kind = IoBackendKind::kUring;
    } else if (options_.io_backend == "psync") {
      io.kind = IoBackendKind::kPsync;
    }
    logger_ = NewStderrLogger(LogLevel::kWarn);
    GROVE_ASSIGN_OR_RETURN(backend_, NewIoBackend(io, logger_.get()));
    if (existing_) return OpenExisting();
    GROVE_RETURN_IF_ERROR(backend_->CreateDir(options_.dir));
    return Prepare();
  }

  std::string Uri() const override {
    return existing_ ? "device?file=" + path_ : "device?file_bytes=" + std::to_string(bytes_);
  }

  std::map<std::string, std::string> Config() const override {
    return {{"file", path_},
            {"file_bytes", std::to_string(bytes_)},
            {"io_backend", std::string(backend_->Name())},
            {"direct_io", options_.direct_io ? "true" : "false"},
            {"io_queue_depth", "one read in flight per thread"}};
  }

  Status Reset() override { return Status::Ok(); }  // the file is prepared once and only read

  StatusOr<std::unique_ptr<Session>> NewSession() override {
    return std::unique_ptr<Session>(std::make_unique<DeviceSession>(
        file_.get(), bytes_ / kPage, backend_->AcquireQueue(), &reads_));
  }

  StatusOr<TargetStats> Stats() override {
    TargetStats t;
    t.counters["page_reads"] = static_cast<double>(reads_.load());
    t.counters["page_writes"] = 0;
    const ProcessIo io = ReadProcessIo();
    if (io.available) {
      t.counters["device_read_bytes"] = static_cast<double>(io.read_bytes);
      t.counters["device_write_bytes"] = static_cast<double>(io.write_bytes);
    }
    t.gauges["data_file_bytes"] = static_cast<double>(bytes_);
    return t;
  }

  Status Close() override {
    file_.reset();
    return Status::Ok();
  }

 private:
  Status OpenExisting() {
    FileOptions fo;
    fo.read_only = true;
    fo.direct = options_.direct_io;
    StatusOr<std::unique_ptr<File>> file = backend_->OpenFile(path_, fo);
    if (!file.ok()) {
      return Status(file.status().code(),
                    "device?file=" + path_ + ": " + std::string(file.status().message()));
    }
    file_ = std::move(*file);
    GROVE_ASSIGN_OR_RETURN(const uint64_t size, file_->Size());
    bytes_ = size / kPage * kPage;
    if (bytes_ < kPage) {
      return Status::InvalidArgument("device?file=" + path_ + ": shorter than one 4 KiB page");
    }
    return Status::Ok();
  }

  // Reads of never-written blocks cost no IO on ext4 (holes and unwritten extents read as zeros),
  // so the file is written in full once and reused while its size matches.
  Status Prepare() {
    FileOptions fo;
    fo.create = true;
    fo.direct = options_.direct_io;
    GROVE_ASSIGN_OR_RETURN(file_, backend_->OpenFile(path_, fo));
    GROVE_ASSIGN_OR_RETURN(const uint64_t size, file_->Size());
    if (size == bytes_) return Status::Ok();
    GROVE_RETURN_IF_ERROR(file_->Truncate(0));
    constexpr size_t kChunk = 1 << 20;
    AlignedBuffer chunk(kChunk);
    Rng rng(0x646576ull);
    for (size_t i = 0; i < kChunk / 8; ++i) {
      const uint64_t v = rng.Next();
      std::memcpy(chunk.data() + i * 8, &v, 8);
    }
    for (uint64_t off = 0; off < bytes_; off += kChunk) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunk, bytes_ - off));
      GROVE_RETURN_IF_ERROR(file_->Write(off, Slice(chunk.data(), n)));
    }
    return file_->Sync();
  }

  const std::string path_;
  uint64_t bytes_;  // set by OpenExisting for an existing file
  const bool existing_;
  const TargetOptions options_;
  std::shared_ptr<Logger> logger_;
  std::shared_ptr<IoBackend> backend_;
  std::unique_ptr<File> file_;
  std::atomic<uint64_t> reads_{0};
};

}  // namespace

StatusOr<std::unique_ptr<Target>> OpenDeviceTarget(const TargetUri& uri, const TargetOptions& o) {
  uint64_t bytes = o.device_file_bytes ? o.device_file_bytes : (1ull << 30);
  bool has_bytes = false;
  std::string file;
  for (const auto& [k, v] : uri.params) {
    if (k == "file_bytes") {
      GROVE_ASSIGN_OR_RETURN(bytes, ParseSize(v, "device?file_bytes"));
      has_bytes = true;
    } else if (k == "file") {
      if (v.empty()) return Status::InvalidArgument("device?file: a path is required");
      file = v;
    } else {
      return Status::InvalidArgument("device: unknown parameter '" + k + "' (file_bytes, file)");
    }
  }
  if (!file.empty() && has_bytes) {
    return Status::InvalidArgument(
        "device: file_bytes and file exclude each other (an existing file is read whole)");
  }
  if (file.empty() && bytes < 1u << 20) {
    return Status::InvalidArgument("device?file_bytes: at least 1 MiB");
  }
  auto target = file.empty()
                    ? std::make_unique<DeviceTarget>(o.dir + "/device.dat", bytes, false, o)
                    : std::make_unique<DeviceTarget>(file, 0, true, o);
  GROVE_RETURN_IF_ERROR(target->Open());
  return std::unique_ptr<Target>(std::move(target));
}

}  // namespace grove::bench
