#include "lib/batcher.h"

#include <algorithm>
#include <limits>
#include <string>

#include "grove/v1/metadata.h"

#include "util/mutex.h"

namespace grove::client {
namespace {

grpc::Status Unavailable(const std::string& why) {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE, why);
}

// Codes with which groved (or gRPC on its behalf) refuses a stream or a message without applying
// anything of it; any other end may have cut a message short.
bool RefusedStream(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::UNIMPLEMENTED:
    case grpc::StatusCode::UNAUTHENTICATED:
    case grpc::StatusCode::PERMISSION_DENIED:
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return true;
    default:
      return false;
  }
}

}  // namespace

// One Batch stream and the calls on it. A stream is opened lazily and again after it ended; each
// opening is a Conn with its own context and reader thread.
//
// State (under mu_): queue_ holds calls not sent yet, in arrival order; sent_ the calls of sent
// messages by tag, until answered or given up; due_ counts the results still due per message in
// flight, from the moment it is taken for sending, and message_of_ maps each tag still due to its
// message (groved may answer two messages of a stream at once, their results interleaved; a call
// given up at its deadline still counts until its result arrives). A message is taken while
// fewer than messages_in_flight are; writing_ keeps writes from overlapping.
class Batcher::Stream {
 public:
  Stream(v1::KV::Stub* stub, const BatcherOptions* options) : stub_(stub), options_(options) {}

  ~Stream() {
    std::shared_ptr<Conn> conn;
    {
      MutexLock lock(&mu_);
      closing_ = true;
      if (conn_ != nullptr) conn_->context.TryCancel();
      conn = conn_;
    }
    if (conn != nullptr && conn->reader.joinable()) conn->reader.join();
    MutexLock lock(&mu_);
    for (Pending* p : queue_) Complete(p, {Unavailable("the client is closing"), true});
    queue_.clear();
  }

  size_t load() const { return load_.load(std::memory_order_relaxed); }

