#pragma once

// InnerBuilder: BuildMixedNode (AULID, section 4.1) and the pieces Insert reuses: packed arrays
// and branches written from sorted entries, and a dry run that counts the pages a build will
// dirty, so that callers reserve room before anything changes.
//
// Pages go to a PageSink one at a time (a pointer from the sink is used before the next call), so
// a node of any size is built with one page of memory per level.
//
// Thread safety: none (used under the inner part's exclusive access).

#include <cstdint>
#include <span>

#include "index/aulid/inner.h"

namespace grove::aulid {

// Slots of a mixed node over n entries (InnerOptions::slots_per_entry).
uint64_t SlotCount(size_t n, const InnerOptions& options);

class InnerBuilder {
 public:
  InnerBuilder(NodeSpace* space, const InnerOptions& options, PageSink* sink)
      : space_(space), options_(options), sink_(sink) {}

  struct Built {
    Slot slot;
    uint64_t l3 = 0;     // entries at mixed depth >= 3
    uint64_t nodes = 0;  // mixed nodes built
  };
  // A mixed node over `entries` (ascending, distinct, >= 1) whose slots sit at `depth`. A tail
  // node (the one appends go to) gets `room` slots more to the right of its model's range: keys
  // above its entries land there at the same density, as DATA slots, instead of piling up in its
  // last slot (InnerPart::Insert says how much room).
  StatusOr<Built> Node(std::span<const Entry> entries, uint32_t depth, uint64_t room = 0);
  // What goes in one slot of a node at `depth` for `entries` (the group the model sent there).
  StatusOr<Built> ForSlot(std::span<const Entry> entries, uint32_t depth);
  // `dense`: from this builder's own slabs only (see NodeSpace::AllocatePacked); node builds.
  StatusOr<Slot> Packed(std::span<const Entry> entries, bool dense = false);
  // A branch over 2..kBranchMax entries, spread evenly over as few children as hold them.
  StatusOr<Slot> Branch(std::span<const Entry> entries);
  // Rewrites the child pages of `branch` (kept, same count) with `entries` spread evenly.
  Status Respread(Slot* branch, std::span<const Entry> entries);
  // Moves the descriptor of a BRANCH or MIXED slot into a class-0 slab object (the _EXT tags).
  Status OutOfLine(Slot* slot);
  // A new slab object of class `cls` (`dense`: from this builder's own slabs), its page formatted
  // when fresh; returns where the object's bytes start in the sink's page.
  StatusOr<char*> NewObject(int cls, bool dense, NodeSpace::Object* o);

  // Pages Node(entries, _, room) would dirty at most (slot pages, packed slabs, branch pages).
  static uint64_t PagesForNode(std::span<const Entry> entries, const InnerOptions& options,
                               uint64_t room = 0);

 private:
  // The model of a node over `keys`: FMCD, or the line from the first to the last key when FMCD
  // leaves all of them in one slot (so that every level makes progress).
  static learned::SlotModel Fit(std::span<const uint64_t> keys, const InnerOptions& options,
                                uint64_t room);
  struct Tally {
    uint64_t slot_pages = 0, branch_pages = 0;
    uint64_t objects[kPackedClasses] = {};
  };
  static void Count(std::span<const Entry> entries, const InnerOptions& options, bool node,
                    uint64_t room, Tally* t);

  NodeSpace* const space_;
  const InnerOptions& options_;
  PageSink* const sink_;
  PageId open_[kPackedClasses] = {kInvalidPageId, kInvalidPageId, kInvalidPageId, kInvalidPageId};
};

}  // namespace grove::aulid
