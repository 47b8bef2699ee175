#pragma once

// Per-call time budget. gRPC sets no deadline by default, so the server gives every call one: the
// client's deadline cut to now + max_deadline, or now + default_deadline when the client set none.
// Handlers check it before starting work and between units of work (scan messages, batch reads);
// an expired budget ends the call with DEADLINE_EXCEEDED.

#include <chrono>

namespace grove::service {

using Clock = std::chrono::system_clock;  // what grpc::ServerContext::deadline() uses

struct DeadlinePolicy {
  Clock::duration max = std::chrono::seconds(60);
  Clock::duration fallback = std::chrono::seconds(10);  // for calls without a deadline
};

// `client` is ServerContext::deadline(): Clock::time_point::max() when the client set none.
Clock::time_point EffectiveDeadline(Clock::time_point client, Clock::time_point now,
                                    const DeadlinePolicy& policy);

// Seconds (possibly fractional) as a Clock duration, saturating far beyond any sane value.
Clock::duration SecondsToDuration(double seconds);

}  // namespace grove::service
