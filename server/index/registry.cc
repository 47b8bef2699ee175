#include "index/registry.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "index/aha/aha.h"
#include "index/aulid/aulid.h"
#include "index/btree/btree.h"
#include "index/core/tree.h"
#include "index/hln/hln_tree.h"
#include "index/treeline/treeline.h"
#include "page/page.h"

namespace grove {

StatusOr<IndexRegistry> IndexRegistry::Builtins() {
  IndexRegistry r;
  GROVE_RETURN_IF_ERROR(r.ClaimPageTypes("the B+-tree core", core::PageTypes()));
  GROVE_RETURN_IF_ERROR(r.Register(BTree::Spec()));
  GROVE_RETURN_IF_ERROR(r.Register(HlnTree::Spec()));
  GROVE_RETURN_IF_ERROR(r.Register(TreeLine::Spec()));
  GROVE_RETURN_IF_ERROR(r.Register(Aulid::Spec()));
  GROVE_RETURN_IF_ERROR(r.Register(AhaTree::Spec()));
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

std::optional<uint64_t> IndexRegistry::ShareBytes(const std::string& variant, const ParamMap& given,
                                                  uint64_t cache_bytes,
                                                  ShareFn VariantSpec::*share) const {
  const VariantSpec* spec = Find(variant);
  StatusOr<ParamMap> params = Resolve(variant, given);
  if (spec == nullptr || !(spec->*share) || !params.ok()) return std::nullopt;
  const double x = (spec->*share)(*params);
  if (!(x > 0 && x <= 1)) return std::nullopt;
  return static_cast<uint64_t>(static_cast<double>(cache_bytes) * x);
}

uint64_t IndexRegistry::BufferPoolBytes(const std::string& variant, const ParamMap& given,
                                        uint64_t cache_bytes) const {
  const std::optional<uint64_t> pool =
      ShareBytes(variant, given, cache_bytes, &VariantSpec::buffer_pool_share);
  if (!pool) return cache_bytes;
  return std::max(*pool, std::min(Find(variant)->min_buffer_pool_bytes, cache_bytes / 4));
}

uint64_t IndexRegistry::BufferPoolMaxBytes(const std::string& variant, const ParamMap& given,
                                           uint64_t cache_bytes) const {
  const uint64_t pool = BufferPoolBytes(variant, given, cache_bytes);
  const std::optional<uint64_t> max =
      ShareBytes(variant, given, cache_bytes, &VariantSpec::buffer_pool_max_share);
  return max ? std::clamp(*max, pool, std::max(pool, cache_bytes)) : pool;
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

}  // namespace grove
