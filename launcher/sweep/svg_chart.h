// SvgChart: a line chart with markers as inline SVG text, for the sweep's HTML report (a file
// that must open anywhere with no network: no scripts, no fonts fetched). Linear axes, or a
// base-2 x axis for worker counts (1, 2, 4 … 64); the legend sits below the plot so it never
// covers a curve.
#pragma once

#include <QList>
#include <QPointF>
#include <QString>

namespace thresher::launcher::sweep {

struct SvgSeries {
    QString name;
    QList<QPointF> points;
    QString color = "#0072b2";
    bool dashed = false;
    bool markers = true;
    bool line = true;
};

struct SvgChart {
    QString title, x_label, y_label;
    QList<SvgSeries> series;
    bool log2_x = false;
    bool y_from_zero = true;

    QString svg(int width = 640, int height = 360) const;
};

// Colour-blind-safe palette (Okabe-Ito), cycled.
QString palette(int i);
// Text for HTML: & < > " escaped.
QString html_escape(const QString& s);

}  // namespace thresher::launcher::sweep
