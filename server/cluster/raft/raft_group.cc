#include "cluster/raft/raft_group.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <future>
#include <thread>

#include <fmt/format.h>

#include "util/coding.h"

extern "C" {
#include <raft.h>
#include <raft/uv.h>
}

namespace grove::raft {

namespace {

// A snapshot starts with this byte (the format of what follows: the StateMachine's bytes), so that
// a snapshot is never an empty buffer and a foreign one is refused.
constexpr char kSnapshotFormat = 'G';
// An entry in the log: its length (fixed32), its bytes, zeros to a multiple of 8 bytes.
constexpr size_t kFrameHeader = 4;

Status RaftError(int rv, const char* what, ::raft* r) {
  std::string detail = raft_strerror(rv);
  if (r != nullptr && raft_errmsg(r) != nullptr && *raft_errmsg(r) != '\0') {
    detail += std::string(" (") + raft_errmsg(r) + ")";
  }
  const std::string m = fmt::format("raft: {}: {}", what, detail);
  switch (rv) {
    case RAFT_NOMEM:
    case RAFT_NOSPACE:
    case RAFT_TOOMANY:
      return Status::ResourceExhausted(m);
    case RAFT_BADID:
    case RAFT_DUPLICATEID:
    case RAFT_DUPLICATEADDRESS:
    case RAFT_BADROLE:
    case RAFT_INVALID:
    case RAFT_NAMETOOLONG:
    case RAFT_TOOBIG:
      return Status::InvalidArgument(m);
    case RAFT_CORRUPT:
    case RAFT_MALFORMED:
      return Status::DataLoss(m);
    case RAFT_LEADERSHIPLOST:
    case RAFT_SHUTDOWN:
    case RAFT_NOCONNECTION:
    case RAFT_BUSY:
      return Status::Unavailable(m);
    case RAFT_CANTCHANGE:
      return Status::Aborted(m);
    case RAFT_CANTBOOTSTRAP:
    case RAFT_NOTLEADER:
      return Status::FailedPrecondition(m);
    default:
      return Status::Internal(m);
  }
}

}  // namespace

const char* MemberRoleName(MemberRole role) {
  switch (role) {
    case MemberRole::kVoter:
      return "voter";
    case MemberRole::kStandby:
      return "standby";
    case MemberRole::kSpare:
      break;
  }
  return "spare";
}

namespace {

int LibraftRole(MemberRole role) {
  switch (role) {
    case MemberRole::kVoter:
      return RAFT_VOTER;
    case MemberRole::kStandby:
      return RAFT_STANDBY;
    case MemberRole::kSpare:
      break;
  }
  return RAFT_SPARE;
}

MemberRole FromLibraftRole(int role) {
  if (role == RAFT_VOTER) return MemberRole::kVoter;
  if (role == RAFT_STANDBY) return MemberRole::kStandby;
  return MemberRole::kSpare;
}

}  // namespace

const char* RaftRoleName(RaftRole role) {
  switch (role) {
    case RaftRole::kFollower:
      return "follower";
    case RaftRole::kCandidate:
      return "candidate";
    case RaftRole::kLeader:
      return "leader";
    case RaftRole::kUnavailable:
      break;
  }
  return "unavailable";
}

// A proposal or barrier libraft holds: heap-allocated until its callback.
struct RaftGroup::Request {
  RaftGroup* group = nullptr;
  Done done;
  struct raft_apply apply {};
  struct raft_barrier barrier {};
  struct raft_change change {};
  struct raft_transfer transfer {};
  // A configuration change: the server it is about, the role it gets, and whether an add must
  // be followed by that role's assignment.
  uint64_t target = 0;
  int role = RAFT_SPARE;
  bool assign_after_add = false;
};

// libraft's callbacks, with access to the group.
struct RaftGroup::Callbacks {
  static int Apply(struct raft_fsm* fsm, const struct raft_buffer* buf, void** result) {
    auto* g = static_cast<RaftGroup*>(fsm->data);
    // libraft passes no index: the entry being applied is the one after the last applied.
    const uint64_t index = raft_last_applied(g->raft_.get()) + 1;
    const auto* p = static_cast<const char*>(buf->base);
    const uint32_t n = buf->len >= kFrameHeader ? DecodeFixed32(p) : 0;
    if (buf->len < kFrameHeader || kFrameHeader + n > buf->len) {
      // Only this class writes entries: a frame that does not fit is a broken log, and applying
      // past it would fork this replica from the others. A non-zero return stops libraft
      // applying here; the failure is what every later request and GetStatus report.
      g->failure_ = Status::DataLoss(fmt::format(
          "raft group {}: entry {} has a broken frame ({} bytes); this replica stopped applying",
          g->options_.id, index, buf->len));
      return RAFT_MALFORMED;
    }
    if (Status s = g->machine_->Apply(index, Slice(p + kFrameHeader, n)); !s.ok()) {
      // libraft stops applying on this replica and tells no one: the failure tells the callers.
      g->failure_ = s.WithContext(
          fmt::format("raft group {}: entry {} could not be applied; this replica stopped applying",
                      g->options_.id, index));
      return RAFT_IOERR;
    }
    *result = nullptr;
    return 0;
  }

