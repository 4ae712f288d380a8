#include "dist/masters/join_desk.h"

namespace thresher::dist {

namespace {

std::vector<std::uint8_t> refusal(std::uint64_t incarnation, std::string reason) {
    JoinReply r;
    r.kind = JoinReply::Kind::Refused;
    r.incarnation = incarnation;
    r.reason = std::move(reason);
    return pack_join_reply(r);
}

}  // namespace

JoinDesk::JoinDesk(int nodes) : served_(static_cast<std::size_t>(nodes)) {}

void JoinDesk::set_policy(bool mid_run, std::chrono::milliseconds wait) {
    MutexLock lock(mutex_);
    mid_run_ = mid_run;
    wait_ = wait;
}

std::chrono::milliseconds JoinDesk::start_wait() const {
    MutexLock lock(mutex_);
    return wait_;
}

JoinDesk::Decision JoinDesk::request(int node, std::uint64_t incarnation) {
    MutexLock lock(mutex_);
    Served& s = served_[static_cast<std::size_t>(node)];
    Decision d;
    if (incarnation < s.incarnation) {  // an earlier process's: nobody is waiting
        d.kind = Decision::Kind::Stale;
        return d;
    }
    if (incarnation == s.incarnation) {
        // Asked again: our answer was lost (a connection reset under it). Send the same answer,
        // or for a snapshot a fresh one after the next step.
        if (!s.answer.empty()) {
            d.kind = Decision::Kind::Answer;
            d.answer = s.answer;
            return d;
        }
        bool queued = false;
        for (const auto& q : requests_) queued = queued || (q.node == node && q.incarnation == s.incarnation);
        if (!queued) requests_.push_back({node, s.incarnation, true});
        return d;
    }
    std::string reason;
    if (finishing_)
        reason = "the run is finishing (the controller has stopped training); there is nothing left to join";
    else if (started_ && !mid_run_)
        reason = "joining a running parameter-averaging run is not supported (its averaging rounds would need the new "
                 "node in step); use gradient sharing, or start the whole run again";
    if (reason.empty()) {
        requests_.push_back({node, incarnation});
        return d;
    }
    s.incarnation = incarnation;
    s.answer = refusal(incarnation, std::move(reason));
    d.kind = Decision::Kind::Answer;
    d.answer = s.answer;
    return d;
}

std::vector<JoinDesk::Request> JoinDesk::take_requests() {
    MutexLock lock(mutex_);
    std::vector<Request> out;
    out.swap(requests_);
    return out;
}

void JoinDesk::begin(const std::map<int, std::uint64_t>& asked) {
    MutexLock lock(mutex_);
    started_ = true;
    for (const auto& [node, incarnation] : asked) served_[static_cast<std::size_t>(node)].incarnation = incarnation;
}

void JoinDesk::answered(int node, std::uint64_t incarnation, std::vector<std::uint8_t> answer) {
    MutexLock lock(mutex_);
    Served& s = served_[static_cast<std::size_t>(node)];
    s.incarnation = incarnation;
    s.answer = std::move(answer);
}

std::vector<JoinDesk::Request> JoinDesk::finish() {
    MutexLock lock(mutex_);
    finishing_ = true;
    std::vector<Request> out;
    out.swap(requests_);
    return out;
}

std::optional<bool> JoinDesk::serve_snapshot(const Request& q) {
    MutexLock lock(mutex_);
    Served& s = served_[static_cast<std::size_t>(q.node)];
    if (q.incarnation < s.incarnation || (q.incarnation == s.incarnation && !q.again)) return std::nullopt;
    const bool rejoin = q.again ? s.rejoin : s.incarnation != 0;
    s.incarnation = q.incarnation;
    s.rejoin = rejoin;
    s.answer.clear();  // a snapshot is taken afresh when asked again
    return rejoin;
}

void JoinDesk::reply_arrived(JoinReply reply) {
    MutexLock lock(mutex_);
    reply_ = std::move(reply);
}

std::optional<JoinReply> JoinDesk::take_reply(std::uint64_t me) {
    MutexLock lock(mutex_);
    if (!reply_ || reply_->incarnation != me) return std::nullopt;
    auto out = std::move(reply_);
    reply_.reset();
    return out;
}

}  // namespace thresher::dist
