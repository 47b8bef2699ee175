#pragma once

// Locality predictors ("hints", HLN-tree paper §2.3): per leaf, one l-bit signed value per subnode,
// stored in the leaf's entry of the last inner level. They let a lookup guess the subnode that
// holds a key without IO (Algorithm 3); CalcHints (Algorithm 2) computes them when a rebalance,
// split or stash conversion has the whole leaf in memory.
//
// Positions are fractions of the leaf's key range, [0, 1). A leaf of k partitions (k = n, or n - 1
// packed subnodes in a stash node) expects subnode i to end at erb = (i + 1) / k; hints shift that
// boundary in steps of hint_max / (2^(l-1) - 1), cumulatively. hint_max = hint_range / k (the
// paper's 20 % of a subnode's expected range by default). l = 0 means no hints: Equation 1.
//
// Encoding: hint i occupies bits [i*l, (i+1)*l) of the hint bytes, least significant bit first,
// as an l-bit two's complement value in [-(2^(l-1) - 1), 2^(l-1) - 1].
//
// Pure functions; no state.

#include <cstdint>
#include <string>
#include <vector>

#include "grove/slice.h"

namespace grove::hln {

struct HintParams {
  int parts = 16;           // k: subnodes the hints describe
  int bits = 4;             // l: 0, 2, 4 or 8
  double hint_range = 0.2;  // hint_max as a fraction of one subnode's expected range (1 / k)

  int steps_max() const { return bits == 0 ? 0 : (1 << (bits - 1)) - 1; }
  double hint_max() const { return hint_range / parts; }
  double step_size() const { return bits == 0 ? 0.0 : hint_max() / steps_max(); }
};

// Algorithm 2. `rb[i]` is the projected right boundary (the largest key) of subnode i in [0, 1].
std::vector<int> CalcHints(const std::vector<double>& rb, const HintParams& params);

// Algorithm 3: the subnode guessed for a key at projected position `target` in [0, 1).
int GuessSubnode(double target, const std::vector<int>& hints, const HintParams& params);

// The predicted right boundary of every subnode (erb + hintSum), as Algorithm 3 sees them.
std::vector<double> PredictedBoundaries(const std::vector<int>& hints, const HintParams& params);

// Bytes that `count` hints of `bits` bits occupy.
inline size_t HintBytes(int count, int bits) { return (static_cast<size_t>(count) * bits + 7) / 8; }

// Packs hints into HintBytes(hints.size(), bits) bytes (padded to `bytes` with zeros).
std::string EncodeHints(const std::vector<int>& hints, int bits, size_t bytes);
// Unpacks `count` hints. Values outside +-steps_max cannot be produced by EncodeHints.
std::vector<int> DecodeHints(Slice encoded, int count, int bits);

}  // namespace grove::hln
