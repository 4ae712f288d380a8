// create_launcher: the launcher a spec's cluster needs. Local clusters are built in; the SSH
// launcher registers itself through set_launcher_factory (launcher.h explains why).
#include "launcher.h"

#include <mutex>

#include "local_launcher.h"

namespace thresher::launcher {

namespace {

std::mutex& factory_mutex() {
    static std::mutex m;
    return m;
}

LauncherFactory& ssh_factory() {
    static LauncherFactory f;
    return f;
}

}  // namespace

void set_launcher_factory(ClusterSettings::Kind kind, LauncherFactory factory) {
    if (kind != ClusterSettings::Kind::Ssh) throw std::logic_error("set_launcher_factory: local clusters are built in");
    const std::lock_guard lock(factory_mutex());
    ssh_factory() = std::move(factory);
}

std::unique_ptr<Launcher> create_launcher(const RunSpec& spec, const LaunchOptions& options, QObject* parent) {
    if (spec.cluster.kind == ClusterSettings::Kind::Ssh) {
        LauncherFactory factory;
        {
            const std::lock_guard lock(factory_mutex());
            factory = ssh_factory();
        }
        if (!factory)
            throw LaunchError((spec.source + ": cluster.kind \"ssh\": this program has no SSH launcher (it must call "
                                             "thresher::launcher::ssh::register_ssh_launcher() at start-up)")
                                  .toStdString());
        return factory(options, parent);
    }
    return std::make_unique<LocalLauncher>(options, parent);
}

}  // namespace thresher::launcher
