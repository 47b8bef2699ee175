#include "bench/distributions.h"

#include <algorithm>
#include <cmath>

namespace grove::bench {

double ZetaCache::Compute(uint64_t from, uint64_t to, double theta, double initial) {
  double sum = initial;
  for (uint64_t i = from + 1; i <= to; ++i) sum += 1.0 / std::pow(static_cast<double>(i), theta);
  return sum;
}

double ZetaCache::Get(uint64_t n, double theta) {
  MutexLock lock(&mu_);
  auto it = values_.find({n, theta});
  if (it != values_.end()) return it->second;
  // Extend the largest cached value below n for the same theta instead of starting over.
  uint64_t from = 0;
  double initial = 0;
  for (const auto& [k, v] : values_) {
    if (k.second == theta && k.first < n && k.first > from) {
      from = k.first;
      initial = v;
    }
  }
  const double z = Compute(from, n, theta, initial);
  values_[{n, theta}] = z;
  return z;
}

ZipfianGenerator::ZipfianGenerator(uint64_t items, double theta, ZetaCache* cache)
    : items_(std::max<uint64_t>(items, 1)),
      theta_(theta),
      zeta2_(ZetaCache::Compute(0, 2, theta, 0)),
      zetan_(cache->Get(items_, theta)) {
  Derive();
}

void ZipfianGenerator::Derive() {
  alpha_ = 1.0 / (1.0 - theta_);
  eta_ = (1 - std::pow(2.0 / static_cast<double>(items_), 1 - theta_)) / (1 - zeta2_ / zetan_);
}

void ZipfianGenerator::Grow(uint64_t items) {
  if (items <= items_) return;
  zetan_ = ZetaCache::Compute(items_, items, theta_, zetan_);
  items_ = items;
  Derive();
}

uint64_t ZipfianGenerator::Next(Rng& rng) {
  const double u = rng.NextDouble();
  const double uz = u * zetan_;
  if (uz < 1.0) return 0;
  if (uz < 1.0 + std::pow(0.5, theta_)) return std::min<uint64_t>(1, items_ - 1);
  const auto r =
      static_cast<uint64_t>(static_cast<double>(items_) * std::pow(eta_ * u - eta_ + 1, alpha_));
  return std::min(r, items_ - 1);
}

namespace {

class UniformChooser final : public KeyChooser {
 public:
  explicit UniformChooser(const KeySpace* s) : space_(s) {}
  uint64_t Next(Rng& rng) override { return space_->key(rng.Uniform(space_->existing())); }

 private:
  const KeySpace* space_;
};

class ScrambledZipfianChooser final : public KeyChooser {
 public:
  ScrambledZipfianChooser(const KeySpace* s, double theta, ZetaCache* z)
      : space_(s), zipf_(s->existing(), theta, z) {}
  uint64_t Next(Rng& rng) override {
    return space_->key(FnvHash64(zipf_.Next(rng)) % space_->existing());
  }

 private:
  const KeySpace* space_;
  ZipfianGenerator zipf_;
};

class OrderedZipfianChooser final : public KeyChooser {
 public:
  OrderedZipfianChooser(const KeySpace* s, double theta, ZetaCache* z)
      : space_(s), zipf_(s->loaded(), theta, z) {}
  uint64_t Next(Rng& rng) override {
    return space_->sorted_key(zipf_.Next(rng) % space_->loaded());
  }

 private:
  const KeySpace* space_;
  ZipfianGenerator zipf_;
};

class LatestChooser final : public KeyChooser {
 public:
  LatestChooser(const KeySpace* s, double theta, ZetaCache* z)
      : space_(s), zipf_(s->existing(), theta, z) {}
  uint64_t Next(Rng& rng) override {
    const uint64_t n = space_->existing();
    zipf_.Grow(n);
    const uint64_t age = std::min(zipf_.Next(rng), n - 1);
    return space_->key(n - 1 - age);
  }

