#include "config/yaml_reader.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>

namespace grove::config {

std::string ErrorList::Join() const {
  std::string out;
  for (const std::string& e : errors_) {
    if (!out.empty()) out += '\n';
    out += e;
  }
  return out;
}

bool ParseSize(std::string_view text, uint64_t* out) {
  size_t i = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0) return false;
  uint64_t number = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + i, number);
  if (ec != std::errc() || ptr != text.data() + i) return false;
  std::string_view unit = text.substr(i);
  while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
  std::string lower(unit);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  int shift = -1;
  if (lower.empty() || lower == "b") shift = 0;
  if (lower == "k" || lower == "kib") shift = 10;
  if (lower == "m" || lower == "mib") shift = 20;
  if (lower == "g" || lower == "gib") shift = 30;
  if (lower == "t" || lower == "tib") shift = 40;
  if (shift < 0) return false;
  if (shift > 0 && number > (std::numeric_limits<uint64_t>::max() >> shift)) return false;
  *out = number << shift;
  return true;
}

YamlSection::YamlSection(const YAML::Node& node, std::string path, std::string source,
                         ErrorList* errors)
    : node_(node), path_(std::move(path)), source_(std::move(source)), errors_(errors) {
  if (node_.IsDefined() && !node_.IsNull() && !node_.IsMap()) {
    errors_->Add(source_ + ":" + std::to_string(node_.Mark().line + 1) + ": " +
                 (path_.empty() ? std::string("the document") : path_) +
                 ": expected a mapping of fields");
    node_ = YAML::Node();
  }
}

