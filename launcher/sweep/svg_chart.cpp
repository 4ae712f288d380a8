#include "svg_chart.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace thresher::launcher::sweep {

namespace {

// 1, 2, 5 × 10^k steps giving about `n` ticks over [lo, hi].
double nice_step(double lo, double hi, int n) {
    const double raw = (hi - lo) / std::max(1, n);
    if (raw <= 0 || !std::isfinite(raw)) return 1;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (m * mag >= raw) return m * mag;
    return 10 * mag;
}

// Tick values: the multiples of `step` from the first at or above `lo` up to `hi`, at most
// kMaxTicks, each above the one before. Values far larger than their range (a throughput of
// 1e17 samples/s next to 1e17 + 32) make a step below their precision, where adding it never
// moved the tick: the loop wrote ticks until memory ran out (tests/fuzz, fuzz_sweep_results).
constexpr int kMaxTicks = 50;
QList<double> ticks(double lo, double hi, double step) {
    QList<double> out;
    const double first = std::ceil(lo / step) * step;
    for (int i = 0; i < kMaxTicks; ++i) {
        const double v = first + i * step;
        if (!(v <= hi + 1e-12) || (!out.isEmpty() && v <= out.back())) break;  // past the end, NaN, or stuck
        out << v;
    }
    return out;
}

QString num(double v) { return QString::number(v, 'f', 1); }
QString tick_text(double v) {
    if (std::abs(v) >= 1e6 || (std::abs(v) < 1e-3 && v != 0)) return QString::number(v, 'g', 3);
    return QString::number(v, 'g', 6);
}

}  // namespace

QString palette(int i) {
    static const char* const colors[] = {"#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442", "#000000"};
    return colors[i % 8];
}

QString html_escape(const QString& s) { return s.toHtmlEscaped(); }

