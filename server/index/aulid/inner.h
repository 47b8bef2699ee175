#pragma once

// InnerPart: AULID's learned inner nodes (Lan et al., 2023, section 3.3), mapping 64-bit keys to
// leaf pages. It holds a sorted set of entries (key, leaf) with distinct keys, the way the paper's
// inner part holds the largest key of every leaf but the last. aulid.h says what the keys and
// leaves are for the variant; here they are just sorted pairs.
//
// Shape: a root mixed node (its model and statistics in the metanode, here `root()`), whose
// slots are NULL, DATA (one entry), PACKED (a packed array of 2..64 entries in a slab object),
// BRANCH (a two-layer B+-tree of up to 4 pages of 254 entries, its root in the slot) or MIXED (a
// child mixed node, its model in the slot). A mixed node's model (FMCD, learned/fmcd.h) sends a
// key to one slot; a slot holds every entry whose key the model sends there.
//
// Build (BuildMixedNode in the paper): FMCD fit, then per slot by the number of entries it gets:
// 1 -> DATA, 2..64 -> PACKED of the smallest class, 65..1016 -> BRANCH, more -> a child mixed
// node built the same way. In LIPP-B+ mode (`Options::lipp`), every conflict makes a child.
//
// Route(key) finds the entry to follow for a key: the first entry whose key is >= it (kEntry); or
// an entry whose key is below it, whose leaf run the caller must step past through leaf links
// (kPast: the paper's predecessor case, when ScanFward finds no DATA slot after the predicted one
// in the page already read, or a packed array or branch page holds only smaller keys); or none
// (kTail: the key is above every entry). A NULL slot is resolved by scanning forward to the next
// entry (into the leftmost entry of a node slot, out to the parent past a node's end).
//
// Insert (Algorithm 1's inner part): into the slot the models choose. NULL -> DATA; DATA -> a
// packed array of both (LIPP-B+: a child mixed node); a full packed array moves to the next
// class, and past 64 becomes a branch; a branch child that is full splits while there are fewer
// than 4 children, then the branch redistributes, and a branch of 1016 becomes a child mixed node
// (a conversion). Statistics of the mixed nodes on the path (size, entries at depth >= 3) follow,
// and Insert reports the topmost node that Algorithm 2 (Adjust) would rebuild: size >= beta x
// init_size and l3 items >= alpha x size, and a rebuild within max_rebuild_pages. Rebuild()
// rebuilds it over the same entries.
//
// Appends (not in the paper, whose Algorithm 2 rebuilds the rightmost node again and again under
// them, each time with gaps no append uses): a key above every entry goes to the rightmost path.
// A node built there (a conversion in its node's last slot, or an Adjust rebuild) is a tail node
// with as many slots again to the right of its model's range, so the next appends become DATA
// slots at the same density; it qualifies for Adjust only once it doubled, so appends cost
// amortised O(1) slot writes, and max_rebuild_pages keeps any one rebuild a bounded share of the
// pool (a deeper node on the path is rebuilt instead).
//
// Remove and Repoint change one entry; a packed array or branch left with one entry becomes DATA
// and a child mixed node left empty becomes NULL.
//
// Costs are known before changes: PagesForInsert(key) is what Insert(key) will dirty (a
// conversion included); Rebuild asks its caller for the room once it knows the entries.
//
// Thread safety: none. Route may run concurrently with Route; everything else needs exclusive
// access (aulid.h's inner lock). Pages are reached through guards (Route: read guards released
// before it returns; changes: the PageSink's write guards).

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "grove/index.h"

#include "buffer/buffer_pool.h"
#include "index/aulid/node_space.h"
#include "index/aulid/slot.h"

