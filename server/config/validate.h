#pragma once

// Semantic checks of a parsed Config: ranges, cross-field rules, readable TLS and token files.
// InvalidArgument naming every offending field, one per line, with the allowed values.

#include <string>

#include "grove/status.h"

#include "config/config.h"

namespace grove::config {

Status ValidateConfig(const Config& config);

// Empty, or a warning that one write of the largest value the limits allow may dirty more pages
// than writes may keep dirty with this cache (pages are no-steal; see WorstCaseWritePages in
// grove/options.h). Such writes are refused at run time with RESOURCE_EXHAUSTED; groved logs this
// at start. Batches are no concern: one larger than the write room is applied operation by
// operation. `pages_per_op` is the variant's (VariantSpec::pages_per_op).
std::string WriteRoomWarning(const Options& options, uint64_t pages_per_op = kDefaultPagesPerOp);

}  // namespace grove::config
