#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QJsonDocument>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QStatusBar>
#include <QTableWidget>
#include <QTabWidget>
#include <QThread>
#include <QToolBar>
#include <QVBoxLayout>

#include "charts_panel.h"
#include "event_file.h"
#include "history_page.h"
#include "local_launcher.h"
#include "model_exporter.h"
#include "sample_text_dialog.h"
#include "model_document.h"
#include "model_page.h"
#include "preflight.h"
#include "run_document.h"
#include "run_history.h"
#include "run_page.h"
#include "run_session.h"
#include "scalability_page.h"
#include "sweep_runner.h"
#include "training_page.h"

namespace thresher::ui {

namespace {
// What the time-steps dialog offers first: a sentence or a short text window.
constexpr int kDefaultSteps = 100;
}  // namespace

MainWindow::MainWindow(WindowOptions options, QWidget* parent) : QMainWindow(parent), options_(std::move(options)) {
    run_ = new RunDocument(this);
    if (!options_.launch.ssh.ask_secret) options_.launch.ssh.ask_secret = ask_secret();
    host_checker_ = new launcher::ssh::HostChecker(ask_secret(), this);
    connect(host_checker_, &launcher::ssh::HostChecker::checked, this, &MainWindow::show_host_verdicts);
    session_ = std::make_unique<RunSession>(options_.history_path, options_.launch);
    last_error_ = session_->open_error();

    auto* central = new QWidget;
    auto* layout = new QVBoxLayout(central);
    layout->setContentsMargins(6, 6, 6, 6);
    banner_ = new QLabel;
    banner_->setWordWrap(true);
    banner_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    banner_->setStyleSheet("background: #fdecea; color: #8a1c1c; border: 1px solid #f5c2c0; padding: 6px;");
    banner_->setVisible(false);
    layout->addWidget(banner_);
    tabs_ = new QTabWidget;
    model_page_ = new ModelPage(document());
    training_page_ = new TrainingPage(document());
    run_page_ = new RunPage;
    history_page_ = new HistoryPage(history());
    scalability_page_ = new ScalabilityPage;
    tabs_->addTab(model_page_, "1 · Model");
    tabs_->addTab(training_page_, "2 · Training && cluster");
    tabs_->addTab(run_page_, "3 · Run");
    tabs_->addTab(history_page_, "History");
    tabs_->addTab(scalability_page_, "Scalability");
    layout->addWidget(tabs_, 1);
    setCentralWidget(central);
    exporter_ = new launcher::ModelExporter(launcher::LocalLauncher::find_engine(options_.launch.engine), this);
    connect(exporter_, &launcher::ModelExporter::finished, this, &MainWindow::export_finished);
    build_menus();

    connect(model_page_, &ModelPage::importRequested, this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, "Import a model", {},
                                                          "Models (Thresher, DL4J, Keras) (*.json *.zip *.h5 *.hdf5 *.keras);;All files (*)");
        if (!path.isEmpty()) import_model(path);
    });
    connect(model_page_, &ModelPage::templateRequested, this, &MainWindow::load_template);
    connect(training_page_, &TrainingPage::checkHostsRequested, this, &MainWindow::check_hosts);
    connect(run_page_, &RunPage::launchRequested, this, &MainWindow::launch);
    connect(run_page_, &RunPage::stopRequested, this, &MainWindow::stop);
    connect(history_page_, &HistoryPage::overlaysChanged, this,
            [this] { run_page_->charts()->set_overlays(history_page_->overlays()); });
    connect(history_page_, &HistoryPage::error, this, &MainWindow::show_error);
    connect(history_page_->table(), &QTableWidget::itemSelectionChanged, this, &MainWindow::update_export_action);
    connect(tabs_, &QTabWidget::currentChanged, this, &MainWindow::update_export_action);
    connect(history_page_, &HistoryPage::openSpecRequested, this, [this](qint64 run) {
        try {
            run_->open_json(history()->spec(run), QString("history run #%1").arg(run));
            training_page_->set_spec(run_->spec());
            set_title();
            tabs_->setCurrentWidget(model_page_);
        } catch (const std::exception& e) {
            show_error(QString::fromUtf8(e.what()));
        }
    });
    connect(scalability_page_, &ScalabilityPage::startRequested, this, &MainWindow::start_scalability);
    connect(scalability_page_, &ScalabilityPage::saveSweepRequested, this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, "Save as sweep file", "sweep.json", "Sweep files (*.json)");
        if (!path.isEmpty()) save_sweep(path);
    });
    connect(scalability_page_, &ScalabilityPage::stopRequested, session_.get(), &RunSession::stop);
    connect(run_, &RunDocument::changed, this, &MainWindow::set_title);
    run_->set_form([this](launcher::RunSpec& spec) { training_page_->apply_to(spec); });

    // The session's runs, single or a sweep's: the Run page shows them as they go.
    connect(session_.get(), &RunSession::runStarted, run_page_, &RunPage::begin);
    // After begin() cleared them: the names of a data set the app knows (Fashion-MNIST).
    connect(session_.get(), &RunSession::runStarted, this,
            [this] { run_page_->set_class_names(launcher::class_names_for_data(run_->spec().data)); });
    connect(session_.get(), &RunSession::event, run_page_, &RunPage::add_event);
    connect(session_.get(), &RunSession::logLine, run_page_, &RunPage::add_log);
    connect(session_.get(), &RunSession::finished, this, &MainWindow::run_ended);
    // What the history could not record (the run goes on), never by throwing.
    connect(session_.get(), &RunSession::error, this, &MainWindow::show_error);

    // The default run (RunDocument's): LeNet on Fashion-MNIST, two local nodes, gradient sharing.
    model_page_->select_row(0);
    training_page_->set_spec(run_->spec());
    resize(1280, 860);
    set_title();
    update_export_action();
    if (history()->interrupted_at_open() > 0)
        statusBar()->showMessage(QString("%1 run(s) the app was recording when it last ended are marked interrupted")
                                     .arg(history()->interrupted_at_open()),
                                 10000);
    if (!last_error_.isEmpty()) show_error(last_error_);
}

