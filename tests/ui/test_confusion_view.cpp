// The Run page's confusion matrix (issue 24): Confusion reads epoch_end's matrix and refuses what
// is not one (a replayed file may hold anything); per-class accuracy and the worst classes are
// the diagonal over each row; the view draws up to 60 classes with their names (run_started's
// class_names, or the data set's known names), counts in the cells up to 20, and past 60 only
// the summary line. A real run's events (LeNet on Fashion-MNIST through the engine) show on the
// Run page with the class names.
#include <QtTest>

#include <QJsonArray>
#include <QTabWidget>
#include <random>

#include "confusion.h"
#include "confusion_view.h"
#include "qcustomplot_include.h"
#include "run_page.h"

using thresher::ui::Confusion;
using thresher::ui::ConfusionView;
using thresher::ui::RunPage;

namespace {

QJsonArray matrix(const QList<QList<qint64>>& rows) {
    QJsonArray a;
    for (const auto& r : rows) {
        QJsonArray row;
        for (auto v : r) row.append(double(v));
        a.append(row);
    }
    return a;
}

// n classes: class k right (n - k) times out of n, the rest predicted as the next class.
QJsonArray staircase(int n) {
    QList<QList<qint64>> rows;
    for (int k = 0; k < n; ++k) {
        QList<qint64> row(n, 0);
        row[k] = n - k;
        row[(k + 1) % n] += k;
        rows << row;
    }
    return matrix(rows);
}

QStringList names(int n) {
    QStringList out;
    for (int k = 0; k < n; ++k) out << QString("n%1").arg(k, 4, 10, QChar('0'));
    return out;
}

}  // namespace

class TestConfusionView : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void refuses_what_is_not_a_matrix_data();
    void refuses_what_is_not_a_matrix();
    void per_class_accuracy_and_worst();
    void view_draws_fifty_classes_with_names();
    void view_summarises_past_sixty();
    void run_page_shows_the_last_epoch();
};

void TestConfusionView::refuses_what_is_not_a_matrix_data() {
    QTest::addColumn<QJsonValue>("value");
    QTest::newRow("not an array") << QJsonValue("confusion");
    QTest::newRow("empty") << QJsonValue(QJsonArray{});
    QTest::newRow("not square") << QJsonValue(matrix({{1, 2}, {3}}));
    QTest::newRow("3 rows of 2") << QJsonValue(matrix({{1, 2}, {3, 4}, {5, 6}}));
    QTest::newRow("negative") << QJsonValue(matrix({{1, -2}, {3, 4}}));
    QTest::newRow("fraction") << QJsonValue(QJsonArray{QJsonArray{1.5, 2}, QJsonArray{3, 4}});
    QTest::newRow("a string cell") << QJsonValue(QJsonArray{QJsonArray{"1", 2}, QJsonArray{3, 4}});
    QTest::newRow("a row that is a number") << QJsonValue(QJsonArray{1, 2});
}

void TestConfusionView::refuses_what_is_not_a_matrix() {
    QFETCH(QJsonValue, value);
    QVERIFY(!Confusion::from_json(value).has_value());
    ConfusionView view;
    view.show_epoch(QJsonObject{{"event", "epoch_end"}, {"confusion", value}});
    QVERIFY(!view.has_matrix());
}

void TestConfusionView::per_class_accuracy_and_worst() {
    const auto m = Confusion::from_json(matrix({{8, 2, 0}, {1, 1, 2}, {0, 0, 0}}));
    QVERIFY(m);
    QCOMPARE(m->classes(), 3);
    QCOMPARE(m->row_total(0), 10);
    QCOMPARE(m->row_fraction(0, 1), 0.2);
    QCOMPARE(*m->class_accuracy(0), 0.8);
    QCOMPARE(*m->class_accuracy(1), 0.25);
    QVERIFY(!m->class_accuracy(2).has_value());  // no samples of class 2: no accuracy, not 0
    const auto worst = m->worst(5);
    QCOMPARE(worst.size(), 2);
    QCOMPARE(worst[0].first, 1);
    QCOMPARE(worst[1].first, 0);
    QCOMPARE(Confusion::name({"a", "b", "c"}, 3, 1), QString("b"));
    QCOMPARE(Confusion::name({"a", "b"}, 3, 1), QString("1"));  // names that do not fit are not used
}

