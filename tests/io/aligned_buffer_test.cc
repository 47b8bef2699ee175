#include <cstdint>
#include <utility>

#include <gtest/gtest.h>

#include "grove/io_backend.h"

namespace grove {
namespace {

// Named so that `ctest -R io` selects it with the rest of the IO tests.
TEST(AlignedBufferAllocationTest, AlignedAndZeroed) {
  AlignedBuffer buf(3 * kIoAlignment + 100);
  ASSERT_NE(buf.data(), nullptr);
  EXPECT_EQ(buf.size(), 3 * kIoAlignment + 100);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buf.data()) % kIoAlignment, 0u);
  for (size_t i = 0; i < buf.size(); ++i) ASSERT_EQ(buf.data()[i], 0) << i;
}

TEST(AlignedBufferAllocationTest, UninitializedIsAlignedAndWritable) {
  AlignedBuffer buf = AlignedBuffer::Uninitialized(5 * kIoAlignment);
  ASSERT_NE(buf.data(), nullptr);
  EXPECT_EQ(buf.size(), 5 * kIoAlignment);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buf.data()) % kIoAlignment, 0u);
  buf.data()[buf.size() - 1] = 'q';
  EXPECT_EQ(buf.data()[buf.size() - 1], 'q');
  EXPECT_EQ(AlignedBuffer::Uninitialized(0).size(), 0u);
}

TEST(AlignedBufferAllocationTest, EmptyAndMove) {
  AlignedBuffer empty;
  EXPECT_EQ(empty.data(), nullptr);
  EXPECT_EQ(empty.size(), 0u);

  AlignedBuffer a(kIoAlignment);
  a.data()[0] = 'x';
  char* p = a.data();
  AlignedBuffer b(std::move(a));
  EXPECT_EQ(b.data(), p);
  EXPECT_EQ(b.size(), kIoAlignment);
  EXPECT_EQ(a.data(), nullptr);  // NOLINT: moved-from state is specified
  EXPECT_EQ(a.size(), 0u);

  AlignedBuffer c(2 * kIoAlignment);
  c = std::move(b);
  EXPECT_EQ(c.data(), p);
  EXPECT_EQ(c.data()[0], 'x');
  EXPECT_EQ(c.size(), kIoAlignment);
}

}  // namespace
}  // namespace grove
