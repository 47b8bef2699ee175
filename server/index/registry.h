#pragma once

// IndexRegistry: index variants by name, with their parameters and factories.
//
// A variant registers a VariantSpec: its name (persisted in the superblock), its parameters with
// defaults and help text, which of them are layout parameters (persisted; reopening with different
// values is refused because the on-disk structure depends on them), and two factories: `create`
// builds a new empty index, `open` reopens one from the metadata its SerializeMetadata() wrote.
//
// Page types: every page of the data file names its type in its header (page/page.h). Types below
// 16 belong to the engine; index code claims the others here, a variant in its VariantSpec and a
// layer shared by several variants (the B+-tree core) with ClaimPageTypes. Two claims of one type
// fail registration, so a collision stops the server at start instead of corrupting a read.
//
// There is no global registry: the engine builds one with IndexRegistry::Builtins() (or takes the
// one in IndexOptions::registry), and tests may register their own variants.
//
// Thread safety: registration is not synchronised; build the registry before sharing it.

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "grove/index.h"

#include "index/variant.h"

namespace grove {

class IndexRegistry {
 public:
  // A registry holding every variant built into Grove, or the reason it cannot be built (a page
  // type claimed twice).
  static StatusOr<IndexRegistry> Builtins();

  // kAlreadyExists for a name registered before; kInvalidArgument, naming both claimants, for a
  // page type claimed before (or one of the engine's). Nothing is registered on failure.
  Status Register(VariantSpec spec);
  // Claims page types for code shared by several variants (`owner` names it in messages).
  Status ClaimPageTypes(const std::string& owner, const std::vector<PageTypeClaim>& claims);
  // "hln subnode", or "page type N" for a type nobody claimed.
  std::string PageTypeName(uint16_t type) const;
  const VariantSpec* Find(const std::string& name) const;
  std::vector<std::string> Names() const;

  // Fills in defaults and rejects parameters the variant does not have (kInvalidArgument naming
  // the parameter and listing the variant's parameters). Unknown variants are kInvalidArgument too,
  // listing the registered names.
  StatusOr<ParamMap> Resolve(const std::string& variant, const ParamMap& given) const;
  // VariantSpec::pages_per_op for `variant` with `given` parameters resolved, before any index is
  // open; kDefaultPagesPerOp for variants without one, unknown variants or invalid parameters
  // (those fail with their own message when the engine opens).
  uint64_t PagesPerOp(const std::string& variant, const ParamMap& given) const;
  // The buffer pool's part of `cache_bytes` (VariantSpec::buffer_pool_share, clamped to (0, 1],
  // and at least VariantSpec::min_buffer_pool_bytes or a quarter of cache_bytes, whichever is
  // less; all of it when the variant has no share);
  // the rest is the variant's own memory.
  uint64_t BufferPoolBytes(const std::string& variant, const ParamMap& given,
                           uint64_t cache_bytes) const;
  // The most the buffer pool may grow to at run time (VariantSpec::buffer_pool_max_share), never
  // less than BufferPoolBytes nor more than cache_bytes.
  uint64_t BufferPoolMaxBytes(const std::string& variant, const ParamMap& given,
                              uint64_t cache_bytes) const;
  // The layout parameters of `resolved`, canonical "k=v;k=v" (persisted in the superblock).
  std::string LayoutString(const std::string& variant, const ParamMap& resolved) const;

 private:
  using ShareFn = std::function<double(const ParamMap&)>;
  // cache_bytes x the variant's `share` for `given` resolved; nullopt when the variant has no such
  // share, its parameters do not resolve, or the share is outside (0, 1].
  std::optional<uint64_t> ShareBytes(const std::string& variant, const ParamMap& given,
                                     uint64_t cache_bytes, ShareFn VariantSpec::*share) const;

  std::map<std::string, VariantSpec> variants_;
  std::map<uint16_t, std::pair<std::string, std::string>> page_types_;  // type -> (owner, name)
};

}  // namespace grove