YAML::Node YamlSection::Field(std::string_view name) {
  known_.emplace_back(name);
  if (!node_.IsDefined() || !node_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  try {
    // Look the key up without operator[], which would insert into the (shared) node.
    for (const auto& kv : node_) {
      if (kv.first.IsScalar() && kv.first.Scalar() == name) return kv.second;
    }
  } catch (const YAML::Exception&) {
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

std::string YamlSection::Where(const YAML::Node& node, std::string_view name) const {
  std::string where = source_;
  if (node.IsDefined() && node.Mark().line >= 0) {
    where += ":" + std::to_string(node.Mark().line + 1);
  }
  where += ": ";
  if (!path_.empty()) where += path_ + ".";
  where += name;
  return where;
}

void YamlSection::Error(const YAML::Node& node, std::string_view name, std::string_view what) {
  errors_->Add(Where(node, name) + ": " + std::string(what));
}

std::string YamlSection::Scalar(const YAML::Node& node, std::string_view name, bool* ok) {
  *ok = false;
  if (!node.IsScalar()) {
    Error(node, name, "expected a single value");
    return {};
  }
  *ok = true;
  return node.Scalar();
}

void YamlSection::Bool(std::string_view name, bool* out) {
  YAML::Node n = Field(name);
  if (!n.IsDefined()) return;
  bool ok = false;
  const std::string text = Scalar(n, name, &ok);
  if (!ok) return;
  if (text == "true") {
    *out = true;
  } else if (text == "false") {
    *out = false;
  } else {
    Error(n, name, "'" + text + "' is not a boolean (allowed: true, false)");
  }
}

void YamlSection::String(std::string_view name, std::string* out) {
  YAML::Node n = Field(name);
  if (!n.IsDefined()) return;
  if (n.IsNull()) {
    out->clear();
    return;
  }
  bool ok = false;
  std::string text = Scalar(n, name, &ok);
  if (ok) *out = std::move(text);
}

bool YamlSection::ReadUint(const YAML::Node& n, std::string_view name, bool sizes, uint64_t* out) {
  bool ok = false;
  const std::string text = Scalar(n, name, &ok);
  if (!ok) return false;
  uint64_t v = 0;
  bool parsed = false;
  if (sizes) {
    parsed = ParseSize(text, &v);
  } else {
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    parsed = ec == std::errc() && ptr == text.data() + text.size();
  }
  if (!parsed) {
    Error(n, name,
          "'" + text + "' is not " +
              (sizes ? "a size (a non-negative integer, optionally with KiB, MiB, GiB or TiB)"
                     : "a non-negative integer"));
    return false;
  }
  *out = v;
  return true;
}

void YamlSection::Uint64(std::string_view name, uint64_t* out, bool sizes) {
  YAML::Node n = Field(name);
  if (n.IsDefined()) ReadUint(n, name, sizes, out);
}

void YamlSection::Uint32(std::string_view name, uint32_t* out, bool sizes) {
  YAML::Node n = Field(name);
  uint64_t v = 0;
  if (!n.IsDefined() || !ReadUint(n, name, sizes, &v)) return;
  if (v > std::numeric_limits<uint32_t>::max()) {
    Error(n, name, std::to_string(v) + " is too large (at most 4294967295)");
    return;
  }
  *out = static_cast<uint32_t>(v);
}

void YamlSection::Double(std::string_view name, double* out) {
  YAML::Node n = Field(name);
  if (!n.IsDefined()) return;
  bool ok = false;
  const std::string text = Scalar(n, name, &ok);
  if (!ok) return;
  double v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || !(v == v)) {
    Error(n, name, "'" + text + "' is not a number");
    return;
  }
  *out = v;
}

void YamlSection::Enum(std::string_view name, std::initializer_list<std::string_view> allowed,
                       int* out) {
  YAML::Node n = Field(name);
  if (!n.IsDefined()) return;
  bool ok = false;
  const std::string text = Scalar(n, name, &ok);
  if (!ok) return;
  int i = 0;
  std::string list;
  for (std::string_view a : allowed) {
    if (a == text) {
      *out = i;
      return;
    }
    if (!list.empty()) list += ", ";
    list += a;
    ++i;
  }
  Error(n, name, "'" + text + "' is not allowed (allowed: " + list + ")");
}

void YamlSection::StringList(std::string_view name, std::vector<std::string>* out) {
  YAML::Node n = Field(name);
  if (!n.IsDefined() || n.IsNull()) return;
  if (!n.IsSequence()) {
    Error(n, name, "expected a list");
    return;
  }
  out->clear();
  for (const auto& item : n) {
    if (!item.IsScalar()) {
      Error(item, name, "every entry must be a plain value");
      continue;
    }
    out->push_back(item.Scalar());
  }
}

void YamlSection::StringMap(std::string_view name, std::map<std::string, std::string>* out) {
  YAML::Node n = Field(name);
  if (!n.IsDefined() || n.IsNull()) return;
  if (!n.IsMap()) {
    Error(n, name, "expected a mapping of name: value");
    return;
  }
  out->clear();
  for (const auto& kv : n) {
    if (!kv.first.IsScalar() || !kv.second.IsScalar()) {
      Error(kv.first, name, "every entry must be name: value");
      continue;
    }
    (*out)[kv.first.Scalar()] = kv.second.Scalar();
  }
}

YamlSection YamlSection::Child(std::string_view name) {
  YAML::Node n = Field(name);
  std::string path = path_.empty() ? std::string(name) : path_ + "." + std::string(name);
  return YamlSection(n, std::move(path), source_, errors_);
}

void YamlSection::Finish() {
  if (!node_.IsDefined() || !node_.IsMap()) return;
  std::vector<std::string> seen;
  for (const auto& kv : node_) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : std::string("?");
    // YAML parsers disagree on repeated keys (yaml-cpp keeps the first); refuse them instead of
    // silently ignoring one.
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      Error(kv.first, key, "appears more than once in this section");
      continue;
    }
    seen.push_back(key);
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    std::string list;
    for (const std::string& k : known_) {
      if (!list.empty()) list += ", ";
      list += k;
    }
    Error(kv.first, key, "unknown field (allowed here: " + list + ")");
  }
}

}  // namespace grove::config