MainWindow::~MainWindow() {
    // Engines must not outlive the window: the session kills what still runs (and records it).
    session_.reset();
}

ModelDocument* MainWindow::document() const { return run_->model(); }
RunHistory* MainWindow::history() const { return session_->history(); }
qint64 MainWindow::current_run_id() const { return session_->run_id(); }

void MainWindow::build_menus() {
    auto* file = menuBar()->addMenu("&File");
    auto* open = file->addAction("&Open run spec…", this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, "Open run spec", {}, "Run specs (*.json)");
        if (!path.isEmpty()) open_spec(path);
    });
    open->setShortcut(QKeySequence::Open);
    auto* save = file->addAction("&Save run spec", this, [this] {
        QString path = run_->path();
        if (path.isEmpty()) path = QFileDialog::getSaveFileName(this, "Save run spec", run_->spec().name + ".json", "Run specs (*.json)");
        if (!path.isEmpty()) save_spec(path);
    });
    save->setShortcut(QKeySequence::Save);
    file->addAction("Save run spec &as…", this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, "Save run spec", run_->spec().name + ".json", "Run specs (*.json)");
        if (!path.isEmpty()) save_spec(path);
    });
    file->addSeparator();
    file->addAction("&Import model (DL4J, Keras)…", this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, "Import a model", {},
                                                          "Models (Thresher, DL4J, Keras) (*.json *.zip *.h5 *.hdf5 *.keras);;All files (*)");
        if (!path.isEmpty()) import_model(path);
    });
    file->addAction("Save &model as…", this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, "Save model", document()->model().value("name").toString("model") + ".json",
                                                          "Thresher model (*.json)");
        if (path.isEmpty()) return;
        try {
            document()->save(path);
        } catch (const std::exception& e) {
            show_error(QString::fromUtf8(e.what()));
        }
    });
    export_action_ = file->addAction("E&xport model…", this, [this] {
        const QString model = exportable_model();
        if (model.isEmpty() || exporter_->busy()) return;
        const QFileInfo info(model);
        QStringList filters;
        for (const auto& c : launcher::export_format_choices()) filters << c.filter;
        QString filter = filters.first();
        QString path = QFileDialog::getSaveFileName(this, "Export model", info.absolutePath() + "/" + info.completeBaseName() + ".onnx",
                                                    filters.join(";;"), &filter);
        if (path.isEmpty()) return;
        // The file's suffix picks the format; a name without one gets the chosen filter's.
        if (QFileInfo(path).suffix().isEmpty())
            for (const auto& c : launcher::export_format_choices())
                if (c.filter == filter) path += "." + c.suffix;
        export_model(path);
    });
    export_action_->setObjectName("export_model");
    export_action_->setStatusTip("Write the run's saved model as ONNX, Keras or a DL4J zip (thresher-engine export-model)");
    connect(file, &QMenu::aboutToShow, this, &MainWindow::update_export_action);
    file->addAction("Export charts as &PNG…", this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, "Export charts", run_->spec().name + "-charts.png", "PNG images (*.png)");
        if (path.isEmpty()) return;
        try {
            run_page_->charts()->save_png(path);
        } catch (const std::exception& e) {
            show_error(QString::fromUtf8(e.what()));
        }
    });
    file->addSeparator();
    auto* quit = file->addAction("&Quit", this, &QWidget::close);
    quit->setShortcut(QKeySequence::Quit);

    auto* run = menuBar()->addMenu("&Run");
    launch_action_ = run->addAction("&Launch", this, &MainWindow::launch);
    launch_action_->setShortcut(QKeySequence("Ctrl+R"));
    stop_action_ = run->addAction("&Stop", this, &MainWindow::stop);
    stop_action_->setShortcut(QKeySequence("Ctrl+."));
    stop_action_->setEnabled(false);
    run->addAction("&Check hosts", this, &MainWindow::check_hosts);
    run->addSeparator();
    sample_text_action_ = run->addAction("Sample &text…", this, &MainWindow::sample_text);
    sample_text_action_->setObjectName("sample_text");
    sample_text_action_->setStatusTip("Draw text from the run's saved character model (thresher-engine predict --sample)");
    connect(run, &QMenu::aboutToShow, this, &MainWindow::update_export_action);

    auto* bar = addToolBar("Main");
    bar->setMovable(false);
    bar->addAction(open);
    bar->addAction(save);
    bar->addSeparator();
    bar->addAction(launch_action_);
    bar->addAction(stop_action_);
}

