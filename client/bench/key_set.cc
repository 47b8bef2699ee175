#include "bench/key_set.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <utility>

#include "bench/gapped_keys.h"
#include "bench/replay.h"
#include "bench/rng.h"

namespace grove::bench {
namespace {

struct ShapeName {
  KeyShape shape;
  const char* name;
};
constexpr ShapeName kShapes[] = {
    {KeyShape::kDense, "dense"}, {KeyShape::kSparse, "sparse"}, {KeyShape::kLognormal, "lognormal"},
    {KeyShape::kBooks, "books"}, {KeyShape::kFb, "fb"},         {KeyShape::kOsm, "osm"},
    {KeyShape::kWiki, "wiki"},   {KeyShape::kGapped, "gapped"},
};

using Sampler = std::function<uint64_t(Rng&)>;

// Draws i.i.d. samples until `count` distinct values exist, then keeps a uniformly random
// `count` of them. Returns them sorted.
std::vector<uint64_t> SampleUnique(uint64_t count, Rng& rng, const Sampler& sample) {
  std::vector<uint64_t> keys;
  keys.reserve(count + count / 16 + 16);
  for (int round = 0; keys.size() < count; ++round) {
    const uint64_t need = count - keys.size();
    for (uint64_t i = 0; i < need + need / 32 + 16; ++i) keys.push_back(sample(rng));
    std::sort(keys.begin(), keys.end());
    keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
    if (round > 64) break;  // a shape too narrow for `count`: return what exists
  }
  if (keys.size() > count) {
    // Partial Fisher-Yates picks `count` survivors without bias toward either end.
    for (uint64_t i = 0; i < count; ++i) std::swap(keys[i], keys[i + rng.Uniform(keys.size() - i)]);
    keys.resize(count);
    std::sort(keys.begin(), keys.end());
  }
  return keys;
}

uint64_t ClampToU64(double x) {
  if (!(x > 1.0)) return 1;
  if (x >= 1.8e19) return UINT64_MAX - 1;
  return static_cast<uint64_t>(x);
}

std::vector<uint64_t> Lognormal(uint64_t count, Rng& rng) {
  return SampleUnique(count, rng,
                      [](Rng& r) { return ClampToU64(std::exp(2.0 * r.Normal()) * 1e9); });
}

std::vector<uint64_t> Books(uint64_t count, Rng& rng) {
  // Bucket b ~ Pareto(x_m = 1, alpha = 1): density falls as 1/b^2, like a sales-rank CDF; inside a
  // bucket keys are uniform, which is what the SOSD books CDF shows when zoomed in.
  constexpr uint64_t kBucketBits = 20;
  return SampleUnique(count, rng, [](Rng& r) {
    const double u = 1.0 - r.NextDouble();
    const uint64_t bucket = std::min<uint64_t>(static_cast<uint64_t>(1.0 / u), (uint64_t{1} << 40));
    return (bucket << kBucketBits) + r.Uniform(uint64_t{1} << kBucketBits);
  });
}

std::vector<uint64_t> Fb(uint64_t count, Rng& rng) {
  constexpr int kSegments = 4096;
  constexpr uint64_t kSegmentWidth = (uint64_t{1} << 48) / kSegments;
  std::vector<double> cumulative(kSegments);
  double total = 0;
  for (int i = 0; i < kSegments; ++i) {
    const double u = rng.NextDouble();
    double w = std::exp(rng.Normal());  // lognormal(0, 1) local density
    if (u < 0.05) w = 0;                // a gap: the CDF is flat, then jumps
    if (u > 0.99) w *= 20;              // a burst: a steep step
    total += w;
    cumulative[i] = total;
  }
  return SampleUnique(count, rng, [&](Rng& r) {
    const double x = r.NextDouble() * total;
    const size_t seg =
        std::upper_bound(cumulative.begin(), cumulative.end(), x) - cumulative.begin();
    return std::min<size_t>(seg, kSegments - 1) * kSegmentWidth + r.Uniform(kSegmentWidth) + 1;
  });
}

std::vector<uint64_t> Osm(uint64_t count, Rng& rng) {
  struct Cluster {
    double center;
    double sigma;
  };
  constexpr int kRegions = 1000;
  constexpr int kClustersPerRegion = 50;
  std::vector<Cluster> clusters;
  std::vector<double> cumulative;
  double total = 0;
  for (int r = 0; r < kRegions; ++r) {
    const double region = rng.NextDouble() * 0x1.0p62 + 0x1.0p60;
    const double region_weight = std::exp(1.5 * rng.Normal());
    for (int c = 0; c < kClustersPerRegion; ++c) {
      clusters.push_back({region + rng.Normal() * 0x1.0p50, 0x1.0p40 * std::exp(rng.Normal())});
      total += region_weight * std::exp(rng.Normal());
      cumulative.push_back(total);
    }
  }
  return SampleUnique(count, rng, [&](Rng& r) {
    const double x = r.NextDouble() * total;
    size_t i = std::upper_bound(cumulative.begin(), cumulative.end(), x) - cumulative.begin();
    i = std::min(i, clusters.size() - 1);
    return ClampToU64(clusters[i].center + r.Normal() * clusters[i].sigma);
  });
}

std::vector<uint64_t> Wiki(uint64_t count, Rng& rng) {
  // Edits arrive as a Poisson process whose rate follows a daily cycle; timestamps have
  // one-second resolution, so bursts collide and the duplicates are dropped (as in SOSD's wiki).
  std::vector<uint64_t> keys;
  keys.reserve(count);
  double t = 1.0e9;  // seconds since the epoch, 2001
  uint64_t last = 0;
  while (keys.size() < count) {
    const double phase = std::sin(6.283185307179586 * t / 86400.0);
    t += rng.Exponential(0.8 * (1.0 + 0.7 * phase));
    const uint64_t ts = static_cast<uint64_t>(t);
    if (ts != last) keys.push_back(ts);
    last = ts;
  }
  return keys;
}

// Samples of the empirical CDF through `points` (sorted, unique), linear between them.
std::vector<uint64_t> FromCdf(uint64_t count, Rng& rng, const std::vector<uint64_t>& points) {
  if (points.size() == 1) {
    std::vector<uint64_t> keys;
    for (uint64_t i = 0; i < count && points[0] <= UINT64_MAX - i; ++i)
      keys.push_back(points[0] + i);
    return keys;
  }
  const double segments = static_cast<double>(points.size() - 1);
  return SampleUnique(count, rng, [&](Rng& r) {
    const double x = r.NextDouble() * segments;
    const size_t j = std::min(static_cast<size_t>(x), points.size() - 2);
    const long double gap = static_cast<long double>(points[j + 1] - points[j]);
    return points[j] + static_cast<uint64_t>(gap * static_cast<long double>(x - j));
  });
}

// Samples of a key sketch's cells in their places (TraceShape): a cell by its share of the
// keys counted, then a place uniformly inside it.
std::vector<uint64_t> FromCells(uint64_t count, Rng& rng, const TraceShape& shape) {
  const std::vector<uint64_t>& counts = shape.sketch_counts;
  std::vector<long double> cumulative;
  long double total = 0;
  for (uint64_t c : counts) cumulative.push_back(total += static_cast<long double>(c));
  // Cell j owns [j * width, (j + 1) * width); one cell owns everything.
  const long double width = std::ldexp(1.0L, 64 - shape.cell_bits);
  return SampleUnique(count, rng, [&](Rng& r) {
    const long double x = static_cast<long double>(r.NextDouble()) * total;
    const size_t j = std::min<size_t>(
        std::upper_bound(cumulative.begin(), cumulative.end(), x) - cumulative.begin(),
        counts.size() - 1);
    const long double place = (static_cast<long double>(j) + r.NextDouble()) * width;
    return place >= 18446744073709551615.0L ? UINT64_MAX : static_cast<uint64_t>(place);
  });
}

}  // namespace

StatusOr<KeySetSpec> ParseKeySetSpec(std::string_view text) {
  KeySetSpec spec;
  constexpr std::pair<std::string_view, KeyShape> kFileShapes[] = {{"sosd:", KeyShape::kSosdFile},
                                                                   {"trace:", KeyShape::kTrace}};
  for (const auto& [prefix, shape] : kFileShapes) {
    if (text.substr(0, prefix.size()) != prefix) continue;
    spec.shape = shape;
    spec.file = std::string(text.substr(prefix.size()));
    if (spec.file.empty()) {
      return Status::InvalidArgument("--keys " + std::string(prefix) + "PATH needs a path");
    }
    return spec;
  }
  for (const auto& s : kShapes) {
    if (text == s.name) {
      spec.shape = s.shape;
      return spec;
    }
  }
  return Status::InvalidArgument(
      "--keys: '" + std::string(text) +
      "' is not one of dense, sparse, lognormal, books, fb, osm, wiki, sosd:PATH, trace:PATH");
}

std::string KeySetName(const KeySetSpec& spec) {
  if (spec.shape == KeyShape::kSosdFile) return "sosd:" + spec.file;
  if (spec.shape == KeyShape::kTrace) return "trace:" + spec.file;
  for (const auto& s : kShapes) {
    if (s.shape == spec.shape) return s.name;
  }
  return "?";
}

StatusOr<std::vector<uint64_t>> MakeKeySet(const KeySetSpec& spec, uint64_t capacity,
                                           uint64_t seed) {
  Rng rng(seed ^ 0x6b657973ull);  // "keys": independent of the request streams
  std::vector<uint64_t> keys;
  switch (spec.shape) {
    case KeyShape::kDense:
      keys.resize(capacity);
      for (uint64_t i = 0; i < capacity; ++i) keys[i] = i + 1;
      break;
    case KeyShape::kSparse:
      keys = SampleUnique(capacity, rng, [](Rng& r) { return r.Next() | 1; });
      break;
    case KeyShape::kLognormal:
      keys = Lognormal(capacity, rng);
      break;
    case KeyShape::kBooks:
      keys = Books(capacity, rng);
      break;
    case KeyShape::kFb:
      keys = Fb(capacity, rng);
      break;
    case KeyShape::kOsm:
      keys = Osm(capacity, rng);
      break;
    case KeyShape::kWiki:
      keys = Wiki(capacity, rng);
      break;
    case KeyShape::kGapped: {
      const GappedKeys gapped(capacity, capacity, spec.sorted_order, seed);
      keys.resize(capacity);
      for (uint64_t i = 0; i < capacity; ++i) keys[i] = gapped.key(i);
      return keys;  // already in insertion order
    }
    case KeyShape::kSosdFile: {
      GROVE_ASSIGN_OR_RETURN(keys, ReadSosdFile(spec.file));
      if (keys.size() > capacity) {
        // A uniform sample of the file keeps its shape at a smaller size.
        for (uint64_t i = 0; i < capacity; ++i) {
          std::swap(keys[i], keys[i + rng.Uniform(keys.size() - i)]);
        }
        keys.resize(capacity);
        std::sort(keys.begin(), keys.end());
      }
      break;
    }
    case KeyShape::kTrace: {
      // The traced database's shape where the trace carries its sketch; else the keys the
      // trace named, which show only what was asked for.
      GROVE_ASSIGN_OR_RETURN(TraceShape shape, ReadTraceShape(spec.file));
      keys = shape.has_sketch() ? FromCells(capacity, rng, shape)
                                : FromCdf(capacity, rng, shape.points);
      break;
    }
  }
  if (!spec.sorted_order) {
    for (uint64_t i = keys.size(); i > 1; --i) std::swap(keys[i - 1], keys[rng.Uniform(i)]);
  }
  return keys;
}

StatusOr<std::vector<uint64_t>> ReadSosdFile(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) return Status::FromErrno(errno, "open SOSD key file " + path);
  uint64_t count = 0;
  if (std::fread(&count, 8, 1, f.get()) != 1) {
    return Status::InvalidArgument(path + ": not a SOSD file (no 8-byte count)");
  }
  std::fseek(f.get(), 0, SEEK_END);
  const long size = std::ftell(f.get());
  std::fseek(f.get(), 8, SEEK_SET);
  if (size < 0 || static_cast<uint64_t>(size) != 8 + 8 * count) {
    return Status::InvalidArgument(path + ": SOSD header says " + std::to_string(count) +
                                   " keys but the file has " + std::to_string(size) + " bytes");
  }
  std::vector<uint64_t> keys(count);
  if (count > 0 && std::fread(keys.data(), 8, count, f.get()) != count) {
    return Status::FromErrno(errno, "read SOSD key file " + path);
  }
  // The format is little-endian, which is this machine's order (x86-64, arm64 Linux).
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

Status WriteSosdFile(const std::string& path, const std::vector<uint64_t>& keys) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!f) return Status::FromErrno(errno, "create SOSD key file " + path);
  const uint64_t count = keys.size();
  if (std::fwrite(&count, 8, 1, f.get()) != 1 ||
      (count > 0 && std::fwrite(keys.data(), 8, count, f.get()) != count)) {
    return Status::FromErrno(errno, "write SOSD key file " + path);
  }
  return Status::Ok();
}

}  // namespace grove::bench
