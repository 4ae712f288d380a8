// RunDocument: the run the app edits — one RunSpec, the file it came from, and the model being
// edited (a ModelDocument it owns). What save() writes is exactly what `thresher-launch run` runs.
//
// The spec's training and cluster fields are edited in a form that keeps its edits until they
// are asked for: set_form() installs that form's "write your fields into this spec", and
// current_spec() applies it. The model goes into the spec as the file it was read from while the
// model still equals what was read (so a DL4J zip or Keras .h5 keeps its weights, and a saved spec
// names the file), inline once edited or when it came from JSON that is not a file of the spec.
//
// Every operation that can fail throws std::runtime_error (launcher::SpecError for the spec) with
// the words a user needs: the file, and where in it. Nothing changes when one fails.
#pragma once

#include <QJsonObject>
#include <QList>
#include <QObject>
#include <QString>
#include <QStringList>
#include <functional>

#include "run_spec.h"
#include "sweep_spec.h"

namespace thresher::ui {

class ModelDocument;

class RunDocument : public QObject {
    Q_OBJECT
public:
    // The default run: LeNet (the built-in template) on Fashion-MNIST, two local nodes.
    explicit RunDocument(QObject* parent = nullptr);

    ModelDocument* model() const { return model_; }
    // The form that holds the training and cluster edits (TrainingPage::apply_to); none: the
    // spec as loaded.
    void set_form(std::function<void(launcher::RunSpec&)> apply) { form_ = std::move(apply); }

    // Reads a run spec and its model (inline, or the file it names). Throws naming the file.
    void open(const QString& path);
    // A spec kept in the run history (paths absolute): a new, unsaved run like it.
    void open_json(const QJsonObject& spec, const QString& source);
    // Writes current_spec() to `path`, its relative paths re-expressed from the new folder,
    // after RunSpec::validate() with the words `thresher-launch` would use reading the file.
    void save(const QString& path);
    // Reads a Thresher, DL4J or Keras model into the model document; returns the format and fills
    // `notes` with what the import approximated. A file with weights stays the spec's model file,
    // with `steps` (> 0: the time steps a sequence input leaves open, ModelDocument::load) as its
    // model_steps. Throws OpenStepsError for a file that needs steps and got none.
    QString import_model(const QString& path, QStringList* notes = nullptr, int steps = 0);
    // A built-in model of resources/models ("lenet", "mlp").
    void load_template(const QString& name);

    // The spec as the form shows it now (model inline unless it still equals its file).
    launcher::RunSpec current_spec() const;
    // current_spec(), validated for a run: throws when the model or the spec is not valid.
    launcher::RunSpec runnable_spec() const;
    // The loaded spec (its name, source, folder), without the form's edits.
    const launcher::RunSpec& spec() const { return spec_; }
    // The file the spec was opened from or last saved to; empty for a new run.
    const QString& path() const { return path_; }
    // Whether current_spec() differs from what was last opened or saved.
    bool modified() const;
    // "Thresher — lenet-local (run.json) — 1,234 parameters"
    QString title() const;

    // The current spec on a local cluster at each count (nodes, or workers of one node).
    launcher::sweep::SweepSpec counts_sweep(const QList<int>& counts, bool vary_nodes) const;
    // counts_sweep() as a sweep file at `path`, its files named by absolute paths (the file may
    // live anywhere), named after the file.
    void save_sweep(const QString& path, const QList<int>& counts, bool vary_nodes) const;

Q_SIGNALS:
    // The spec was replaced (open, save, history, import, template) or the model changed.
    void changed();

private:
    void replace(const launcher::RunSpec& spec, const QString& path);

    ModelDocument* model_ = nullptr;
    std::function<void(launcher::RunSpec&)> form_;
    launcher::RunSpec spec_;  // the loaded spec; the form holds the edits until current_spec()
    QString path_;
    QString model_origin_path_;      // the model file the document came from (as the spec wrote it)
    QJsonObject model_origin_json_;  // its content as loaded, to notice edits
    std::optional<int> model_origin_steps_;  // the steps it was read with (RunSpec::model_steps)
    QJsonObject saved_;              // current_spec() as last opened or saved, for modified()
};

}  // namespace thresher::ui