void MainWindow::show_error(const QString& message) {
    last_error_ = message;
    banner_->setText("⚠ " + message);
    banner_->setVisible(true);
    statusBar()->showMessage(message.section('\n', 0, 0), 15000);
}

void MainWindow::clear_error() {
    banner_->setVisible(false);
    banner_->clear();
}

void MainWindow::set_title() { setWindowTitle(run_->title()); }

void MainWindow::load_template(const QString& name) {
    try {
        run_->load_template(name);
    } catch (const std::exception& e) {
        show_error(QString::fromUtf8(e.what()));
        return;
    }
    model_page_->select_row(0);
}

bool MainWindow::open_spec(const QString& path) {
    clear_error();
    try {
        run_->open(path);
        training_page_->set_spec(run_->spec());
        model_page_->select_row(0);
        set_title();
        statusBar()->showMessage("Opened " + path, 5000);
        return true;
    } catch (const std::exception& e) {
        show_error(QString::fromUtf8(e.what()));
        return false;
    }
}

launcher::RunSpec MainWindow::current_spec() const { return run_->current_spec(); }

bool MainWindow::save_spec(const QString& path) {
    clear_error();
    try {
        run_->save(path);
        statusBar()->showMessage("Saved " + path, 5000);
        return true;
    } catch (const std::exception& e) {
        show_error(QString::fromUtf8(e.what()));
        return false;
    }
}

bool MainWindow::import_model(const QString& path, int steps) {
    clear_error();
    try {
        QStringList notes;
        const QString format = run_->import_model(path, &notes, steps);
        model_page_->select_row(0);
        tabs_->setCurrentWidget(model_page_);
        QString message = QString("Imported %1 (%2 format): %3 layers").arg(QFileInfo(path).fileName(), format)
                              .arg(document()->layer_count());
        if (!notes.isEmpty()) message += " — " + QString::number(notes.size()) + " import note(s) below the layers";
        model_page_->set_import_notes(QFileInfo(path).fileName(), notes);
        statusBar()->showMessage(message, 15000);
        return true;
    } catch (const OpenStepsError&) {
        // The file leaves its sequences' length open (DL4J without timeSeriesLength, Keras
        // Input(shape=(None, ...))): the user says it, as --steps does on the command line.
        bool ok = false;
        const int given = QInputDialog::getInt(
            this, "Time steps",
            QFileInfo(path).fileName() + " does not fix the length of its input sequences.\n"
                                         "Thresher pads every sequence to one length: the longest sequence the model "
                                         "will read (shorter ones are masked).\n\nTime steps:",
            kDefaultSteps, 1, 1 << 20, 1, &ok);
        if (!ok) {
            show_error(QFileInfo(path).fileName() + ": not imported (no time steps given)");
            return false;
        }
        return import_model(path, given);
    } catch (const std::exception& e) {
        show_error(QString::fromUtf8(e.what()));
        return false;
    }
}

