#include "main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDir>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QInputDialog>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QSaveFile>
#include <QStatusBar>
#include <QTabWidget>
#include <QThread>
#include <QToolBar>
#include <QVBoxLayout>

#include "charts_panel.h"
#include "event_stream.h"
#include "history_page.h"
#include "model_document.h"
#include "model_page.h"
#include "preflight.h"
#include "run_history.h"
#include "run_page.h"
#include "scalability_page.h"
#include "sweep_runner.h"
#include "training_page.h"

namespace thresher::ui {

namespace {

// A relative path of `spec` re-expressed for a spec saved in `new_dir`.
QString rebase(const launcher::RunSpec& spec, const QString& path, const QString& new_dir) {
    if (path.isEmpty() || QDir::isAbsolutePath(path)) return path;
    return QDir(new_dir).relativeFilePath(spec.resolve(path));
}

// The spec as history keeps it: every path absolute, so "Open its spec" works from anywhere.
QJsonObject for_history(const launcher::RunSpec& spec) {
    launcher::RunSpec s = spec;
    if (!s.model_is_inline()) s.model_path = s.model_file();
    s.data = s.data_argument();
    s.save = s.save_file();
    if (!s.cluster.hostfile.isEmpty()) s.cluster.hostfile = s.resolve(s.cluster.hostfile);
    return s.to_json();
}

}  // namespace

MainWindow::MainWindow(WindowOptions options, QWidget* parent) : QMainWindow(parent), options_(std::move(options)) {
    document_ = new ModelDocument(this);
    if (!options_.launch.ssh.ask_secret) options_.launch.ssh.ask_secret = ask_secret();
    host_checker_ = new launcher::ssh::HostChecker(ask_secret(), this);
    connect(host_checker_, &launcher::ssh::HostChecker::checked, this, &MainWindow::show_host_verdicts);
    try {
        history_ = std::make_unique<RunHistory>(options_.history_path.isEmpty() ? RunHistory::default_path()
                                                                               : options_.history_path);
    } catch (const HistoryError& e) {
        // The app stays usable; this session's runs are kept in memory only.
        history_ = std::make_unique<RunHistory>(":memory:");
        last_error_ = QString::fromUtf8(e.what()) + " — run history is kept in memory for this session only";
    }

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
    model_page_ = new ModelPage(document_);
    training_page_ = new TrainingPage(document_);
    run_page_ = new RunPage;
    history_page_ = new HistoryPage(history_.get());
    scalability_page_ = new ScalabilityPage;
    tabs_->addTab(model_page_, "1 · Model");
    tabs_->addTab(training_page_, "2 · Training && cluster");
    tabs_->addTab(run_page_, "3 · Run");
    tabs_->addTab(history_page_, "History");
    tabs_->addTab(scalability_page_, "Scalability");
    layout->addWidget(tabs_, 1);
    setCentralWidget(central);
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
    connect(history_page_, &HistoryPage::openSpecRequested, this, [this](qint64 run) {
        try {
            const auto spec = launcher::RunSpec::from_json(history_->spec(run), QString("history run #%1").arg(run),
                                                           QDir::currentPath());
            spec_ = spec;
            spec_path_.clear();
            model_origin_path_.clear();
            if (spec.model_is_inline())
                document_->set_model(spec.model_inline);
            else
                document_->load(spec.model_file());
            training_page_->set_spec(spec_);
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
    connect(scalability_page_, &ScalabilityPage::stopRequested, this, [this] {
        if (experiment_) experiment_->stop();
    });
    connect(document_, &ModelDocument::changed, this, &MainWindow::set_title);

    // The default run: LeNet on Fashion-MNIST, two local nodes, gradient sharing.
    spec_.name = "lenet-local";
    spec_.source = "(new run)";
    spec_.base_dir = QDir::currentPath();
    spec_.cluster.nodes = 2;
    spec_.training.threads = 1;
    load_template("lenet");
    training_page_->set_spec(spec_);
    resize(1280, 860);
    set_title();
    // Flushes the app did not ask for (the history's timer) report here, never by throwing.
    connect(history_.get(), &RunHistory::error, this, &MainWindow::show_error);
    if (history_->interrupted_at_open() > 0)
        statusBar()->showMessage(QString("%1 run(s) the app was recording when it last ended are marked interrupted")
                                     .arg(history_->interrupted_at_open()),
                                 10000);
    if (!last_error_.isEmpty()) show_error(last_error_);
}

MainWindow::~MainWindow() {
    // Engines must not outlive the window: the launcher's destructor kills what still runs.
    launcher_.reset();
}

void MainWindow::build_menus() {
    auto* file = menuBar()->addMenu("&File");
    auto* open = file->addAction("&Open run spec…", this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, "Open run spec", {}, "Run specs (*.json)");
        if (!path.isEmpty()) open_spec(path);
    });
    open->setShortcut(QKeySequence::Open);
    auto* save = file->addAction("&Save run spec", this, [this] {
        QString path = spec_path_;
        if (path.isEmpty()) path = QFileDialog::getSaveFileName(this, "Save run spec", spec_.name + ".json", "Run specs (*.json)");
        if (!path.isEmpty()) save_spec(path);
    });
    save->setShortcut(QKeySequence::Save);
    file->addAction("Save run spec &as…", this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, "Save run spec", spec_.name + ".json", "Run specs (*.json)");
        if (!path.isEmpty()) save_spec(path);
    });
    file->addSeparator();
    file->addAction("&Import model (DL4J, Keras)…", this, [this] {
        const QString path = QFileDialog::getOpenFileName(this, "Import a model", {},
                                                          "Models (Thresher, DL4J, Keras) (*.json *.zip *.h5 *.hdf5 *.keras);;All files (*)");
        if (!path.isEmpty()) import_model(path);
    });
    file->addAction("Save &model as…", this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, "Save model", document_->model().value("name").toString("model") + ".json",
                                                          "Thresher model (*.json)");
        if (path.isEmpty()) return;
        try {
            document_->save(path);
        } catch (const std::exception& e) {
            show_error(QString::fromUtf8(e.what()));
        }
    });
    file->addAction("Export charts as &PNG…", this, [this] {
        const QString path = QFileDialog::getSaveFileName(this, "Export charts", spec_.name + "-charts.png", "PNG images (*.png)");
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

void MainWindow::set_title() {
    const QString file = spec_path_.isEmpty() ? QString("unsaved run") : QFileInfo(spec_path_).fileName();
    const QString params = document_->valid() ? QLocale().toString(document_->param_count()) + " parameters"
                                              : QString("model has an error");
    setWindowTitle(QString("Thresher — %1 (%2) — %3").arg(spec_.name, file, params));
}

void MainWindow::load_template(const QString& name) {
    QFile file(":/models/" + name + ".json");
    if (!file.open(QIODevice::ReadOnly)) {
        show_error("no built-in template " + name);
        return;
    }
    document_->set_model(QJsonDocument::fromJson(file.readAll()).object());
    model_origin_path_.clear();
    model_origin_json_ = {};
    model_page_->select_row(0);
}

bool MainWindow::open_spec(const QString& path) {
    clear_error();
    try {
        auto spec = launcher::RunSpec::load(path);
        if (spec.model_is_inline()) {
            document_->set_model(spec.model_inline);
            model_origin_path_.clear();
        } else {
            QStringList notes;
            document_->load(spec.model_file(), &notes);
            model_origin_path_ = spec.model_path;
            model_origin_json_ = document_->model();
        }
        spec_ = spec;
        spec_path_ = QFileInfo(path).absoluteFilePath();
        training_page_->set_spec(spec_);
        model_page_->select_row(0);
        set_title();
        statusBar()->showMessage("Opened " + path, 5000);
        return true;
    } catch (const std::exception& e) {
        show_error(QString::fromUtf8(e.what()));
        return false;
    }
}

launcher::RunSpec MainWindow::current_spec() const {
    launcher::RunSpec s = spec_;
    training_page_->apply_to(s);
    if (!model_origin_path_.isEmpty() && document_->model() == model_origin_json_) {
        s.model_path = model_origin_path_;
        s.model_inline = {};
    } else {
        s.model_path.clear();
        s.model_inline = document_->model();
    }
    return s;
}

bool MainWindow::save_spec(const QString& path) {
    clear_error();
    try {
        auto spec = current_spec();
        const QString dir = QFileInfo(path).absolutePath();
        spec.model_path = rebase(spec, spec.model_path, dir);
        if (spec.data != "fashion-mnist") spec.data = rebase(spec, spec.data, dir);
        spec.cluster.hostfile = rebase(spec, spec.cluster.hostfile, dir);
        spec.save = rebase(spec, spec.save, dir);
        // Validate what will be written, with the words `thresher-launch` would use reading it.
        spec.source = path;
        spec.base_dir = dir;
        spec.validate();
        spec.save_to(path);
        spec_ = launcher::RunSpec::load(path);
        spec_path_ = QFileInfo(path).absoluteFilePath();
        if (!spec_.model_is_inline()) model_origin_path_ = spec_.model_path;
        set_title();
        statusBar()->showMessage("Saved " + path, 5000);
        return true;
    } catch (const std::exception& e) {
        show_error(QString::fromUtf8(e.what()));
        return false;
    }
}

bool MainWindow::import_model(const QString& path) {
    clear_error();
    try {
        QStringList notes;
        const QString format = document_->load(path, &notes);
        // An imported architecture is saved inline (or with Save model as); a file with weights is
        // named by the spec while the model stays as imported, so the run fine-tunes from them.
        model_origin_path_.clear();
        if (document_->loaded_weights()) {
            model_origin_path_ = QFileInfo(path).absoluteFilePath();
            model_origin_json_ = document_->model();
        }
        model_page_->select_row(0);
        tabs_->setCurrentWidget(model_page_);
        QString message = QString("Imported %1 (%2 format): %3 layers").arg(QFileInfo(path).fileName(), format)
                              .arg(document_->layer_count());
        if (!notes.isEmpty()) message += " — " + QString::number(notes.size()) + " import note(s) below the layers";
        model_page_->set_import_notes(QFileInfo(path).fileName(), notes);
        statusBar()->showMessage(message, 15000);
        return true;
    } catch (const std::exception& e) {
        show_error(QString::fromUtf8(e.what()));
        return false;
    }
}

bool MainWindow::running() const { return launcher_ != nullptr || (experiment_ && experiment_->running()); }

void MainWindow::connect_launcher(launcher::Launcher* l) {
    connect(l, &launcher::Launcher::event, this, [this](const QJsonObject& e) {
        run_page_->add_event(e);
        if (run_id_) history_->add_event(run_id_, e);
    });
    connect(l, &launcher::Launcher::logLine, run_page_, &RunPage::add_log);
    // Queued: the launcher may report from inside start(), and is destroyed in the handler.
    connect(l, &launcher::Launcher::finished, this, &MainWindow::run_ended, Qt::QueuedConnection);
}

bool MainWindow::launch() {
    if (running()) return false;
    clear_error();
    if (!document_->valid()) {
        tabs_->setCurrentWidget(model_page_);
        show_error("The model is not valid, so the run cannot start: " + document_->error());
        return false;
    }
    launcher::RunSpec spec;
    try {
        spec = current_spec();
        spec.validate();
        launcher_ = launcher::create_launcher(spec, options_.launch);
    } catch (const std::exception& e) {
        show_error(QString::fromUtf8(e.what()));
        return false;
    }
    connect_launcher(launcher_.get());
    try {
        run_id_ = history_->begin_run(spec.name, for_history(spec));
    } catch (const HistoryError& e) {
        run_id_ = 0;
        show_error(QString::fromUtf8(e.what()));
    }
    run_page_->begin(spec.name);
    launch_action_->setEnabled(false);
    stop_action_->setEnabled(true);
    tabs_->setCurrentWidget(run_page_);
    launcher_->start(spec);
    return true;
}

void MainWindow::stop() {
    if (launcher_) launcher_->stop();
    if (experiment_ && experiment_->running()) experiment_->stop();
}

void MainWindow::run_ended(int exit_code, const QString& summary) {
    launcher_.reset();
    const RunMetrics& m = run_page_->metrics();
    const bool ok = exit_code == 0;
    if (run_id_) {
        RunResult r;
        r.status = ok ? "ok" : exit_code == launcher::kExitStopped ? "stopped" : "failed";
        r.exit_code = exit_code;
        r.summary = summary;
        r.accuracy = m.final_accuracy();
        r.samples_per_s = m.samples_per_s();
        r.wall_s = m.wall_s();
        try {
            history_->finish_run(run_id_, r);
        } catch (const HistoryError& e) {
            show_error(QString::fromUtf8(e.what()));
        }
    }
    run_page_->end(ok, summary);
    if (!ok && exit_code != launcher::kExitStopped) show_error(summary);
    history_page_->refresh();
    launch_action_->setEnabled(true);
    stop_action_->setEnabled(false);
    Q_EMIT runFinished(exit_code, summary);
}

namespace {

// The current spec on a local cluster at each worker count: nodes, or workers of one node.
launcher::sweep::SweepSpec counts_sweep(launcher::RunSpec base, const QList<int>& counts, bool vary_nodes) {
    base.cluster = {};
    QJsonArray values;
    for (int c : counts) values.append(c);
    const QJsonArray axes{QJsonObject{{"field", vary_nodes ? "nodes" : "workers_per_node"}, {"values", values}}};
    return launcher::sweep::SweepSpec::over(base, base.name + "-scaling", axes);
}

}  // namespace

bool MainWindow::save_sweep(const QString& path) {
    clear_error();
    const QList<int> counts = scalability_page_->counts();
    if (counts.isEmpty()) {
        show_error("Worker counts: give a comma-separated list of positive numbers, e.g. 1, 2, 4");
        return false;
    }
    try {
        launcher::RunSpec base = current_spec();
        // The sweep file may live anywhere: its base names files by absolute paths.
        if (!base.model_is_inline()) base.model_path = base.model_file();
        if (base.data != "fashion-mnist") base.data = base.data_argument();
        if (!base.save.isEmpty()) base.save = base.save_file();
        QJsonObject document = counts_sweep(base, counts, scalability_page_->vary_nodes()).document;
        document.insert("name", QFileInfo(path).completeBaseName());
        QSaveFile f(path);
        const QByteArray bytes = QJsonDocument(document).toJson(QJsonDocument::Indented);
        if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size() || !f.commit())
            throw std::runtime_error(QString("%1: cannot write: %2").arg(path, f.errorString()).toStdString());
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
            sweep = counts_sweep(current_spec(), counts, scalability_page_->vary_nodes());
        }
    } catch (const std::exception& e) {
        show_error(QString::fromUtf8(e.what()));
        return;
    }
    QString out = scalability_page_->results_folder();
    if (out.isEmpty()) {
        out = QFileInfo(history_->path()).absoluteDir().filePath("sweeps/" + sweep.name);
        scalability_page_->set_results_folder(out);
    }
    delete experiment_;
    experiment_ = new launcher::sweep::SweepRunner(options_.launch, this);
    auto finish_history_run = [this](const QString& status, int code, const QString& summary) {
        if (!run_id_) return;
        const RunMetrics& m = run_page_->metrics();
        RunResult r{status, code, summary, m.wall_s(), m.final_accuracy(), m.samples_per_s()};
        try {
            history_->finish_run(run_id_, r);
        } catch (const HistoryError& e) {
            show_error(QString::fromUtf8(e.what()));
        }
        run_id_ = 0;
    };
    using launcher::sweep::SweepRunner;
    connect(experiment_, &SweepRunner::runStarted, this,
            [this](int run, int total, const launcher::sweep::SweepPoint& point, int, const launcher::RunSpec& spec) {
                // History names each run by its sweep and point, so an experiment's runs read as one.
                try {
                    run_id_ = history_->begin_run(QString("%1: %2").arg(spec.name, point.label), for_history(spec));
                } catch (const HistoryError& e) {
                    show_error(QString::fromUtf8(e.what()));
                }
                run_page_->begin(spec.name);
                scalability_page_->set_status(QString("Run %1 of %2: point %3 (%4)…").arg(run).arg(total).arg(point.index + 1).arg(point.label));
            });
    connect(experiment_, &SweepRunner::event, this, [this](const QJsonObject& e) {
        run_page_->add_event(e);
        if (run_id_) history_->add_event(run_id_, e);
    });
    connect(experiment_, &SweepRunner::logLine, run_page_, &RunPage::add_log);
    connect(experiment_, &SweepRunner::rowReady, this, [this, finish_history_run](const launcher::sweep::SweepRow& row) {
        finish_history_run(row.status, row.status == "ok" ? 0 : 1, row.status == "ok" ? QString("sweep run") : row.summary);
        run_page_->end(row.status == "ok", "sweep run " + row.status);
        scalability_page_->show_results(experiment_->results());
    });
    connect(experiment_, &SweepRunner::finished, this, [this, finish_history_run](bool ok, const QString& summary) {
        finish_history_run(ok ? "ok" : "stopped", ok ? 0 : launcher::kExitStopped, summary);
        scalability_page_->set_running(false);
        scalability_page_->set_status(summary);
        scalability_page_->show_results(experiment_->results());
        if (!ok) show_error("Scalability experiment: " + summary);
        run_page_->set_running(false);
        history_page_->refresh();
        Q_EMIT runFinished(ok ? 0 : 1, summary);
    });
    scalability_page_->clear_results();
    try {
        experiment_->start(sweep, out);
    } catch (const std::exception& e) {
        show_error(QString::fromUtf8(e.what()));
        return;
    }
    scalability_page_->set_running(true);
    scalability_page_->show_results(experiment_->results());
    scalability_page_->set_status(QString("%1 run(s) already done in %2; %3 to run")
                                      .arg(experiment_->skipped()).arg(QDir::toNativeSeparators(out)).arg(experiment_->remaining()));
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
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        show_error(path + ": cannot open: " + file.errorString());
        return false;
    }
    // The launcher's parser, as for a live run: lines bounded in length, a line that is not an
    // event shown as a warning naming its line, each event keeping the node it came from.
    run_page_->begin(QFileInfo(path).fileName());
    launcher::EventStream stream(launcher::EventStream::kRecorded);
    long events = 0;
    const auto show = [&](const QList<QJsonObject>& batch) {
        for (const auto& e : batch) {
            run_page_->add_event(e);
            if (e.value("source").toString() != "launcher") ++events;
        }
    };
    while (!file.atEnd()) {
        const QByteArray chunk = file.read(1 << 16);
        if (chunk.isEmpty() && file.error() != QFileDevice::NoError) {
            show_error(path + ": cannot read: " + file.errorString());
            run_page_->set_running(false);
            return false;
        }
        show(stream.feed(chunk));
    }
    show(stream.finish());
    if (events == 0) {
        show_error(path + ": no events (a recorded run is one JSON event per line, as thresher-engine writes them)");
        run_page_->set_running(false);
        return false;
    }
    run_page_->end(true, QString("replayed %1 (%2 events)").arg(QFileInfo(path).fileName()).arg(events));
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
        launcher_.reset();  // kills the engines now
        if (experiment_) experiment_->stop();
    }
    try {
        history_->flush();
    } catch (const HistoryError&) {
        // Quitting anyway: the file refuses writes, and the banner has said so since it began.
    }
    event->accept();
}

}  // namespace thresher::ui
