// LinkRow: the Training page's "Emulated link" row — the cluster.link of the RunSpec
// (thresher-engine --link-rate/--link-delay/--link-loss: a token bucket and a delay line on each
// node's egress, UDP and TCP alike, no root needed). Three spin boxes read as the user thinks of a
// link: rate in Mbit/s (1 Gbit = 1000; "unlimited" at 0), one-way delay in ms, UDP loss in %.
// Their values are typed once into RunSpec::ClusterSettings::Link (loss as a probability).
//
// Round trip: a spec's value with more decimals than a box shows (loss 0.00005 is 0.005 %) comes
// back unchanged when the box still shows that value rounded, so opening and saving a spec never
// rewrites its link.
#pragma once

#include <QWidget>

#include "run_spec.h"

class QDoubleSpinBox;

namespace thresher::ui {

class LinkRow : public QWidget {
    Q_OBJECT
public:
    explicit LinkRow(QWidget* parent = nullptr);

    void set_link(const launcher::ClusterSettings::Link& link);
    launcher::ClusterSettings::Link link() const;

Q_SIGNALS:
    void changed();

private:
    QDoubleSpinBox* rate_ = nullptr;   // Mbit/s, 0: unlimited
    QDoubleSpinBox* delay_ = nullptr;  // ms, one way
    QDoubleSpinBox* loss_ = nullptr;   // percent
    launcher::ClusterSettings::Link loaded_;
};

}  // namespace thresher::ui
