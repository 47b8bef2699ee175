// Options validation for Db::Open: the one validator (options/check_options.h), then defaults.

#include "grove/limits.h"

#include "engine/db_impl.h"
#include "engine/value_cell.h"
#include "options/check_options.h"
#include "page/extent_allocator.h"

namespace grove {

// The largest value the limits allow fits in one extent of the value store.
static_assert(limits::kMaxValueBytes <= uint64_t{ExtentAllocator::kMaxExtentPages} * kBlobChunk);

StatusOr<Options> CheckOptions(const Options& in) {
  GROVE_RETURN_IF_ERROR(ValidateEngineOptions(in));
  Options o = in;
  if (!o.logger) o.logger = NewStderrLogger(LogLevel::kInfo);
  return o;
}

}  // namespace grove
