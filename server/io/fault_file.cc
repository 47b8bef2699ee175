#include <algorithm>
#include <string>
#include <utility>

#include "io/fault_internal.h"

namespace grove {

using OpKind = FaultInjectionBackend::OpKind;

namespace {
constexpr size_t kSectorSize = 512;
}  // namespace

FaultFile::FaultFile(FaultInjectionBackend* backend,
                     std::shared_ptr<FaultInjectionBackend::FileNode> node,
                     std::unique_ptr<File> inner, std::unique_ptr<File> shadow, bool direct)
    : backend_(backend),
      node_(std::move(node)),
      inner_(std::move(inner)),
      shadow_(std::move(shadow)),
      direct_(direct) {
  backend_->RegisterFile(this);
}

FaultFile::~FaultFile() { backend_->UnregisterFile(this); }

Status FaultFile::Read(uint64_t offset, size_t n, char* buf, size_t* bytes_read) {
  *bytes_read = 0;
  GROVE_RETURN_IF_ERROR(backend_->CheckRead(path()));
  return inner_->Read(offset, n, buf, bytes_read);
}

size_t FaultFile::ShortWriteLength(size_t len) const {
  size_t half = len / 2;
  // A direct-IO device persists whole sectors; keep the torn prefix sector-aligned.
  if (direct_) half -= half % kSectorSize;
  return half;
}

Status FaultFile::RecordUndo(OpKind kind, uint64_t offset, uint64_t len) {
  StatusOr<uint64_t> size = shadow_->Size();
  if (!size.ok()) return size.status().WithContext("fault backend: capturing undo");
  FaultInjectionBackend::UndoRecord record{kind, offset, len, std::string(), *size};
  // Bytes the op can destroy: a write overwrites [offset, offset+len); a shrinking truncate drops
  // [offset, old size). Allocate only changes the size.
  uint64_t end = offset;
  if (kind == OpKind::kWrite) end = std::min(offset + len, *size);
  if (kind == OpKind::kTruncate) end = *size;
  if (end > offset) {
    record.old_bytes.resize(end - offset);
    size_t got = 0;
    Status s = shadow_->Read(offset, end - offset, record.old_bytes.data(), &got);
    if (!s.ok()) return s.WithContext("fault backend: capturing undo");
    record.old_bytes.resize(got);
  }
  backend_->AppendUndo(node_.get(), std::move(record));
  return Status::Ok();
}

Status FaultFile::BeginWrite(uint64_t offset, Slice data, bool* proceed, size_t* written) {
  *proceed = false;
  *written = 0;
  FaultInjectionBackend::Verdict verdict =
      backend_->BeginMutation(OpKind::kWrite, path(), offset, data.size());
  if (!verdict.status.ok() && !verdict.short_write) return std::move(verdict.status);
  const size_t n = verdict.short_write ? ShortWriteLength(data.size()) : data.size();
  GROVE_RETURN_IF_ERROR(RecordUndo(OpKind::kWrite, offset, n));
  if (!verdict.short_write) {
    *proceed = true;
    return Status::Ok();
  }
  // The torn prefix goes through the buffered descriptor: it has no alignment rules, and a later
  // O_DIRECT read of the range flushes it first, so the engine sees exactly this prefix.
  if (n > 0) {
    Status s = shadow_->Write(offset, data.substr(0, n));
    if (!s.ok()) return s;
    *written = n;
  }
  return std::move(verdict.status);
}

Status FaultFile::BeginQueuedWrite(uint64_t offset, Slice data, bool* proceed, size_t* written) {
  MutexLock order(&backend_->order_mu_);
  return BeginWrite(offset, data, proceed, written);
}

Status FaultFile::Write(uint64_t offset, Slice data) {
  MutexLock order(&backend_->order_mu_);
  bool proceed;
  size_t written;
  Status s = BeginWrite(offset, data, &proceed, &written);
  if (!proceed) return s;
  return inner_->Write(offset, data);
}

Status FaultFile::Sync() {
  MutexLock order(&backend_->order_mu_);
  FaultInjectionBackend::Verdict verdict = backend_->BeginMutation(OpKind::kSync, path(), 0, 0);
  if (!verdict.status.ok()) return std::move(verdict.status);  // nothing became durable
  GROVE_RETURN_IF_ERROR(inner_->Sync());
  backend_->MarkSynced(node_.get());
  return Status::Ok();
}

Status FaultFile::Truncate(uint64_t size) {
  MutexLock order(&backend_->order_mu_);
  FaultInjectionBackend::Verdict verdict =
      backend_->BeginMutation(OpKind::kTruncate, path(), size, 0);
  if (!verdict.status.ok()) return std::move(verdict.status);
  GROVE_RETURN_IF_ERROR(RecordUndo(OpKind::kTruncate, size, 0));
  return inner_->Truncate(size);
}

Status FaultFile::Allocate(uint64_t offset, uint64_t len) {
  MutexLock order(&backend_->order_mu_);
  FaultInjectionBackend::Verdict verdict =
      backend_->BeginMutation(OpKind::kAllocate, path(), offset, len);
  if (!verdict.status.ok()) return std::move(verdict.status);
  GROVE_RETURN_IF_ERROR(RecordUndo(OpKind::kAllocate, offset, len));
  return inner_->Allocate(offset, len);
}

StatusOr<uint64_t> FaultFile::Size() {
  GROVE_RETURN_IF_ERROR(backend_->CheckAlive());
  return inner_->Size();
}

}  // namespace grove
