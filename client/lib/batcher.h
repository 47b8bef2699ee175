#pragma once

// Batcher: the calls of many threads multiplexed onto a few grove.v1.KV/Batch streams of one
// channel (docs/server.md, "Many calls on one stream").
//
// Each stream has at most messages_in_flight request messages in flight; groved answers them in
// order, one at a time, and reads the next while the client is still busy with the last answer,
// so the server need not wait a round trip between messages. A call that finds a free slot is
// sent at once by the calling thread, in a message of its own: an idle client adds no latency.
// Calls that arrive while the window is full queue and go out together as the next message, up
// to max_calls sub-requests and max_bytes, as soon as a message in flight has all its results
// back: the busier the client, the larger the messages. A reader thread per stream completes
// calls by tag and sends the next message. A call takes the stream with the fewest calls waiting.
//
// When a stream ends, its calls fail with UNAVAILABLE: those not sent yet are marked not applied
// (safe to send again), those sent are of unknown outcome, unless the server ended the stream with
// grove-not-applied (its drain), which covers every sub-request it did not answer. The next call
// opens a new stream.
//
// Thread safety: Call may be called from any number of threads. Each stream has one mutex; no
// call holds two.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <unordered_map>
#include <vector>

#include <grpcpp/channel.h>
#include <grpcpp/client_context.h>

#include "grove/v1/kv.grpc.pb.h"

namespace grove::client {

struct BatcherOptions {
  int streams = 1;                // streams per channel (each holds one server thread while open)
  size_t max_calls = 256;         // sub-requests per message
  size_t max_bytes = 1 << 20;     // encoded sub-requests per message (one larger call goes alone)
  size_t messages_in_flight = 2;  // per stream: sent and not yet answered in full
  // Adds the stream's metadata (the bearer token, ClientOptions::metadata) to its context.
  std::function<void(grpc::ClientContext*)> prepare;
};

class Batcher {
 public:
  Batcher(std::shared_ptr<grpc::Channel> channel, BatcherOptions options);
  ~Batcher();  // ends the streams; calls still waiting fail with UNAVAILABLE
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  struct Outcome {
    // OK: *result holds the server's answer (whose own status may be an error). Otherwise the
    // stream failed or the deadline passed before an answer came.
    grpc::Status status;
    bool not_applied = false;  // the server cannot have applied the call: safe to send again
  };
  // Sends `request` (its tag and timeout are set here) and waits for its result until `deadline`.
  Outcome Call(v1::SubRequest request, std::chrono::system_clock::time_point deadline,
               v1::SubResult* result);
  // Calls in Call() now, over every stream.
  size_t Load() const;

 private:
  class Stream;
  BatcherOptions options_;
  std::unique_ptr<v1::KV::Stub> stub_;
  std::vector<std::unique_ptr<Stream>> streams_;
};

}  // namespace grove::client