  static int Snapshot(struct raft_fsm* fsm, struct raft_buffer* bufs[], unsigned* n) {
    auto* g = static_cast<RaftGroup*>(fsm->data);
    StatusOr<std::string> state = g->machine_->Snapshot();
    if (!state.ok()) return RAFT_IOERR;  // libraft skips this snapshot and tries again later
    auto* out = static_cast<struct raft_buffer*>(raft_malloc(sizeof(struct raft_buffer)));
    if (out == nullptr) return RAFT_NOMEM;
    out->len = state->size() + 1;
    out->base = raft_malloc(out->len);
    if (out->base == nullptr) {
      raft_free(out);
      return RAFT_NOMEM;
    }
    static_cast<char*>(out->base)[0] = kSnapshotFormat;
    std::memcpy(static_cast<char*>(out->base) + 1, state->data(), state->size());
    *bufs = out;  // libraft frees both (a version 1 state machine)
    *n = 1;
    return 0;
  }

  static int Restore(struct raft_fsm* fsm, struct raft_buffer* buf) {
    auto* g = static_cast<RaftGroup*>(fsm->data);
    const auto* p = static_cast<const char*>(buf->base);
    if (buf->len < 1 || p[0] != kSnapshotFormat) return RAFT_MALFORMED;  // libraft frees it
    if (Status s = g->machine_->Restore(Slice(p + 1, buf->len - 1)); !s.ok()) {
      g->restore_failure_ =
          s.WithContext(fmt::format("raft group {}: restoring a snapshot", g->options_.id));
      return RAFT_IOERR;
    }
    g->restore_failure_ = Status::Ok();
    raft_free(buf->base);  // on success the buffer is ours
    return 0;
  }

