// The delay line of link_emulator.h on one Asio io_context: packets admitted by the LinkShaper
// wait here, on one timer, until their arrival time, then their write runs on the io_context's
// thread. Kept apart from link_emulator.h so that Boost stays out of the transports' headers.
//
// Thread-safe: submit() may be called from any thread; writes run in arrival order.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "dist/net/link_emulator.h"

namespace thresher::dist {

class LinkDelayLine {
public:
    LinkDelayLine(boost::asio::io_context& io, std::shared_ptr<LinkShaper> shaper);

    // Hands a packet of `bytes` to the link; `write` runs on the io_context when it arrives.
    // Returns false (and never runs `write`) when the link lost it (lossy packets only).
    bool submit(std::size_t bytes, bool lossy, std::function<void()> write);

    LinkShaper& shaper() { return *shaper_; }

private:
    void arm();  // io thread
    void fire(const boost::system::error_code& ec);

    boost::asio::io_context& io_;
    std::shared_ptr<LinkShaper> shaper_;
    boost::asio::steady_timer timer_;
    std::mutex mutex_;
    // Keyed by arrival time and submission order: writes leave in arrival order even when two
    // threads submit at once.
    std::map<std::pair<LinkShaper::Clock::time_point, std::uint64_t>, std::function<void()>> queue_;
    std::uint64_t next_ = 0;
    bool armed_ = false;  // io thread
};

}  // namespace thresher::dist
