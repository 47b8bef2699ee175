#include "cluster/membership.h"

#include <chrono>

#include <fmt/format.h>

#include "grove/v1/cluster.pb.h"

#include "util/clock.h"

namespace grove::cluster {
namespace {

void Log(Logger* logger, LogLevel level, const std::string& message) {
  if (logger != nullptr) logger->Log(level, message);
}

}  // namespace

Membership::Membership(std::shared_ptr<EtcdClient> etcd, MembershipOptions options, Logger* logger,
                       Listener* listener)
    : etcd_(std::move(etcd)), options_(std::move(options)), logger_(logger), listener_(listener) {
  grove::v1::NodeInfo info;
  info.set_name(options_.node_name);
  info.set_address(options_.advertise_address);
  info.set_raft_address(options_.raft_address);
  info.set_version(options_.version);
  info.set_started_unix_ms(static_cast<int64_t>(NowUnixMillis()));
  info_ = info.SerializeAsString();
}

Membership::~Membership() { Stop(); }

void Membership::SetRegistered(bool r) {
  if (registered_.exchange(r) != r && listener_ != nullptr) listener_->OnRegistered(r);
}

Status Membership::Claim() {
  GROVE_RETURN_IF_ERROR(etcd_->Put(NodeKey(options_.cluster, options_.node_name), info_));
  GROVE_ASSIGN_OR_RETURN(const int64_t lease, etcd_->GrantLease(options_.lease_ttl_seconds));
  GROVE_ASSIGN_OR_RETURN(
      const bool claimed,
      etcd_->PutIfUnchanged(AliveKey(options_.cluster, options_.node_name), info_, 0, lease));
  if (!claimed) {
    etcd_->RevokeLease(lease).IgnoreError();
    return Status::FailedPrecondition(
        fmt::format("cluster.node_name: '{}' is held by a live node of cluster '{}' (another "
                    "process with this name, or this node's previous run until its lease of "
                    "{} s expires)",
                    options_.node_name, options_.cluster, options_.lease_ttl_seconds));
  }
  lease_ = lease;
  SetRegistered(true);
  return Status::Ok();
}

Status Membership::Start() {
  GROVE_RETURN_IF_ERROR(CheckNames(options_.cluster, options_.node_name));
  if (options_.lease_ttl_seconds < 2) {
    return Status::InvalidArgument("cluster.lease_ttl_seconds: must be at least 2");
  }
  const auto give_up =
      std::chrono::steady_clock::now() + std::chrono::seconds(options_.lease_ttl_seconds + 2);
  for (;;) {
    Status s = Claim();
    if (s.ok()) {
      Log(logger_, LogLevel::kInfo,
          fmt::format("cluster: node '{}' registered in cluster '{}' at {} (lease {:x}, ttl {} s)",
                      options_.node_name, options_.cluster, options_.advertise_address,
                      lease_.load(), options_.lease_ttl_seconds));
      break;
    }
    if (s.IsUnavailable()) {
      // etcd is down: serve anyway and register when it is back (the keeper retries).
      Log(logger_, LogLevel::kWarn,
          fmt::format("cluster: cannot register node '{}' yet: {}; retrying every {} ms",
                      options_.node_name, s.ToString(), options_.lease_ttl_seconds * 1000 / 3));
      break;
    }
    if (s.code() != StatusCode::kFailedPrecondition ||
        std::chrono::steady_clock::now() >= give_up) {
      return s;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  {
    MutexLock lock(&mu_);
    stop_ = false;
  }
  keeper_ = std::thread([this] { Keep(); });
  return Status::Ok();
}

void Membership::Keep() {
  const auto period = std::chrono::milliseconds(options_.lease_ttl_seconds * 1000 / 3);
  auto last_answer = std::chrono::steady_clock::now();
  while (!WaitForStop(period)) {
    if (registered()) {
      StatusOr<int64_t> ttl = etcd_->KeepAlive(lease_.load());
      if (listener_ != nullptr) listener_->OnKeepAlive(ttl.ok());
      const auto now = std::chrono::steady_clock::now();
      if (ttl.ok() && *ttl > 0) {
        last_answer = now;
      } else if (ttl.ok() || now - last_answer > std::chrono::seconds(options_.lease_ttl_seconds)) {
        // etcd says the lease is gone, or it has not answered for longer than the lease lives.
        SetRegistered(false);
        etcd_->RevokeLease(lease_.load()).IgnoreError();  // if it still lives, let it go now
        Log(logger_, LogLevel::kWarn,
            fmt::format("cluster: node '{}' lost its lease ({}); registering again",
                        options_.node_name,
                        ttl.ok() ? "expired in etcd" : ttl.status().ToString()));
      }
    }
    if (!registered()) {
      Status s = Claim();
      if (s.ok()) {
        last_answer = std::chrono::steady_clock::now();
        Log(logger_, LogLevel::kInfo,
            fmt::format("cluster: node '{}' registered again", options_.node_name));
      }
    }
  }
}

bool Membership::WaitForStop(std::chrono::milliseconds period) {
  MutexLock lock(&mu_);
  const auto until = std::chrono::steady_clock::now() + period;
  while (!stop_ && cv_.WaitUntil(until)) {
  }
  return stop_;
}

void Membership::Stop() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.SignalAll();
  if (keeper_.joinable()) keeper_.join();
  if (registered()) {
    etcd_->RevokeLease(lease_.load()).IgnoreError();
    SetRegistered(false);
  }
}

}  // namespace grove::cluster
