// UnixSignals: SIGINT, SIGTERM and SIGHUP delivered as a Qt signal in the event loop, so a
// Ctrl-C stops the run cleanly (TERM, grace, KILL) instead of killing the launcher mid-way. The
// handler only writes the signal number to a socket pair (async-signal-safe); a QSocketNotifier
// reads it in the main thread (Qt's documented pattern for Unix signals).
#pragma once

#include <QObject>
#include <QSocketNotifier>
#include <initializer_list>
#include <memory>
#include <vector>

namespace thresher::launcher::cli {

class UnixSignals : public QObject {
    Q_OBJECT
public:
    // Installs handlers for the signals in `which`; only one UnixSignals may exist at a time.
    explicit UnixSignals(std::initializer_list<int> which, QObject* parent = nullptr);
    ~UnixSignals() override;

Q_SIGNALS:
    void received(int signal);

private:
    std::unique_ptr<QSocketNotifier> notifier_;
    std::vector<int> signals_;
};

}  // namespace thresher::launcher::cli
