// See link_emulator.h and link_delay_line.h.
#include "dist/net/link_emulator.h"

#include <algorithm>
#include <cctype>
#include <boost/asio/post.hpp>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "dist/net/link_delay_line.h"

namespace thresher::dist {

namespace {

std::string lower(std::string s) {
    for (auto& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    return s;
}

// Splits "1.5gbit" into 1.5 and "gbit"; false when there is no leading number.
bool split_number(const std::string& text, double& value, std::string& unit) {
    std::size_t used = 0;
    try {
        value = std::stod(text, &used);
    } catch (const std::exception&) {
        return false;
    }
    unit = lower(text.substr(used));
    return std::isfinite(value);
}

std::string trim(const std::string& s) {
    const auto b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

std::string LinkSpec::describe() const {
    if (!active()) return "unlimited";
    std::ostringstream out;
    out.precision(4);
    if (rate_bits_per_s <= 0) out << "unlimited rate";
    else if (rate_bits_per_s >= 1e9) out << rate_bits_per_s / 1e9 << " Gbit/s";
    else if (rate_bits_per_s >= 1e6) out << rate_bits_per_s / 1e6 << " Mbit/s";
    else out << rate_bits_per_s / 1e3 << " kbit/s";
    out << ", " << delay.count() / 1000.0 << " ms";
    if (loss > 0) out << ", " << loss * 100 << "% loss";
    return out.str();
}

double parse_link_rate(const std::string& raw) {
    const std::string text = trim(raw);
    const auto bad = [&](const std::string& why) {
        return ConfigError("--link-rate " + raw + ": " + why +
                           " (expected e.g. 1gbit, 100mbit, 250kbit, a number of bit/s, or none)");
    };
    if (text.empty()) throw bad("empty");
    if (lower(text) == "none") return 0;
    double value = 0;
    std::string unit;
    if (!split_number(text, value, unit)) throw bad("not a number");
    double scale = 0;
    if (unit.empty() || unit == "bit") scale = 1;
    else if (unit == "kbit") scale = 1e3;
    else if (unit == "mbit") scale = 1e6;
    else if (unit == "gbit") scale = 1e9;
    else throw bad("unknown unit '" + unit + "'");
    if (value < 0) throw bad("negative");
    const double rate = value * scale;
    if (rate != 0 && (rate < 8000 || rate > 1e12)) throw bad("outside 8kbit..1000gbit");
    return rate;
}

std::chrono::microseconds parse_link_delay(const std::string& raw) {
    const std::string text = trim(raw);
    const auto bad = [&](const std::string& why) {
        return ConfigError("--link-delay " + raw + ": " + why + " (expected e.g. 2ms, 500us, 0.01s)");
    };
    double value = 0;
    std::string unit;
    if (text.empty() || !split_number(text, value, unit)) throw bad("not a number");
    double us_per_unit = 0;
    if (unit.empty() || unit == "ms") us_per_unit = 1e3;
    else if (unit == "us") us_per_unit = 1;
    else if (unit == "s") us_per_unit = 1e6;
    else throw bad("unknown unit '" + unit + "'");
    const double us = value * us_per_unit;
    if (us < 0 || us > 10e6) throw bad("outside 0..10 s");
    return std::chrono::microseconds(static_cast<long long>(std::llround(us)));
}

double parse_link_loss(const std::string& raw) {
    const std::string text = trim(raw);
    const auto bad = [&](const std::string& why) {
        return ConfigError("--link-loss " + raw + ": " + why + " (expected a probability like 0.01, or 1%)");
    };
    double value = 0;
    std::string unit;
    if (text.empty() || !split_number(text, value, unit)) throw bad("not a number");
    if (unit == "%") value /= 100;
    else if (!unit.empty()) throw bad("unexpected '" + unit + "'");
    if (!(value >= 0 && value < 1)) throw bad("outside [0, 1)");
    return value;
}

LinkShaper::LinkShaper(LinkSpec spec) : spec_(spec), rng_(spec.seed) {}

std::optional<LinkShaper::Clock::time_point> LinkShaper::admit(std::size_t bytes, bool lossy, Clock::time_point now) {
    std::lock_guard lock(mutex_);
    if (lossy && spec_.loss > 0 && std::uniform_real_distribution<double>(0, 1)(rng_) < spec_.loss) {
        ++lost_;
        return std::nullopt;
    }
    // Two threads may hand over out of clock order: the later of the two bounds the link.
    auto departs = std::max(now, departs_);
    if (spec_.rate_bits_per_s > 0) {
        if (lossy && departs - now > spec_.max_queue) {
            ++lost_;
            return std::nullopt;
        }
        departs += std::chrono::duration_cast<Clock::duration>(
            std::chrono::duration<double>(8.0 * static_cast<double>(bytes) / spec_.rate_bits_per_s));
    }
    departs_ = departs;
    bytes_ += bytes;
    return departs + spec_.delay;
}

LinkShaper::Clock::duration LinkShaper::backlog(Clock::time_point now) const {
    std::lock_guard lock(mutex_);
    return departs_ > now ? departs_ - now : Clock::duration::zero();
}

std::uint64_t LinkShaper::lost() const {
    std::lock_guard lock(mutex_);
    return lost_;
}

std::uint64_t LinkShaper::bytes_sent() const {
    std::lock_guard lock(mutex_);
    return bytes_;
}

LinkDelayLine::LinkDelayLine(boost::asio::io_context& io, std::shared_ptr<LinkShaper> shaper)
    : io_(io), shaper_(std::move(shaper)), timer_(io) {}

bool LinkDelayLine::submit(std::size_t bytes, bool lossy, std::function<void()> write) {
    const auto arrives = shaper_->admit(bytes, lossy);
    if (!arrives) return false;
    {
        std::lock_guard lock(mutex_);
        queue_.emplace(std::make_pair(*arrives, next_++), std::move(write));
    }
    boost::asio::post(io_, [this] { arm(); });
    return true;
}

void LinkDelayLine::arm() {
    LinkShaper::Clock::time_point first;
    {
        std::lock_guard lock(mutex_);
        if (queue_.empty()) return;
        first = queue_.begin()->first.first;
    }
    // Re-armed whenever something is queued: an earlier arrival than the armed one (possible only
    // across threads) is then not kept waiting behind it.
    if (armed_ && timer_.expiry() <= first) return;
    armed_ = true;
    timer_.expires_at(first);
    timer_.async_wait([this](const boost::system::error_code& ec) { fire(ec); });
}

void LinkDelayLine::fire(const boost::system::error_code& ec) {
    if (ec == boost::asio::error::operation_aborted) return;  // re-armed, or shutting down
    armed_ = false;
    for (;;) {
        std::function<void()> write;
        {
            std::lock_guard lock(mutex_);
            if (queue_.empty() || queue_.begin()->first.first > LinkShaper::Clock::now()) break;
            write = std::move(queue_.begin()->second);
            queue_.erase(queue_.begin());
        }
        write();
    }
    arm();
}

}  // namespace thresher::dist
