#include "reliability/loop_mount.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

namespace grove::testing {
namespace {

// Runs a shell command; on failure returns false with its output in *out.
bool Run(const std::string& cmd, const std::string& log, std::string* out) {
  const int rc = std::system((cmd + " >" + log + " 2>&1").c_str());
  if (rc == 0) return true;
  std::ifstream in(log);
  std::ostringstream buf;
  buf << in.rdbuf();
  *out = "'" + cmd + "' failed (" + std::to_string(rc) + "): " + buf.str();
  return false;
}

}  // namespace

std::unique_ptr<LoopMount> LoopMount::Create(const std::string& dir, int mib, std::string* why) {
  if (::geteuid() != 0) {
    *why = "not root (mount -o loop needs CAP_SYS_ADMIN)";
    return nullptr;
  }
  std::unique_ptr<LoopMount> m(new LoopMount());
  m->image_ = dir + "/ext4.img";
  const std::string mnt = dir + "/mnt";
  std::filesystem::create_directories(mnt);
  const std::string log = dir + "/loop.log";
  {
    const int fd = ::open(m->image_.c_str(), O_CREAT | O_RDWR, 0600);
    if (fd < 0 || ::ftruncate(fd, off_t{mib} << 20) != 0) {
      *why = "cannot create " + m->image_;
      if (fd >= 0) ::close(fd);
      return nullptr;
    }
    ::close(fd);
  }
  if (!Run("mkfs.ext4 -q -F -m 0 " + m->image_, log, why)) return nullptr;
  if (!Run("mount -o loop " + m->image_ + " " + mnt, log, why)) return nullptr;
  m->mnt_ = mnt;
  return m;
}

LoopMount::~LoopMount() {
  if (mnt_.empty()) return;
  std::string ignored;
  if (!Run("umount " + mnt_, mnt_ + ".umount.log", &ignored)) {
    Run("umount -l " + mnt_, mnt_ + ".umount.log", &ignored);  // a child still holds a file
  }
}

uint64_t LoopMount::FreeBytes() const {
  struct statvfs s {};
  if (::statvfs(mnt_.c_str(), &s) != 0) return 0;
  return uint64_t{s.f_bavail} * s.f_frsize;
}

bool LoopMount::Fill(const std::string& name, uint64_t leave) {
  const uint64_t free = FreeBytes();
  if (free <= leave) return true;
  const int fd = ::open((mnt_ + "/" + name).c_str(), O_CREAT | O_RDWR, 0600);
  if (fd < 0) return false;
  const bool ok = ::posix_fallocate(fd, 0, static_cast<off_t>(free - leave)) == 0;
  ::close(fd);
  return ok;
}

}  // namespace grove::testing
