#pragma once

// A small ext4 file system on a loop device, for tests that need a real full disk. Needs root
// (mount -o loop); Create() says why when it cannot, so tests can skip with a clear message.

#include <cstdint>
#include <memory>
#include <string>

namespace grove::testing {

class LoopMount {
 public:
  // Makes an ext4 image of `mib` MiB in `dir` and mounts it at `dir`/mnt. Null and *why set when
  // loop mounts are not available.
  static std::unique_ptr<LoopMount> Create(const std::string& dir, int mib, std::string* why);
  ~LoopMount();  // unmounts (the loop device goes with it)
  LoopMount(const LoopMount&) = delete;
  LoopMount& operator=(const LoopMount&) = delete;

  const std::string& path() const { return mnt_; }
  // Bytes free for an unprivileged writer.
  uint64_t FreeBytes() const;
  // Takes all but `leave` bytes of the free space with a file named `name` (fallocate).
  bool Fill(const std::string& name, uint64_t leave);

 private:
  LoopMount() = default;
  std::string image_;
  std::string mnt_;
};

}  // namespace grove::testing
