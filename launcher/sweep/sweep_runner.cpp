#include "sweep_runner.h"

#include <QDir>
#include <QTimer>

#include "sweep_report.h"

namespace thresher::launcher::sweep {

SweepRunner::SweepRunner(launcher::LaunchOptions options, QObject* parent)
    : QObject(parent), options_(std::move(options)), results_(std::make_unique<SweepResults>(SweepSpec{})) {}

SweepRunner::~SweepRunner() = default;

void SweepRunner::start(const SweepSpec& sweep, const QString& out_dir) {
    if (running_) return;
    auto results = std::make_unique<SweepResults>(sweep);
    results->load(out_dir);  // throws before anything changes
    results_ = std::move(results);
    out_dir_ = out_dir;
    queue_.clear();
    next_ = skipped_ = failed_ = ran_ = 0;
    stopped_ = false;
    save_error_.clear();
    // Repeat by repeat (every point once, then again): a shared machine's load drifts over
    // minutes, and back-to-back repeats of one point would all see the same stretch of it, so
    // points would differ by when they ran; this way each point's mean samples the whole sweep
    // and its spread shows the drift.
    for (int r = 0; r < sweep.repeats; ++r)
        for (const auto& p : sweep.points) {
            if (results_->done(p.index, r))
                ++skipped_;
            else
                queue_.append({p.index, r});
        }
    running_ = true;
    QTimer::singleShot(0, this, &SweepRunner::start_next);
}

void SweepRunner::stop() {
    if (!running_) return;
    stopped_ = true;
    if (launcher_) launcher_->stop();
}

void SweepRunner::start_next() {
    if (stopped_) {
        finish(false, "stopped");
        return;
    }
    if (next_ >= queue_.size()) {
        save();
        const QString where = QDir(out_dir_).filePath("report.html");
        QString s = QString("%1 run(s) finished, %2 failed, %3 already done; results and report in %4")
                        .arg(ran_ - failed_).arg(failed_).arg(skipped_).arg(QDir::toNativeSeparators(out_dir_));
        if (!save_error_.isEmpty()) s += "; " + save_error_;
        finish(failed_ == 0 && save_error_.isEmpty(), s);
        return;
    }
    const auto [point_index, repeat] = queue_[next_];
    const SweepPoint& point = results_->sweep().points[point_index];
    summary_.clear();
    try {
        launcher_ = launcher::create_launcher(point.spec, options_);
    } catch (const launcher::LaunchError& e) {
        finish(false, QString("point %1 (%2): %3").arg(point_index + 1).arg(point.label, QString::fromUtf8(e.what())));
        return;
    }
    connect(launcher_.get(), &launcher::Launcher::event, this, [this](const QJsonObject& e) {
        summary_.add(e);
        Q_EMIT event(e);
    });
    connect(launcher_.get(), &launcher::Launcher::logLine, this, &SweepRunner::logLine);
    connect(launcher_.get(), &launcher::Launcher::finished, this, &SweepRunner::run_finished, Qt::QueuedConnection);
    Q_EMIT runStarted(next_ + 1, int(queue_.size()), point, repeat, point.spec);
    launcher_->start(point.spec);
}

void SweepRunner::run_finished(int exit_code, const QString& summary) {
    launcher_.reset();
    const auto [point_index, repeat] = queue_[next_];
    if (stopped_) {
        finish(false, QString("stopped during point %1 (%2); %3 run(s) finished before; run the sweep again to resume")
                          .arg(point_index + 1).arg(results_->sweep().points[point_index].label).arg(ran_ - failed_));
        return;
    }
    const SweepRow row = SweepRow::from(results_->sweep().points[point_index], repeat, summary_, exit_code, summary);
    results_->add(row);
    ++ran_;
    if (row.status != "ok") ++failed_;
    save();
    Q_EMIT rowReady(row);
    ++next_;
    start_next();
}

void SweepRunner::save() {
    try {
        results_->save(out_dir_);
        write_html_report(*results_, out_dir_);
    } catch (const launcher::SpecError& e) {
        save_error_ = QString::fromUtf8(e.what());
        Q_EMIT logLine("[sweep] " + save_error_);
    }
}

void SweepRunner::finish(bool ok, const QString& summary) {
    running_ = false;
    Q_EMIT finished(ok, summary);
}

}  // namespace thresher::launcher::sweep
