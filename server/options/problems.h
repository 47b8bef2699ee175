#pragma once

// Problems: what is wrong with a configuration, one message per offending field
// ("field: what"), collected so that a user sees every problem at once rather than one per try.

#include <cstdint>
#include <string>
#include <vector>

#include "grove/status.h"

namespace grove {

class Problems {
 public:
  void Add(const std::string& field, const std::string& what) {
    list_.push_back(field + ": " + what);
  }
  void Add(const Status& s) {
    if (!s.ok()) list_.emplace_back(s.message());
  }
  // "field: V is out of range (allowed: LO..HI unit)" unless lo <= v <= hi.
  void Range(const std::string& field, double v, double lo, double hi, const std::string& unit);
  // "field: cannot read 'path'" unless the file is readable.
  void Readable(const std::string& field, const std::string& path);

  bool empty() const { return list_.empty(); }
  const std::vector<std::string>& list() const { return list_; }
  // OK, or InvalidArgument with every problem, one per line.
  Status ToStatus() const;

 private:
  std::vector<std::string> list_;
};

}  // namespace grove
