// The sweep's charts and its HTML report. sweep_charts() is the one place that decides what is
// drawn (the app's Scalability page draws the same series with QCustomPlot); write_html_report()
// puts them, the tables, the scaling model with its leave-one-out test, the sweep file and the
// machine's facts into one self-contained report.html (inline SVG and CSS, nothing fetched).
//
// The x axis is the worker count when an axis varies it, else the last axis (its values when they
// are numbers, else the point number); each series is one combination of the other axes.
#pragma once

#include <QList>
#include <QString>

#include "scaling_model.h"
#include "svg_chart.h"
#include "sweep_results.h"

namespace thresher::launcher::sweep {

// Throughput, speedup, time per iteration with the scaling model, traffic, test accuracy.
QList<SvgChart> sweep_charts(const SweepResults& results);
QString html_report(const SweepResults& results);
// The what-if chart's ends in words, per strategy: "gradient-sharing at 64 workers, one node per
// machine: speedup 2.1 at 10 Gbit/s, 2.2 at 25, 2.2 at 100 (DL4J's estimate 28.4)".
QStringList what_if_words(const SweepModel& model, const QList<PointResult>& points, int workers = 64);
// Writes DIR/report.html atomically; returns its path; throws SpecError.
QString write_html_report(const SweepResults& results, const QString& dir);

}  // namespace thresher::launcher::sweep
