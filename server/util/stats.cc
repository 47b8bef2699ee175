#include "grove/stats.h"

namespace grove {

const char* IoCauseName(IoCause cause) {
  switch (cause) {
    case IoCause::kDemand:
      return "demand";
    case IoCause::kPrefetch:
      return "prefetch";
    case IoCause::kScan:
      return "scan";
    case IoCause::kCheckpoint:
      return "checkpoint";
    case IoCause::kRecovery:
      return "recovery";
    case IoCause::kBulkLoad:
      return "bulk_load";
    case IoCause::kCompaction:
      return "compaction";
  }
  return "unknown";
}

}  // namespace grove
