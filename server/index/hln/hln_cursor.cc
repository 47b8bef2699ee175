// HlnTree cursors. A batch is the rest of one subnode (plus the stash overflow entries that fall
// into its range), or, with hash: fnv, the rest of a whole leaf, which must be read completely and
// sorted (paper §2.5). No latch is held between batches: each batch descends again by key, and the
// next leaf is found by descending with the leaf's fence key.
//
// Readahead (core::ScanReadahead): after each subnode, the subnodes the scan reaches next (the
// rest of the leaf, then the leaves beside it in the level-1 node) are read ahead, as many as
// the scan is expected to need. hash: fnv leaves are read whole in one submission already and
// are not read ahead.

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include "index/core/cursor.h"
#include "index/core/readahead.h"
#include "index/hln/hln_tree.h"

namespace grove {
namespace {

using core::Fences;
using core::InnerNodeView;
using hln::SubnodeView;

class HlnCursor final : public core::BatchCursor {
 public:
  HlnCursor(HlnTree* tree, CursorOptions options)
      : core::BatchCursor(std::move(options)),
        tree_(tree),
        readahead_(tree->pool(), this->options()) {
    Start();
  }

 private:
  Status ReadForward(const std::string& target, bool first, std::vector<Entry>* out,
                     Fences* leaf) override {
    // The first descent of a scan is a lookup like any other: with prefetch on, its predicted
    // pages are read in one submission. Later ones follow the leaf just read and are not.
    std::optional<PrefetchBatch> own;
    PrefetchBatch* batch = readahead_.enabled() ? readahead_.batch() : &own.emplace(tree_->pool());
    HlnTree::PathGuess guess;
    core::Path path;
    if (first) tree_->PredictPath(target, batch, &guess);
    GROVE_ASSIGN_OR_RETURN(core::ParentLatch p,
                           tree_->tree().DescendToParent(target, core::Seek::kAtOrAfter,
                                                         IoCause::kScan, false, batch, &path));
    const hln::LeafRef ref = tree_->DecodeLeafRef(p.leaf_payload());
    *leaf = p.leaf_fences();
    Visit visit;
    GROVE_RETURN_IF_ERROR(CollectForward(ref, *leaf, target, batch, out, &visit));
    ReadAhead(p, ref, visit, out->size());
    if (guess.active) {
      if (!tree_->config().fnv) path[0] = tree_->PackedPage(ref, tree_->Guess(ref, *leaf, target));
      tree_->Feedback(guess, path);
    }
    return Status::Ok();
  }

  Status ReadReverse(bool bounded, const std::string& before, std::vector<Entry>* out,
                     Fences* leaf) override {
    PrefetchBatch* batch = readahead_.batch();  // null when off
    GROVE_ASSIGN_OR_RETURN(
        core::ParentLatch p,
        tree_->tree().DescendToParent(before, bounded ? core::Seek::kBefore : core::Seek::kLast,
                                      IoCause::kScan, false, batch));
    const hln::LeafRef ref = tree_->DecodeLeafRef(p.leaf_payload());
    *leaf = p.leaf_fences();
    Visit visit;
    GROVE_RETURN_IF_ERROR(CollectReverse(ref, *leaf, bounded, before, batch, out, &visit));
    ReadAhead(p, ref, visit, out->size());
    return Status::Ok();
  }

  // The packed subnode a batch read and the entries it held.
  struct Visit {
    int sub = 0;  // forward: k when none; reverse: -1
    size_t entries = 0;
  };

