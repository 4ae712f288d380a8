// thresher: the desktop application. With no arguments it opens the default LeNet run (two local
// nodes on Fashion-MNIST); options open a spec, import a model, or render the window to a PNG and
// exit (for documentation and tests):
//   thresher [--open SPEC | --import MODEL] [--tab NAME] [--replay EVENTS.jsonl]
//            [--history FILE] [--engine PATH] [--screenshot FILE]
#include <QApplication>
#include <QCommandLineParser>
#include <QDir>
#include <QFileInfo>
#include <QIcon>
#include <QTimer>
#include <cstdio>
#include <cstring>
#include <initializer_list>

#include "main_window.h"
#include "slurm_launcher.h"
#include "ssh_launcher.h"

namespace {

// The example run shipped with Thresher: next to the installed program, or in the source tree.
QString default_spec() {
    const QString app_dir = QCoreApplication::applicationDirPath();
    for (const QString& candidate : {app_dir + "/../share/thresher/runs/lenet-local.json",
                                     QString(THRESHER_SOURCE_DIR) + "/resources/runs/lenet-local.json"})
        if (QFileInfo::exists(candidate)) return QFileInfo(candidate).absoluteFilePath();
    return {};
}

// The command line, built the same way for the help/version answer and for the real start.
struct CommandLine {
    QCommandLineParser parser;
    QCommandLineOption open{{"o", "open"}, "Open a run spec (JSON).", "SPEC"};
    QCommandLineOption import{{"i", "import"}, "Import a model: Thresher, DL4J or Keras JSON.", "MODEL"};
    QCommandLineOption screenshot{"screenshot", "Render the window to a PNG file and exit (offscreen without a display).", "FILE"};
    QCommandLineOption tab{"tab", "Show a tab: model, training, run, history, scalability.", "NAME"};
    QCommandLineOption replay{"replay", "Show a recorded events file (JSON lines) on the Run tab.", "EVENTS"};
    QCommandLineOption history{"history", "Run history database (default: the user's data folder).", "FILE"};
    QCommandLineOption engine{"engine", "thresher-engine to run (default: next to this program).", "PATH"};

    CommandLine() {
        parser.setApplicationDescription("Thresher: distributed neural-network training (gradient sharing, parameter averaging)");
        parser.addHelpOption();
        parser.addVersionOption();
        parser.addOptions({open, import, screenshot, tab, replay, history, engine});
    }
};

bool has_argument(int argc, char** argv, std::initializer_list<const char*> names) {
    for (int i = 1; i < argc; ++i)
        for (const char* n : names)
            if (std::strcmp(argv[i], n) == 0) return true;
    return false;
}

void set_names() {
    QCoreApplication::setApplicationName("thresher");
    QCoreApplication::setOrganizationName("thresher");
    QCoreApplication::setApplicationVersion(THRESHER_VERSION);
}

}  // namespace

int main(int argc, char** argv) {
    // --help and --version need no display: a QApplication aborts without one, so they are
    // answered from a QCoreApplication (process() prints and exits). A screenshot without a
    // display renders offscreen.
    if (has_argument(argc, argv, {"-h", "--help", "-?", "--help-all", "-v", "--version"})) {
        QCoreApplication core(argc, argv);
        set_names();
        CommandLine cli;
        cli.parser.process(core);
        return 0;
    }
    const bool no_display = qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
                            qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
    if (no_display && has_argument(argc, argv, {"--screenshot"})) qputenv("QT_QPA_PLATFORM", "offscreen");

    QApplication app(argc, argv);
    set_names();
    QApplication::setWindowIcon(QIcon(":/icons/thresher.svg"));
    thresher::launcher::ssh::register_ssh_launcher();
    thresher::launcher::slurm::register_slurm_launcher();

    CommandLine command_line;
    QCommandLineParser& cli = command_line.parser;
    const auto& [p, open, import, screenshot, tab, replay, history, engine] = command_line;
    cli.process(app);

    thresher::ui::WindowOptions options;
    options.history_path = cli.value(history);
    options.launch.engine = cli.value(engine);
    thresher::ui::MainWindow window(options);

    bool ok = true;
    const QString spec = cli.isSet(open) ? cli.value(open) : default_spec();
    if (!spec.isEmpty()) {
        ok = window.open_spec(spec);
        if (ok) std::fprintf(stderr, "thresher: opened %s\n", qPrintable(QFileInfo(spec).absoluteFilePath()));
    }
    if (cli.isSet(import)) ok = window.import_model(cli.value(import)) && ok;
    if (cli.isSet(replay)) ok = window.replay_events(cli.value(replay)) && ok;
    if (cli.isSet(tab)) window.show_tab(cli.value(tab));
    window.show();

    if (cli.isSet(screenshot)) {
        // Let layouts settle and the charts' queued replots run before grabbing.
        QTimer::singleShot(300, &window, [&] {
            const bool saved = window.save_screenshot(cli.value(screenshot));
            if (!saved) std::fprintf(stderr, "thresher: cannot write %s\n", qPrintable(cli.value(screenshot)));
            if (!window.last_error().isEmpty())
                std::fprintf(stderr, "thresher: %s\n", qPrintable(window.last_error()));
            QApplication::exit(saved && ok ? 0 : 1);
        });
    }
    return QApplication::exec();
}
