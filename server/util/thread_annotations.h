#pragma once

// Clang thread-safety annotations (-Wthread-safety). They document lock contracts in every
// compiler and are checked when the tree is built with clang. Each macro is defined only if absent:
// abseil (pulled in by gRPC headers) defines the same names with the same meaning.

#if defined(__clang__)
#define GROVE_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define GROVE_THREAD_ANNOTATION_(x)
#endif

#ifndef CAPABILITY
#define CAPABILITY(x) GROVE_THREAD_ANNOTATION_(capability(x))
#endif
#ifndef SCOPED_CAPABILITY
#define SCOPED_CAPABILITY GROVE_THREAD_ANNOTATION_(scoped_lockable)
#endif
#ifndef GUARDED_BY
#define GUARDED_BY(x) GROVE_THREAD_ANNOTATION_(guarded_by(x))
#endif
#ifndef PT_GUARDED_BY
#define PT_GUARDED_BY(x) GROVE_THREAD_ANNOTATION_(pt_guarded_by(x))
#endif
#ifndef ACQUIRED_BEFORE
#define ACQUIRED_BEFORE(...) GROVE_THREAD_ANNOTATION_(acquired_before(__VA_ARGS__))
#endif
#ifndef REQUIRES
#define REQUIRES(...) GROVE_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#endif
#ifndef REQUIRES_SHARED
#define REQUIRES_SHARED(...) GROVE_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
#endif
#ifndef ACQUIRE
#define ACQUIRE(...) GROVE_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#endif
#ifndef ACQUIRE_SHARED
#define ACQUIRE_SHARED(...) GROVE_THREAD_ANNOTATION_(acquire_shared_capability(__VA_ARGS__))
#endif
#ifndef RELEASE
#define RELEASE(...) GROVE_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#endif
#ifndef RELEASE_SHARED
#define RELEASE_SHARED(...) GROVE_THREAD_ANNOTATION_(release_shared_capability(__VA_ARGS__))
#endif
#ifndef TRY_ACQUIRE
#define TRY_ACQUIRE(...) GROVE_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
#endif
#ifndef EXCLUDES
#define EXCLUDES(...) GROVE_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
#endif
#ifndef NO_THREAD_SAFETY_ANALYSIS
#define NO_THREAD_SAFETY_ANALYSIS GROVE_THREAD_ANNOTATION_(no_thread_safety_analysis)
#endif