bool MainWindow::running() const { return session_->running(); }

bool MainWindow::launch() {
    if (running()) return false;
    clear_error();
    if (!document()->valid()) tabs_->setCurrentWidget(model_page_);
    try {
        if (!session_->start(run_->runnable_spec())) return false;
    } catch (const std::exception& e) {
        show_error(QString::fromUtf8(e.what()));
        return false;
    }
    launch_action_->setEnabled(false);
    stop_action_->setEnabled(true);
    tabs_->setCurrentWidget(run_page_);
    return true;
}

void MainWindow::stop() { session_->stop(); }

void MainWindow::run_ended(int exit_code, const QString& summary) {
    const bool ok = exit_code == 0;
    run_page_->end(ok, summary);
    if (!ok && exit_code != launcher::kExitStopped) show_error(summary);
    history_page_->refresh();
    launch_action_->setEnabled(true);
    stop_action_->setEnabled(false);
    update_export_action();
    Q_EMIT runFinished(exit_code, summary);
}

qint64 MainWindow::export_run(QJsonObject* spec) const {
    qint64 run = current_run_id();
    if (tabs_->currentWidget() == history_page_ && history_page_->selected_run() > 0) run = history_page_->selected_run();
    // The run going now has not saved its model yet (an earlier file of the same name may be there).
    if (run <= 0 || (running() && run == current_run_id())) return 0;
    try {
        *spec = history()->spec(run);
    } catch (const std::exception&) {
        return 0;  // a history that cannot be read has nothing to export
    }
    return run;
}

QString MainWindow::exportable_model() const {
    QJsonObject spec;
    return export_run(&spec) > 0 ? launcher::saved_model_file(spec) : QString();
}

void MainWindow::update_export_action() {
    if (export_action_) export_action_->setEnabled(!exporter_->busy() && !exportable_model().isEmpty());
    if (sample_text_action_) sample_text_action_->setEnabled(!exportable_model().isEmpty());
}

SampleTextDialog* MainWindow::sample_text() {
    const QString model = exportable_model();
    if (model.isEmpty()) {
        show_error("Sample text: no saved model (run a spec that saves one, or select such a run on the History tab)");
        return nullptr;
    }
    auto* dialog = new SampleTextDialog(launcher::LocalLauncher::find_engine(options_.launch.engine), model, this);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->show();
    return dialog;
}

bool MainWindow::export_model(const QString& out) {
    QJsonObject spec;
    const qint64 run = export_run(&spec);
    const QString model = run > 0 ? launcher::saved_model_file(spec) : QString();
    if (model.isEmpty()) {
        show_error("Export model: no saved model to export (run a spec that saves one, or select such a run on the History tab)");
        return false;
    }
    if (exporter_->busy()) return false;
    clear_error();
    launcher::ExportRequest request;
    request.model = model;
    request.out = out;
    request.format = launcher::export_format_for_file(out);
    request.class_names = launcher::class_names_for_data(spec.value("data").toString());
    exporter_->start(request);
    export_action_->setEnabled(false);
    statusBar()->showMessage(QString("Exporting run #%1's model to %2…").arg(run).arg(QDir::toNativeSeparators(out)));
    return true;
}

void MainWindow::export_finished(const launcher::ExportResult& result) {
    update_export_action();
    if (result.ok) {
        const QString message = QString("Exported %1 (%2, %3 layers, %4 parameters, %5 bytes)")
                                    .arg(QDir::toNativeSeparators(result.file), result.format.toUpper())
                                    .arg(result.layers).arg(result.params).arg(result.bytes);
        statusBar()->showMessage(message, 15000);
        Q_EMIT modelExported(true, message);
        return;
    }
    statusBar()->showMessage("Export model failed", 15000);
    // Not exec(): the window keeps running (and a test can read the box) while it shows.
    auto* box = new QMessageBox(QMessageBox::Warning, "Export model", "The model could not be exported.", QMessageBox::Ok, this);
    box->setObjectName("export_error");
    box->setInformativeText(result.error);
    box->setAttribute(Qt::WA_DeleteOnClose);
    box->open();
    Q_EMIT modelExported(false, result.error);
}

