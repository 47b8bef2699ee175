#pragma once

// The one validator of grove::Options: every rule the engine holds its options to, with the
// limits of grove/limits.h. Db::Open refuses options that break one (engine/options_check.cc);
// config/validate.cc reports the same for a grove.yaml, with the server's own rules, before
// anything opens. Each broken rule is reported with its field, as config/grove.yaml spells it.

#include <cstdint>
#include <string>

#include "grove/options.h"
#include "grove/status.h"

#include "options/problems.h"

namespace grove {

// Adds a problem to `p` for each rule `o` breaks. The io.* fields are the IO backend's to check
// (NewIoBackend; a grove.yaml is held to narrower ranges by config/).
void CheckEngineOptions(const Options& o, Problems* p);
// OK, or InvalidArgument naming every offending field, one per line.
[[nodiscard]] Status ValidateEngineOptions(const Options& o);

// Empty, or a warning that one write of the largest value the limits allow may dirty more pages
// than writes may keep dirty with this cache (pages are no-steal; see WorstCaseWritePages in
// grove/options.h). Such writes are refused at run time with RESOURCE_EXHAUSTED; groved logs this
// at start. Batches are no concern: one larger than the write room is applied operation by
// operation. `pages_per_op` is the variant's (VariantSpec::pages_per_op).
std::string WriteRoomWarning(const Options& options, uint64_t pages_per_op = kDefaultPagesPerOp);

}  // namespace grove
