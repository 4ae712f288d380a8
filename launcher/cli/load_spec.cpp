// Spec loading shared by `run` and `check`: one place decides how a bad spec is reported.
#include <cstdio>

#include "commands.h"

namespace thresher::launcher::cli {

std::optional<RunSpec> load_spec(const QString& path) {
    try {
        return RunSpec::load(path);
    } catch (const SpecError& e) {
        std::fprintf(stderr, "thresher-launch: error: %s\n", e.what());
        return std::nullopt;
    }
}

}  // namespace thresher::launcher::cli
