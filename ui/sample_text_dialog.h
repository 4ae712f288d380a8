// Run ▸ Sample text…: text drawn from the character model a run saved (thresher-engine predict
// --sample, launcher/text_sampler.h). The user sets the start text, the length, the temperature
// and the seed, presses Sample and reads the text below; the engine runs in its own process, so
// the window never waits. A model that is not a character model comes back as the engine's own
// refusal, shown in the dialog.
#pragma once

#include <QDialog>

#include "engine_job.h"
#include "text_sampler.h"

class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;

namespace thresher::ui {

class SampleTextDialog : public QDialog {
    Q_OBJECT
public:
    // `engine`: thresher-engine; `model`: the saved model file.
    SampleTextDialog(const QString& engine, const QString& model, QWidget* parent = nullptr);

    launcher::SampleRequest request() const;
    void sample();  // what the Sample button does
    launcher::EngineJob& job() { return job_; }
    QString text() const;     // what the last sample drew, with its start text
    QString status() const;   // "" while idle, "Sampling…", or the engine's error

private:
    void finished(const launcher::EngineJobResult& result);

    QString model_;
    launcher::EngineJob job_;
    QLineEdit* prime_ = nullptr;
    QSpinBox* length_ = nullptr;
    QDoubleSpinBox* temperature_ = nullptr;
    QSpinBox* seed_ = nullptr;
    QPushButton* sample_ = nullptr;
    QPlainTextEdit* output_ = nullptr;
    QLabel* status_ = nullptr;
};

}  // namespace thresher::ui
