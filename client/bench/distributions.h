#pragma once

// Request distributions (which existing key an operation touches) and scan lengths, following
// YCSB's generators so that numbers compare with the papers':
//
//   uniform   every existing key equally likely
//   zipfian   Gray et al.'s generator (YCSB ZipfianGenerator), theta default 0.99. Scrambled like
//             YCSB's ScrambledZipfianGenerator: rank r -> FNV-1a(r) mod n, so popular keys are
//             spread over the key space. Unscrambled: rank r is the r-th smallest loaded key.
//   latest    YCSB SkewedLatestGenerator: the newest key is the most popular; zipfian over age
//   hotspot   YCSB HotspotIntegerGenerator over loaded keys in key order: a contiguous hot range
//
// Thread safety: a chooser is used by one thread; the ZetaCache is shared and locked.

#include <cstdint>
#include <map>
#include <memory>
#include <utility>

#include "bench/key_space.h"
#include "bench/rng.h"
#include "bench/workload.h"
#include "util/mutex.h"

namespace grove::bench {

// zeta(n, theta) = sum_{i=1..n} 1/i^theta costs O(n) (0.2 s at 10M keys); every thread of every
// phase needs the same few values, so they are computed once per process.
class ZetaCache {
 public:
  double Get(uint64_t n, double theta) GROVE_EXCLUDES(mu_);
  static double Compute(uint64_t from, uint64_t to, double theta, double initial);

 private:
  Mutex mu_;
  std::map<std::pair<uint64_t, double>, double> values_ GROVE_GUARDED_BY(mu_);
};

// Zipfian ranks in [0, items): 0 is the most popular.
class ZipfianGenerator {
 public:
  ZipfianGenerator(uint64_t items, double theta, ZetaCache* cache);
  uint64_t Next(Rng& rng);
  // Raises the item count to `items` (never lowers it), extending zeta incrementally as YCSB does.
  void Grow(uint64_t items);
  uint64_t items() const { return items_; }

 private:
  void Derive();
  uint64_t items_;
  const double theta_;
  const double zeta2_;
  double zetan_;
  double alpha_ = 0;
  double eta_ = 0;
};

// Picks the key (its uint64 value) each operation touches.
class KeyChooser {
 public:
  virtual ~KeyChooser() = default;
  virtual uint64_t Next(Rng& rng) = 0;

  // `space` must have BuildSorted() done when the distribution needs it (NeedsSortedKeys).
  // `run_seed` fixes the random hotspot start, the same for every thread.
  static std::unique_ptr<KeyChooser> New(const DistributionSpec& spec, const KeySpace* space,
                                         ZetaCache* zeta, uint64_t run_seed);
  static bool NeedsSortedKeys(const DistributionSpec& spec);
};

// Scan lengths (entries per scan).
class ScanLengthChooser {
 public:
  ScanLengthChooser(const ScanSpec& spec, ZetaCache* zeta);
  uint32_t Next(Rng& rng);

 private:
  const ScanSpec spec_;
  std::unique_ptr<ZipfianGenerator> zipf_;
};

// Picks the operation type from a phase's mix.
class OpChooser {
 public:
  explicit OpChooser(const std::array<double, kNumOpTypes>& mix);
  OpType Next(Rng& rng) const;

 private:
  std::array<double, kNumOpTypes> cumulative_{};
};

}  // namespace grove::bench
