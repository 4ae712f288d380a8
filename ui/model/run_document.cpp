#include "run_document.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLocale>
#include <QSaveFile>
#include <stdexcept>

#include "model_document.h"

namespace thresher::ui {

namespace {

// A relative path of `spec` re-expressed for a spec saved in `new_dir`.
QString rebase(const launcher::RunSpec& spec, const QString& path, const QString& new_dir) {
    if (path.isEmpty() || QDir::isAbsolutePath(path)) return path;
    return QDir(new_dir).relativeFilePath(spec.resolve(path));
}

// `base` on a local cluster at each count: nodes, or workers of one node.
launcher::sweep::SweepSpec over_counts(launcher::RunSpec base, const QList<int>& counts, bool vary_nodes) {
    base.cluster = {};
    QJsonArray values;
    for (int c : counts) values.append(c);
    const QJsonArray axes{QJsonObject{{"field", vary_nodes ? "nodes" : "workers_per_node"}, {"values", values}}};
    return launcher::sweep::SweepSpec::over(base, base.name + "-scaling", axes);
}

}  // namespace

RunDocument::RunDocument(QObject* parent) : QObject(parent), model_(new ModelDocument(this)) {
    connect(model_, &ModelDocument::changed, this, &RunDocument::changed);
    // The default run: LeNet on Fashion-MNIST, two local nodes, gradient sharing.
    spec_.name = "lenet-local";
    spec_.source = "(new run)";
    spec_.base_dir = QDir::currentPath();
    spec_.cluster.nodes = 2;
    spec_.training.threads = 1;
    load_template("lenet");
    saved_ = current_spec().to_json();
}

void RunDocument::replace(const launcher::RunSpec& spec, const QString& path) {
    spec_ = spec;
    path_ = path;
    Q_EMIT changed();
}

void RunDocument::load_template(const QString& name) {
    QFile file(":/models/" + name + ".json");
    if (!file.open(QIODevice::ReadOnly)) throw std::runtime_error(("no built-in template " + name).toStdString());
    model_->set_model(QJsonDocument::fromJson(file.readAll()).object());
    model_origin_path_.clear();
    model_origin_json_ = {};
    model_origin_steps_.reset();
}

void RunDocument::open(const QString& path) {
    auto spec = launcher::RunSpec::load(path);
    if (spec.model_is_inline()) {
        model_->set_model(spec.model_inline);
        model_origin_path_.clear();
    } else {
        QStringList notes;
        model_->load(spec.model_file(), &notes, spec.model_steps.value_or(0));
        model_origin_path_ = spec.model_path;
        model_origin_json_ = model_->model();
        model_origin_steps_ = spec.model_steps;
    }
    saved_ = spec.to_json();
    replace(spec, QFileInfo(path).absoluteFilePath());
}

void RunDocument::open_json(const QJsonObject& json, const QString& source) {
    const auto spec = launcher::RunSpec::from_json(json, source, QDir::currentPath());
    model_origin_path_.clear();
    if (spec.model_is_inline())
        model_->set_model(spec.model_inline);
    else
        model_->load(spec.model_file(), nullptr, spec.model_steps.value_or(0));
    model_origin_steps_ = spec.model_steps;
    saved_ = {};  // never saved: a new run
    replace(spec, {});
}

QString RunDocument::import_model(const QString& path, QStringList* notes, int steps) {
    const QString format = model_->load(path, notes, steps);
    // An imported architecture is saved inline (or with Save model as); a file with weights is
    // named by the spec while the model stays as imported, so the run fine-tunes from them.
    model_origin_path_.clear();
    if (model_->loaded_weights()) {
        model_origin_path_ = QFileInfo(path).absoluteFilePath();
        model_origin_json_ = model_->model();
    }
    // An architecture alone goes inline with its steps written in; a file the engine reads again
    // needs them again.
    model_origin_steps_ = steps > 0 && !model_origin_path_.isEmpty() ? std::optional<int>(steps) : std::nullopt;
    return format;
}

launcher::RunSpec RunDocument::current_spec() const {
    launcher::RunSpec s = spec_;
    if (form_) form_(s);
    if (!model_origin_path_.isEmpty() && model_->model() == model_origin_json_) {
        s.model_path = model_origin_path_;
        s.model_inline = {};
        s.model_steps = model_origin_steps_;
    } else {
        s.model_path.clear();
        s.model_inline = model_->model();
        s.model_steps.reset();  // the inline model states its steps
    }
    return s;
}

launcher::RunSpec RunDocument::runnable_spec() const {
    if (!model_->valid())
        throw std::runtime_error(("The model is not valid, so the run cannot start: " + model_->error()).toStdString());
    launcher::RunSpec spec = current_spec();
    spec.validate();
    return spec;
}

void RunDocument::save(const QString& path) {
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
    auto reread = launcher::RunSpec::load(path);
    if (!reread.model_is_inline()) model_origin_path_ = reread.model_path;
    saved_ = reread.to_json();
    replace(reread, QFileInfo(path).absoluteFilePath());
}

bool RunDocument::modified() const {
    try {
        return current_spec().to_json() != saved_;
    } catch (const std::exception&) {
        return true;  // a form that cannot say what it holds holds something unsaved
    }
}

QString RunDocument::title() const {
    const QString file = path_.isEmpty() ? QString("unsaved run") : QFileInfo(path_).fileName();
    const QString params = model_->valid() ? QLocale().toString(model_->param_count()) + " parameters"
                                           : QString("model has an error");
    return QString("Thresher — %1 (%2) — %3").arg(spec_.name, file, params);
}

launcher::sweep::SweepSpec RunDocument::counts_sweep(const QList<int>& counts, bool vary_nodes) const {
    return over_counts(current_spec(), counts, vary_nodes);
}

void RunDocument::save_sweep(const QString& path, const QList<int>& counts, bool vary_nodes) const {
    if (counts.isEmpty())
        throw std::runtime_error("Worker counts: give a comma-separated list of positive numbers, e.g. 1, 2, 4");
    launcher::RunSpec base = current_spec();
    // The sweep file may live anywhere: its base names files by absolute paths.
    if (!base.model_is_inline()) base.model_path = base.model_file();
    if (base.data != "fashion-mnist") base.data = base.data_argument();
    if (!base.save.isEmpty()) base.save = base.save_file();
    QJsonObject document = over_counts(base, counts, vary_nodes).document;
    document.insert("name", QFileInfo(path).completeBaseName());
    QSaveFile f(path);
    const QByteArray bytes = QJsonDocument(document).toJson(QJsonDocument::Indented);
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size() || !f.commit())
        throw std::runtime_error(QString("%1: cannot write: %2").arg(path, f.errorString()).toStdString());
}

}  // namespace thresher::ui
