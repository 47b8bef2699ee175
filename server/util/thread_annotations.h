#pragma once

// Clang thread-safety annotations (-Wthread-safety; `make check-tsa` builds the tree with clang-14
// and -Werror=thread-safety). They document lock contracts in every compiler and are checked
// under clang. The GROVE_ prefix keeps them apart from abseil's unprefixed GUARDED_BY and
// friends, which gRPC's headers define: both can be included in one file.

#if defined(__clang__)
#define GROVE_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define GROVE_THREAD_ANNOTATION_(x)
#endif

#define GROVE_CAPABILITY(x) GROVE_THREAD_ANNOTATION_(capability(x))
#define GROVE_SCOPED_CAPABILITY GROVE_THREAD_ANNOTATION_(scoped_lockable)
#define GROVE_GUARDED_BY(x) GROVE_THREAD_ANNOTATION_(guarded_by(x))
#define GROVE_PT_GUARDED_BY(x) GROVE_THREAD_ANNOTATION_(pt_guarded_by(x))
#define GROVE_ACQUIRED_BEFORE(...) GROVE_THREAD_ANNOTATION_(acquired_before(__VA_ARGS__))
#define GROVE_ACQUIRED_AFTER(...) GROVE_THREAD_ANNOTATION_(acquired_after(__VA_ARGS__))
#define GROVE_REQUIRES(...) GROVE_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define GROVE_REQUIRES_SHARED(...) GROVE_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
#define GROVE_ACQUIRE(...) GROVE_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define GROVE_ACQUIRE_SHARED(...) GROVE_THREAD_ANNOTATION_(acquire_shared_capability(__VA_ARGS__))
#define GROVE_RELEASE(...) GROVE_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define GROVE_RELEASE_SHARED(...) GROVE_THREAD_ANNOTATION_(release_shared_capability(__VA_ARGS__))
#define GROVE_RELEASE_GENERIC(...) GROVE_THREAD_ANNOTATION_(release_generic_capability(__VA_ARGS__))
#define GROVE_TRY_ACQUIRE(...) GROVE_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
#define GROVE_TRY_ACQUIRE_SHARED(...) \
  GROVE_THREAD_ANNOTATION_(try_acquire_shared_capability(__VA_ARGS__))
#define GROVE_EXCLUDES(...) GROVE_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#define GROVE_ASSERT_CAPABILITY(x) GROVE_THREAD_ANNOTATION_(assert_capability(x))
#define GROVE_ASSERT_SHARED_CAPABILITY(x) GROVE_THREAD_ANNOTATION_(assert_shared_capability(x))
#define GROVE_RETURN_CAPABILITY(x) GROVE_THREAD_ANNOTATION_(lock_returned(x))
#define GROVE_NO_THREAD_SAFETY_ANALYSIS GROVE_THREAD_ANNOTATION_(no_thread_safety_analysis)
