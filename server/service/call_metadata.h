#pragma once

// CallMetadata: what the handling of a call reads from its client's metadata and adds to its
// trailing metadata, whatever carries them. A unary call's are its ServerContext's
// (ContextMetadata). The checks that refuse a call (ownership, preconditions, not-applied marks)
// write through this interface, so that a call carried inside another one (a sub-request of a
// stream, which answers with its own status and metadata) can run the same code.
//
// Thread safety: one call's, used by the thread handling it.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <grpcpp/server_context.h>

#include "grove/v1/kv.pb.h"

namespace grove::service {

class CallMetadata {
 public:
  virtual ~CallMetadata() = default;
  // The client's value for `key` (the first, if sent more than once), or nullopt.
  virtual std::optional<std::string_view> Client(std::string_view key) const = 0;
  virtual void AddTrailer(const std::string& key, const std::string& value) = 0;

  // The client's value for `key` read as a decimal number; 0 when absent or not a number.
  uint64_t ClientNumber(std::string_view key) const;
};

// A unary or streaming call's own metadata.
class ContextMetadata final : public CallMetadata {
 public:
  explicit ContextMetadata(grpc::ServerContext* context) : context_(context) {}
  std::optional<std::string_view> Client(std::string_view key) const override;
  void AddTrailer(const std::string& key, const std::string& value) override;

 private:
  grpc::ServerContext* const context_;
};

// A sub-request of a Batch stream: the client metadata is the stream's; the trailers go into the
// sub-request's own status.
class SubRequestMetadata final : public CallMetadata {
 public:
  SubRequestMetadata(grpc::ServerContext* stream, v1::SubStatus* status)
      : stream_(stream), status_(status) {}
  std::optional<std::string_view> Client(std::string_view key) const override {
    return stream_.Client(key);
  }
  void AddTrailer(const std::string& key, const std::string& value) override {
    (*status_->mutable_metadata())[key] = value;
  }

 private:
  ContextMetadata stream_;  // read only
  v1::SubStatus* const status_;
};

}  // namespace grove::service
