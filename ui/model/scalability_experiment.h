// ScalabilityExperiment: runs one spec at several worker counts, one run after another, and
// collects each run's throughput and timings for scalability(). Counts vary the number of local
// nodes (one worker each: every worker then sends over the network, as on a cluster) or the
// workers of one node (threads sharing messages in memory).
#pragma once

#include <QJsonObject>
#include <QList>
#include <QObject>
#include <memory>

#include "launcher.h"
#include "run_metrics.h"
#include "run_spec.h"
#include "scalability.h"

namespace thresher::ui {

class ScalabilityExperiment : public QObject {
    Q_OBJECT
public:
    enum class Vary { Nodes, WorkersPerNode };

    explicit ScalabilityExperiment(launcher::LaunchOptions options = {}, QObject* parent = nullptr);
    ~ScalabilityExperiment() override;

    // The spec for one count (a local cluster, whatever `base` had).
    static launcher::RunSpec spec_for(const launcher::RunSpec& base, int count, Vary vary);

    void start(const launcher::RunSpec& base, QList<int> counts, Vary vary);
    void stop();
    bool running() const { return launcher_ != nullptr; }
    const QList<ScalePoint>& points() const { return points_; }

Q_SIGNALS:
    void runStarted(int workers, const launcher::RunSpec& spec);
    void event(const QJsonObject& event);
    void logLine(const QString& line);
    void pointReady(const thresher::ui::ScalePoint& point);
    // ok: every count ran to the end; else `summary` says which failed and why.
    void finished(bool ok, const QString& summary);

private:
    void start_next();
    void run_finished(int exit_code, const QString& summary);

    launcher::LaunchOptions options_;
    launcher::RunSpec base_;
    QList<int> counts_;
    Vary vary_ = Vary::Nodes;
    int index_ = 0;
    std::unique_ptr<launcher::Launcher> launcher_;
    RunMetrics metrics_;
    QList<ScalePoint> points_;
    bool stopped_ = false;
};

}  // namespace thresher::ui
