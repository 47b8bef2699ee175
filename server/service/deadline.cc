#include "service/deadline.h"

#include <algorithm>

namespace grove::service {

Clock::time_point EffectiveDeadline(Clock::time_point client, Clock::time_point now,
                                    const DeadlinePolicy& policy) {
  // A client deadline far in the future (or none at all) must not overflow `now + max`.
  const Clock::time_point cap = now + policy.max;
  if (client == Clock::time_point::max() || client >= Clock::time_point::max() - policy.max) {
    return now + policy.fallback;
  }
  return std::min(client, cap);
}

Clock::duration SecondsToDuration(double seconds) {
  seconds = std::clamp(seconds, 0.0, 1e9);
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

}  // namespace grove::service
