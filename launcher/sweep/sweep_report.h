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

#include "svg_chart.h"
#include "sweep_results.h"

namespace thresher::launcher::sweep {

// Throughput, speedup, time per iteration with the scaling model, traffic, test accuracy.
QList<SvgChart> sweep_charts(const SweepResults& results);
QString html_report(const SweepResults& results);
// Writes DIR/report.html atomically; returns its path; throws SpecError.
QString write_html_report(const SweepResults& results, const QString& dir);

}  // namespace thresher::launcher::sweep