 private:
  const KeySpace* space_;
  ZipfianGenerator zipf_;
};

class HotspotChooser final : public KeyChooser {
 public:
  HotspotChooser(const KeySpace* s, const DistributionSpec& d, uint64_t run_seed)
      : space_(s), op_fraction_(d.hot_op_fraction) {
    const uint64_t n = s->loaded();
    hot_n_ =
        std::clamp<uint64_t>(static_cast<uint64_t>(std::llround(d.hot_data_fraction * n)), 1, n);
    double start = d.hot_start;
    if (start < 0) {
      Rng r(run_seed ^ 0x686f74ull);  // "hot": same start in every thread
      start = r.NextDouble() * (1.0 - d.hot_data_fraction);
    }
    hot_lo_ = std::min<uint64_t>(static_cast<uint64_t>(start * static_cast<double>(n)), n - hot_n_);
  }
  uint64_t Next(Rng& rng) override {
    const uint64_t n = space_->loaded();
    if (hot_n_ == n || rng.NextDouble() < op_fraction_)
      return space_->sorted_key(hot_lo_ + rng.Uniform(hot_n_));
    uint64_t c = rng.Uniform(n - hot_n_);
    if (c >= hot_lo_) c += hot_n_;
    return space_->sorted_key(c);
  }

 private:
  const KeySpace* space_;
  const double op_fraction_;
  uint64_t hot_n_ = 1;
  uint64_t hot_lo_ = 0;
};

}  // namespace

bool KeyChooser::NeedsSortedKeys(const DistributionSpec& spec) {
  return spec.kind == DistributionSpec::Kind::kHotspot ||
         (spec.kind == DistributionSpec::Kind::kZipfian && !spec.scrambled);
}

std::unique_ptr<KeyChooser> KeyChooser::New(const DistributionSpec& spec, const KeySpace* space,
                                            ZetaCache* zeta, uint64_t run_seed) {
  switch (spec.kind) {
    case DistributionSpec::Kind::kUniform:
      return std::make_unique<UniformChooser>(space);
    case DistributionSpec::Kind::kZipfian:
      if (spec.scrambled) return std::make_unique<ScrambledZipfianChooser>(space, spec.theta, zeta);
      return std::make_unique<OrderedZipfianChooser>(space, spec.theta, zeta);
    case DistributionSpec::Kind::kLatest:
      return std::make_unique<LatestChooser>(space, spec.theta, zeta);
    case DistributionSpec::Kind::kHotspot:
      return std::make_unique<HotspotChooser>(space, spec, run_seed);
  }
  return std::make_unique<UniformChooser>(space);
}

ScanLengthChooser::ScanLengthChooser(const ScanSpec& spec, ZetaCache* zeta) : spec_(spec) {
  if (spec.kind == ScanSpec::Kind::kZipfian) {
    zipf_ = std::make_unique<ZipfianGenerator>(spec.max - spec.min + 1, 0.99, zeta);
  }
}

uint32_t ScanLengthChooser::Next(Rng& rng) {
  switch (spec_.kind) {
    case ScanSpec::Kind::kUniform:
      return spec_.min + static_cast<uint32_t>(rng.Uniform(spec_.max - spec_.min + 1));
    case ScanSpec::Kind::kZipfian:
      return spec_.min + static_cast<uint32_t>(zipf_->Next(rng));
    case ScanSpec::Kind::kConstant:
      return spec_.max;
  }
  return spec_.max;
}

OpChooser::OpChooser(const std::array<double, kNumOpTypes>& mix) {
  double sum = 0;
  for (int i = 0; i < kNumOpTypes; ++i) {
    sum += mix[i];
    cumulative_[i] = sum;
  }
  for (auto& c : cumulative_) c /= sum;  // guard against rounding: the last entry is exactly 1
}

OpType OpChooser::Next(Rng& rng) const {
  const double u = rng.NextDouble();
  for (int i = 0; i < kNumOpTypes; ++i) {
    if (u < cumulative_[i]) return static_cast<OpType>(i);
  }
  for (int i = kNumOpTypes - 1; i >= 0; --i) {
    if (cumulative_[i] > (i > 0 ? cumulative_[i - 1] : 0)) return static_cast<OpType>(i);
  }
  return OpType::kRead;
}

}  // namespace grove::bench
