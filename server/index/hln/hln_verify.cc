// HlnTree::Verify: walks every inner node and every leaf and checks the invariants that lookups
// depend on (docs/formats/hln.md, "Verify").

#include <algorithm>

#include <fmt/format.h>

#include "index/hln/hln_tree.h"

namespace grove {

using core::Fences;
using core::InnerNodeView;
using hln::SubnodeView;

struct HlnTree::VerifyTotals {
  uint64_t entries = 0, leaves = 0, stash_leaves = 0, used = 0;
  uint64_t keys_guessed = 0, keys_misguessed = 0;
};

Status HlnTree::Verify(IndexVerifier* v) {
  VerifyTotals t;
  GROVE_RETURN_IF_ERROR(tree_->Verify(v, [&](Slice payload, const Fences& f) {
    VerifyLeaf(payload, f, v, &t);
    return Status::Ok();
  }));
  verify_keys_guessed_ = t.keys_guessed;
  verify_keys_misguessed_ = t.keys_misguessed;
  if (t.entries != entries_.load() || t.used != used_bytes_.load()) {
    v->Problem(fmt::format("hln: {} entries of {} bytes found, counters say {} and {}", t.entries,
                           t.used, entries_.load(), used_bytes_.load()));
  }
  if (t.leaves != leaves_.load() || t.stash_leaves != stash_leaves_.load()) {
    v->Problem(fmt::format("hln: {} leaves ({} stash nodes) found, counters say {} ({})", t.leaves,
                           t.stash_leaves, leaves_.load(), stash_leaves_.load()));
  }
  return Status::Ok();
}

void HlnTree::VerifyLeaf(Slice payload, const Fences& f, IndexVerifier* v, VerifyTotals* t) {
  const hln::LeafRef ref = DecodeLeafRef(payload);
  const int limit = HintParamsFor(ref.stash).steps_max();
  for (int h : ref.hints) {
    if (h < -limit || h > limit) {
      v->Problem(fmt::format("hln: leaf {} has a hint of {} beyond +-{}", ref.leaf, h, limit));
      break;
    }
  }
  if ((payload[8] & ~1) != 0) {
    v->Problem(fmt::format("hln: leaf {} has unknown entry flags {}", ref.leaf,
                           static_cast<int>(payload[8])));
  }

  const int n = cfg_.leaf_pages;
  v->ClaimPages(ref.leaf, static_cast<uint32_t>(n), "hln leaf");
  ++t->leaves;
  if (ref.stash) ++t->stash_leaves;
  std::vector<PageId> ids;
  for (int i = 0; i < n; ++i) ids.push_back(ref.leaf + i);
  pool_->LoadMany(ids, IoCause::kScan).IgnoreError();  // failures are reported page by page
  std::vector<std::string> packed_keys, overflow_keys;
  std::string prev_max;
  bool have_prev = false;
  for (int i = 0; i < n; ++i) {
    auto g = pool_->FetchRead(ref.leaf + i, IoCause::kScan, Retention::kNormal);
    if (!g.ok()) {
      v->Problem(fmt::format("hln: subnode {} of leaf {} unreadable: {}", i, ref.leaf,
                             g.status().ToString()));
      continue;
    }
    const SubnodeView s(g->data());
    const bool overflow = ref.stash && i == 0;
    const uint16_t want_flags = (cfg_.fnv ? hln::kFnvOrder : 0) |
                                (ref.stash ? hln::kStashLeaf : 0) | (overflow ? hln::kOverflow : 0);
    const std::string where = fmt::format("hln: leaf {} subnode {}", ref.leaf, i);
    if (page::Type(g->data()) != static_cast<uint16_t>(hln::kSubnodePage) || s.index() != i ||
        s.leaf_pages() != n || s.flags() != want_flags) {
      v->Problem(
          fmt::format("{}: header (type {}, index {}, n {}, flags {}) expected (type {}, "
                      "{}, {}, {})",
                      where, page::Type(g->data()), s.index(), s.leaf_pages(), s.flags(),
                      static_cast<uint16_t>(hln::kSubnodePage), i, n, want_flags));
      continue;
    }
    if (const char* why = SlottedPageView(g->data(), hln::kSubSlotBase).CheckOffsets(); *why) {
      v->Problem(fmt::format("{}: {}", where, why));
      continue;
    }
    for (int j = 0; j < s.count(); ++j) {
      const Slice k = s.key(j);
      if (j > 0 && !order_.Less(s.key(j - 1), k)) {
        v->Problem(fmt::format("{}: cells {} and {} out of order", where, j - 1, j));
      }
      if (!f.Contains(k))
        v->Problem(fmt::format("{}: cell {} outside the leaf's fences", where, j));
      v->OnCell(k, s.cell(j));
      (overflow ? overflow_keys : packed_keys).emplace_back(k);
      if (!overflow) {
        // How well the hints predict this key's subnode (a wrong guess costs reads only).
        const int p = i - (ref.stash ? 1 : 0);
        ++t->keys_guessed;
        if (Guess(ref, f, k) != p) ++t->keys_misguessed;
      }
    }
    t->entries += s.count();
    t->used += s.used_bytes();
    if (!overflow && !s.empty()) {
      // Every key of a packed subnode follows every key of the nonempty ones before it.
      if (have_prev && !order_.Less(prev_max, s.key(0))) {
        v->Problem(fmt::format("{}: first key does not follow the previous subnode's last", where));
      }
      prev_max.assign(s.key(s.count() - 1));
      have_prev = true;
    }
  }
  // A key lives in one place only: never in a stash node's overflow and a packed subnode.
  for (const std::string& k : overflow_keys) {
    auto it = std::lower_bound(
        packed_keys.begin(), packed_keys.end(), k,
        [&](const std::string& a, const std::string& b) { return order_.Less(a, b); });
    if (it != packed_keys.end() && *it == k) {
      v->Problem(fmt::format("hln: leaf {}: a key is both in the overflow and a packed subnode",
                             ref.leaf));
    }
  }
}

}  // namespace grove