namespace grove::aulid {

struct InnerOptions {
  bool lipp = false;         // LIPP-B+ ablation: every conflict creates a child mixed node
  bool scan_forward = true;  // ScanFward: a predecessor DATA slot looks right within its page
  bool adjust = true;        // Algorithm 2
  double alpha = 0.05;       // rebuild when entries at depth >= 3 reach alpha x size ...
  double beta = 1.2;         // ... and the node grew to beta x its size when built
  // Fulfill: builds copy each DATA slot's entry into the NULL slots before it, so that a key
  // the model sends to one of them is routed without reading on. For read-only use: the copies
  // are trusted until the first change of the inner part (then they read as plain NULL slots)
  // and again after a full Build.
  bool fulfill = false;
  // Slots of a mixed node per entry it is built over (at least 2 slots); 0: LIPP's gap rule
  // (learned::SlotsFor: 6, 3 or 2 per entry by node size).
  double slots_per_entry = 2;
  // Adjust rebuilds no node whose rebuild would dirty more pages than this (0: no bound); the
  // variant passes a quarter of the pool, so that appends never rebuild a node the size of the
  // cache. A deeper qualifying node on the path is rebuilt instead.
  uint64_t max_rebuild_pages = 0;
};

// Inner structure changes by type (the paper's SMO counts).
struct InnerCounters {
  uint64_t creates = 0;     // mixed nodes created by conversion (or LIPP-B+ conflicts)
  uint64_t adjusts = 0;     // rebuilds by Algorithm 2
  uint64_t declined = 0;    // rebuilds declined: no room, or past max_rebuild_pages
  uint64_t promotions = 0;  // packed array to a larger class, or to a branch
  uint64_t branch_splits = 0;
};

// Page reads of one Route by the kind of what was read.
struct RouteCost {
  uint32_t mixed = 0;
  uint32_t packed = 0;
  uint32_t branch = 0;
  uint32_t total() const { return mixed + packed + branch; }
};

class InnerPart {
 public:
  InnerPart(BufferPool* pool, ExtentAllocator* allocator, InnerOptions options)
      : pool_(pool), space_(allocator), options_(options) {}

  bool empty() const { return root_.first == kInvalidPageId; }
  const MixedRef& root() const { return root_; }
  uint64_t size() const { return root_.size; }
  NodeSpace& space() { return space_; }
  const InnerOptions& options() const { return options_; }
  InnerCounters& counters() { return counters_; }
  // Whether Route trusts Fulfill copies (options().fulfill and no change since the last Build).
  bool copies_valid() const { return copies_valid_; }

  // Replaces an empty inner part with one over `entries` (ascending, distinct keys).
  Status Build(std::span<const Entry> entries, PageSink* sink);
  // Frees every page and object: the inner part becomes empty.
  Status Clear(PageSink* sink);

  struct Routed {
    enum Kind { kEntry, kPast, kTail } kind = kTail;
    Entry entry;
  };
  // With `exact`, never kPast: the predecessor cases read on to the entry itself.
  StatusOr<Routed> Route(uint64_t key, IoCause cause, RouteCost* cost = nullptr,
                         bool exact = false) const;

  // What Insert(key, .., append) will dirty, counting a conversion it causes.
  StatusOr<uint64_t> PagesForInsert(uint64_t key, bool append = false) const;
  struct AdjustHint {
    bool needed = false;
    uint32_t depth = 0;  // of the node to rebuild (1: the root)
    bool tail = false;   // rebuild it with room to the right (an append's rightmost node)
  };
  // REQUIRES: no entry has e.key. `append`: e.key is above every entry. Then a branch in the last
  // slot of its node converts to a tail node (InnerBuilder::Node), and the nodes on the rightmost
  // path qualify for Adjust only once they doubled (they were built with room for that).
  Status Insert(const Entry& e, PageSink* sink, AdjustHint* hint, bool append = false);
  // Rebuilds the mixed node at `depth` on key's path over its own entries, collected once.
  // `reserve(pages)` is asked first for what the rebuild will dirty; when it says no (or the
  // pages pass max_rebuild_pages), nothing changes, *rebuilt is false, and the node is not
  // offered again until it grew by a quarter.
  Status Rebuild(uint64_t key, const AdjustHint& hint, PageSink* sink,
                 const std::function<bool(uint64_t pages)>& reserve, bool* rebuilt);

