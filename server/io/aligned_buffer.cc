#include <cstdlib>
#include <cstring>
#include <utility>

#include "grove/io_backend.h"

namespace grove {

// On allocation failure the buffer stays empty (data() null, size() 0) instead of throwing; a
// caller that needs the memory checks size().
AlignedBuffer::AlignedBuffer(size_t size) : AlignedBuffer(size, /*zero=*/true) {}

AlignedBuffer AlignedBuffer::Uninitialized(size_t size) { return AlignedBuffer(size, false); }

AlignedBuffer::AlignedBuffer(size_t size, bool zero) {
  if (size == 0) return;
  void* p = nullptr;
  if (::posix_memalign(&p, kIoAlignment, size) != 0) return;
  if (zero) std::memset(p, 0, size);
  data_ = static_cast<char*>(p);
  size_ = size;
}

AlignedBuffer::~AlignedBuffer() { std::free(data_); }

AlignedBuffer::AlignedBuffer(AlignedBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

AlignedBuffer& AlignedBuffer::operator=(AlignedBuffer&& other) noexcept {
  if (this != &other) {
    std::free(data_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

}  // namespace grove
