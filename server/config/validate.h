#pragma once

// Semantic checks of a parsed Config: the engine's rules (options/check_options.h, the ones
// Db::Open applies) and the server's: ranges, cross-field rules, readable TLS and token files.
// InvalidArgument naming every offending field, one per line, with the allowed values.

#include <string>

#include "grove/status.h"

#include "config/config.h"
#include "options/check_options.h"

namespace grove::config {

Status ValidateConfig(const Config& config);

// The warning groved logs when the largest value its limits allow cannot be written with its
// cache is grove::WriteRoomWarning (options/check_options.h).

}  // namespace grove::config
