// The run lifecycle shared by every launcher (launcher.h: class Launcher).
#include <QMetaObject>

#include "launcher.h"

namespace thresher::launcher {

void Launcher::start(const RunSpec& spec) {
    if (active_) {
        Q_EMIT logLine("[launcher] start() ignored: a run is already going");
        return;
    }
    failure_.reset();
    stopping_ = stop_requested_ = false;
    active_ = true;
    clock_.start();
    launch(spec);
}

void Launcher::stop() {
    if (!active_) return;
    if (!failure_) stop_requested_ = true;
    const bool now = stopping_;  // a second stop() does not wait out the grace period
    stopping_ = true;
    halt(now);
}

bool Launcher::record_failure(int exit_code, const QString& summary) {
    if (failure_) return false;
    failure_ = Failure{exit_code, summary};
    return true;
}

QString Launcher::elapsed_s() const { return QString::number(clock_.elapsed() / 1000.0, 'f', 1); }

void Launcher::halt_after_failure(bool now) {
    if (stopping_ || !active_) return;
    stopping_ = true;
    halt(now);
}

void Launcher::finish(int code, const QString& summary) {
    if (!active_) return;
    active_ = false;
    QMetaObject::invokeMethod(this, [this, code, summary] { Q_EMIT finished(code, summary); }, Qt::QueuedConnection);
}

void Launcher::conclude(const QString& done, const QString& stopped, const QString& others_note) {
    if (failure_)
        finish(failure_->exit_code, failure_->summary + (stopping_ && !others_note.isEmpty() ? "\n" + others_note : QString()));
    else if (stop_requested_)
        finish(kExitStopped, stopped);
    else
        finish(0, done);
}

void Launcher::fail_now(int exit_code, const QString& summary) {
    record_failure(exit_code, summary);
    conclude({}, {});
}

}  // namespace thresher::launcher
