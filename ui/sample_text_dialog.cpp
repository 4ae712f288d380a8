#include "sample_text_dialog.h"

#include <QDialogButtonBox>
#include <QDoubleSpinBox>
#include <QFileInfo>
#include <QFontDatabase>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace thresher::ui {

SampleTextDialog::SampleTextDialog(const QString& engine, const QString& model, QWidget* parent)
    : QDialog(parent), model_(model), job_(engine, launcher::sample_job_kind(), launcher::kSampleDeadline) {
    setWindowTitle("Sample text — " + QFileInfo(model).fileName());
    setObjectName("sample_text_dialog");
    auto* form = new QFormLayout;
    prime_ = new QLineEdit;
    prime_->setObjectName("prime");
    prime_->setPlaceholderText("one random character");
    prime_->setToolTip("The text the model continues; every character must be in the model's vocabulary");
    form->addRow("Start with", prime_);
    length_ = new QSpinBox;
    length_->setObjectName("length");
    length_->setRange(1, 10000);
    length_->setValue(300);
    length_->setSuffix(" characters");
    form->addRow("Length", length_);
    temperature_ = new QDoubleSpinBox;
    temperature_->setObjectName("temperature");
    temperature_->setRange(0.0, 5.0);
    temperature_->setSingleStep(0.1);
    temperature_->setValue(0.8);
    temperature_->setToolTip("0: always the most likely character; 1: the model's probabilities; higher: more random");
    form->addRow("Temperature", temperature_);
    seed_ = new QSpinBox;
    seed_->setObjectName("seed");
    seed_->setRange(0, 1 << 30);
    seed_->setValue(1);
    form->addRow("Seed", seed_);

    sample_ = new QPushButton("Sample");
    sample_->setObjectName("sample");
    sample_->setDefault(true);
    output_ = new QPlainTextEdit;
    output_->setObjectName("output");
    output_->setReadOnly(true);
    output_->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    output_->setMinimumSize(520, 220);
    status_ = new QLabel;
    status_->setObjectName("status");
    status_->setWordWrap(true);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    buttons->addButton(sample_, QDialogButtonBox::ActionRole);

    auto* layout = new QVBoxLayout(this);
    layout->addLayout(form);
    layout->addWidget(output_, 1);
    layout->addWidget(status_);
    layout->addWidget(buttons);
    connect(sample_, &QPushButton::clicked, this, &SampleTextDialog::sample);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);
    connect(&job_, &launcher::EngineJob::finished, this, &SampleTextDialog::finished);
}

launcher::SampleRequest SampleTextDialog::request() const {
    launcher::SampleRequest r;
    r.model = model_;
    r.prime = prime_->text();
    r.length = length_->value();
    r.temperature = temperature_->value();
    r.seed = static_cast<quint64>(seed_->value());
    return r;
}

void SampleTextDialog::sample() {
    if (!job_.start(launcher::sample_arguments(request()))) return;
    sample_->setEnabled(false);
    status_->setStyleSheet({});
    status_->setText("Sampling…");
}

void SampleTextDialog::finished(const launcher::EngineJobResult& result) {
    sample_->setEnabled(true);
    const auto s = launcher::read_sample(result);
    if (!s.ok) {
        status_->setStyleSheet("color: #b00020;");
        status_->setText(s.error);
        return;
    }
    status_->clear();
    output_->setPlainText(s.prime + s.text);
    // The start text plain, what the model wrote in bold: which is which stays visible.
    QTextCursor c(output_->document());
    c.setPosition(static_cast<int>(s.prime.size()));
    c.movePosition(QTextCursor::End, QTextCursor::KeepAnchor);
    QTextCharFormat bold;
    bold.setFontWeight(QFont::Bold);
    c.mergeCharFormat(bold);
}

QString SampleTextDialog::text() const { return output_->toPlainText(); }
QString SampleTextDialog::status() const { return status_->text(); }

}  // namespace thresher::ui
