// create_launcher: the launcher a spec's cluster needs (local now; SSH arrives with libssh).
#include "launcher.h"

#include "local_launcher.h"

namespace thresher::launcher {

std::unique_ptr<Launcher> create_launcher(const RunSpec& spec, const LaunchOptions& options, QObject* parent) {
    if (spec.cluster.kind == ClusterSettings::Kind::Ssh)
        throw LaunchError((spec.source + ": cluster.kind \"ssh\": SSH launching is not in this build yet "
                                         "(the spec is valid; run it with a local cluster for now)")
                              .toStdString());
    return std::make_unique<LocalLauncher>(options, parent);
}

}  // namespace thresher::launcher
