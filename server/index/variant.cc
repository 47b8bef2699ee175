// Index's default methods and the parameter helpers of variant.h.

#include "index/variant.h"

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace grove {

Status Index::BatchGet(const std::vector<Slice>& keys,
                       std::vector<std::optional<std::string>>* cells) {
  cells->assign(keys.size(), std::nullopt);
  std::string cell;
  for (size_t i = 0; i < keys.size(); ++i) {
    GROVE_ASSIGN_OR_RETURN(const bool found, Get(keys[i], &cell));
    if (found) (*cells)[i] = cell;
  }
  return Status::Ok();
}

Status Index::Prepare(Slice key) {
  std::string cell;
  return Get(key, &cell).status();
}

StatusOr<double> ParseDoubleParam(const ParamMap& params, const std::string& name, double lo,
                                  double hi) {
  auto it = params.find(name);
  if (it == params.end()) return Status::InvalidArgument(fmt::format("{}: missing", name));
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(it->second.c_str(), &end);
  if (errno != 0 || end == it->second.c_str() || *end != '\0' || !(v >= lo && v <= hi)) {
    return Status::InvalidArgument(
        fmt::format("{}: '{}' is not a number in [{}, {}]", name, it->second, lo, hi));
  }
  return v;
}

StatusOr<uint64_t> ParseUintParam(const ParamMap& params, const std::string& name, uint64_t lo,
                                  uint64_t hi) {
  auto it = params.find(name);
  if (it == params.end()) return Status::InvalidArgument(fmt::format("{}: missing", name));
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(it->second.c_str(), &end, 10);
  if (errno != 0 || end == it->second.c_str() || *end != '\0' || it->second[0] == '-' || v < lo ||
      v > hi) {
    return Status::InvalidArgument(
        fmt::format("{}: '{}' is not an integer in [{}, {}]", name, it->second, lo, hi));
  }
  return static_cast<uint64_t>(v);
}

StatusOr<std::string> ParseEnumParam(const ParamMap& params, const std::string& name,
                                     const std::vector<std::string>& allowed) {
  auto it = params.find(name);
  if (it == params.end()) return Status::InvalidArgument(fmt::format("{}: missing", name));
  for (const std::string& a : allowed) {
    if (a == it->second) return a;
  }
  return Status::InvalidArgument(
      fmt::format("{}: '{}' is not one of: {}", name, it->second, fmt::join(allowed, ", ")));
}

Status CheckBulkEntry(uint64_t index, Slice prev, Slice key, size_t cell_bytes, size_t max_key,
                      size_t max_cell) {
  if (index > 0 && !(prev < key)) {
    return Status::InvalidArgument(fmt::format(
        "bulk load: key #{} is not greater than the key before it (input must be sorted and "
        "unique)",
        index));
  }
  if (key.empty() || key.size() > max_key || cell_bytes > max_cell) {
    return Status::InvalidArgument(
        fmt::format("bulk load: entry #{} has a key of {} bytes or a cell of {} bytes, beyond the "
                    "limits",
                    index, key.size(), cell_bytes));
  }
  return Status::Ok();
}

}  // namespace grove
