// Mutex, MutexLock and GUARDED_BY: std::mutex with clang's thread-safety annotations, so that
// "this member is only ever touched under that lock" is checked by the compiler, not by review.
// A member declared `T x THRESHER_GUARDED_BY(mutex_);` may be read or written only where mutex_ is
// held (a MutexLock in scope, or a function marked THRESHER_REQUIRES(mutex_)); clang's
// -Wthread-safety reports every other access. GCC ignores the annotations; the check runs in the
// suite (tests/locking: test_lock_discipline compiles engine/dist with clang and -Werror).
//
// Waits on a condition variable need std::unique_lock<std::mutex> (core/clock.h), which clang
// cannot follow: state waited on that way keeps a plain std::mutex, with one lock per class.
#pragma once

#include <mutex>

#if defined(__clang__)
#define THRESHER_TSA(x) __attribute__((x))
#else
#define THRESHER_TSA(x)
#endif

#define THRESHER_CAPABILITY(x) THRESHER_TSA(capability(x))
#define THRESHER_SCOPED_CAPABILITY THRESHER_TSA(scoped_lockable)
#define THRESHER_GUARDED_BY(x) THRESHER_TSA(guarded_by(x))
#define THRESHER_PT_GUARDED_BY(x) THRESHER_TSA(pt_guarded_by(x))
#define THRESHER_REQUIRES(...) THRESHER_TSA(requires_capability(__VA_ARGS__))
#define THRESHER_EXCLUDES(...) THRESHER_TSA(locks_excluded(__VA_ARGS__))
#define THRESHER_ACQUIRE(...) THRESHER_TSA(acquire_capability(__VA_ARGS__))
#define THRESHER_RELEASE(...) THRESHER_TSA(release_capability(__VA_ARGS__))

namespace thresher {

class THRESHER_CAPABILITY("mutex") Mutex {
public:
    void lock() THRESHER_ACQUIRE() { m_.lock(); }
    void unlock() THRESHER_RELEASE() { m_.unlock(); }

private:
    std::mutex m_;
};

// Holds a Mutex for its scope (std::lock_guard, annotated).
class THRESHER_SCOPED_CAPABILITY MutexLock {
public:
    explicit MutexLock(Mutex& m) THRESHER_ACQUIRE(m) : m_(m) { m_.lock(); }
    ~MutexLock() THRESHER_RELEASE() { m_.unlock(); }
    MutexLock(const MutexLock&) = delete;
    MutexLock& operator=(const MutexLock&) = delete;

private:
    Mutex& m_;
};

}  // namespace thresher
