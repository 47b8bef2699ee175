#include "trace/tracer.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <random>
#include <system_error>

namespace grove::trace {
namespace {

// A trace name is a file name: letters, digits, '.', '_' and '-', not starting with '.'.
bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 128 || name[0] == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

uint64_t UnixMicros() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                                   .count());
}

}  // namespace

uint32_t Tracer::Draw() {
  // xorshift32 per thread: the draw is on every served call while a trace runs.
  thread_local uint32_t state = [] {
    std::random_device rd;
    const uint32_t s = rd();
    return s == 0 ? 0x9e3779b9u : s;
  }();
  state ^= state << 13;
  state ^= state >> 17;
  state ^= state << 5;
  return state;
}

Tracer::~Tracer() {
  MutexLock lock(&mu_);
  if (writer_ != nullptr) EndLocked("stopped");
}

Status Tracer::Start(const TraceRequest& request) {
  // The file keeps the sample in millionths, and the draw uses that same figure.
  if (!(request.sample >= 1e-6 && request.sample <= 1)) {
    return Status::InvalidArgument("sample: must be in [0.000001, 1], got " +
                                   std::to_string(request.sample));
  }
  if (request.duration.count() < 0) {
    return Status::InvalidArgument("duration: must not be negative");
  }
  if (!ValidName(request.name)) {
    return Status::InvalidArgument(
        "name: \"" + request.name +
        "\" is not a trace name (1-128 letters, digits, '.', '_' or '-', not starting with '.')");
  }
  MutexLock lock(&mu_);
  if (writer_ != nullptr && !ExpiredLocked()) {
    return Status::FailedPrecondition("a trace is running (" + last_.path + "); stop it first");
  }
  std::error_code ec;
  std::filesystem::create_directories(options_.dir, ec);
  if (ec) {
    return Status::Unavailable("cannot create the trace directory " + options_.dir + ": " +
                               ec.message());
  }
  Header header;
  header.sample_ppm =
      static_cast<uint32_t>(std::clamp(std::llround(request.sample * 1e6), 1LL, 1'000'000LL));
  header.start_unix_micros = UnixMicros();
  if (request.hash_keys) header.flags |= header_flags::kKeysHashed;
  const std::string path = options_.dir + "/" + request.name + ".trace";
  // The secret lives only as long as the trace: the file alone cannot be unhashed with it.
  std::unique_ptr<KeyHasher> hasher;
  if (request.hash_keys) {
    std::random_device rd;
    hasher = std::make_unique<KeyHasher>((static_cast<uint64_t>(rd()) << 32) ^ rd());
  }
  std::optional<KeySketch> sketch = request.sketch;
  if (sketch && hasher) {
    for (std::string& b : sketch->bounds) b = hasher->Hash(b);
  }
  GROVE_ASSIGN_OR_RETURN(writer_,
                         TraceWriter::Create(path, header, options_.max_bytes, kDefaultBlockBytes,
                                             sketch ? &*sketch : nullptr));
  hasher_ = std::move(hasher);
  started_ = std::chrono::steady_clock::now();
  ends_ = request.duration.count() == 0 ? std::chrono::steady_clock::time_point::max()
                                        : started_ + request.duration;
  last_ = {};
  last_.active = true;
  last_.path = path;
  last_.sample = header.sample_ppm / 1e6;
  last_.keys_hashed = request.hash_keys;
  last_.sketch_keys = request.sketch ? request.sketch->Entries() : 0;
  threshold_.store(
      static_cast<uint32_t>(std::clamp(header.sample_ppm * 4294.967296, 1.0, 4294967295.0)),
      std::memory_order_relaxed);
  return Status::Ok();
}

Status Tracer::Stop() {
  MutexLock lock(&mu_);
  if (writer_ == nullptr || ExpiredLocked()) {
    return Status::FailedPrecondition("no trace is running");
  }
  EndLocked("stopped");
  return last_.ended_because == "stopped" ? Status::Ok() : Status::DataLoss(last_.ended_because);
}

TraceStatus Tracer::GetStatus() {
  MutexLock lock(&mu_);
  if (writer_ != nullptr && !ExpiredLocked()) {
    last_.records_written = writer_->records_written();
    last_.records_dropped = writer_->records_dropped();
    last_.bytes = writer_->bytes();
  }
  return last_;
}

void Tracer::Add(Record r) {
  MutexLock lock(&mu_);
  if (writer_ == nullptr || ExpiredLocked()) return;
  r.micros = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                       std::chrono::steady_clock::now() - started_)
                                       .count());
  if (hasher_ != nullptr) {
    for (Entry& e : r.entries) {
      if (!e.key.empty()) e.key = hasher_->Hash(e.key);
    }
  }
  const uint64_t flushed = writer_->records_flushed(), dropped = writer_->records_dropped();
  const Status s = writer_->Add(r);
  CountLocked(flushed, dropped);
  // A write error (a full disk among them) ends the trace; the cap only drops the record.
  if (!s.ok() && writer_->failed()) EndLocked("writing the trace failed: " + s.ToString());
}

void Tracer::CountLocked(uint64_t flushed_before, uint64_t dropped_before) {
  written_total_.fetch_add(writer_->records_flushed() - flushed_before, std::memory_order_relaxed);
  dropped_total_.fetch_add(writer_->records_dropped() - dropped_before, std::memory_order_relaxed);
}

bool Tracer::ExpiredLocked() {
  if (std::chrono::steady_clock::now() < ends_) return false;
  EndLocked("duration");
  return true;
}

void Tracer::EndLocked(const std::string& why) {
  threshold_.store(0, std::memory_order_relaxed);
  const uint64_t flushed = writer_->records_flushed(), dropped = writer_->records_dropped();
  const Status closed = writer_->Close();
  CountLocked(flushed, dropped);
  last_.records_written = writer_->records_written();
  last_.records_dropped = writer_->records_dropped();
  last_.bytes = writer_->bytes();
  last_.active = false;
  last_.ended_because = closed.ok() ? why : "closing the trace failed: " + closed.ToString();
  writer_.reset();
  hasher_.reset();
}

}  // namespace grove::trace