  // Reads ahead the pages after the visited subnode of `ref` in the scan's direction: the rest
  // of the leaf, then the leaves beside it under `p` (a stash leaf's overflow page first, as the
  // scan reads it with every subnode). `entries`: what the batch gave.
  void ReadAhead(const core::ParentLatch& p, const hln::LeafRef& ref, const Visit& visit,
                 size_t entries) {
    if (!readahead_.enabled() || tree_->config().fnv) return;
    const int sub = visit.sub;
    readahead_.Visited(entries, visit.entries);
    const size_t want = readahead_.Window();
    if (want == 0) return;
    const bool reverse = options().reverse;
    std::vector<PageId> next;
    auto add_leaf_from = [&](const hln::LeafRef& r, int from) {
      const int k = tree_->PackedCount(r);
      if (reverse) {
        for (int i = std::min(from, k - 1); i >= 0 && next.size() < want; --i) {
          next.push_back(tree_->PackedPage(r, i));
        }
      } else {
        for (int i = std::max(from, 0); i < k && next.size() < want; ++i) {
          next.push_back(tree_->PackedPage(r, i));
        }
      }
    };
    add_leaf_from(ref, reverse ? sub - 1 : sub + 1);
    core::NextChildren(p, options(), want, &children_);
    for (Slice payload : children_) {
      if (next.size() >= want) break;
      const hln::LeafRef r = tree_->DecodeLeafRef(payload);
      if (r.stash) next.push_back(r.leaf);
      add_leaf_from(r, reverse ? tree_->PackedCount(r) - 1 : 0);
    }
    readahead_.Issue(next);
  }

  // Whole leaf, in key order (hash: fnv).
  Status ReadSorted(const hln::LeafRef& ref, std::vector<Entry>* all) {
    GROVE_ASSIGN_OR_RETURN(std::vector<hln::Entry> leaf, tree_->ReadLeaf(ref, IoCause::kScan));
    all->reserve(leaf.size());
    for (hln::Entry& e : leaf) all->push_back({std::move(e.key), std::move(e.cell)});
    std::sort(all->begin(), all->end(),
              [](const Entry& a, const Entry& b) { return a.key < b.key; });
    return Status::Ok();
  }

  static void Append(const SubnodeView& s, int from, int to, std::vector<Entry>* out) {
    for (int j = from; j < to; ++j) out->push_back({std::string(s.key(j)), std::string(s.cell(j))});
  }

  // The overflow subnode's entries in [lo, hi] (a null bound is open), ascending.
  Status Overflow(const hln::LeafRef& ref, const std::string* lo, bool lo_inclusive,
                  const std::string* hi, bool hi_inclusive, PrefetchBatch* batch,
                  std::vector<Entry>* out) {
    GROVE_ASSIGN_OR_RETURN(PageReadGuard o, tree_->pool()->FetchRead(ref.leaf, IoCause::kScan,
                                                                     Retention::kNormal, batch));
    const SubnodeView s(o.data());
    for (int j = 0; j < s.count(); ++j) {
      const Slice k = s.key(j);
      if (lo != nullptr && (lo_inclusive ? k < Slice(*lo) : k <= Slice(*lo))) continue;
      if (hi != nullptr && (hi_inclusive ? k > Slice(*hi) : k >= Slice(*hi))) break;
      out->push_back({std::string(k), std::string(s.cell(j))});
    }
    return Status::Ok();
  }

  static void MergeInto(std::vector<Entry> a, std::vector<Entry> b, bool descending,
                        std::vector<Entry>* out) {
    auto less = [](const Entry& x, const Entry& y) { return x.key < y.key; };
    std::vector<Entry> all;
    all.reserve(a.size() + b.size());
    std::merge(std::make_move_iterator(a.begin()), std::make_move_iterator(a.end()),
               std::make_move_iterator(b.begin()), std::make_move_iterator(b.end()),
               std::back_inserter(all), less);
    if (descending) std::reverse(all.begin(), all.end());
    *out = std::move(all);
  }

