// Runs one function per worker on its own thread and rethrows the first failure (Gloo's
// base_test pattern), so a failing QVERIFY-free check inside a worker still fails the test.
#pragma once

#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

inline void run_workers(int n, const std::function<void(int)>& fn) {
    std::mutex m;
    std::exception_ptr first;
    std::vector<std::thread> threads;
    for (int i = 0; i < n; ++i)
        threads.emplace_back([&, i] {
            try {
                fn(i);
            } catch (...) {
                std::lock_guard lock(m);
                if (!first) first = std::current_exception();
            }
        });
    for (auto& t : threads) t.join();
    if (first) std::rethrow_exception(first);
}
