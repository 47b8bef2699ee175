#pragma once

// Clang thread-safety annotations (-Wthread-safety). They document lock contracts in every
// compiler and are checked when the tree is built with clang.

#if defined(__clang__)
#define GROVE_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define GROVE_THREAD_ANNOTATION_(x)
#endif

#define CAPABILITY(x) GROVE_THREAD_ANNOTATION_(capability(x))
#define SCOPED_CAPABILITY GROVE_THREAD_ANNOTATION_(scoped_lockable)
#define GUARDED_BY(x) GROVE_THREAD_ANNOTATION_(guarded_by(x))
#define PT_GUARDED_BY(x) GROVE_THREAD_ANNOTATION_(pt_guarded_by(x))
#define ACQUIRED_BEFORE(...) GROVE_THREAD_ANNOTATION_(acquired_before(__VA_ARGS__))
#define REQUIRES(...) GROVE_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define REQUIRES_SHARED(...) GROVE_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
#define ACQUIRE(...) GROVE_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define ACQUIRE_SHARED(...) GROVE_THREAD_ANNOTATION_(acquire_shared_capability(__VA_ARGS__))
#define RELEASE(...) GROVE_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define RELEASE_SHARED(...) GROVE_THREAD_ANNOTATION_(release_shared_capability(__VA_ARGS__))
#define TRY_ACQUIRE(...) GROVE_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
#define EXCLUDES(...) GROVE_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#define NO_THREAD_SAFETY_ANALYSIS GROVE_THREAD_ANNOTATION_(no_thread_safety_analysis)
