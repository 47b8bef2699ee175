#pragma once

// What the process and the machine look like, for the report: every JSON line carries the
// machine it was measured on, so numbers from different machines are never mixed silently.

#include <cstdint>
#include <map>
#include <string>

namespace grove::bench {

// Bytes this process moved to and from the block layer so far (/proc/self/io read_bytes and
// write_bytes, all threads): O_DIRECT and io_uring IO are included, page-cache hits are not.
struct ProcessIo {
  uint64_t read_bytes = 0;
  uint64_t write_bytes = 0;
  bool available = false;
};
ProcessIo ReadProcessIo();

// CPU model and count, memory, kernel, and the filesystem and block device holding `dir`.
std::map<std::string, std::string> DescribeMachine(const std::string& dir);

// This process's resident set now and at its peak (/proc/self/status VmRSS, VmHWM), bytes.
struct MemoryUse {
  uint64_t rss_bytes = 0;
  uint64_t peak_rss_bytes = 0;
  bool available = false;
};
MemoryUse ReadMemoryUse();
// Starts a new peak: VmHWM falls back to the current RSS (/proc/self/clear_refs "5"). False when
// the kernel refuses; the peak then covers the whole process.
bool ResetPeakRss();

// This machine's physical memory, bytes (0 when unknown).
uint64_t PhysicalMemoryBytes();

}  // namespace grove::bench
