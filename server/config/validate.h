#pragma once

// Semantic checks of a parsed Config: ranges, cross-field rules, readable TLS and token files.
// InvalidArgument naming every offending field, one per line, with the allowed values.

#include "grove/status.h"

#include "config/config.h"

namespace grove::config {

Status ValidateConfig(const Config& config);

}  // namespace grove::config