bool MainWindow::save_sweep(const QString& path) {
    clear_error();
    try {
        run_->save_sweep(path, scalability_page_->counts(), scalability_page_->vary_nodes());
    } catch (const std::exception& e) {
        show_error(QString::fromUtf8(e.what()));
        return false;
    }
    scalability_page_->set_sweep_file(path);
    return true;
}

void MainWindow::start_scalability() {
    if (running()) return;
    clear_error();
    // The sweep: the page's file, or the current spec over the worker counts (a local cluster).
    launcher::sweep::SweepSpec sweep;
    try {
        if (!scalability_page_->sweep_file().isEmpty()) {
            sweep = launcher::sweep::SweepSpec::load(scalability_page_->sweep_file());
        } else {
            const QList<int> counts = scalability_page_->counts();
            if (counts.isEmpty()) {
                show_error("Worker counts: give a comma-separated list of positive numbers, e.g. 1, 2, 4");
                return;
            }
            sweep = run_->counts_sweep(counts, scalability_page_->vary_nodes());
        }
    } catch (const std::exception& e) {
        show_error(QString::fromUtf8(e.what()));
        return;
    }
    QString out = scalability_page_->results_folder();
    if (out.isEmpty()) {
        out = QFileInfo(history()->path()).absoluteDir().filePath("sweeps/" + sweep.name);
        scalability_page_->set_results_folder(out);
    }
    scalability_page_->clear_results();
    launcher::sweep::SweepRunner* experiment = nullptr;
    try {
        experiment = session_->start_sweep(sweep, out);
    } catch (const std::exception& e) {
        show_error(QString::fromUtf8(e.what()));
        return;
    }
    if (!experiment) return;
    // The session records each run in history before these run (it connected first); the runner
    // reports from the event loop, so nothing is missed by connecting after start.
    using launcher::sweep::SweepRunner;
    connect(experiment, &SweepRunner::runStarted, this,
            [this](int run, int total, const launcher::sweep::SweepPoint& point, int, const launcher::RunSpec&) {
                scalability_page_->set_status(QString("Run %1 of %2: point %3 (%4)…").arg(run).arg(total).arg(point.index + 1).arg(point.label));
            });
    connect(experiment, &SweepRunner::rowReady, this, [this, experiment](const launcher::sweep::SweepRow& row) {
        run_page_->end(row.status == "ok", "sweep run " + row.status);
        scalability_page_->show_results(experiment->results());
    });
    connect(experiment, &SweepRunner::finished, this, [this, experiment](bool ok, const QString& summary) {
        scalability_page_->set_running(false);
        scalability_page_->set_status(summary);
        scalability_page_->show_results(experiment->results());
        if (!ok) show_error("Scalability experiment: " + summary);
        run_page_->set_running(false);
        history_page_->refresh();
        Q_EMIT runFinished(ok ? 0 : 1, summary);
    });
    scalability_page_->set_running(true);
    scalability_page_->show_results(experiment->results());
    scalability_page_->set_status(QString("%1 run(s) already done in %2; %3 to run")
                                      .arg(experiment->skipped()).arg(QDir::toNativeSeparators(out)).arg(experiment->remaining()));
}

void MainWindow::check_hosts() {
    clear_error();
    launcher::RunSpec spec;
    try {
        spec = current_spec();
    } catch (const std::exception& e) {
        show_error(QString::fromUtf8(e.what()));
        return;
    }
    if (spec.cluster.kind != launcher::ClusterSettings::Kind::Ssh || spec.cluster.all_hosts().isEmpty()) {
        show_error("Check hosts: the cluster is local; choose \"SSH hosts\" and add hosts first");
        return;
    }
    if (host_checker_->busy()) return;
    check_names_.clear();
    check_targets_.clear();
    for (const auto& h : spec.cluster.all_hosts()) {
        check_names_.append(h.address);
        check_targets_.push_back(launcher::ssh::target_for(h, false));
    }
    check_port_ = spec.udp_port;
    start_host_check({});
}

