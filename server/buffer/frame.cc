#include "buffer/frame.h"

#include <cstdlib>

#include <sys/mman.h>

namespace grove::buffer_internal {

FrameArray::FrameArray(uint32_t num_frames) : size_(num_frames), frames_(new Frame[num_frames]) {
  const size_t bytes = static_cast<size_t>(size_) * kPageSize;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  // Without its memory the pool cannot work at all; fall back to the heap so that the failure (if
  // the heap fails too) is an allocation failure at startup rather than a crash later.
  if (mem == MAP_FAILED) {
    mem = std::aligned_alloc(kPageSize, bytes);
    mmapped_ = false;
  }
  memory_ = static_cast<char*>(mem);
  for (uint32_t i = 0; i < size_; ++i)
    frames_[i].data = memory_ + static_cast<size_t>(i) * kPageSize;
}

FrameArray::~FrameArray() {
  if (mmapped_) {
    munmap(memory_, static_cast<size_t>(size_) * kPageSize);
  } else {
    std::free(memory_);
  }
}

void FrameArray::ReleaseMemory(uint32_t index) {
  if (mmapped_) madvise(frames_[index].data, kPageSize, MADV_DONTNEED);
}

}  // namespace grove::buffer_internal