  Outcome Call(v1::SubRequest request, std::chrono::system_clock::time_point deadline,
               v1::SubResult* result) GROVE_EXCLUDES(mu_) {
    Pending p;
    p.result = result;
    mu_.Lock();
    if (closing_) {
      mu_.Unlock();
      return {Unavailable("the client is closing"), true};
    }
    p.tag = next_tag_++;
    request.set_tag(p.tag);
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::system_clock::now());
    request.set_timeout_ms(static_cast<uint32_t>(
        std::clamp<int64_t>(left.count(), 1, std::numeric_limits<uint32_t>::max())));
    p.request = std::move(request);
    p.bytes = p.request.ByteSizeLong();
    queue_.push_back(&p);
    load_.fetch_add(1, std::memory_order_relaxed);
    SendQueuedLocked();
    mu_.Unlock();
    // The wait is on the call's own mutex, not the stream's: a caller woken by the reader does
    // not then queue for mu_ behind the reader still completing the rest of the message.
    p.mu.Lock();
    while (!p.done && p.cv.WaitUntil(deadline)) {
    }
    if (!p.done) {
      p.mu.Unlock();
      mu_.Lock();
      if (!p.claimed) {
        GiveUpLocked(&p);
        mu_.Unlock();
        load_.fetch_sub(1, std::memory_order_relaxed);
        return p.outcome;
      }
      // A completer took the call just now and is about to signal it.
      mu_.Unlock();
      p.mu.Lock();
      while (!p.done) p.cv.Wait();
    }
    p.mu.Unlock();
    load_.fetch_sub(1, std::memory_order_relaxed);
    return p.outcome;
  }

 private:
  // A call, on its caller's stack. A completer claims it under mu_ (takes it out of queue_ or
  // sent_ and writes its outcome), then signals it under its own mu, which keeps it alive until
  // the signal is given: the caller returns only after it saw `done` under that mutex.
  struct Pending {
    uint64_t tag = 0;
    v1::SubRequest request;
    size_t bytes = 0;
    v1::SubResult* result = nullptr;
    bool sent = false;     // under the stream's mu_
    bool claimed = false;  // under the stream's mu_: a completer owns the outcome
    bool unsent = false;   // under the stream's mu_: its message's Write found the stream ended
    Outcome outcome;       // written by the claimer
    Mutex mu;
    CondVar cv{&mu};
    bool done GROVE_GUARDED_BY(mu) = false;
  };

  // One opening of the stream.
  struct Conn {
    grpc::ClientContext context;
    std::unique_ptr<grpc::ClientReaderWriter<v1::BatchRequest, v1::BatchResponse>> rw;
    std::thread reader;
    bool ended = false;  // under mu_: the reader saw the end; no more writes
  };

  // Claims `p` (called with mu_ held); Signal must follow, with or without mu_.
  static void Claim(Pending* p, Outcome outcome) {
    p->outcome = std::move(outcome);
    p->claimed = true;
  }
  static void Signal(Pending* p) {
    MutexLock own(&p->mu);
    p->done = true;
    p->cv.Signal();
  }
  static void Complete(Pending* p, Outcome outcome) {
    Claim(p, std::move(outcome));
    Signal(p);
  }

  // The deadline passed: a call still queued was never sent; a sent one's outcome is unknown.
  void GiveUpLocked(Pending* p) GROVE_REQUIRES(mu_) {
    const grpc::Status expired(grpc::StatusCode::DEADLINE_EXCEEDED,
                               "deadline exceeded waiting for the Batch stream's answer");
    if (!p->sent) {
      queue_.erase(std::find(queue_.begin(), queue_.end(), p));
      p->outcome = {expired, true};
    } else {
      sent_.erase(p->tag);
      p->outcome = {expired, false};
    }
    p->claimed = true;
  }

  // Opens the stream when it is not open (the previous one ended). Called with mu_ held; joins
  // an ended reader, which touches nothing under mu_ after it marked its Conn ended.
  std::shared_ptr<Conn> OpenLocked() GROVE_REQUIRES(mu_) {
    if (conn_ != nullptr && !conn_->ended) return conn_;
    if (conn_ != nullptr && conn_->reader.joinable()) conn_->reader.join();
    auto conn = std::make_shared<Conn>();
    if (options_->prepare) options_->prepare(&conn->context);
    conn->rw = stub_->Batch(&conn->context);
    conn->reader = std::thread([this, conn] { ReadLoop(conn); });
    conn_ = conn;
    return conn;
  }

  // Takes the queued calls (up to the limits) as the next message and writes it, with mu_
  // released during the write; again while fewer than messages_in_flight messages are in flight
  // and more calls wait. Does nothing while the window is full or a message is being written:
  // the results of a message may arrive before its Write returns, and a second Write must not
  // start before the first returned.
  void SendQueuedLocked() GROVE_REQUIRES(mu_) {
    while (due_.size() < options_->messages_in_flight && !writing_ && !queue_.empty() &&
           !closing_) {
      std::shared_ptr<Conn> conn = OpenLocked();
      v1::BatchRequest message;
      size_t bytes = 0;
      const uint64_t seq = next_message_++;
      while (!queue_.empty() &&
             static_cast<size_t>(message.requests_size()) < options_->max_calls) {
        Pending* p = queue_.front();
        if (message.requests_size() > 0 && bytes + p->bytes > options_->max_bytes) break;
        queue_.pop_front();
        bytes += p->bytes;
        message.add_requests()->Swap(&p->request);  // not needed once sent
        p->sent = true;
        sent_[p->tag] = p;
        message_of_[p->tag] = seq;
      }
      due_[seq] = static_cast<size_t>(message.requests_size());
      writing_ = true;
      mu_.Unlock();
      const bool written = conn->rw->Write(message);
      mu_.Lock();
      writing_ = false;
      written_cv_.SignalAll();
      if (!written) {
        // The stream had ended: the message did not leave. Its calls stay in sent_ for the
        // reader's end-of-stream pass (it waits for this Write and runs after it), which fails
        // them with the stream's own status: a server without Batch must be seen as one, not
        // as an ended stream.
        for (const v1::SubRequest& r : message.requests()) {
          auto it = sent_.find(r.tag());
          if (it != sent_.end()) it->second->unsent = true;
        }
        return;
      }
    }
  }

  void ReadLoop(std::shared_ptr<Conn> conn) GROVE_EXCLUDES(mu_) {
    v1::BatchResponse response;
    std::vector<Pending*> answered;
    while (conn->rw->Read(&response)) {
      mu_.Lock();
      answered.clear();
      for (v1::SubResult& r : *response.mutable_results()) {
        if (auto m = message_of_.find(r.tag()); m != message_of_.end()) {
          if (auto d = due_.find(m->second); d != due_.end() && --d->second == 0) due_.erase(d);
          message_of_.erase(m);
        }
        auto it = sent_.find(r.tag());
        if (it == sent_.end()) continue;  // given up at its deadline
        Pending* p = it->second;
        sent_.erase(it);
        *p->result = std::move(r);
        Claim(p, {grpc::Status::OK, false});
        answered.push_back(p);
      }
      // Callers are woken outside mu_ (they need only their own mutex); the calls they make
      // meanwhile join the queue and go out with the next message.
      mu_.Unlock();
      for (Pending* p : answered) Signal(p);
      mu_.Lock();
      SendQueuedLocked();  // a writer still in Write sends it when its Write returns
      mu_.Unlock();
    }
    mu_.Lock();
    // Finish must not overlap a Write; a write to an ended stream returns at once.
    while (writing_) written_cv_.Wait();
    mu_.Unlock();
    const grpc::Status end = conn->rw->Finish();
    const bool not_applied =
        conn->context.GetServerTrailingMetadata().count(v1::kNotAppliedMetadata) > 0;
    MutexLock lock(&mu_);
    if (RefusedStream(end.error_code())) {
      // The server refused the stream itself (no Batch, no valid token, a message over its
      // size limit): it applied nothing unanswered, and the caller sees its answer.
      // (A completed call may return at once: it is dropped from sent_ and queue_ here, not
      // looked at again.)
      for (auto& [tag, p] : sent_) Complete(p, {end, true});
      for (Pending* p : queue_) Complete(p, {end, true});
      sent_.clear();
      queue_.clear();
    }
    const std::string why = "the Batch stream ended (" + end.error_message() + ")";
    for (auto& [tag, p] : sent_) {
      if (p->claimed) continue;
      if (p->unsent) {
        Complete(p, {Unavailable(why + "; the call was not sent"), true});
        continue;
      }
      Complete(p, {Unavailable(why + (not_applied ? "; the server did not apply the call"
                                                  : "; the call was sent and may or may not "
                                                    "have been applied")),
                   not_applied});
    }
    sent_.clear();
    // Calls queued behind the message in flight were never sent.
    for (Pending* p : queue_) {
      if (!p->claimed) Complete(p, {Unavailable(why + "; the call was not sent"), true});
    }
    queue_.clear();
    due_.clear();
    message_of_.clear();
    conn->ended = true;
  }

  v1::KV::Stub* const stub_;
  const BatcherOptions* const options_;
  std::atomic<size_t> load_{0};
  Mutex mu_;
  std::shared_ptr<Conn> conn_ GROVE_GUARDED_BY(mu_);
  std::deque<Pending*> queue_ GROVE_GUARDED_BY(mu_);
  std::unordered_map<uint64_t, Pending*> sent_ GROVE_GUARDED_BY(mu_);
  bool writing_ GROVE_GUARDED_BY(mu_) = false;  // a thread is in Write, with mu_ released
  CondVar written_cv_{&mu_};
  // Message -> results still due.
  std::unordered_map<uint64_t, size_t> due_ GROVE_GUARDED_BY(mu_);
  // Tag -> its message, until answered.
  std::unordered_map<uint64_t, uint64_t> message_of_ GROVE_GUARDED_BY(mu_);
  uint64_t next_message_ GROVE_GUARDED_BY(mu_) = 1;
  uint64_t next_tag_ GROVE_GUARDED_BY(mu_) = 1;
  bool closing_ GROVE_GUARDED_BY(mu_) = false;
};

Batcher::Batcher(std::shared_ptr<grpc::Channel> channel, BatcherOptions options)
    : options_(std::move(options)), stub_(v1::KV::NewStub(std::move(channel))) {
  for (int i = 0; i < std::max(1, options_.streams); ++i) {
    streams_.push_back(std::make_unique<Stream>(stub_.get(), &options_));
  }
}

Batcher::~Batcher() = default;

size_t Batcher::Load() const {
  size_t n = 0;
  for (const auto& s : streams_) n += s->load();
  return n;
}

Batcher::Outcome Batcher::Call(v1::SubRequest request,
                               std::chrono::system_clock::time_point deadline,
                               v1::SubResult* result) {
  Stream* best = streams_.front().get();
  for (const auto& s : streams_) {
    if (s->load() < best->load()) best = s.get();
  }
  return best->Call(std::move(request), deadline, result);
}

}  // namespace grove::client