  // *visit receives the packed subnode read (k: none).
  Status CollectForward(const hln::LeafRef& ref, const Fences& lf, const std::string& target,
                        PrefetchBatch* prefetch, std::vector<Entry>* out, Visit* visit) {
    if (tree_->config().fnv) {
      std::vector<Entry> all;
      GROVE_RETURN_IF_ERROR(ReadSorted(ref, &all));
      auto it = std::lower_bound(all.begin(), all.end(), target,
                                 [](const Entry& e, const std::string& t) { return e.key < t; });
      out->assign(std::make_move_iterator(it), std::make_move_iterator(all.end()));
      return Status::Ok();
    }
    const int k = tree_->PackedCount(ref);
    GROVE_ASSIGN_OR_RETURN(HlnTree::Located loc, tree_->Locate(ref, tree_->Guess(ref, lf, target),
                                                               target, IoCause::kScan, prefetch));
    // The first packed entry at or after target: inside the located subnode, or at the start of
    // the nonempty subnode after the gap.
    std::vector<Entry> packed;
    std::string max;
    bool have = false;
    visit->sub = loc.in_range ? loc.sub : loc.t;
    if (!loc.in_range && loc.t < k) {
      GROVE_ASSIGN_OR_RETURN(loc.guard,
                             tree_->pool()->FetchRead(tree_->PackedPage(ref, loc.t), IoCause::kScan,
                                                      Retention::kNormal, prefetch));
      have = true;
    }
    if (loc.in_range || have) {
      const SubnodeView s(loc.guard.data());
      bool found;
      Append(s, s.LowerBound(tree_->order(), target, &found), s.count(), &packed);
      max.assign(s.key(s.count() - 1));
      visit->entries = static_cast<size_t>(s.count());
      have = true;
    }
    loc.guard.Release();
    std::vector<Entry> over;
    if (ref.stash) {
      GROVE_RETURN_IF_ERROR(
          Overflow(ref, &target, true, have ? &max : nullptr, true, prefetch, &over));
    }
    MergeInto(std::move(packed), std::move(over), false, out);
    return Status::Ok();
  }

  // *visit receives the packed subnode read (-1: none).
  Status CollectReverse(const hln::LeafRef& ref, const Fences& lf, bool bounded,
                        const std::string& bound, PrefetchBatch* batch, std::vector<Entry>* out,
                        Visit* visit) {
    if (tree_->config().fnv) {
      std::vector<Entry> all;
      GROVE_RETURN_IF_ERROR(ReadSorted(ref, &all));
      if (bounded) {
        auto it = std::lower_bound(all.begin(), all.end(), bound,
                                   [](const Entry& e, const std::string& t) { return e.key < t; });
        all.erase(it, all.end());
      }
      std::reverse(all.begin(), all.end());
      *out = std::move(all);
      return Status::Ok();
    }
    const int k = tree_->PackedCount(ref);
    // The last packed entry below bound: subnode s, entries [0, end).
    int s = -1, end = 0;
    PageReadGuard g;
    int from = k - 1;  // scan left from here for the previous nonempty subnode
    if (bounded) {
      GROVE_ASSIGN_OR_RETURN(HlnTree::Located loc, tree_->Locate(ref, tree_->Guess(ref, lf, bound),
                                                                 bound, IoCause::kScan, batch));
      from = -1;
      if (loc.in_range) {
        bool found;
        end = SubnodeView(loc.guard.data()).LowerBound(tree_->order(), bound, &found);
        if (end > 0) {
          s = loc.sub;
          g = std::move(loc.guard);
        } else {
          from = loc.sub - 1;
        }
      } else {
        from = loc.u;
      }
    }
    for (; s < 0 && from >= 0; --from) {
      GROVE_ASSIGN_OR_RETURN(g,
                             tree_->pool()->FetchRead(tree_->PackedPage(ref, from), IoCause::kScan,
                                                      Retention::kNormal, batch));
      if (!SubnodeView(g.data()).empty()) {
        s = from;
        end = SubnodeView(g.data()).count();
      }
    }
    visit->sub = s;
    std::vector<Entry> packed;
    std::string min;
    if (s >= 0) {
      const SubnodeView v(g.data());
      Append(v, 0, end, &packed);
      min.assign(v.key(0));
      visit->entries = static_cast<size_t>(v.count());
    }
    g.Release();
    std::vector<Entry> over;
    if (ref.stash) {
      GROVE_RETURN_IF_ERROR(Overflow(ref, s >= 0 ? &min : nullptr, true, bounded ? &bound : nullptr,
                                     false, batch, &over));
    }
    MergeInto(std::move(packed), std::move(over), true, out);
    return Status::Ok();
  }

  HlnTree* const tree_;
  core::ScanReadahead readahead_;
  std::vector<Slice> children_;  // scratch for NextChildren
};

}  // namespace

StatusOr<std::unique_ptr<IndexCursor>> HlnTree::NewCursor(const CursorOptions& options) {
  // Errors met while positioning surface through the cursor's status(), like later ones.
  return std::unique_ptr<IndexCursor>(std::make_unique<HlnCursor>(this, options));
}

}  // namespace grove
