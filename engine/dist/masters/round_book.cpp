#include "dist/masters/round_book.h"

namespace thresher::dist {

std::optional<std::vector<std::uint8_t>> RoundBook::add_sums(std::uint64_t round, Message&& sums) {
    MutexLock lock(mutex_);
    if (auto it = finished_.find(round); it != finished_.end()) return it->second;
    const int node = sums.sender;
    sums_[round].insert_or_assign(node, std::move(sums));
    return std::nullopt;
}

bool RoundBook::has_sums(std::uint64_t round, int node) const {
    MutexLock lock(mutex_);
    const auto it = sums_.find(round);
    return it != sums_.end() && it->second.count(node);
}

void RoundBook::add_result(std::uint64_t round, Message&& result) {
    MutexLock lock(mutex_);
    results_.emplace(round, std::move(result));
}

bool RoundBook::has_result(std::uint64_t round) const {
    MutexLock lock(mutex_);
    return results_.count(round) != 0;
}

std::vector<std::uint8_t> RoundBook::take_result(std::uint64_t round) {
    MutexLock lock(mutex_);
    // Late copies (resends, duplicates) of this round's acknowledgements and results are of no
    // more use: drop them with any of earlier rounds.
    acks_.erase(acks_.begin(), acks_.upper_bound(round));
    std::vector<std::uint8_t> out;
    if (auto it = results_.find(round); it != results_.end()) out = std::move(it->second.payload);
    results_.erase(results_.begin(), results_.upper_bound(round));
    return out;
}

void RoundBook::acknowledged(std::uint64_t round, int node) {
    MutexLock lock(mutex_);
    acks_[round] = node;
}

void RoundBook::forget_ack(std::uint64_t round) {
    MutexLock lock(mutex_);
    acks_.erase(round);
}

std::optional<int> RoundBook::acknowledged_by(std::uint64_t round) const {
    MutexLock lock(mutex_);
    const auto it = acks_.find(round);
    if (it == acks_.end()) return std::nullopt;
    return it->second;
}

void RoundBook::finished(std::uint64_t round, std::vector<std::uint8_t> result) {
    MutexLock lock(mutex_);
    finished_[round] = std::move(result);
    while (finished_.size() > kKeep) finished_.erase(finished_.begin());
}

void RoundBook::asked(int node, std::uint64_t round) {
    MutexLock lock(mutex_);
    if (finished_.count(round) && asks_.size() < kMaxAsks) asks_.emplace_back(node, round);
}

std::vector<std::pair<int, std::vector<std::uint8_t>>> RoundBook::take_asks() {
    MutexLock lock(mutex_);
    std::vector<std::pair<int, std::vector<std::uint8_t>>> out;
    for (const auto& [node, round] : asks_)
        if (auto it = finished_.find(round); it != finished_.end()) out.emplace_back(node, it->second);
    asks_.clear();
    return out;
}

void RoundBook::expect_confirmations(std::uint64_t round, std::vector<int> nodes) {
    MutexLock lock(mutex_);
    confirm_round_ = round;
    unconfirmed_ = std::move(nodes);
}

void RoundBook::confirmed(std::uint64_t round, int node) {
    MutexLock lock(mutex_);
    if (round == confirm_round_) std::erase(unconfirmed_, node);
}

void RoundBook::forget_confirmation(int node) {
    MutexLock lock(mutex_);
    std::erase(unconfirmed_, node);
}

std::vector<int> RoundBook::unconfirmed() const {
    MutexLock lock(mutex_);
    return unconfirmed_;
}

}  // namespace thresher::dist
