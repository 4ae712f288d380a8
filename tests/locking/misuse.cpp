// Compiled by test_lock_discipline, never built: it must FAIL clang's -Wthread-safety, or the
// check that passes engine/dist proves nothing. Each function touches a guarded member the wrong way.
#include "core/guarded.h"

namespace {

class Book {
public:
    int read_without_the_lock() const { return count_; }  // no lock held
    void write_under_another_lock() {
        thresher::MutexLock lock(other_);
        ++count_;  // held: other_; guarded by: mutex_
    }

private:
    mutable thresher::Mutex mutex_, other_;
    int count_ THRESHER_GUARDED_BY(mutex_) = 0;
};

}  // namespace

int main() {
    Book b;
    b.write_under_another_lock();
    return b.read_without_the_lock();
}
