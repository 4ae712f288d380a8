// register_ssh_launcher: hands create_launcher() a factory for SSH clusters. An explicit call,
// not a static initialiser: thresher_ssh is a static library, and the linker keeps none of its
// objects that nothing references — a self-registering object would silently vanish.
#include "ssh_launcher.h"

namespace thresher::launcher::ssh {

void register_ssh_launcher() {
    set_launcher_factory(ClusterSettings::Kind::Ssh, [](const LaunchOptions& options, QObject* parent) {
        return std::unique_ptr<Launcher>(std::make_unique<SshLauncher>(options, parent));
    });
}

}  // namespace thresher::launcher::ssh
