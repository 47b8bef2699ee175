#pragma once

// InsertForecaster: TreeLine's insert forecasting (paper §4.6). Inserts are counted per epoch (a
// fixed number of inserts) in an equi-depth histogram of b partitions; the partition boundaries
// come from a reservoir sample of 10 x b inserted keys (Li's algorithm L, here the classic
// reservoir R), re-sorted at the start of each epoch. Two histograms exist at any time: the one
// being counted and the frozen one of the last finished epoch. A reorganisation asks how many
// inserts to expect in its key range over the next f epochs: the frozen counts of the partitions
// it overlaps, a partly covered partition in proportion to the overlap (linear interpolation),
// times f; it then lowers its goal so that the pages keep room for them.
//
// Keys are the 8-byte projections (docs/variants.md). Until the sample first fills there is no
// histogram and every forecast is 0. Which Puts are inserts is not known without a read (writes
// are blind): a Put of a key the record cache does not hold as a value counts as one.
//
// Thread safety: every method is safe for concurrent use (one mutex).

#include <cstdint>
#include <random>
#include <vector>

#include "util/mutex.h"

namespace grove::treeline {

class InsertForecaster {
 public:
  struct Options {
    uint64_t epoch_inserts = 100000;  // inserts per epoch
    uint32_t partitions = 1000;       // b
    double future_epochs = 1;         // f
  };
  explicit InsertForecaster(const Options& options);

  void RecordInsert(uint64_t projected_key) GROVE_EXCLUDES(mu_);

  // Expected inserts with projections in [low, high) over the next f epochs.
  double Forecast(uint64_t low, uint64_t high) const GROVE_EXCLUDES(mu_);

  uint64_t finished_epochs() const GROVE_EXCLUDES(mu_);

 private:
  // Equi-depth boundaries from the sorted sample: partition i holds [edges[i], edges[i + 1]).
  void RebuildEdges() GROVE_REQUIRES(mu_);

  const Options o_;
  mutable Mutex mu_;
  std::mt19937_64 rng_ GROVE_GUARDED_BY(mu_);
  std::vector<uint64_t> sample_ GROVE_GUARDED_BY(mu_);
  uint64_t seen_ GROVE_GUARDED_BY(mu_) = 0;
  uint64_t in_epoch_ GROVE_GUARDED_BY(mu_) = 0;
  uint64_t epochs_ GROVE_GUARDED_BY(mu_) = 0;
  std::vector<uint64_t> edges_
      GROVE_GUARDED_BY(mu_);  // current histogram's (b + 1 edges), or empty
  std::vector<uint64_t> counts_ GROVE_GUARDED_BY(mu_);
  std::vector<uint64_t> frozen_edges_ GROVE_GUARDED_BY(mu_);
  std::vector<uint64_t> frozen_counts_ GROVE_GUARDED_BY(mu_);
};

}  // namespace grove::treeline
