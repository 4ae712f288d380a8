// The app's "Check hosts", off the GUI thread: one check of every host at a time (check_hosts of
// preflight.h), on a thread this object owns and joins, so the window that owns it never shares
// itself with a detached thread. Verdicts come back as a signal on this object's thread, with each
// host's key state structured (HostVerdict::host_key), so approving an unknown key is a check
// again with that fingerprint pinned, not a match on message text.
//
// Questions for the user (a key's passphrase) arrive from the SSH threads: they are put to
// `ask` on this object's thread while the asking thread waits; once the object is being
// destroyed they get no answer (nullopt) at once, so destruction never waits on a dialog. It
// waits for the check itself, which each host bounds (connect timeout, the check's budget).
#pragma once

#include <QObject>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "preflight.h"

namespace thresher::launcher::ssh {

class HostChecker : public QObject {
    Q_OBJECT
public:
    // `ask` runs on this object's thread (the GUI's: it may open a dialog).
    explicit HostChecker(AskSecret ask, QObject* parent = nullptr);
    ~HostChecker() override;

    // Starts checking every target; false (and nothing started) while a check runs. `approved`:
    // target index → the fingerprint the user approved for it (added to known_hosts when the host
    // still offers that very key, refused as NotApproved otherwise).
    bool check(std::vector<SshTarget> targets, int udp_port, std::map<int, std::string> approved = {},
               int timeout_s = 30);
    bool busy() const;

Q_SIGNALS:
    // The verdicts, in the targets' order, on this object's thread.
    void checked(const std::vector<thresher::launcher::ssh::HostVerdict>& verdicts);

private:
    struct Shared;  // what the checking threads may touch: questions, answers, shutdown
    std::optional<std::string> ask_from_worker(const std::string& prompt);

    AskSecret ask_;
    std::shared_ptr<Shared> shared_;
    std::thread thread_;
};

}  // namespace thresher::launcher::ssh
