// create_launcher: the launcher a spec's cluster needs. Local clusters are built in; the SSH and
// Slurm launchers register themselves through set_launcher_factory (launcher.h explains why).
#include "launcher.h"

#include <mutex>

#include "local_launcher.h"

namespace thresher::launcher {

namespace {

std::mutex& factory_mutex() {
    static std::mutex m;
    return m;
}

// One registered factory per cluster kind that is not built in (ssh, slurm).
LauncherFactory& factory_for(ClusterSettings::Kind kind) {
    static LauncherFactory ssh, slurm;
    return kind == ClusterSettings::Kind::Slurm ? slurm : ssh;
}

}  // namespace

void set_launcher_factory(ClusterSettings::Kind kind, LauncherFactory factory) {
    if (kind == ClusterSettings::Kind::Local) throw std::logic_error("set_launcher_factory: local clusters are built in");
    const std::lock_guard lock(factory_mutex());
    factory_for(kind) = std::move(factory);
}

std::unique_ptr<Launcher> create_launcher(const RunSpec& spec, const LaunchOptions& options, QObject* parent) {
    if (spec.cluster.kind != ClusterSettings::Kind::Local) {
        LauncherFactory factory;
        {
            const std::lock_guard lock(factory_mutex());
            factory = factory_for(spec.cluster.kind);
        }
        const QString kind = to_string(spec.cluster.kind);
        if (!factory)
            throw LaunchError((spec.source + ": cluster.kind \"" + kind + "\": this program has no " + kind +
                               " launcher (it must call thresher::launcher::" + kind + "::register_" + kind +
                               "_launcher() at start-up)")
                                  .toStdString());
        return factory(options, parent);
    }
    return std::make_unique<LocalLauncher>(options, parent);
}

}  // namespace thresher::launcher
