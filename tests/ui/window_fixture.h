// Shared by the app's window suites: a MainWindow's options for a test (its own history file in
// `dir`, the engine from THRESHER_BIN_DIR, a short grace period).
#pragma once

#include <QTemporaryDir>

#include "launch_fixture.h"
#include "main_window.h"

namespace window_fixture {

inline thresher::ui::WindowOptions options(const QTemporaryDir& dir) {
    thresher::ui::WindowOptions o;
    o.history_path = dir.filePath("history.sqlite");
    o.launch.engine = launch_fixture::bin("thresher-engine");
    o.launch.grace_ms = 3000;
    return o;
}

}  // namespace window_fixture
