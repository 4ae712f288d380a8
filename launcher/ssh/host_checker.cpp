#include "host_checker.h"

#include <QMetaObject>

#include <condition_variable>

namespace thresher::launcher::ssh {

struct HostChecker::Shared {
    std::mutex mutex;
    std::condition_variable answered;
    bool closing = false;
    bool running = false;
    long asked = 0;  // questions put to the user so far (their ids)
    std::map<long, std::optional<std::string>> answers;  // answered, not yet taken
};

HostChecker::HostChecker(AskSecret ask, QObject* parent)
    : QObject(parent), ask_(std::move(ask)), shared_(std::make_shared<Shared>()) {
    qRegisterMetaType<std::vector<HostVerdict>>("std::vector<thresher::launcher::ssh::HostVerdict>");
}

HostChecker::~HostChecker() {
    {
        std::lock_guard lock(shared_->mutex);
        shared_->closing = true;
    }
    shared_->answered.notify_all();
    if (thread_.joinable()) thread_.join();
}

bool HostChecker::busy() const {
    std::lock_guard lock(shared_->mutex);
    return shared_->running;
}

bool HostChecker::check(std::vector<SshTarget> targets, int udp_port, std::map<int, std::string> approved,
                        int timeout_s) {
    {
        std::lock_guard lock(shared_->mutex);
        if (shared_->running || shared_->closing) return false;
        shared_->running = true;
    }
    if (thread_.joinable()) thread_.join();  // the previous check, finished
    for (const auto& [index, fingerprint] : approved) {
        if (index < 0 || index >= static_cast<int>(targets.size()) || fingerprint.empty()) continue;
        targets[static_cast<std::size_t>(index)].accept_new_host_key = true;
        targets[static_cast<std::size_t>(index)].expected_host_key_fingerprint = fingerprint;
    }
    // The destructor joins this thread, so `this` outlives it; what it hands back goes through
    // queued calls, which run on this object's thread.
    thread_ = std::thread([this, shared = shared_, targets = std::move(targets), udp_port, timeout_s] {
        const AskSecret ask = [this](const std::string& prompt) { return ask_from_worker(prompt); };
        auto verdicts = check_hosts(targets, udp_port, ask, timeout_s);
        {
            std::lock_guard lock(shared->mutex);
            shared->running = false;
            if (shared->closing) return;
        }
        QMetaObject::invokeMethod(
            this, [this, verdicts = std::move(verdicts)] { Q_EMIT checked(verdicts); }, Qt::QueuedConnection);
    });
    return true;
}

std::optional<std::string> HostChecker::ask_from_worker(const std::string& prompt) {
    long id = 0;
    {
        std::lock_guard lock(shared_->mutex);
        if (shared_->closing || !ask_) return std::nullopt;
        id = ++shared_->asked;
    }
    // Put to the user on this object's thread; the SSH thread waits for the answer, or for the
    // object to close. One question at a time per host thread; several hosts may ask at once.
    QMetaObject::invokeMethod(
        this,
        [this, id, prompt] {
            std::optional<std::string> answer;
            bool closing = false;
            {
                std::lock_guard lock(shared_->mutex);
                closing = shared_->closing;
            }
            if (!closing) answer = ask_(prompt);
            {
                std::lock_guard lock(shared_->mutex);
                shared_->answers[id] = std::move(answer);
            }
            shared_->answered.notify_all();
        },
        Qt::QueuedConnection);
    std::unique_lock lock(shared_->mutex);
    shared_->answered.wait(lock, [&] { return shared_->closing || shared_->answers.count(id) > 0; });
    if (shared_->answers.count(id) == 0) return std::nullopt;
    auto answer = std::move(shared_->answers[id]);
    shared_->answers.erase(id);
    return answer;
}

}  // namespace thresher::launcher::ssh
