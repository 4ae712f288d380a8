#include "sweep_report.h"

#include <QDir>
#include <QJsonDocument>
#include <QSaveFile>
#include <algorithm>
#include <cmath>
#include <map>

#include "scaling_model.h"

namespace thresher::launcher::sweep {

namespace {

struct Layout {
    bool by_workers = false;
    int x_axis = -1;  // the axis on x when no axis varies the workers
    QString x_label;
};

Layout layout_of(const SweepSpec& s) {
    Layout l;
    for (const auto& a : s.axes)
        if (a.varies_workers()) l.by_workers = true;
    if (l.by_workers) {
        l.x_label = "workers";
    } else {
        l.x_axis = int(s.axes.size()) - 1;
        l.x_label = s.axes[l.x_axis].name;
    }
    return l;
}

double x_of(const Layout& l, const PointResult& p) {
    if (l.by_workers) return p.workers;
    const QJsonValue v = p.values[l.x_axis];
    return v.isDouble() ? v.toDouble() : p.point + 1;
}

QString series_key(const SweepSpec& s, const Layout& l, const PointResult& p) {
    QStringList parts;
    for (int a = 0; a < s.axes.size(); ++a)
        if (!(l.by_workers ? s.axes[a].varies_workers() : a == l.x_axis)) parts << s.axes[a].name + " = " + value_text(p.values[a]);
    return parts.isEmpty() ? QString("measured") : parts.join(", ");
}

constexpr int kWhatIfGbit[] = {10, 25, 100};

QString fmt(const std::optional<double>& v, int decimals = 2) { return v ? QString::number(*v, 'f', decimals) : QString("—"); }

QString machine_facts() {
    const QJsonObject m = machine_facts_json();
    return html_escape(QString("%1, %2, %3 CPU threads; report written %4")
                           .arg(m.value("host").toString(), m.value("system").toString(),
                                QString::number(m.value("cpu_threads").toInt()), m.value("written").toString()));
}

// One node per machine at n workers on a switched network of `gbit`, with the group's traffic
// extrapolated to n and its link's delay.
Scenario what_if_scenario(const QList<PointResult>& g, int n, int gbit) {
    const PointResult& last = g.back();
    return {n, extrapolated_kib(g, n), last.strategy == "gradient-sharing", last.averaging_frequency, gbit * 1000.0,
            last.link_delay_ms, false, true};
}

// What a group's what-if curves depend on: its strategy (the model), its traffic extrapolated to
// 64 workers, its link's delay and its averaging frequency; not its own link's rate, which the
// what-if replaces.
QString what_if_key(const QList<PointResult>& g) {
    const PointResult& last = g.back();
    return QString("%1|%2|%3|%4").arg(last.strategy).arg(extrapolated_kib(g, 64), 0, 'g', 4).arg(last.link_delay_ms).arg(last.averaging_frequency);
}

// The what-if curves of one group: its speedup n × T(1) ÷ T(n) on a cluster of machines with one
// node each (compute as measured alone) at 10, 25 and 100 Gbit/s, dashed (the measured speedup is
// on the speedup chart); and, for gradient sharing, DL4J's estimate n × C ÷ (C + E + D × n) from
// the same phases. A colour per curve from the palette less yellow and black (DL4J's).
void add_what_if(SvgChart& chart, const ScalingModel& model, const QList<PointResult>& g, const QString& name, int& color) {
    const bool gs = g.front().strategy == "gradient-sharing";
    for (const int gbit : kWhatIfGbit) {
        SvgSeries line{QString("%1, %2 Gbit/s").arg(name).arg(gbit), {}, palette(color++ % 6), true, true};
        const double t1 = model.predict(what_if_scenario(g, 1, gbit));
        for (int n = 1; n <= 64; n *= 2) line.points << QPointF(n, n * t1 / model.predict(what_if_scenario(g, n, gbit)));
        chart.series << line;
    }
    if (gs && model.phases) {
        SvgSeries dl4j{name + ": DL4J's estimate", {}, "#000000", true, true};
        for (int n = 1; n <= 64; n *= 2) dl4j.points << QPointF(n, dl4j_estimate_speedup(model, n));
        chart.series << dl4j;
    }
}

}  // namespace

QList<SvgChart> sweep_charts(const SweepResults& results) {
    const SweepSpec& s = results.sweep();
    const Layout l = layout_of(s);
    const QList<PointResult> points = results.points();
    std::map<QString, QList<PointResult>> groups;
    QStringList order;
    for (const auto& p : points) {
        const QString key = series_key(s, l, p);
        if (!groups.count(key)) order << key;
        groups[key].append(p);
    }
    for (auto& [key, g] : groups)
        std::sort(g.begin(), g.end(), [&](const auto& a, const auto& b) { return x_of(l, a) < x_of(l, b); });

    SvgChart sps{"Throughput", l.x_label, "samples/s", {}, false, true};
    SvgChart speed{"Speedup against the fewest workers", l.x_label, "speedup", {}, false, true};
    SvgChart time{"Time per iteration (model dashed)", l.x_label, "ms per iteration", {}, l.by_workers, true};
    SvgChart traffic{"Traffic", l.x_label, "KiB sent per worker per iteration", {}, false, true};
    SvgChart accuracy{"Test accuracy after the run", l.x_label, "accuracy", {}, false, true};
    SvgChart what_if{"What if: one node per machine, to 64 (model dashed)", "workers", "speedup", {}, true, true};
    const SweepModel sweep_model = fit_sweep_model(points);
    double max_workers = 1;
    int what_if_color = 0;
    struct WhatIf {
        const ScalingModel* model;
        QList<PointResult> group;
        QString name, key;
    };
    QList<WhatIf> what_ifs;
    for (int i = 0; i < order.size(); ++i) {
        const auto& g = groups[order[i]];
        const QString color = palette(i);
        SvgSeries a{order[i], {}, color}, b{order[i], {}, color}, t{order[i], {}, color}, k{order[i], {}, color},
            acc{order[i], {}, color};
        for (const auto& p : g) {
            const double x = x_of(l, p);
            max_workers = std::max(max_workers, double(p.workers));
            a.points << QPointF(x, p.samples_per_s);
            b.points << QPointF(x, p.speedup);
            if (auto m = model_point(p)) {
                t.points << QPointF(x, m->iter_ms);
                k.points << QPointF(x, m->kib_per_worker);
            }
            if (p.accuracy) acc.points << QPointF(x, *p.accuracy);
        }
        sps.series << a;
        speed.series << b;
        traffic.series << k;
        if (!acc.points.isEmpty()) accuracy.series << acc;
        if (l.by_workers) {
            // Measured points only (the model's line carries the trend), then the model to 64.
            t.line = false;
            time.series << t;
            const ScalingModel* model = sweep_model.for_strategy(g.front().strategy);
            if (model) {
                // Fitted over the measured counts, dashed on to 64 workers as measured (local
                // nodes sharing this machine's cores, the same link).
                SvgSeries line{order[i] + " (model)", {}, color, true, false};
                const auto last = model_point(g.back());  // the group's configuration
                for (int n = 1; last && n <= 64; n *= 2) {
                    double kib = extrapolated_kib(g, n);  // the measured traffic where there is some
                    for (const auto& p : g)
                        if (p.workers == n && p.bytes_per_iter) kib = *p.bytes_per_iter / n / 1024.0;
                    Scenario at = last->scenario(kib);
                    at.workers = n;
                    line.points << QPointF(n, model->predict(at));
                }
                time.series << line;
                QString short_name = order[i];  // the legend is long enough with three rates per group
                short_name.remove("strategy = ");
                what_ifs.append({model, g, short_name, what_if_key(g)});
            }
        } else {
            time.series << t;
        }
    }
    // Groups whose what-if is the same (they differ only in what the what-if replaces: their own
    // link) get one set of curves, named after the strategy.
    for (int i = 0; i < what_ifs.size(); ++i) {
        const WhatIf& w = what_ifs[i];
        bool drawn = false, shared = false;
        for (int j = 0; j < what_ifs.size(); ++j)
            if (j != i && what_ifs[j].key == w.key) (j < i ? drawn : shared) = true;
        if (drawn) continue;
        add_what_if(what_if, *w.model, w.group, shared ? w.group.front().strategy : w.name, what_if_color);
    }
    if (l.by_workers) {
        SvgSeries ideal{"ideal (speedup = workers)", {}, "#888888", true, false};
        ideal.points << QPointF(1, 1) << QPointF(max_workers, max_workers);
        speed.series << ideal;
    }
    QList<SvgChart> out{sps, speed, time};
    if (!what_if.series.isEmpty()) {
        QList<QPointF> ideal{{1, 1}, {64, 64}};
        what_if.series << SvgSeries{"ideal (speedup = workers)", ideal, "#888888", true, false};
        out << what_if;
    }
    out << traffic;
    if (!accuracy.series.isEmpty()) out << accuracy;
    return out;
}

QStringList what_if_words(const SweepModel& model, const QList<PointResult>& points, int workers) {
    QStringList out;
    for (const auto& m : model.models) {
        QList<PointResult> mine;
        for (const auto& p : points)
            if (p.strategy == m.strategy) mine << p;
        if (mine.isEmpty()) continue;
        std::sort(mine.begin(), mine.end(), [](const auto& a, const auto& b) { return a.workers < b.workers; });
        const bool gs = m.strategy == "gradient-sharing";
        QStringList rates;
        for (const int gbit : kWhatIfGbit) {
            const double t1 = m.predict(what_if_scenario(mine, 1, gbit));
            const double tn = m.predict(what_if_scenario(mine, workers, gbit));
            rates << QString("%1 at %2 Gbit/s").arg(workers * t1 / tn, 0, 'f', 1).arg(gbit);
        }
        QString line = QString("%1 at %2 workers, one node per machine: speedup %3").arg(m.strategy).arg(workers).arg(rates.join(", "));
        if (gs && m.phases) line += QString(" (DL4J's estimate %1)").arg(dl4j_estimate_speedup(m, workers), 0, 'f', 1);
        out << line;
    }
    return out;
}

QString html_report(const SweepResults& results) {
    const SweepSpec& s = results.sweep();
    const QList<PointResult> points = results.points();
    const SweepModel model = fit_sweep_model(points);
    QString h;
    h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" + html_escape(s.name) +
         " — Thresher sweep</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:1400px}"
         "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}"
         "th{background:#f0f0f0}td.l,th.l{text-align:left}.charts{display:flex;flex-wrap:wrap;gap:1em}"
         "pre{background:#f6f6f6;padding:1em;overflow:auto}</style></head><body>\n";
    h += "<h1>Sweep " + html_escape(s.name) + "</h1>\n<p>" + machine_facts() + "</p>\n";
    int ok = 0, failed = 0;
    for (const auto& r : results.rows()) (r.status == "ok" ? ok : failed)++;
    h += QString("<p>%1 point(s) × %2 repeat(s): %3 run(s) finished, %4 failed or stopped, %5 not run.</p>\n")
             .arg(s.points.size()).arg(s.repeats).arg(ok).arg(failed).arg(s.run_count() - ok - failed);

    h += "<h2>Charts</h2>\n<div class=\"charts\">\n";
    for (const auto& c : sweep_charts(results)) h += "<figure>" + c.svg() + "</figure>\n";
    h += "</div>\n";

    h += "<h2>Points</h2>\n<table id=\"points\"><tr><th>#</th>";
    for (const auto& a : s.axes) h += "<th class=\"l\">" + html_escape(a.name) + "</th>";
    h += "<th>workers</th><th>runs</th><th>samples/s</th><th>± spread</th><th>speedup</th><th>efficiency</th>"
         "<th>DL4J estimate</th><th>ms/iteration (worker)</th><th>encode ms</th><th>decode ms/msg</th>"
         "<th>KiB/iteration (all)</th><th>test accuracy</th></tr>\n";
    for (const auto& p : points) {
        h += "<tr><td>" + QString::number(p.point + 1) + "</td>";
        for (const auto& v : p.values) h += "<td class=\"l\">" + html_escape(value_text(v)) + "</td>";
        h += QString("<td>%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td><td>%6 %</td><td>%7</td><td>%8</td><td>%9</td>")
                 .arg(p.workers).arg(p.runs).arg(p.samples_per_s, 0, 'f', 1).arg(p.samples_per_s_spread, 0, 'f', 1)
                 .arg(p.speedup, 0, 'f', 2).arg(p.efficiency * 100, 0, 'f', 0).arg(fmt(p.estimate_speedup))
                 .arg(fmt(p.iter_ms)).arg(fmt(p.encode_ms, 3));
        h += QString("<td>%1</td><td>%2</td><td>%3</td></tr>\n")
                 .arg(fmt(p.decode_ms, 3), p.bytes_per_iter ? QString::number(*p.bytes_per_iter / 1024, 'f', 1) : QString("—"),
                      fmt(p.accuracy, 4));
    }
    h += "</table>\n";
    if (const QString note = past_the_cores(points); !note.isEmpty()) h += "<p id=\"past-the-cores\">" + html_escape(note) + "</p>\n";

    h += "<h2>Scaling model</h2>\n";
    if (model.models.isEmpty()) {
        h += "<p>Not fitted: no point has finished yet.</p>\n";
    } else {
        h += "<p id=\"model-form\">Per strategy: time per iteration = compute C(n) + the strategy's own step work S(n) + "
             "what a lone worker spends outside these phases U + encode + decode × messages received (gradient sharing) + "
             "the bytes on the critical path ÷ link rate (gradient sharing: what a worker sends; averaging: its round "
             "crosses the controller's link up and down, one after the other) + link delay (averaging: twice a round) + "
             "a cost per other worker + a cost per KiB sent. C (data wait, forward, "
             "backward), S (updater, averaging's own round work, applying its own message), U, encode and decode are "
             "measured from the runs' phase times (at each measured count; between and beyond, a line for C, and S and "
             "encode in proportion to C: local nodes share the cores); the last two are fitted on what the phases leave unexplained. "
             "T is each worker's period from one iteration to the next on its own node's clock. The what-if chart puts "
             "each node on a machine of its own (C, S and encode as measured alone) behind a 10, 25 or 100 Gbit/s link; DL4J's "
             "estimate is workers × C ÷ (C + encode + decode × workers).</p>\n<ul>\n";
        for (const auto& m : model.models) h += "<li class=\"model\">" + html_escape(m.describe()) + "</li>\n";
        h += "</ul>\n<ul>\n";
        for (const auto& w : what_if_words(model, points)) h += "<li class=\"what-if\">" + html_escape(w) + "</li>\n";
        h += "</ul>\n";
        h += "<table id=\"leave-one-out\"><tr><th class=\"l\">left out</th><th>measured ms</th><th>repeats' spread</th>"
             "<th>predicted ms</th><th>error</th></tr>\n";
        for (const auto& m : model.models)
            for (const auto& lo : m.leave_one_out) {
                QString spread = "—";
                for (const auto& p : points)
                    if (p.point == lo.point && p.runs > 1 && p.period_ms && p.period_ms_spread && *p.period_ms > 0)
                        spread = QString::number(*p.period_ms_spread / *p.period_ms * 100, 'f', 1) + " %";
                h += QString("<tr><td class=\"l\">%1</td><td>%2</td><td>%3</td><td>%4</td><td>%5</td></tr>\n")
                         .arg(html_escape(QString::number(lo.point + 1) + ": " + lo.label), QString::number(lo.measured_ms, 'f', 3),
                              spread, fmt(lo.predicted_ms, 3),
                              lo.relative_error ? QString::number(*lo.relative_error * 100, 'f', 1) + " %" : "—");
            }
        h += "</table>\n";
        h += model.max_loo_error ? QString("<p>Leave-one-out (each point predicted by its strategy's model fitted without it, "
                                           "none of its own measurements used): largest error %1 %, mean %2 % (trust the model beyond "
                                           "the measured points only when these are small, e.g. under 15 %, and no larger "
                                           "than the repeats' spread: a point whose repeats scatter by 30 % cannot be predicted "
                                           "closer than that).</p>\n")
                                       .arg(*model.max_loo_error * 100, 0, 'f', 1).arg(*model.mean_loo_error * 100, 0, 'f', 1)
                                 : QString("<p>Leave-one-out: too few points to fit the model without one of them.</p>\n");
    }

    h += "<h2>Runs</h2>\n<table id=\"runs\"><tr><th>point</th><th>repeat</th><th class=\"l\">status</th><th>samples/s</th>"
         "<th>ms/iteration</th><th>iterations</th><th>wall s</th><th class=\"l\">summary</th></tr>\n";
    for (const auto& r : results.rows())
        h += QString("<tr><td>%1</td><td>%2</td><td class=\"l\">%3</td><td>%4</td><td>%5</td><td>%6</td><td>%7</td><td class=\"l\">%8</td></tr>\n")
                 .arg(r.point + 1).arg(r.repeat + 1).arg(html_escape(r.status), fmt(r.samples_per_s, 1), fmt(r.iter_ms))
                 .arg(r.iterations).arg(fmt(r.wall_s, 1), html_escape(r.summary));
    h += "</table>\n<h2>The sweep file</h2>\n<pre>" +
         html_escape(QString::fromUtf8(QJsonDocument(s.document).toJson(QJsonDocument::Indented))) + "</pre>\n</body></html>\n";
    return h;
}

QString write_html_report(const SweepResults& results, const QString& dir) {
    const QString path = QDir(dir).filePath("report.html");
    QSaveFile f(path);
    const QByteArray bytes = html_report(results).toUtf8();
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size() || !f.commit())
        throw launcher::SpecError(QString("%1: cannot write: %2").arg(path, f.errorString()).toStdString());
    return path;
}

}  // namespace thresher::launcher::sweep
