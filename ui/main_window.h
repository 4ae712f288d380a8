// MainWindow: Thresher's desktop application. Tabs follow the order of work — Model (layer
// editor, import), Training (strategy, data, cluster), Run (launch, progress, live charts, log),
// History (SQLite: reopen, overlay, export), Scalability (runs at several worker counts). The
// window is a view: the run being edited is a RunDocument (what File ▸ Save writes is exactly
// what `thresher-launch run` runs) and runs go through a RunSession that records them in the
// history; both live in ui/model and are tested without widgets.
// Errors never abort and never block: they show in a red banner above the tabs and in the
// status bar, and the window stays usable.
#pragma once

#include <QJsonObject>
#include <QMainWindow>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "launcher.h"
#include "host_checker.h"
#include "preflight.h"
#include "run_spec.h"

class QAction;
class QLabel;
class QTabWidget;

namespace thresher::launcher {
class ModelExporter;
struct ExportResult;
}  // namespace thresher::launcher

namespace thresher::ui {

class HistoryPage;
class ModelDocument;
class ModelPage;
class RunDocument;
class RunHistory;
class RunPage;
class RunSession;
class SampleTextDialog;
class ScalabilityPage;
class TrainingPage;

struct WindowOptions {
    QString history_path;            // empty: RunHistory::default_path()
    launcher::LaunchOptions launch;  // engine program, grace period
};

class MainWindow : public QMainWindow {
    Q_OBJECT
public:
    explicit MainWindow(WindowOptions options = {}, QWidget* parent = nullptr);
    ~MainWindow() override;

    // File operations; each returns false (and shows why) on failure.
    bool open_spec(const QString& path);
    bool save_spec(const QString& path);
    // `steps` > 0: the time steps of a sequence input the file leaves open; without them such a
    // file makes the window ask (a dialog, as --steps on the command line).
    bool import_model(const QString& path, int steps = 0);
    void load_template(const QString& name);  // "lenet" or "mlp": resources/models, built in

    // The spec as the window shows it now (model inline unless it still equals its file).
    launcher::RunSpec current_spec() const;
    bool launch();
    void stop();
    bool running() const;
    void check_hosts();
    // Writes the Scalability page's sweep over the current spec (its worker counts; paths made
    // absolute) as a sweep file, and selects that file on the page; false and last_error() on failure.
    bool save_sweep(const QString& path);

    // File ▸ Export model…: the model file it would export now — the run selected on the History
    // tab while that tab shows, else the current (last) run — when that run saved one and has
    // ended; empty otherwise (the action is then disabled).
    QString exportable_model() const;
    // Exports exportable_model() to `out` as ONNX, Keras for a .h5 / .keras name, DL4J for a .zip
    // (launcher::export_format_for_file), through `thresher-engine export-model` (a process,
    // never waited for: modelExported() follows). False, and shown why, when nothing can start.
    bool export_model(const QString& out);
    QAction* export_action() const { return export_action_; }
    // Run ▸ Sample text…: a dialog drawing text from exportable_model() (a character model);
    // opened non-modally and returned, or nullptr (and shown why) when there is no saved model.
    SampleTextDialog* sample_text();
    QAction* sample_text_action() const { return sample_text_action_; }

    // Renders the whole window to a PNG (for --screenshot); false when it cannot be written.
    bool save_screenshot(const QString& path);
    // Replays a JSON-lines events file into the Run page as if a run produced it.
    bool replay_events(const QString& path);
    void show_tab(const QString& name);  // model, training, run, history, scalability

    QString last_error() const { return last_error_; }
    ModelDocument* document() const;
    RunDocument* run_document() const { return run_; }
    RunSession* session() const { return session_.get(); }
    ModelPage* model_page() const { return model_page_; }
    TrainingPage* training_page() const { return training_page_; }
    RunPage* run_page() const { return run_page_; }
    HistoryPage* history_page() const { return history_page_; }
    ScalabilityPage* scalability_page() const { return scalability_page_; }
    RunHistory* history() const;
    qint64 current_run_id() const;

Q_SIGNALS:
    // After a run (or the scalability experiment's last run) ended and was recorded.
    void runFinished(int exitCode, const QString& summary);
    // An export ended: the file written, or why not (also shown: status bar or a message box).
    void modelExported(bool ok, const QString& message);

protected:
    void closeEvent(QCloseEvent* event) override;

private:
    void build_menus();
    void update_export_action();
    // The run File ▸ Export model… would export (0: none), and its spec as history keeps it.
    qint64 export_run(QJsonObject* spec) const;
    void export_finished(const launcher::ExportResult& result);
    void show_error(const QString& message);
    void clear_error();
    void set_title();
    void run_ended(int exit_code, const QString& summary);
    void start_scalability();
    // Shows a check's verdicts, then asks about each unknown host key; approved keys are checked
    // again, pinned to the fingerprints shown.
    void show_host_verdicts(const std::vector<launcher::ssh::HostVerdict>& verdicts);
    void start_host_check(std::map<int, std::string> approved);
    // The SSH prompt for passphrases and passwords: a dialog on the GUI thread.
    std::function<std::optional<std::string>(const std::string&)> ask_secret();

    WindowOptions options_;
    RunDocument* run_ = nullptr;
    std::unique_ptr<RunSession> session_;  // before the pages: they show its history
    QTabWidget* tabs_ = nullptr;
    QLabel* banner_ = nullptr;
    ModelPage* model_page_ = nullptr;
    TrainingPage* training_page_ = nullptr;
    RunPage* run_page_ = nullptr;
    HistoryPage* history_page_ = nullptr;
    ScalabilityPage* scalability_page_ = nullptr;
    // "Check hosts": the checker (owns its thread) and what the running check was asked.
    launcher::ssh::HostChecker* host_checker_ = nullptr;
    QStringList check_names_;
    std::vector<launcher::ssh::SshTarget> check_targets_;
    int check_port_ = 0;
    QString last_error_;
    QAction* launch_action_ = nullptr;
    QAction* stop_action_ = nullptr;
    QAction* export_action_ = nullptr;
    QAction* sample_text_action_ = nullptr;
    launcher::ModelExporter* exporter_ = nullptr;
};

}  // namespace thresher::ui
