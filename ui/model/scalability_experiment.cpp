#include "scalability_experiment.h"

#include <algorithm>

namespace thresher::ui {

ScalabilityExperiment::ScalabilityExperiment(launcher::LaunchOptions options, QObject* parent)
    : QObject(parent), options_(std::move(options)) {}

ScalabilityExperiment::~ScalabilityExperiment() = default;

launcher::RunSpec ScalabilityExperiment::spec_for(const launcher::RunSpec& base, int count, Vary vary) {
    launcher::RunSpec spec = base;
    spec.cluster = {};
    spec.cluster.kind = launcher::ClusterSettings::Kind::Local;
    spec.cluster.nodes = vary == Vary::Nodes ? count : 1;
    spec.cluster.workers_per_node = vary == Vary::Nodes ? 1 : count;
    // One worker alone has nobody to share with; its run is the baseline of the same model.
    if (count == 1 && spec.training.strategy != "single") spec.training.strategy = "single";
    spec.name = base.name + QString("-x%1").arg(count);
    return spec;
}

void ScalabilityExperiment::start(const launcher::RunSpec& base, QList<int> counts, Vary vary) {
    if (running()) return;
    std::sort(counts.begin(), counts.end());
    counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
    base_ = base;
    counts_ = counts;
    vary_ = vary;
    index_ = 0;
    points_.clear();
    stopped_ = false;
    start_next();
}

void ScalabilityExperiment::stop() {
    stopped_ = true;
    if (launcher_) launcher_->stop();
}

void ScalabilityExperiment::start_next() {
    if (index_ >= counts_.size()) {
        Q_EMIT finished(true, QString("%1 runs finished").arg(points_.size()));
        return;
    }
    const int count = counts_[index_];
    const auto spec = spec_for(base_, count, vary_);
    metrics_.clear();
    try {
        launcher_ = launcher::create_launcher(spec, options_);
    } catch (const launcher::LaunchError& e) {
        Q_EMIT finished(false, QString::fromUtf8(e.what()));
        return;
    }
    connect(launcher_.get(), &launcher::Launcher::event, this, [this](const QJsonObject& e) {
        metrics_.add(e);
        Q_EMIT event(e);
    });
    connect(launcher_.get(), &launcher::Launcher::logLine, this, &ScalabilityExperiment::logLine);
    connect(launcher_.get(), &launcher::Launcher::finished, this, &ScalabilityExperiment::run_finished,
            Qt::QueuedConnection);
    Q_EMIT runStarted(count, spec);
    launcher_->start(spec);
}

void ScalabilityExperiment::run_finished(int exit_code, const QString& summary) {
    launcher_.reset();
    const int count = counts_[index_];
    if (exit_code != 0 || stopped_) {
        Q_EMIT finished(false, stopped_ ? QString("stopped during the %1-worker run").arg(count)
                                        : QString("the %1-worker run failed: %2").arg(count).arg(summary));
        return;
    }
    ScalePoint p;
    p.workers = count;
    p.samples_per_s = metrics_.samples_per_s().value_or(0);
    p.iter_ms = metrics_.mean_iter_ms();
    p.encode_ms = metrics_.mean_encode_ms();
    p.decode_ms = metrics_.decode_ms_per_message();
    points_.append(p);
    Q_EMIT pointReady(p);
    ++index_;
    start_next();
}

}  // namespace thresher::ui