  // The entry with exactly `key` gets leaf `leaf` / goes away. kNotFound when there is none.
  Status Repoint(uint64_t key, PageId leaf, PageSink* sink);
  Status Remove(uint64_t key, PageSink* sink);
  // Pages Remove(key) or Repoint(key) may dirty.
  StatusOr<uint64_t> PagesForChange(uint64_t key) const;

  using EntryVisitor = std::function<Status(const Entry&, uint32_t depth)>;

  // Structural checks (models, slot placement, order, counts, statistics, slab bitmaps); claims
  // every page. Calls `fn` for every entry in order.
  Status Verify(IndexVerifier* v, const EntryVisitor& fn) const;

  // Figures for stats: pages and bytes of the inner part, the mean depth of entries.
  struct Shape {
    uint64_t mixed_nodes = 0, slot_pages = 0, slab_pages = 0, branch_pages = 0;
    uint64_t data = 0, packed = 0, branch = 0;  // entries by where they sit
    uint64_t descriptors_out_of_line = 0;       // BRANCH and MIXED slots with one
    double mean_depth = 0;
  };
  StatusOr<Shape> Measure() const;

  void Serialize(std::string* out) const;
  Status Deserialize(Slice* in);

 private:
  friend class InnerBuilder;
  struct Step {
    PageId page;     // the page holding the slot
    uint32_t index;  // of the slot in it
    Slot slot;       // as read, its descriptor loaded
    uint64_t s = 0;  // the slot's number in its node
  };
  // Whether `m` qualifies for Adjust and may be rebuilt within max_rebuild_pages.
  bool Qualifies(const MixedRef& m, bool tail) const;
  // Pages a node of `size` entries and `room` extra slots is estimated to take.
  uint64_t RebuildEstimate(uint64_t size, uint64_t room) const;
  // Slots to the right of a tail node of n entries built in the last slot of `owner`.
  uint64_t TailRoom(uint64_t n, const MixedRef& owner) const;
  // The slots from the root down to the first non-mixed slot for `key`. path[i].slot is MIXED for
  // every i but the last. Reads with read guards, copying.
  Status Descend(uint64_t key, std::vector<Step>* path) const;
  StatusOr<Slot> ReadSlot(const MixedRef& node, uint64_t s, IoCause cause) const;
  // Completes a slot whose descriptor is out of line (reads its object's page); `cost` counts
  // the read as a mixed-node page.
  Status Load(Slot* slot, IoCause cause, RouteCost* cost) const;
  // The same through a sink (FreeUnder: the sink may hold that page for writing).
  Status Load(Slot* slot, PageSink* sink) const;
  // Every entry under `slot`, in order.
  Status Collect(const Slot& slot, std::vector<Entry>* out) const;
  Status CollectNode(const MixedRef& node, std::vector<Entry>* out) const;
  // Frees every page and object under `slot`, reading through the sink (which may hold a write
  // guard on one of them) and dropping the pages from it.
  Status FreeUnder(const Slot& slot, PageSink* sink);
  // The first entry at or after slot s of `node`; nullopt past its end.
  StatusOr<std::optional<Entry>> FirstFrom(const MixedRef& node, uint64_t s, IoCause cause,
                                           RouteCost* cost) const;
  StatusOr<Entry> Leftmost(const Slot& slot, IoCause cause, RouteCost* cost) const;
  // Writes `slot` at `step` (its descriptor in the page, or out of line when the page has no
  // room: one class-0 slab object more), freeing an out-of-line descriptor it no longer uses.
  Status WriteSlot(const Step& step, Slot slot, PageSink* sink);
  Status UpdateStats(std::vector<Step>& path, int64_t size_delta, int64_t l3_delta, PageSink* sink);

  BufferPool* const pool_;
  NodeSpace space_;
  const InnerOptions options_;
  MixedRef root_;
  InnerCounters counters_;
  bool copies_valid_ = false;  // persisted with the metanode
  // The last node Rebuild declined (its first page and size then): not offered again until it
  // grew by a quarter, so that a refused rebuild does not collect the node on every insert.
  PageId declined_first_ = kInvalidPageId;
  uint32_t declined_size_ = 0;
};

}  // namespace grove::aulid
