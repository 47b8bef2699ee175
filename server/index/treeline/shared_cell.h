#pragma once

// SharedCell: an immutable value cell with a reference count, shared by the record cache and the
// readers copying it out. The cache hands out a reference under a shard's lock and the reader
// copies the bytes after letting the lock go, so no value is copied while other threads wait
// (record_cache.h). One allocation holds the count, the size and the bytes.
//
//   +-------------+----------+---------------------+
//   | refs (u32)  | size u32 | bytes[size]         |
//   +-------------+----------+---------------------+
//
// Thread safety: copies of one SharedCell may live on many threads; the bytes never change.

#include <atomic>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <utility>

#include "grove/slice.h"

namespace grove::treeline {

class SharedCell {
 public:
  SharedCell() = default;
  static SharedCell Make(Slice bytes) {
    void* mem = ::operator new(sizeof(Header) + bytes.size());
    Header* h = new (mem) Header;
    h->refs.store(1, std::memory_order_relaxed);
    h->size = static_cast<uint32_t>(bytes.size());
    if (!bytes.empty()) std::memcpy(reinterpret_cast<char*>(h + 1), bytes.data(), bytes.size());
    return SharedCell(h);
  }

  SharedCell(const SharedCell& o) : h_(o.h_) {
    if (h_ != nullptr) h_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  SharedCell(SharedCell&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  SharedCell& operator=(SharedCell o) noexcept {
    std::swap(h_, o.h_);
    return *this;
  }
  ~SharedCell() { Reset(); }

  void Reset() {
    if (h_ != nullptr && h_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      h_->~Header();
      ::operator delete(h_);
    }
    h_ = nullptr;
  }

  explicit operator bool() const { return h_ != nullptr; }
  size_t size() const { return h_ == nullptr ? 0 : h_->size; }
  Slice slice() const {
    return h_ == nullptr ? Slice() : Slice(reinterpret_cast<const char*>(h_ + 1), h_->size);
  }
  std::string ToString() const { return std::string(slice().data(), size()); }

 private:
  struct Header {
    std::atomic<uint32_t> refs;
    uint32_t size;
  };
  explicit SharedCell(Header* h) : h_(h) {}

  Header* h_ = nullptr;
};

}  // namespace grove::treeline