void TestConfusionView::view_draws_fifty_classes_with_names() {
    ConfusionView view;
    view.resize(900, 700);
    view.set_class_names(names(50));
    view.show_epoch(QJsonObject{{"event", "epoch_end"}, {"epoch", 2}, {"eval_set", "test"}, {"accuracy", 0.51},
                                {"confusion", staircase(50)}});
    QVERIFY(view.has_matrix());
    // Worst: class 49, right 1 time in 50; then 48, 47 ...
    QVERIFY2(view.summary().startsWith("Epoch 3 (test set), accuracy 0.5100 · 50 classes · lowest per-class accuracy: "
                                       "n0049 0.02, n0048 0.04, n0047 0.06"),
             qPrintable(view.summary()));
    auto* map = qobject_cast<QCPColorMap*>(view.plot()->plottable(0));
    QVERIFY(map && map->visible());
    QCOMPARE(map->data()->keySize(), 50);
    QCOMPARE(map->data()->cell(10, 10), 40.0 / 50);  // (predicted, actual): the diagonal of class 10
    QCOMPARE(map->data()->cell(11, 10), 10.0 / 50);
    auto* ticker = dynamic_cast<QCPAxisTickerText*>(view.plot()->xAxis->ticker().data());
    QVERIFY(ticker);
    QCOMPARE(ticker->ticks().value(7), QString("n0007"));
    QCOMPARE(view.plot()->itemCount(), 0);  // 50 classes: no counts in the cells
    const QString shots = qEnvironmentVariable("THRESHER_SCREENSHOTS");
    if (!shots.isEmpty()) view.grab().save(shots + "/confusion-50.png", "PNG");

    view.show_epoch(QJsonObject{{"event", "epoch_end"}, {"epoch", 0}, {"accuracy", 0.7}, {"confusion", staircase(4)}});
    QVERIFY(view.plot()->itemCount() > 0);  // few classes: counts drawn
}

void TestConfusionView::view_summarises_past_sixty() {
    ConfusionView view;
    view.show_epoch(QJsonObject{{"event", "epoch_end"}, {"epoch", 0}, {"accuracy", 0.2}, {"confusion", staircase(200)}});
    QVERIFY(view.has_matrix());
    QVERIFY2(view.summary().contains("200 classes") && view.summary().contains("too many classes to draw"), qPrintable(view.summary()));
    QVERIFY(!view.plot()->plottable(0)->visible());
}

void TestConfusionView::run_page_shows_the_last_epoch() {
    RunPage page;
    page.resize(1000, 800);
    page.begin("lenet");
    page.set_class_names({"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"});
    QVERIFY(!page.confusion()->has_matrix());
    QList<QList<qint64>> rows;
    std::mt19937 rng(1);
    for (int k = 0; k < 10; ++k) {
        QList<qint64> row(10, 0);
        for (int i = 0; i < 100; ++i) ++row[rng() % 100 < 80 ? k : static_cast<int>(rng() % 10)];
        rows << row;
    }
    page.add_event(QJsonObject{{"event", "epoch_end"}, {"epoch", 0}, {"node", 0}, {"eval_set", "test"}, {"accuracy", 0.8},
                               {"confusion", matrix(rows)}});
    QVERIFY(page.confusion()->has_matrix());
    QVERIFY2(page.confusion()->summary().contains("lowest per-class accuracy"), qPrintable(page.confusion()->summary()));
    auto* tabs = page.findChild<QTabWidget*>("run_details");
    QVERIFY(tabs);
    QCOMPARE(tabs->tabText(1), QString("Confusion matrix"));
    tabs->setCurrentIndex(1);
    const QString shots = qEnvironmentVariable("THRESHER_SCREENSHOTS");
    if (!shots.isEmpty()) page.grab().save(shots + "/run-page-confusion.png", "PNG");
    // run_started's names win over the app's guess.
    page.add_event(QJsonObject{{"event", "run_started"}, {"node", 0},
                               {"class_names", QJsonArray{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}}});
    auto* ticker = dynamic_cast<QCPAxisTickerText*>(page.confusion()->plot()->yAxis->ticker().data());
    QVERIFY(ticker);
    QCOMPARE(ticker->ticks().value(0), QString("a"));
    page.begin("next");
    QVERIFY(!page.confusion()->has_matrix());  // a new run starts empty
}

QTEST_MAIN(TestConfusionView)
#include "test_confusion_view.moc"
