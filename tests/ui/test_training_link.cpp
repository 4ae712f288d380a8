// The Training page's "Emulated link" row (cluster.link): a spec's link fills the rate, delay and
// loss boxes; apply_to() writes it back unchanged, also through a saved spec file read again;
// an edit in a box emits changed() and reaches the spec typed (loss as a probability); a spec
// without a link stays without one (nothing written to its JSON).
#include <QtTest>

#include <QDoubleSpinBox>
#include <QSignalSpy>
#include <QTemporaryDir>

#include "link_row.h"
#include "model_document.h"
#include "run_spec.h"
#include "training_page.h"

using thresher::launcher::ClusterSettings;
using thresher::launcher::RunSpec;

class TestTrainingLink : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void link_fills_the_row_and_round_trips();
    void an_edit_reaches_the_spec();
    void no_link_stays_none();
};

namespace {

RunSpec spec_with(const QByteArray& cluster) {
    const QByteArray text = R"({"format":"thresher-run","version":1,"name":"l","model":{"name":"m","input":{"size":4},
        "layers":[{"type":"output","units":2}]},"cluster":)" + cluster + "}";
    return RunSpec::from_json(text, "l.json", QDir::tempPath());
}

QDoubleSpinBox* box(QWidget& page, const char* name) {
    auto* b = page.findChild<QDoubleSpinBox*>(name);
    if (!b) qFatal("no %s box", name);
    return b;
}

}  // namespace

void TestTrainingLink::link_fills_the_row_and_round_trips() {
    thresher::ui::ModelDocument doc;
    thresher::ui::TrainingPage page(&doc);
    // 0.00005 has more decimals than the loss box shows (0.005 %): it must come back as written.
    const RunSpec spec = spec_with(R"({"kind":"local","nodes":2,"link":{"rate_mbit":1000,"delay_ms":2,"loss":0.00005}})");
    page.set_spec(spec);
    QCOMPARE(box(page, "link_rate")->value(), 1000.0);
    QCOMPARE(box(page, "link_delay")->value(), 2.0);
    QCOMPARE(box(page, "link_loss")->value(), 0.005);
    QCOMPARE(box(page, "link_rate")->text(), QString("1000.000 Mbit/s"));
    RunSpec back = spec;
    back.cluster.link = {};
    page.apply_to(back);
    QVERIFY(back.cluster.link == spec.cluster.link);
    // Saved and read again, then shown and applied again: the same link.
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString path = dir.filePath("l.json");
    back.save_to(path);
    const RunSpec reread = RunSpec::load(path);
    QCOMPARE(reread.cluster.link.rate_mbit, 1000.0);
    QCOMPARE(reread.cluster.link.delay_ms, 2.0);
    QCOMPARE(reread.cluster.link.loss, 0.00005);
    thresher::ui::TrainingPage again(&doc);
    again.set_spec(reread);
    RunSpec twice = reread;
    again.apply_to(twice);
    QVERIFY(twice.cluster.link == spec.cluster.link);
}

void TestTrainingLink::an_edit_reaches_the_spec() {
    thresher::ui::ModelDocument doc;
    thresher::ui::TrainingPage page(&doc);
    RunSpec spec = spec_with(R"({"kind":"local","nodes":4})");
    page.set_spec(spec);
    QSignalSpy changed(&page, &thresher::ui::TrainingPage::changed);
    // "these 4 nodes behind 1 Gbit, 2 ms, 1 % loss", typed as a user would.
    for (auto [name, text] : {std::pair{"link_rate", "100"}, {"link_delay", "2.5"}, {"link_loss", "1"}}) {
        QDoubleSpinBox* b = box(page, name);
        b->selectAll();
        QTest::keyClicks(b, text);
    }
    QVERIFY(changed.count() >= 3);
    page.apply_to(spec);
    QCOMPARE(spec.cluster.link.rate_mbit, 100.0);
    QCOMPARE(spec.cluster.link.delay_ms, 2.5);
    QCOMPARE(spec.cluster.link.loss, 0.01);
    QVERIFY(spec.cluster.link.active());
    const QJsonObject link = spec.to_json().value("cluster").toObject().value("link").toObject();
    QCOMPARE(link.value("rate_mbit").toDouble(), 100.0);
    QCOMPARE(link.value("loss").toDouble(), 0.01);
    // Back to unlimited: 0 shows in words and the spec has no link again.
    box(page, "link_rate")->setValue(0);
    box(page, "link_delay")->setValue(0);
    box(page, "link_loss")->setValue(0);
    QCOMPARE(box(page, "link_rate")->text(), QString("unlimited"));
    page.apply_to(spec);
    QVERIFY(!spec.cluster.link.active());
    QVERIFY(!spec.to_json().value("cluster").toObject().contains("link"));
}

void TestTrainingLink::no_link_stays_none() {
    thresher::ui::ModelDocument doc;
    thresher::ui::TrainingPage page(&doc);
    RunSpec spec = spec_with(R"({"kind":"local","nodes":2})");
    page.set_spec(spec);
    QCOMPARE(box(page, "link_loss")->text(), QString("no loss"));
    page.apply_to(spec);
    QVERIFY(spec.cluster.link == ClusterSettings::Link{});
}

QTEST_MAIN(TestTrainingLink)
#include "test_training_link.moc"