QString SvgChart::svg(int width, int height) const {
    const int legend_rows = int(series.size() + 1) / 2;
    const double left = 70, right = 20, top = 34, bottom = 50 + 18.0 * legend_rows;
    const double pw = width - left - right, ph = height - top - bottom;
    double x0 = std::numeric_limits<double>::infinity(), x1 = -x0, y0 = x0, y1 = -x0;
    auto fx = [&](double x) { return log2_x ? std::log2(std::max(x, 1e-9)) : x; };
    for (const auto& s : series)
        for (const auto& p : s.points) {
            if (!std::isfinite(p.y())) continue;
            x0 = std::min(x0, fx(p.x()));
            x1 = std::max(x1, fx(p.x()));
            y0 = std::min(y0, p.y());
            y1 = std::max(y1, p.y());
        }
    QString out = QString("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%1\" height=\"%2\" viewBox=\"0 0 %1 %2\" "
                          "font-family=\"sans-serif\" font-size=\"12\">\n").arg(width).arg(height);
    out += QString("<rect width=\"%1\" height=\"%2\" fill=\"white\"/>\n").arg(width).arg(height);
    out += QString("<text x=\"%1\" y=\"20\" text-anchor=\"middle\" font-size=\"14\" font-weight=\"bold\">%2</text>\n")
               .arg(width / 2).arg(html_escape(title));
    if (!std::isfinite(x0)) {
        out += QString("<text x=\"%1\" y=\"%2\" text-anchor=\"middle\" fill=\"#666\">no points yet</text>\n</svg>\n")
                   .arg(width / 2).arg(height / 2);
        return out;
    }
    if (y_from_zero) y0 = std::min(0.0, y0);
    if (y1 <= y0) y1 = y0 + 1;
    y1 += (y1 - y0) * 0.05;
    if (x1 <= x0) {
        x0 -= 0.5;
        x1 += 0.5;
    }
    const double xpad = (x1 - x0) * 0.04;
    x0 -= xpad;
    x1 += xpad;
    auto px = [&](double x) { return left + (fx(x) - x0) / (x1 - x0) * pw; };
    auto py = [&](double y) { return top + ph - (y - y0) / (y1 - y0) * ph; };

    // Axes, grid and ticks.
    out += QString("<rect x=\"%1\" y=\"%2\" width=\"%3\" height=\"%4\" fill=\"none\" stroke=\"#444\"/>\n")
               .arg(num(left), num(top), num(pw), num(ph));
    for (const double y : ticks(y0, y1, nice_step(y0, y1, 5))) {
        out += QString("<line x1=\"%1\" x2=\"%2\" y1=\"%3\" y2=\"%3\" stroke=\"#ddd\"/>"
                       "<text x=\"%4\" y=\"%5\" text-anchor=\"end\">%6</text>\n")
                   .arg(num(left), num(left + pw), num(py(y)), num(left - 6), num(py(y) + 4), tick_text(y));
    }
    QList<double> xticks;
    if (log2_x) {
        for (const double k : ticks(x0, x1, 1.0)) xticks << std::pow(2.0, k);
    } else {
        xticks = ticks(x0, x1, std::max(1.0, nice_step(x0, x1, 6)));
    }
    for (double x : xticks)
        out += QString("<line x1=\"%1\" x2=\"%1\" y1=\"%2\" y2=\"%3\" stroke=\"#eee\"/>"
                       "<text x=\"%1\" y=\"%4\" text-anchor=\"middle\">%5</text>\n")
                   .arg(num(px(x)), num(top), num(top + ph), num(top + ph + 16), tick_text(x));
    out += QString("<text x=\"%1\" y=\"%2\" text-anchor=\"middle\">%3</text>\n")
               .arg(num(left + pw / 2), num(top + ph + 34), html_escape(x_label + (log2_x ? " (log scale)" : "")));
    out += QString("<text transform=\"translate(16 %1) rotate(-90)\" text-anchor=\"middle\">%2</text>\n")
               .arg(num(top + ph / 2), html_escape(y_label));

    // Series.
    for (const auto& s : series) {
        QStringList coords;
        for (const auto& p : s.points)
            if (std::isfinite(p.y())) coords << num(px(p.x())) + "," + num(py(p.y()));
        if (s.line && coords.size() > 1)
            out += QString("<polyline fill=\"none\" stroke=\"%1\" stroke-width=\"2\"%2 points=\"%3\"/>\n")
                       .arg(s.color, s.dashed ? " stroke-dasharray=\"6 4\"" : "", coords.join(' '));
        if (s.markers)
            for (const auto& p : s.points)
                if (std::isfinite(p.y()))
                    out += QString("<circle class=\"point\" cx=\"%1\" cy=\"%2\" r=\"4\" fill=\"%3\"><title>%4: (%5, %6)</title></circle>\n")
                               .arg(num(px(p.x())), num(py(p.y())), s.color, html_escape(s.name), tick_text(p.x()),
                                    tick_text(p.y()));
    }
    // Legend below the plot, two columns.
    for (int i = 0; i < series.size(); ++i) {
        const double lx = left + (i % 2) * (pw / 2), ly = top + ph + 52 + 18.0 * (i / 2);
        if (series[i].line)
            out += QString("<line x1=\"%1\" x2=\"%2\" y1=\"%3\" y2=\"%3\" stroke=\"%4\" stroke-width=\"2\"%5/>")
                       .arg(num(lx), num(lx + 24), num(ly - 4), series[i].color,
                            series[i].dashed ? " stroke-dasharray=\"6 4\"" : "");
        if (series[i].markers)  // a legend marker, not a data point: no "point" class
            out += QString("<circle cx=\"%1\" cy=\"%2\" r=\"4\" fill=\"%3\"/>").arg(num(lx + 12), num(ly - 4), series[i].color);
        out += QString("<text x=\"%1\" y=\"%2\">%3</text>\n").arg(num(lx + 30), num(ly), html_escape(series[i].name));
    }
    out += "</svg>\n";
    return out;
}

}  // namespace thresher::launcher::sweep
