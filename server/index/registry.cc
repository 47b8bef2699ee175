#include "index/registry.h"

#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "index/btree/btree.h"
#include "index/hln/hln_tree.h"
#include "page/page.h"

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

StatusOr<IndexRegistry> IndexRegistry::Builtins() {
  IndexRegistry r;
  GROVE_RETURN_IF_ERROR(r.Register(BTree::Spec()));
  GROVE_RETURN_IF_ERROR(r.Register(HlnTree::Spec()));
  return r;
}

Status IndexRegistry::ClaimPageTypes(const std::string& owner,
                                     const std::vector<PageTypeClaim>& claims) {
  for (size_t i = 0; i < claims.size(); ++i) {
    const PageTypeClaim& c = claims[i];
    if (c.type < kFirstIndexPageType) {
      return Status::InvalidArgument(
          fmt::format("{} claims page type {} ({}), which belongs to the engine (types below {})",
                      owner, c.type, c.name, kFirstIndexPageType));
    }
    auto it = page_types_.find(c.type);
    if (it != page_types_.end()) {
      return Status::InvalidArgument(
          fmt::format("{} claims page type {} ({}), already claimed by {} ({})", owner, c.type,
                      c.name, it->second.first, it->second.second));
    }
    for (size_t j = 0; j < i; ++j) {
      if (claims[j].type == c.type) {
        return Status::InvalidArgument(fmt::format("{} claims page type {} twice ({}, {})", owner,
                                                   c.type, claims[j].name, c.name));
      }
    }
  }
  for (const PageTypeClaim& c : claims) page_types_[c.type] = {owner, c.name};
  return Status::Ok();
}

std::string IndexRegistry::PageTypeName(uint16_t type) const {
  if (type < kFirstIndexPageType) return grove::PageTypeName(type);
  auto it = page_types_.find(type);
  return it == page_types_.end() ? fmt::format("page type {}", type) : it->second.second;
}

Status IndexRegistry::Register(VariantSpec spec) {
  if (variants_.count(spec.name)) {
    return Status::AlreadyExists(fmt::format("index variant '{}' registered twice", spec.name));
  }
  GROVE_RETURN_IF_ERROR(ClaimPageTypes(fmt::format("variant '{}'", spec.name), spec.page_types));
  const std::string name = spec.name;
  variants_.emplace(name, std::move(spec));
  return Status::Ok();
}

const VariantSpec* IndexRegistry::Find(const std::string& name) const {
  auto it = variants_.find(name);
  return it == variants_.end() ? nullptr : &it->second;
}

std::vector<std::string> IndexRegistry::Names() const {
  std::vector<std::string> names;
  for (const auto& [name, spec] : variants_) names.push_back(name);
  return names;
}

uint64_t IndexRegistry::PagesPerOp(const std::string& variant, const ParamMap& given) const {
  const VariantSpec* spec = Find(variant);
  StatusOr<ParamMap> params = Resolve(variant, given);
  if (spec == nullptr || !spec->pages_per_op || !params.ok()) return kDefaultPagesPerOp;
  return spec->pages_per_op(*params);
}

StatusOr<ParamMap> IndexRegistry::Resolve(const std::string& variant, const ParamMap& given) const {
  const VariantSpec* spec = Find(variant);
  if (spec == nullptr) {
    return Status::InvalidArgument(fmt::format(
        "index.variant: unknown variant '{}' (available: {})", variant, fmt::join(Names(), ", ")));
  }
  ParamMap out;
  for (const ParamSpec& p : spec->params) out[p.name] = p.default_value;
  for (const auto& [k, v] : given) {
    if (!out.count(k)) {
      std::vector<std::string> names;
      for (const ParamSpec& p : spec->params) names.push_back(p.name);
      return Status::InvalidArgument(
          fmt::format("index.params.{}: unknown parameter for variant '{}' (parameters: {})", k,
                      variant, names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "))));
    }
    out[k] = v;
  }
  return out;
}

std::string IndexRegistry::LayoutString(const std::string& variant,
                                        const ParamMap& resolved) const {
  const VariantSpec* spec = Find(variant);
  std::string s;
  if (spec == nullptr) return s;
  for (const ParamSpec& p : spec->params) {
    if (!p.layout) continue;
    auto it = resolved.find(p.name);
    if (!s.empty()) s += ';';
    s += p.name + "=" + (it == resolved.end() ? p.default_value : it->second);
  }
  return s;
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

}  // namespace grove