void MainWindow::start_host_check(std::map<int, std::string> approved) {
    training_page_->check_button()->setEnabled(false);
    training_page_->check_button()->setText("Checking…");
    statusBar()->showMessage(QString("Checking %1 host(s)…").arg(check_targets_.size()));
    host_checker_->check(check_targets_, check_port_, std::move(approved));
}

std::function<std::optional<std::string>(const std::string&)> MainWindow::ask_secret() {
    // Passphrases and passwords are asked on the GUI thread while the SSH thread that needs one
    // waits; they are never stored (the SSH session wipes them after use).
    return [this](const std::string& prompt) -> std::optional<std::string> {
        std::optional<std::string> answer;
        auto ask = [this, &prompt, &answer] {
            bool ok = false;
            const QString text = QInputDialog::getText(this, "SSH", QString::fromStdString(prompt), QLineEdit::Password,
                                                       {}, &ok);
            if (ok) answer = text.toStdString();
        };
        if (QThread::currentThread() == thread())
            ask();
        else
            QMetaObject::invokeMethod(this, ask, Qt::BlockingQueuedConnection);
        return answer;
    };
}

void MainWindow::show_host_verdicts(const std::vector<launcher::ssh::HostVerdict>& verdicts) {
    QList<QStringList> lines;
    QList<bool> failed;
    for (const auto& verdict : verdicts) {
        QStringList l;
        for (const auto& c : verdict.checks)
            l << QString("%1 %2: %3").arg(launcher::ssh::to_string(c.status), QString::fromStdString(c.name),
                                          QString::fromStdString(c.detail));
        lines.append(l);
        failed.append(verdict.failed());
    }
    training_page_->show_verdicts(check_names_, lines, failed);
    training_page_->check_button()->setEnabled(true);
    training_page_->check_button()->setText("Check hosts");
    statusBar()->showMessage("Host check finished", 5000);
    // An unknown key is the user's call: show its fingerprint and ask once per host. A changed
    // key is never offered (the check refuses it outright). Approved keys are checked again,
    // pinned: a second connection may reach another machine than the first did, and only the
    // key the user was shown is added.
    std::map<int, std::string> approved;
    for (std::size_t i = 0; i < verdicts.size(); ++i) {
        if (!verdicts[i].awaits_approval()) continue;
        const auto answer = QMessageBox::question(
            this, "Unknown host key",
            QString("%1\n\nTrust this host and add its key (%2) to known_hosts?")
                .arg(lines[static_cast<int>(i)].join("\n"), QString::fromStdString(verdicts[i].host_key_fingerprint)));
        if (answer == QMessageBox::Yes) approved[static_cast<int>(i)] = verdicts[i].host_key_fingerprint;
    }
    if (!approved.empty()) start_host_check(std::move(approved));
}

bool MainWindow::save_screenshot(const QString& path) {
    run_page_->charts()->redraw_now();
    QApplication::processEvents();
    return grab().save(path, "PNG");
}

bool MainWindow::replay_events(const QString& path) {
    try {
        EventFile file(path);
        run_page_->begin(QFileInfo(path).fileName());
        try {
            const long events = file.read([this](const QJsonObject& e) { run_page_->add_event(e); });
            run_page_->end(true, QString("replayed %1 (%2 events)").arg(QFileInfo(path).fileName()).arg(events));
        } catch (const std::exception&) {
            run_page_->set_running(false);
            throw;
        }
    } catch (const std::exception& e) {
        show_error(QString::fromUtf8(e.what()));
        return false;
    }
    return true;
}

void MainWindow::show_tab(const QString& name) {
    const QStringList names{"model", "training", "run", "history", "scalability"};
    const int i = names.indexOf(name.toLower());
    if (i >= 0) tabs_->setCurrentIndex(i);
}

void MainWindow::closeEvent(QCloseEvent* event) {
    if (running()) {
        const auto answer = QMessageBox::question(this, "Thresher", "A run is still going. Stop it and quit?");
        if (answer != QMessageBox::Yes) {
            event->ignore();
            return;
        }
    }
    // Kills the engines now, records a run cut short as interrupted, writes what is buffered.
    session_->shutdown();
    event->accept();
}

}  // namespace thresher::ui
