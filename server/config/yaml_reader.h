#pragma once

// A checked view of one YAML mapping ("section"). Each typed getter reads an optional field into
// an output that already holds the default; wrong types, bad values and (at Finish) unknown keys
// are recorded as errors naming the full field path and the YAML line. Errors accumulate so that
// one run reports every problem in a file, not just the first.
//
// yaml-cpp throws; every call that can throw is wrapped here, so no exception leaves config/.

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace grove::config {

class ErrorList {
 public:
  void Add(std::string error) { errors_.push_back(std::move(error)); }
  bool empty() const { return errors_.empty(); }
  // All errors, one per line.
  std::string Join() const;

 private:
  std::vector<std::string> errors_;
};

class YamlSection {
 public:
  // `node` must be a map or null (an absent section). `path` is the dotted prefix ("" at the top).
  YamlSection(const YAML::Node& node, std::string path, std::string source, ErrorList* errors);

  void Bool(std::string_view name, bool* out);
  void String(std::string_view name, std::string* out);
  // Non-negative integers; *_bytes fields also accept KiB/MiB/GiB/TiB suffixes (`sizes`).
  void Uint32(std::string_view name, uint32_t* out, bool sizes = false);
  void Uint64(std::string_view name, uint64_t* out, bool sizes = false);
  void Double(std::string_view name, double* out);
  // One of `allowed`; stores the index of the match.
  void Enum(std::string_view name, std::initializer_list<std::string_view> allowed, int* out);
  // A sequence of scalars, kept as text.
  void StringList(std::string_view name, std::vector<std::string>* out);
  // A map of scalars, kept as text.
  void StringMap(std::string_view name, std::map<std::string, std::string>* out);
  // A nested section (absent: an empty one, so every default stays).
  YamlSection Child(std::string_view name);

  // Records every key that no getter asked for, listing the allowed names.
  void Finish();

 private:
  // The node of field `name`, or an undefined node when absent. Marks the name as known.
  YAML::Node Field(std::string_view name);
  std::string Where(const YAML::Node& node, std::string_view name) const;
  void Error(const YAML::Node& node, std::string_view name, std::string_view what);
  std::string Scalar(const YAML::Node& node, std::string_view name, bool* ok);
  bool ReadUint(const YAML::Node& node, std::string_view name, bool sizes, uint64_t* out);

  YAML::Node node_;
  std::string path_;
  std::string source_;
  ErrorList* errors_;
  std::vector<std::string> known_;
};

// Parses "123", "64KiB", "4 MiB", "1GiB" (binary multiples; K/M/G/T accepted as the same).
// Returns false on anything else or on overflow.
bool ParseSize(std::string_view text, uint64_t* out);

}  // namespace grove::config