  static void Applied(struct raft_apply* req, int status, void*) {
    auto* rq = static_cast<Request*>(req->data);
    rq->group->Finish(rq, status, req->index);
  }
  static void BarrierDone(struct raft_barrier* req, int status) {
    auto* rq = static_cast<Request*>(req->data);
    rq->group->Finish(rq, status, req->index);
  }
  static void Changed(struct raft_change* req, int status) {
    auto* rq = static_cast<Request*>(req->data);
    if (status == 0 && rq->assign_after_add) {
      rq->assign_after_add = false;
      rq->group->Assign(rq);
      return;
    }
    rq->group->Finish(rq, status, 0);
  }
  static void Transferred(struct raft_transfer* req) {
    auto* rq = static_cast<Request*>(req->data);
    RaftGroup* g = rq->group;
    raft_id leader = 0;
    const char* address = nullptr;
    if (g->started_) raft_leader(g->raft_.get(), &leader, &address);
    if (leader == rq->target) {
      g->Finish(rq, 0, 0);
      return;
    }
    --g->pending_;
    Done done = std::move(rq->done);
    const uint64_t target = rq->target;
    delete rq;
    done(Status::Unavailable(fmt::format(
             "raft: leadership did not pass to replica {} within the election timeout{}", target,
             leader == 0 ? " (no leader now)" : fmt::format(" (replica {} leads)", leader))),
         0);
  }
};

RaftGroup::RaftGroup(RaftLoop* loop, const RaftGroupOptions& options, StateMachine* machine)
    : loop_(loop),
      options_(options),
      machine_(machine),
      raft_(std::make_unique<::raft>()),
      io_(std::make_unique<::raft_io>()),
      fsm_(std::make_unique<::raft_fsm>()),
      transport_(std::make_unique<::raft_uv_transport>()) {}

StatusOr<std::unique_ptr<RaftGroup>> RaftGroup::Start(RaftLoop* loop,
                                                      const RaftGroupOptions& options,
                                                      StateMachine* machine) {
  if (options.id == 0) return Status::InvalidArgument("raft group: id must be nonzero");
  if (options.group == 0) return Status::InvalidArgument("raft group: group must be nonzero");
  if (options.transport == nullptr || options.transport->loop() != loop) {
    return Status::InvalidArgument("raft group: transport is required, on the group's loop");
  }
  if (options.dir.empty()) return Status::InvalidArgument("raft group: dir is required");
  if (options.segment_bytes == 0 || options.segment_bytes % 4096 != 0) {
    return Status::InvalidArgument(fmt::format(
        "raft group: segment_bytes {} is not a positive multiple of 4096", options.segment_bytes));
  }
  for (const RaftPeer& p : options.bootstrap) {
    if (p.id == 0 || p.address.empty()) {
      return Status::InvalidArgument("raft group: every bootstrap voter needs an id and address");
    }
  }
  std::error_code ec;
  std::filesystem::create_directories(options.dir, ec);
  if (ec) {
    return Status::Unavailable(fmt::format("raft group: create {}: {}", options.dir, ec.message()));
  }
  std::unique_ptr<RaftGroup> g(new RaftGroup(loop, options, machine));
  Status started = Status::Unavailable("raft group: the loop is stopping");
  loop->RunAndWait([&] { started = g->StartOnLoop(); });
  if (!started.ok()) {
    g->Close().IgnoreError();  // releases what StartOnLoop set up
    return started;
  }
  return g;
}

Status RaftGroup::StartOnLoop() {
  if (options_.transport->Listening(options_.group)) {
    return Status::FailedPrecondition(
        fmt::format("raft group {}: already runs on the transport at {}", options_.group,
                    options_.transport->address()));
  }
  options_.transport->Init(options_.group, transport_.get());
  stage_ = Stage::kTransport;
  if (int rv = raft_uv_init(io_.get(), loop_->loop(), options_.dir.c_str(), transport_.get());
      rv != 0) {
    return Status::Unavailable(
        fmt::format("raft: io in {}: {} ({})", options_.dir, raft_strerror(rv), io_->errmsg));
  }
  stage_ = Stage::kIo;
  raft_uv_set_segment_size(io_.get(), options_.segment_bytes);
  fsm_->version = 1;
  fsm_->data = this;
  fsm_->apply = &Callbacks::Apply;
  fsm_->snapshot = &Callbacks::Snapshot;
  fsm_->restore = &Callbacks::Restore;
  raft_->data = this;
  if (int rv = raft_init(raft_.get(), io_.get(), fsm_.get(), options_.id,
                         options_.transport->address().c_str());
      rv != 0) {
    return RaftError(rv, "init", nullptr);
  }
  stage_ = Stage::kRaft;
  raft_set_election_timeout(raft_.get(), options_.election_timeout_ms);
  raft_set_heartbeat_timeout(raft_.get(), options_.heartbeat_ms);
  raft_set_snapshot_threshold(raft_.get(), options_.snapshot_threshold);
  raft_set_snapshot_trailing(raft_.get(), options_.snapshot_trailing);
  raft_set_install_snapshot_timeout(raft_.get(), options_.install_snapshot_timeout_ms);
  raft_set_pre_vote(raft_.get(), options_.pre_vote);
  if (!options_.bootstrap.empty()) {
    struct raft_configuration conf;
    raft_configuration_init(&conf);
    int rv = 0;
    for (const RaftPeer& p : options_.bootstrap) {
      rv = raft_configuration_add(&conf, p.id, p.address.c_str(), RAFT_VOTER);
      if (rv != 0) break;
    }
    if (rv == 0) rv = raft_bootstrap(raft_.get(), &conf);
    raft_configuration_close(&conf);
    // A directory that holds state already was bootstrapped (or joined) before.
    if (rv != 0 && rv != RAFT_CANTBOOTSTRAP) return RaftError(rv, "bootstrap", raft_.get());
  }
  if (int rv = raft_start(raft_.get()); rv != 0) {
    if (!restore_failure_.ok()) return restore_failure_;
    return RaftError(
        rv, fmt::format("start in {} at {}", options_.dir, options_.transport->address()).c_str(),
        raft_.get());
  }
  started_ = true;
  return Status::Ok();
}

RaftGroup::~RaftGroup() { Close().IgnoreError(); }

Status RaftGroup::NotLeader() {
  raft_id id = 0;
  const char* address = nullptr;
  raft_leader(raft_.get(), &id, &address);
  if (id == 0) {
    return Status::FailedPrecondition(fmt::format(
        "raft: replica {} is not the leader, and knows of none (an election is under way)",
        options_.id));
  }
  return Status::FailedPrecondition(
      fmt::format("raft: replica {} is not the leader; the leader is replica {} at {}", options_.id,
                  id, address != nullptr ? address : "?"));
}

Status RaftGroup::Outcome(int rv, const char* what) {
  if (rv == RAFT_NOTLEADER) return NotLeader();
  if (rv == RAFT_LEADERSHIPLOST) {
    return Status::Unavailable(
        "raft: leadership was lost before the entry was applied; it may still commit under the "
        "next leader");
  }
  return RaftError(rv, what, raft_.get());
}

Status RaftGroup::Refusal() {
  if (!failure_.ok()) return failure_;
  if (!started_ || closing_) return Status::Unavailable("raft: the group is closing");
  if (raft_state(raft_.get()) != RAFT_LEADER) return NotLeader();
  return Status::Ok();
}

void RaftGroup::Finish(Request* req, int status, uint64_t index) {
  --pending_;
  Done done = std::move(req->done);
  delete req;
  if (status == 0) {
    done(Status::Ok(), index);
  } else {
    done(Outcome(status, "request"), 0);
  }
}

void RaftGroup::Propose(std::string entry, Done done) {
  if (entry.empty()) {
    done(Status::InvalidArgument("raft: an entry must not be empty"), 0);
    return;
  }
  auto task = [this, entry = std::move(entry), done]() mutable {
    if (Status refused = Refusal(); !refused.ok()) {
      done(refused, 0);
      return;
    }
    // Framed and padded to 8 bytes: libraft 0.15's log reads entries back wrongly when their
    // lengths are not multiples of 8 (a closed segment of 2- and 3-byte entries reloaded as
    // corrupt).
    struct raft_buffer buf;
    buf.len = (kFrameHeader + entry.size() + 7) / 8 * 8;
    buf.base = raft_malloc(buf.len);
    if (buf.base == nullptr) {
      done(Status::ResourceExhausted("raft: out of memory for an entry"), 0);
      return;
    }
    char* p = static_cast<char*>(buf.base);
    std::memset(p, 0, buf.len);
    EncodeFixed32(p, static_cast<uint32_t>(entry.size()));
    std::memcpy(p + kFrameHeader, entry.data(), entry.size());
    auto* req = new Request;
    req->group = this;
    req->done = std::move(done);
    req->apply.data = req;
    // One buffer per call: with several, libraft reports after the first is applied.
    if (int rv = raft_apply(raft_.get(), &req->apply, &buf, 1, &Callbacks::Applied); rv != 0) {
      raft_free(buf.base);  // not taken: the callback will not run
      Done d = std::move(req->done);
      delete req;
      d(Outcome(rv, "propose"), 0);
      return;
    }
    ++pending_;
  };
  if (!loop_->Post(std::move(task))) done(Status::Unavailable("raft: the loop is stopping"), 0);
}

void RaftGroup::Barrier(Done done) {
  auto task = [this, done]() mutable {
    if (Status refused = Refusal(); !refused.ok()) {
      done(refused, 0);
      return;
    }
    auto* req = new Request;
    req->group = this;
    req->done = std::move(done);
    req->barrier.data = req;
    if (int rv = raft_barrier(raft_.get(), &req->barrier, &Callbacks::BarrierDone); rv != 0) {
      Done d = std::move(req->done);
      delete req;
      d(Outcome(rv, "barrier"), 0);
      return;
    }
    ++pending_;
  };
  if (!loop_->Post(std::move(task))) done(Status::Unavailable("raft: the loop is stopping"), 0);
}

const struct raft_server* RaftGroup::Member(uint64_t id) const {
  for (unsigned i = 0; i < raft_->configuration.n; ++i) {
    if (raft_->configuration.servers[i].id == id) return &raft_->configuration.servers[i];
  }
  return nullptr;
}

void RaftGroup::Assign(Request* req) {
  if (int rv = raft_assign(raft_.get(), &req->change, req->target, req->role, &Callbacks::Changed);
      rv != 0) {
    Finish(req, rv, 0);
  }
}

void RaftGroup::AtLeader(Done done, std::function<void(Done)> change) {
  auto task = [this, done, change = std::move(change)]() mutable {
    if (Status refused = Refusal(); !refused.ok()) {
      done(refused, 0);
      return;
    }
    change(std::move(done));
  };
  if (!loop_->Post(std::move(task))) done(Status::Unavailable("raft: the loop is stopping"), 0);
}

RaftGroup::Request* RaftGroup::NewChange(Done done, uint64_t target) {
  auto* req = new Request;
  req->group = this;
  req->done = std::move(done);
  req->change.data = req;
  req->transfer.data = req;
  req->target = target;
  ++pending_;
  return req;
}

void RaftGroup::SetRole(uint64_t id, std::string address, MemberRole role, Done done) {
  AtLeader(std::move(done), [this, id, address = std::move(address), role](Done done) {
    if (id == 0) {
      done(Status::InvalidArgument("raft: a replica id must be nonzero"), 0);
      return;
    }
    const struct raft_server* member = Member(id);
    if (member != nullptr && !address.empty() && address != member->address) {
      done(Status::FailedPrecondition(
               fmt::format("raft: replica {} is in the group at {}, not {}; remove it first", id,
                           member->address, address)),
           0);
      return;
    }
    if (member != nullptr && member->role == LibraftRole(role)) {
      done(Status::Ok(), 0);
      return;
    }
    if (member == nullptr && address.empty()) {
      done(Status::InvalidArgument(
               fmt::format("raft: replica {} is not in the group; its address is required", id)),
           0);
      return;
    }
    Request* req = NewChange(std::move(done), id);
    req->role = LibraftRole(role);
    if (member != nullptr) {
      Assign(req);
      return;
    }
    // libraft adds a server as a spare; any other role is a second change once that commits.
    req->assign_after_add = req->role != RAFT_SPARE;
    if (int rv = raft_add(raft_.get(), &req->change, id, address.c_str(), &Callbacks::Changed);
        rv != 0) {
      Finish(req, rv, 0);
    }
  });
}

void RaftGroup::Remove(uint64_t id, Done done) {
  AtLeader(std::move(done), [this, id](Done done) {
    if (Member(id) == nullptr) {
      done(Status::Ok(), 0);
      return;
    }
    if (id == options_.id) {
      done(Status::FailedPrecondition(fmt::format(
               "raft: replica {} leads the group and cannot remove itself: transfer leadership "
               "first",
               id)),
           0);
      return;
    }
    Request* req = NewChange(std::move(done), id);
    if (int rv = raft_remove(raft_.get(), &req->change, id, &Callbacks::Changed); rv != 0) {
      Finish(req, rv, 0);
    }
  });
}

void RaftGroup::Transfer(uint64_t id, Done done) {
  AtLeader(std::move(done), [this, id](Done done) {
    if (id == options_.id) {
      done(Status::Ok(), 0);
      return;
    }
    const struct raft_server* member = Member(id);
    if (member == nullptr || member->role != RAFT_VOTER) {
      done(Status::InvalidArgument(fmt::format(
               "raft: replica {} is not a voter of the group; only a voter can lead", id)),
           0);
      return;
    }
    Request* req = NewChange(std::move(done), id);
    if (int rv = raft_transfer(raft_.get(), &req->transfer, id, &Callbacks::Transferred); rv != 0) {
      Finish(req, rv, 0);
    }
  });
}

namespace {

StatusOr<uint64_t> Wait(const std::function<void(RaftGroup::Done)>& start) {
  auto result = std::make_shared<std::promise<StatusOr<uint64_t>>>();
  std::future<StatusOr<uint64_t>> f = result->get_future();
  start([result](const Status& s, uint64_t index) {
    if (s.ok()) {
      result->set_value(index);
    } else {
      result->set_value(s);
    }
  });
  return f.get();
}

}  // namespace

StatusOr<uint64_t> RaftGroup::ProposeAndWait(std::string entry) {
  return Wait([&](Done d) { Propose(std::move(entry), std::move(d)); });
}

StatusOr<uint64_t> RaftGroup::BarrierAndWait() {
  return Wait([&](Done d) { Barrier(std::move(d)); });
}

RaftStatus RaftGroup::GetStatus() {
  RaftStatus s;
  loop_->RunAndWait([&] {
    if (!started_) return;
    s.role = static_cast<RaftRole>(raft_state(raft_.get()));
    raft_id id = 0;
    const char* address = nullptr;
    raft_leader(raft_.get(), &id, &address);
    s.leader_id = id;
    if (address != nullptr) s.leader_address = address;
    s.term = raft_->current_term;
    s.commit_index = raft_->commit_index;
    s.last_applied = raft_last_applied(raft_.get());
    s.last_index = raft_last_index(raft_.get());
    const raft_time now = raft_->io->time(raft_->io);
    s.contact_age_ms = now > raft_->election_timer_start ? now - raft_->election_timer_start : 0;
    if (raft_->state == RAFT_LEADER && raft_->leader_state.progress != nullptr) {
      for (unsigned i = 0; i < raft_->configuration.n; ++i) {
        const raft_id peer = raft_->configuration.servers[i].id;
        s.follower_match.emplace_back(
            peer, peer == raft_->id ? s.last_index : raft_->leader_state.progress[i].match_index);
      }
    }
    for (unsigned i = 0; i < raft_->configuration.n; ++i) {
      const struct raft_server& m = raft_->configuration.servers[i];
      s.members.push_back({m.id, m.address != nullptr ? m.address : "", FromLibraftRole(m.role)});
      if (m.id == raft_->id) s.voter = m.role == RAFT_VOTER;
    }
    s.failure = failure_.ok() ? restore_failure_ : failure_;
  });
  return s;
}

Status RaftGroup::Close() {
  if (closed_) return Status::Ok();
  closed_ = true;
  // No new proposals; then wait for libraft to finish those it holds (closing a leader with
  // appends in flight crashes libraft 0.15).
  uint64_t pending = 0;
  loop_->RunAndWait([&] {
    closing_ = true;
    pending = pending_;
  });
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.close_wait_ms);
  while (pending > 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    loop_->RunAndWait([&] { pending = pending_; });
  }
  auto closed = std::make_shared<std::promise<void>>();
  std::future<void> done = closed->get_future();
  closed_promise_ = closed;
  const bool posted = loop_->Post([this] {
    started_ = false;  // GetStatus and requests no longer touch libraft's state
    switch (stage_) {
      case Stage::kRaft:
        raft_close(raft_.get(), [](::raft* r) {
          auto* g = static_cast<RaftGroup*>(r->data);
          raft_uv_close(g->io_.get());
          GroupTransport::Release(g->transport_.get());
          g->closed_promise_->set_value();
        });
        return;
      case Stage::kIo:
        raft_uv_close(io_.get());
        GroupTransport::Release(transport_.get());
        break;
      case Stage::kTransport:
        GroupTransport::Release(transport_.get());
        break;
      case Stage::kNone:
        break;
    }
    closed_promise_->set_value();
  });
  if (!posted) {
    return Status::FailedPrecondition("raft group: closed after its loop stopped");
  }
  done.wait();
  if (pending > 0) {
    return Status::DeadlineExceeded(
        fmt::format("raft group {}: closed with {} requests still in flight after {} ms",
                    options_.id, pending, options_.close_wait_ms));
  }
  return Status::Ok();
}

}  // namespace grove::raft
