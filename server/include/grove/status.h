#pragma once

// Status and StatusOr<T>: the engine's only error channel. No exception crosses an engine boundary.
//
// A Status is either OK or carries a code and a message. The codes mirror gRPC's so that the
// service layer maps them one to one; the engine never includes gRPC.
//
// Thread safety: a Status is a value; distinct objects may be used from different threads freely.

#include <cassert>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace grove {

enum class StatusCode : int {
  kOk = 0,
  kInvalidArgument = 3,     // the request itself is wrong; retrying it cannot help
  kDeadlineExceeded = 4,    // a caller's deadline passed before the work finished
  kNotFound = 5,            // a named thing (file, key inside the engine) does not exist
  kAlreadyExists = 6,       // e.g. a data directory already holds a database
  kPermissionDenied = 7,    // the filesystem refused access
  kResourceExhausted = 8,   // a configured limit, or the disk is full (ENOSPC)
  kFailedPrecondition = 9,  // the state does not allow it: locked directory, wrong variant on disk
  kAborted = 10,            // the operation was interrupted and can be retried
  kUnimplemented = 12,      // the variant does not support the operation
  kInternal = 13,           // an invariant broke; also EIO and failed fsync (fail-stop)
  kUnavailable = 14,        // starting, draining, or closed
  kDataLoss = 15,           // a checksum, own-id or epoch check failed: data on disk is damaged
};

// Returns the canonical upper-snake name of `code`, e.g. "DATA_LOSS".
std::string_view StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // OK
  Status(StatusCode code, std::string_view message);

  static Status Ok() { return Status(); }
  static Status InvalidArgument(std::string_view m) { return {StatusCode::kInvalidArgument, m}; }
  static Status NotFound(std::string_view m) { return {StatusCode::kNotFound, m}; }
  static Status AlreadyExists(std::string_view m) { return {StatusCode::kAlreadyExists, m}; }
  static Status PermissionDenied(std::string_view m) { return {StatusCode::kPermissionDenied, m}; }
  static Status ResourceExhausted(std::string_view m) {
    return {StatusCode::kResourceExhausted, m};
  }
  static Status FailedPrecondition(std::string_view m) {
    return {StatusCode::kFailedPrecondition, m};
  }
  static Status Aborted(std::string_view m) { return {StatusCode::kAborted, m}; }
  static Status Unimplemented(std::string_view m) { return {StatusCode::kUnimplemented, m}; }
  static Status Internal(std::string_view m) { return {StatusCode::kInternal, m}; }
  static Status Unavailable(std::string_view m) { return {StatusCode::kUnavailable, m}; }
  static Status DataLoss(std::string_view m) { return {StatusCode::kDataLoss, m}; }
  static Status DeadlineExceeded(std::string_view m) { return {StatusCode::kDeadlineExceeded, m}; }
  // Maps an errno from a failed system call. ENOSPC/EDQUOT become kResourceExhausted, EACCES/EPERM
  // kPermissionDenied, ENOENT kNotFound, everything else kInternal. `context` names the operation
  // and the file.
  static Status FromErrno(int err, std::string_view context);

  bool ok() const { return rep_ == nullptr; }
  StatusCode code() const { return rep_ ? rep_->code : StatusCode::kOk; }
  std::string_view message() const { return rep_ ? std::string_view(rep_->message) : ""; }

  bool IsNotFound() const { return code() == StatusCode::kNotFound; }
  bool IsDataLoss() const { return code() == StatusCode::kDataLoss; }
  bool IsResourceExhausted() const { return code() == StatusCode::kResourceExhausted; }
  bool IsUnavailable() const { return code() == StatusCode::kUnavailable; }

  // "DATA_LOSS: page 12: checksum mismatch"
  std::string ToString() const;

  // Returns a copy whose message is "<prefix>: <message>"; OK stays OK.
  Status WithContext(std::string_view prefix) const;

  // Explicitly drops a status the caller has decided not to act on.
  void IgnoreError() const {}

  Status(const Status& other) : rep_(other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr) {}
  Status& operator=(const Status& other) {
    if (this != &other) rep_ = other.rep_ ? std::make_unique<Rep>(*other.rep_) : nullptr;
    return *this;
  }
  Status(Status&&) noexcept = default;
  Status& operator=(Status&&) noexcept = default;

 private:
  struct Rep {
    StatusCode code;
    std::string message;
  };
  std::unique_ptr<Rep> rep_;  // null means OK: the common path allocates nothing
};

// A value or a non-OK Status.
template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    assert(!status_.ok() && "StatusOr constructed from an OK status without a value");
    if (status_.ok()) status_ = Status::Internal("StatusOr constructed from OK without a value");
  }
  StatusOr(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design

  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }

  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  Status status_;
  std::optional<T> value_;
};

}  // namespace grove

// Evaluates `expr` (a Status); returns it from the enclosing function when it is not OK.
#define GROVE_RETURN_IF_ERROR(expr)                        \
  do {                                                     \
    ::grove::Status grove_status_tmp_ = (expr);            \
    if (!grove_status_tmp_.ok()) return grove_status_tmp_; \
  } while (0)

#define GROVE_CONCAT_INNER_(a, b) a##b
#define GROVE_CONCAT_(a, b) GROVE_CONCAT_INNER_(a, b)

// `GROVE_ASSIGN_OR_RETURN(auto x, Foo());` declares x from a StatusOr or returns its error.
#define GROVE_ASSIGN_OR_RETURN(lhs, expr) \
  GROVE_ASSIGN_OR_RETURN_IMPL_(GROVE_CONCAT_(grove_statusor_, __LINE__), lhs, expr)
#define GROVE_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                                 \
  if (!tmp.ok()) return tmp.status();                \
  lhs = std::move(tmp).value()
