#include "link_row.h"

#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <cmath>

namespace thresher::ui {

namespace {

QDoubleSpinBox* box(const QString& name, double max, int decimals, const QString& suffix, const QString& zero) {
    auto* b = new QDoubleSpinBox;
    b->setObjectName(name);
    b->setLocale(QLocale::c());
    b->setDecimals(decimals);
    b->setRange(0, max);
    b->setSuffix(suffix);
    b->setSpecialValueText(zero);  // shown for 0
    b->setAccelerated(true);
    return b;
}

// The loaded value when the box still shows it (rounded to the box's decimals), else the box's.
double kept(const QDoubleSpinBox* b, double loaded, double scale) {
    const double shown = b->value();
    const double p = std::pow(10.0, b->decimals());
    return std::round(loaded * scale * p) / p == shown ? loaded : shown / scale;
}

}  // namespace

LinkRow::LinkRow(QWidget* parent) : QWidget(parent) {
    auto* row = new QHBoxLayout(this);
    row->setContentsMargins(0, 0, 0, 0);
    rate_ = box("link_rate", 1e6, 3, " Mbit/s", "unlimited");
    rate_->setSingleStep(100);
    rate_->setToolTip("Emulated egress rate of each node, for UDP and TCP alike (1 Gbit/s = 1000 Mbit/s; "
                      "at least 0.008). Unlimited: the real network as it is");
    delay_ = box("link_delay", 10000, 3, " ms", "no delay");
    delay_->setSingleStep(0.5);
    delay_->setToolTip("One-way delay added to everything a node sends (0 .. 10000 ms)");
    loss_ = box("link_loss", 99.999, 3, " %", "no loss");
    loss_->setSingleStep(0.1);
    loss_->setToolTip("Share of UDP datagrams the link drops (the transport retransmits them; TCP frames are never dropped)");
    row->addWidget(new QLabel("rate"));
    row->addWidget(rate_, 1);
    row->addWidget(new QLabel("delay"));
    row->addWidget(delay_, 1);
    row->addWidget(new QLabel("loss"));
    row->addWidget(loss_, 1);
    for (auto* b : {rate_, delay_, loss_}) connect(b, &QDoubleSpinBox::valueChanged, this, &LinkRow::changed);
}

void LinkRow::set_link(const launcher::ClusterSettings::Link& link) {
    loaded_ = link;
    const QSignalBlocker r(rate_), d(delay_), l(loss_);
    rate_->setValue(link.rate_mbit);
    delay_->setValue(link.delay_ms);
    loss_->setValue(link.loss * 100);
}

launcher::ClusterSettings::Link LinkRow::link() const {
    launcher::ClusterSettings::Link out;
    out.rate_mbit = kept(rate_, loaded_.rate_mbit, 1);
    out.delay_ms = kept(delay_, loaded_.delay_ms, 1);
    out.loss = kept(loss_, loaded_.loss, 100);
    return out;
}

}  // namespace thresher::ui
