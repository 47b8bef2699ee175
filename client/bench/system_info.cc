#include "bench/system_info.h"

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

namespace grove::bench {
namespace {

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  while (!line.empty() && (line.back() == ' ' || line.back() == '\n')) line.pop_back();
  return line;
}

std::string FieldOf(const std::string& path, const std::string& field) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(field, 0) == 0) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      size_t b = line.find_first_not_of(" \t", colon + 1);
      return b == std::string::npos ? "" : line.substr(b);
    }
  }
  return "";
}

std::string FsType(long magic) {
  switch (magic) {
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x01021994:
      return "tmpfs";
    case 0x794c7630:
      return "overlayfs";
    default: {
      std::ostringstream s;
      s << "0x" << std::hex << magic;
      return s.str();
    }
  }
}

}  // namespace

ProcessIo ReadProcessIo() {
  ProcessIo io;
  std::ifstream in("/proc/self/io");
  std::string name;
  uint64_t value = 0;
  while (in >> name >> value) {
    if (name == "read_bytes:") io.read_bytes = value, io.available = true;
    if (name == "write_bytes:") io.write_bytes = value;
  }
  return io;
}

MemoryUse ReadMemoryUse() {
  MemoryUse m;
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    // "VmHWM:\t  123456 kB"
    const bool hwm = line.rfind("VmHWM:", 0) == 0;
    if (!hwm && line.rfind("VmRSS:", 0) != 0) continue;
    const uint64_t kib = std::strtoull(line.c_str() + 6, nullptr, 10);
    (hwm ? m.peak_rss_bytes : m.rss_bytes) = kib * 1024;
    m.available = true;
  }
  return m;
}

bool ResetPeakRss() {
  std::ofstream out("/proc/self/clear_refs");
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

uint64_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

std::map<std::string, std::string> DescribeMachine(const std::string& dir) {
  std::map<std::string, std::string> m;
  m["cpu"] = FieldOf("/proc/cpuinfo", "model name");
  m["cpus"] = std::to_string(std::thread::hardware_concurrency());
  m["memory"] = FieldOf("/proc/meminfo", "MemTotal");
  // The machine may be shared: the load average says how much else was running.
  m["loadavg"] = FirstLine("/proc/loadavg");
  utsname u{};
  if (uname(&u) == 0) m["kernel"] = std::string(u.sysname) + " " + u.release;
  struct statfs fs {};
  if (statfs(dir.c_str(), &fs) == 0) m["filesystem"] = FsType(fs.f_type);
  struct stat st {};
  if (stat(dir.c_str(), &st) == 0) {
    // /sys/dev/block/<maj>:<min> is the partition; its parent directory names the disk.
    const std::string dev = "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" +
                            std::to_string(minor(st.st_dev));
    std::string model = FirstLine(dev + "/device/model");
    if (model.empty()) model = FirstLine(dev + "/../device/model");
    std::string rotational = FirstLine(dev + "/queue/rotational");
    if (rotational.empty()) rotational = FirstLine(dev + "/../queue/rotational");
    char target[512];
    const ssize_t n = readlink(dev.c_str(), target, sizeof(target) - 1);
    std::string name;
    if (n > 0) {
      target[n] = '\0';
      name = target;
      name = name.substr(name.find_last_of('/') + 1);
    }
    m["block_device"] = name + (model.empty() ? "" : " (" + model + ")");
    if (!rotational.empty()) m["block_device_rotational"] = rotational;  // as the kernel reports it
  }
  return m;
}

}  // namespace grove::bench
