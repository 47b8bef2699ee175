#include "index/hln/hints.h"

#include <algorithm>
#include <cmath>

namespace grove::hln {

std::vector<int> CalcHints(const std::vector<double>& rb, const HintParams& params) {
  const int k = static_cast<int>(rb.size());
  std::vector<int> hints(k, 0);
  if (params.bits == 0) return hints;
  const double step = params.step_size();
  const double delta = step / 2;  // overshoot: rounds to the nearest step
  double hint_sum = 0;
  for (int i = 0; i < k; ++i) {
    const double erb = static_cast<double>(i + 1) / k;
    const double diff = std::fabs(erb + hint_sum - rb[i]) + delta;
    const int steps =
        static_cast<int>(std::min<double>(std::floor(diff / step), params.steps_max()));
    hints[i] = erb + hint_sum < rb[i] ? steps : -steps;
    hint_sum += hints[i] * step;
  }
  return hints;
}

int GuessSubnode(double target, const std::vector<int>& hints, const HintParams& params) {
  const int k = params.parts;
  const double step = params.step_size();
  double hint_sum = 0;
  for (int i = 0; i < k - 1; ++i) {
    if (params.bits != 0) hint_sum += hints[i] * step;
    const double erb = static_cast<double>(i + 1) / k;
    if (erb + hint_sum > target) return i;
  }
  return k - 1;
}

std::vector<double> PredictedBoundaries(const std::vector<int>& hints, const HintParams& params) {
  const int k = params.parts;
  const double step = params.step_size();
  std::vector<double> b(k);
  double hint_sum = 0;
  for (int i = 0; i < k; ++i) {
    if (params.bits != 0) hint_sum += hints[i] * step;
    b[i] = static_cast<double>(i + 1) / k + hint_sum;
  }
  return b;
}

std::string EncodeHints(const std::vector<int>& hints, int bits, size_t bytes) {
  std::string out(bytes, '\0');
  if (bits == 0) return out;
  const unsigned mask = (1u << bits) - 1;
  for (size_t i = 0; i < hints.size(); ++i) {
    const unsigned v = static_cast<unsigned>(hints[i]) & mask;
    const size_t bit = i * bits;  // bits divides 8, so a hint never straddles a byte
    out[bit / 8] = static_cast<char>(static_cast<uint8_t>(out[bit / 8]) | (v << (bit % 8)));
  }
  return out;
}

std::vector<int> DecodeHints(Slice encoded, int count, int bits) {
  std::vector<int> hints(count, 0);
  if (bits == 0) return hints;
  const unsigned mask = (1u << bits) - 1;
  const unsigned sign = 1u << (bits - 1);
  for (int i = 0; i < count; ++i) {
    const size_t bit = static_cast<size_t>(i) * bits;
    if (bit / 8 >= encoded.size()) break;
    const unsigned v = (static_cast<uint8_t>(encoded[bit / 8]) >> (bit % 8)) & mask;
    hints[i] = (v & sign) ? static_cast<int>(v) - static_cast<int>(mask + 1) : static_cast<int>(v);
  }
  return hints;
}

}  // namespace grove::hln
