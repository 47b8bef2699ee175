#pragma once

// Annotated wrappers over std::mutex, std::shared_mutex and std::condition_variable, so that
// clang checks GROVE_GUARDED_BY, GROVE_REQUIRES and GROVE_EXCLUDES (`make check-tsa`). Every lock
// in server/ is one of these; behaviour is exactly the standard library's.
//
//   Mutex        + MutexLock (scoped), CondVar (waits on a Mutex held by the caller)
//   SharedMutex  + WriterLock (scoped, exclusive), ReaderLock (scoped, shared)

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>

#include "util/thread_annotations.h"

namespace grove {

class GROVE_CAPABILITY("mutex") Mutex {
 public:
  void Lock() GROVE_ACQUIRE() { mu_.lock(); }
  void Unlock() GROVE_RELEASE() { mu_.unlock(); }
  bool TryLock() GROVE_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  // Tells the analysis the caller holds this mutex where it cannot see so (a callback run under
  // the lock). Checks nothing at run time.
  void AssertHeld() const GROVE_ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

class GROVE_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) GROVE_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() GROVE_RELEASE() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// Condition variable bound to one Mutex. Wait* must be called with that mutex held; they return
// with it held. (Not annotated: clang cannot tie the bound mutex to the caller's lock
// expression.)
class CondVar {
 public:
  explicit CondVar(Mutex* mu) : mu_(mu) {}
  void Wait() {
    std::unique_lock<std::mutex> lock(mu_->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // Returns false on timeout.
  template <typename Rep, typename Period>
  bool WaitFor(std::chrono::duration<Rep, Period> d) {
    std::unique_lock<std::mutex> lock(mu_->mu_, std::adopt_lock);
    const bool signalled = cv_.wait_for(lock, d) == std::cv_status::no_timeout;
    lock.release();
    return signalled;
  }
  // Returns false when `deadline` passed first.
  template <typename Clock, typename Duration>
  bool WaitUntil(std::chrono::time_point<Clock, Duration> deadline) {
    std::unique_lock<std::mutex> lock(mu_->mu_, std::adopt_lock);
    const bool signalled = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return signalled;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  Mutex* const mu_;
  std::condition_variable cv_;
};

class GROVE_CAPABILITY("shared_mutex") SharedMutex {
 public:
  void Lock() GROVE_ACQUIRE() { mu_.lock(); }
  void Unlock() GROVE_RELEASE() { mu_.unlock(); }
  bool TryLock() GROVE_TRY_ACQUIRE(true) { return mu_.try_lock(); }
  void LockShared() GROVE_ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() GROVE_RELEASE_SHARED() { mu_.unlock_shared(); }
  bool TryLockShared() GROVE_TRY_ACQUIRE_SHARED(true) { return mu_.try_lock_shared(); }
  // As Mutex::AssertHeld, for a holder of either kind.
  void AssertHeld() const GROVE_ASSERT_CAPABILITY(this) {}
  void AssertReaderHeld() const GROVE_ASSERT_SHARED_CAPABILITY(this) {}

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex exclusively for its scope.
class GROVE_SCOPED_CAPABILITY WriterLock {
 public:
  explicit WriterLock(SharedMutex* mu) GROVE_ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterLock() GROVE_RELEASE() { mu_->Unlock(); }
  WriterLock(const WriterLock&) = delete;
  WriterLock& operator=(const WriterLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// Holds a SharedMutex shared for its scope.
class GROVE_SCOPED_CAPABILITY ReaderLock {
 public:
  explicit ReaderLock(SharedMutex* mu) GROVE_ACQUIRE_SHARED(mu) : mu_(mu) { mu_->LockShared(); }
  ~ReaderLock() GROVE_RELEASE() { mu_->UnlockShared(); }
  ReaderLock(const ReaderLock&) = delete;
  ReaderLock& operator=(const ReaderLock&) = delete;

 private:
  SharedMutex* const mu_;
};

}  // namespace grove
