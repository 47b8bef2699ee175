#pragma once

// Reading groved's configuration: YAML text -> Config, then validation.
//
//   LoadConfig(path or none, overrides)  = parse (file, or the embedded default when no path)
//                                          + command-line overrides + ValidateConfig
//
// Every error is InvalidArgument and names the file, line and field, e.g.
//   "grove.yaml:42: wal.sync: 'sometimes' is not allowed (allowed: always, batch, none)".
// All problems in a file are reported together, one per line.

#include <optional>
#include <string>
#include <string_view>

#include "grove/status.h"

#include "config/config.h"

namespace grove::config {

// config/grove.yaml exactly as it was when groved was built.
std::string_view EmbeddedDefaultConfig();

// Parses YAML text over the defaults of Config. `source` names the text in errors. Checks types,
// allowed values and unknown fields, not cross-field rules (ValidateConfig does).
StatusOr<Config> ParseConfig(std::string_view yaml_text, std::string_view source);

// Values given on the command line; they replace the file's.
struct Overrides {
  std::optional<std::string> data_dir;
  std::optional<std::string> listen;
};

// Reads `path` (or the embedded default when empty), applies `overrides` and validates.
StatusOr<Config> LoadConfig(const std::string& path, const Overrides& overrides);

}  // namespace grove::config
