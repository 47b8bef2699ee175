#pragma once

// A B+-tree on a real data file, without the engine: IO backend, data file, epoch table, extent
// allocator, a buffer pool big enough for the whole tree, a DirectPageWriter that seals and writes
// like the engine's, and the index created or reopened through the registry.
//
// Checkpoint() writes the dirty pages in place the way the engine's checkpoints do (minus the
// double-write file and the manifest), so that tests can drop pages from the cache, reopen the
// tree from its metadata and damage pages on disk.
//
// Thread safety: index() may be used from many threads; everything else runs on one thread while
// no index operation is in flight.

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "grove/index.h"
#include "grove/io_backend.h"

#include "buffer/buffer_pool.h"
#include "index/btree/btree.h"
#include "index/core/inner_node.h"
#include "index/core/leaf_node.h"
#include "index/registry.h"
#include "page/epoch_table.h"
#include "page/extent_allocator.h"
#include "testutil/status_macros.h"
#include "testutil/temp_dir.h"

namespace grove::testing {

using Model = std::map<std::string, std::string>;

// A write context for index calls made without the engine: LSN 1 and room that is never short
// (the harness's cache holds every test tree).
WriteContext TestWrite();
using Entries = std::vector<std::pair<std::string, std::string>>;

struct HarnessConfig {
  uint32_t frames = 8192;  // 32 MiB: every test tree fits
  uint32_t max_key_bytes = 128;
  uint32_t inline_value_bytes = 1024;
  ParamMap params;  // btree parameters as given (resolved through the registry)
  IoBackendKind backend = IoBackendKind::kPsync;
};

// What Verify() reported, checked against the allocator like the engine does.
struct VerifyResult {
  std::vector<std::string> problems;                       // the index's and the harness's
  std::vector<std::pair<std::string, std::string>> cells;  // in the order they were reported
  std::set<PageId> pages;                                  // claimed by the index
  std::string Summary() const;
};

class BTreeHarness {
 public:
  explicit BTreeHarness(HarnessConfig config = {});
  ~BTreeHarness();

  // Creates an empty tree. The harness must be fresh.
  Status Create();
  // Checkpoints, drops the index and the cache, and opens the tree again from its metadata.
  Status Reopen();
  // Writes every dirty page in place and commits its epoch (quiescent callers only).
  Status Checkpoint();
  // Drops every clean page from the cache, so that the next access reads the disk.
  void DropCleanPages();

  Index* index() { return index_.get(); }
  BTree* btree() { return static_cast<BTree*>(index_.get()); }
  BufferPool* pool() { return pool_.get(); }
  ExtentAllocator* allocator() { return &allocator_; }
  EpochTable* epochs() { return &epochs_; }
  File* data_file() { return file_.get(); }
  const Options& options() const { return options_; }
  const IndexContext& context() const { return ctx_; }

  // Index::Verify, then: no page claimed twice, none claimed that the allocator has free, and no
  // allocated page unclaimed (leaked), besides the epoch-map pages.
  VerifyResult Verify();

  // Convenience wrappers that fail the test on error.
  void Put(const std::string& key, const std::string& cell);
  bool Delete(const std::string& key);  // whether it was present
  std::optional<std::string> Get(const std::string& key);
  // All entries through a cursor.
  std::vector<std::pair<std::string, std::string>> Scan(const CursorOptions& options = {});

  // Pages the index holds: allocated pages minus epoch-map pages.
  uint64_t AllocatedPages() const;

  // Root-to-leaf walk of the tree's pages by level: levels[0] holds the root, the last the leaves.
  std::vector<std::vector<PageId>> Levels();

 private:
  class Writer;

  HarnessConfig config_;
  TempDir dir_;
  std::shared_ptr<IoBackend> io_;
  std::unique_ptr<File> file_;
  Options options_;
  EpochTable epochs_;
  ExtentAllocator allocator_;
  std::unique_ptr<Writer> writer_;
  std::unique_ptr<BufferPool> pool_;
  IndexContext ctx_;
  IndexRegistry registry_;
  ParamMap resolved_;
  std::unique_ptr<Index> index_;
  uint32_t epoch_ = 0;  // of the newest checkpoint
};

// Expects Verify to find nothing wrong and exactly `model`'s entries, and the tree's counters and
// the allocator to agree with the pages Verify walked.
void ExpectClean(BTreeHarness& h, const Model& model);

}  // namespace grove::testing
