// TrainingPage's cluster "Where: Slurm": a Slurm spec fills the Slurm fields and apply_to()
// writes the same spec back (every field); choosing Slurm shows its page; a time limit Slurm
// would not read is not written.
#include <QtTest>

#include <QComboBox>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QStackedWidget>
#include <QTemporaryDir>
#include <QDir>

#include "model_document.h"
#include "run_spec.h"
#include "training_page.h"
#include "data/data_source.h"
#include "data/shard_writer.h"
#include "data_preview.h"
#include "image_files.h"

using thresher::launcher::ClusterSettings;
using thresher::launcher::RunSpec;
namespace data = thresher::data;

class TestTrainingPage : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void slurm_fields_round_trip();
    void choosing_slurm_shows_its_fields();
    void threshold_algorithm_is_typed();
    void data_options_round_trip();
    void samples_shown_before_launch();
    void shard_placement_for_a_shard_set();
    void device_row_data();
    void device_row();
};

namespace {

RunSpec slurm_spec() {
    const QByteArray text = R"({"format":"thresher-run","version":1,"name":"q","model":{"name":"m","input":{"size":4},
        "layers":[{"type":"output","units":2}]},
        "cluster":{"kind":"slurm","partition":"gpu","nodes":2,"tasks_per_node":2,"cpus_per_task":4,"gpus_per_node":1,
                   "time":"0-02:00:00","account":"lab","qos":"high","constraint":"a100","sbatch_args":["--mem=8G","--exclusive"],
                   "workers_per_node":1,"network_mask":"10.1.0.0/16","stage":"never"}})";
    return RunSpec::from_json(text, "q.json", QDir::tempPath());
}

}  // namespace

void TestTrainingPage::slurm_fields_round_trip() {
    thresher::ui::ModelDocument doc;
    thresher::ui::TrainingPage page(&doc);
    const RunSpec spec = slurm_spec();
    page.set_spec(spec);
    QCOMPARE(page.findChild<QLineEdit*>("slurm_partition")->text(), QString("gpu"));
    QCOMPARE(page.findChild<QSpinBox*>("slurm_tasks_per_node")->value(), 2);
    QCOMPARE(page.findChild<QLineEdit*>("slurm_time")->text(), QString("0-02:00:00"));
    QCOMPARE(page.findChild<QComboBox*>("slurm_stage")->currentData().toString(), QString("never"));
    RunSpec back = spec;
    back.cluster = {};
    page.apply_to(back);
    QCOMPARE(back.cluster.kind, ClusterSettings::Kind::Slurm);
    QVERIFY(back.cluster.slurm == spec.cluster.slurm);
    QCOMPARE(back.cluster.nodes, 2);
    QCOMPARE(back.node_count(), 4);
}

void TestTrainingPage::choosing_slurm_shows_its_fields() {
    thresher::ui::ModelDocument doc;
    thresher::ui::TrainingPage page(&doc);
    RunSpec spec = slurm_spec();
    spec.cluster = {};
    page.set_spec(spec);
    auto* where = page.findChildren<QComboBox*>().first();
    for (auto* c : page.findChildren<QComboBox*>())
        if (c->findData("slurm") >= 0) where = c;
    where->setCurrentIndex(where->findData("slurm"));
    auto* partition = page.findChild<QLineEdit*>("slurm_partition");
    auto* stack = page.findChild<QStackedWidget*>();
    QVERIFY(stack->currentWidget()->isAncestorOf(partition));
    partition->setText("main");
    page.findChild<QLineEdit*>("slurm_time")->setText("1h");  // not Slurm's syntax
    RunSpec out = spec;
    page.apply_to(out);
    QCOMPARE(out.cluster.kind, ClusterSettings::Kind::Slurm);
    QCOMPARE(out.cluster.slurm.partition, QString("main"));
    QVERIFY(!out.cluster.slurm.time.has_value());
    // What the page wrote is a valid spec.
    const RunSpec again = RunSpec::from_json(out.to_json(), "out.json", QDir::tempPath());
    QCOMPARE(again.cluster.slurm.partition, QString("main"));
}

// The algorithm box offers the engine's list of algorithms (codec/threshold_spec.h); a spec's
// numbers stay while its algorithm does, and choosing another gives that algorithm's defaults.
void TestTrainingPage::threshold_algorithm_is_typed() {
    thresher::ui::ModelDocument doc;
    thresher::ui::TrainingPage page(&doc);
    auto* box = page.findChild<QComboBox*>("threshold_algorithm");
    QVERIFY(box);
    QStringList offered, names;
    for (int i = 0; i < box->count(); ++i) offered << box->itemData(i).toString();
    for (const auto& n : thresher::dist::threshold_algorithm_names()) names << n.name;
    offered.sort();
    names.sort();
    QCOMPARE(offered, names);

    RunSpec spec = slurm_spec();
    spec.cluster = {};
    spec.training.threshold.reset();
    spec.training.threshold_algorithm = thresher::dist::parse_threshold_spec("adaptive:0.002:1e-5:0.05:0.9");
    page.set_spec(spec);
    QCOMPARE(box->currentData().toString(), QString("adaptive"));
    RunSpec out = spec;
    page.apply_to(out);
    QVERIFY(out.training.threshold_algorithm == spec.training.threshold_algorithm);
    box->setCurrentIndex(box->findData("target"));
    page.apply_to(out);
    QVERIFY(out.training.threshold_algorithm == thresher::dist::ThresholdSpec{thresher::dist::ThresholdKind::Target});
    out.validate();  // target with its defaults is complete
}

// The data rows (issue 24): augmentation, normalisation and top-k go from a spec to the form and
// back unchanged; an image folder is offered as such; augmentation text the engine would refuse
// is marked and stops apply_to() with the engine's reason instead of running without it.
void TestTrainingPage::data_options_round_trip() {
    thresher::ui::ModelDocument doc;
    thresher::ui::TrainingPage page(&doc);
    auto* augment = page.findChild<QLineEdit*>("augment");
    auto* normalize = page.findChild<QComboBox*>("normalize");
    auto* top_k = page.findChild<QSpinBox*>("top_k");
    QVERIFY(augment && normalize && top_k);

    RunSpec spec = slurm_spec();
    spec.cluster = {};
    spec.training.augment = thresher::spec::Augmentation::parse("flip,crop:3");
    spec.training.normalize = "standardize";
    spec.training.top_k = 3;
    const QTemporaryDir dir;
    QVERIFY(QDir(dir.path()).mkpath("cats") && QDir(dir.path()).mkpath("dogs"));
    spec.data = dir.path();
    page.set_spec(spec);
    QCOMPARE(augment->text(), QString("crop:3,flip"));
    QCOMPARE(normalize->currentData().toString(), QString("standardize"));
    QCOMPARE(top_k->value(), 3);
    QCOMPARE(page.findChild<QComboBox*>("data_kind")->currentData().toString(), QString("images"));
    // A sequence folder and a text file are recognised from a spec too.
    QVERIFY(QDir(dir.path()).mkpath("seq/features") && QDir(dir.path()).mkpath("seq/labels"));
    RunSpec seq = spec;
    seq.data = dir.path() + "/seq";
    page.set_spec(seq);
    QCOMPARE(page.findChild<QComboBox*>("data_kind")->currentData().toString(), QString("sequences"));
    seq.data = "/usr/share/book.txt";
    page.set_spec(seq);
    QCOMPARE(page.findChild<QComboBox*>("data_kind")->currentData().toString(), QString("text"));
    page.set_spec(spec);
    RunSpec out = spec;
    out.training = {};
    page.apply_to(out);
    QVERIFY(out.training.augment == spec.training.augment);
    QCOMPARE(out.training.normalize, QString("standardize"));
    QCOMPARE(out.training.top_k, std::optional<int>(3));
    QCOMPARE(out.data, spec.data);

    // Automatic top-k and no augmentation: nothing written.
    top_k->setValue(-1);
    augment->clear();
    page.apply_to(out);
    QVERIFY(!out.training.top_k && !out.training.augment.active());

    // A typo: marked, and apply_to refuses with the engine's words.
    augment->setText("crop:4,rotate");
    Q_EMIT augment->textEdited(augment->text());
    QVERIFY(augment->styleSheet().contains("#b00020"));
    QVERIFY2(augment->toolTip().contains("unknown part \"rotate\""), qPrintable(augment->toolTip()));
    try {
        page.apply_to(out);
        QFAIL("applied an augmentation the engine refuses");
    } catch (const thresher::launcher::SpecError& e) {
        QVERIFY2(QString(e.what()).startsWith("training.augment: "), e.what());
    }
}

// "Show samples" (issue 24): an image folder's first images of each class, decoded at the model's
// input shape, with the class names; a corrupt image is named; Fashion-MNIST's first sample of each
// class; a folder the engine refuses shows the engine's reason; a flat model has nothing to show.
void TestTrainingPage::samples_shown_before_launch() {
    thresher::ui::ModelDocument doc;
    doc.set_model(QJsonDocument::fromJson(R"({"input":{"channels":3,"height":12,"width":10},
        "layers":[{"type":"convolution","filters":2,"kernel":3,"activation":"relu"},
                  {"type":"output","units":3,"activation":"softmax","loss":"mcxent"}]})").object());
    QVERIFY2(doc.valid(), qPrintable(doc.error()));
    thresher::ui::TrainingPage page(&doc);
    auto* preview = page.findChild<thresher::ui::DataPreview*>("data_preview");
    QVERIFY(preview);
    const QTemporaryDir dir;
    const QString root = dir.path() + "/photos";
    int seed = 1;
    for (const char* c : {"ant", "bee", "cat"}) {
        QVERIFY(QDir().mkpath(root + "/" + c));
        for (int i = 0; i < 3; ++i)
            test_support::write_png((root + "/" + c + "/" + QString::number(i) + ".png").toStdString(),
                                    test_support::pattern(20, 16, 3, seed++));
    }
    RunSpec spec = slurm_spec();
    spec.cluster = {};
    spec.data = root;
    page.set_spec(spec);
    page.show_samples();
    QCOMPARE(preview->sample_count(), 6);  // two of each class
    QVERIFY2(preview->caption().startsWith("3 classes: ant, bee, cat; as the model reads them, 3×12×10"),
             qPrintable(preview->caption()));
    // THRESHER_SCREENSHOTS=DIR: the page as a user sees it, for a look.
    if (const QString shots = qEnvironmentVariable("THRESHER_SCREENSHOTS"); !shots.isEmpty()) {
        page.resize(1200, 800);
        page.grab().save(shots + "/training_page_samples.png");
    }
    const auto names = preview->findChildren<QLabel*>();
    int cats = 0;
    for (auto* l : names) cats += l->text() == "cat";
    QCOMPARE(cats, 2);

    // The same folder exported as a shard set (thresher-engine export's writer): the Data box
    // names it, and the preview shows the first image of each class from its first records.
    {
        data::ImageFolderOptions o;
        o.shape = {3, 12, 10};
        const auto split = data::load_data(root.toStdString(), data::DataOptions{{}, o, {}, {}, {}, false});
        data::ShardWriteOptions w;
        w.batch = 2;
        data::write_shard_set(split, (dir.path() + "/shards").toStdString(), root.toStdString(), w);
        RunSpec sharded = spec;
        sharded.data = dir.path() + "/shards";
        page.set_spec(sharded);
        QCOMPARE(page.findChild<QComboBox*>("data_kind")->currentData().toString(), QString("shards"));
        page.show_samples();
        QVERIFY2(preview->caption().startsWith("3 classes: ant, bee, cat"), qPrintable(preview->caption()));
        QCOMPARE(preview->sample_count(), 3);  // the first of each class
        page.set_spec(spec);
    }

    // A corrupt image among them: shown by name, the others still are.
    test_support::write_bytes((root + "/ant/0.png").toStdString(), std::vector<std::uint8_t>{0x89, 'P', 'N', 'G', 1, 2, 3});
    page.show_samples();
    QCOMPARE(preview->sample_count(), 5);
    QVERIFY2(preview->caption().contains("1 image(s) could not be decoded") && preview->caption().contains("ant/0.png"),
             qPrintable(preview->caption()));

    // One class folder only: the engine's refusal.
    QVERIFY(QDir().mkpath(dir.path() + "/one/bee"));
    QVERIFY(QFile::copy(root + "/bee/1.png", dir.path() + "/one/bee/1.png"));
    spec.data = dir.path() + "/one";
    page.set_spec(spec);
    page.show_samples();
    QCOMPARE(preview->sample_count(), 0);
    QVERIFY2(preview->caption().contains("a classifier needs at least 2"), qPrintable(preview->caption()));

    // Fashion-MNIST with a 1×28×28 model: the first sample of 8 classes, named by number.
    doc.set_model(QJsonDocument::fromJson(R"({"input":{"channels":1,"height":28,"width":28},
        "layers":[{"type":"output","units":10,"activation":"softmax","loss":"mcxent"}]})").object());
    spec.data = "fashion-mnist";
    page.set_spec(spec);
    page.show_samples();
    QCOMPARE(preview->sample_count(), 8);
    QVERIFY2(preview->caption().contains("60000 training samples of 1×28×28, 10 classes"), qPrintable(preview->caption()));

    // A flat model: nothing to show, said so.
    doc.set_model(QJsonDocument::fromJson(R"({"input":{"size":784},
        "layers":[{"type":"output","units":10,"activation":"softmax","loss":"mcxent"}]})").object());
    page.show_samples();
    QCOMPARE(preview->sample_count(), 0);
    QVERIFY2(preview->caption().contains("no images to show"), qPrintable(preview->caption()));
}

// "Shard placement" (issue 24): offered only while the data is a shard set; a spec's per-node
// placement is shown and written back; other data writes the shared placement, whatever was picked.
void TestTrainingPage::shard_placement_for_a_shard_set() {
    thresher::ui::ModelDocument doc;
    thresher::ui::TrainingPage page(&doc);
    auto* placement = page.findChild<QComboBox*>("shard_placement");
    auto* kind = page.findChild<QComboBox*>("data_kind");
    QVERIFY(placement && kind);
    const QTemporaryDir dir;
    QVERIFY(QDir(dir.path()).mkpath("shards"));
    QFile index(dir.path() + "/shards/index.json");
    QVERIFY(index.open(QIODevice::WriteOnly) && index.write("{}") == 2);
    index.close();

    RunSpec spec = slurm_spec();
    spec.cluster = {};
    spec.data = dir.path() + "/shards";
    spec.training.shard_placement = thresher::launcher::ShardPlacement::PerNode;
    page.set_spec(spec);
    QCOMPARE(kind->currentData().toString(), QString("shards"));
    QVERIFY(placement->isEnabled());
    QCOMPARE(placement->currentData().toString(), QString("per-node"));
    RunSpec out = spec;
    out.training = {};
    page.apply_to(out);
    QVERIFY(out.training.shard_placement == thresher::launcher::ShardPlacement::PerNode);
    // THRESHER_SCREENSHOTS=DIR: the Data box with the choice, for a look.
    if (const QString shots = qEnvironmentVariable("THRESHER_SCREENSHOTS"); !shots.isEmpty()) {
        page.resize(1200, 800);
        page.grab().save(shots + "/training_page_shard_placement.png");
    }

    // A CSV instead: the choice is greyed out and the spec gets the shared placement.
    kind->setCurrentIndex(kind->findData("csv"));
    QVERIFY(!placement->isEnabled());
    page.apply_to(out);
    QVERIFY(out.training.shard_placement == thresher::launcher::ShardPlacement::Shared);
    // Back to the shard set, shared folder picked.
    kind->setCurrentIndex(kind->findData("shards"));
    placement->setCurrentIndex(placement->findData("shared"));
    QVERIFY(placement->isEnabled());
    page.apply_to(out);
    QVERIFY(out.training.shard_placement == thresher::launcher::ShardPlacement::Shared);
}

// The Device row: CPU, GPU 0 for every worker, or one GPU per worker (cuda:0,cuda:1,… for the
// workers per node set on the page); a spec's own list stays as it is.
void TestTrainingPage::device_row_data() {
    QTest::addColumn<QString>("spec_device");
    QTest::addColumn<int>("workers");
    QTest::addColumn<QString>("choice");      // the row's item data after set_spec
    QTest::addColumn<QString>("written");     // apply_to's training.device
    QTest::newRow("cpu") << "cpu" << 2 << "cpu" << "cpu";
    QTest::newRow("cuda:0 is GPU 0") << "cuda:0" << 2 << "cuda" << "cuda";
    QTest::newRow("one per worker") << "cuda:0,cuda:1,cuda:2" << 3 << "one-per-worker" << "cuda:0,cuda:1,cuda:2";
    QTest::newRow("the spec's own GPU") << "cuda:3" << 2 << "cuda:3" << "cuda:3";
    QTest::newRow("the spec's own list") << "cuda:2,cuda:3" << 2 << "cuda:2,cuda:3" << "cuda:2,cuda:3";
}

void TestTrainingPage::device_row() {
    QFETCH(QString, spec_device);
    QFETCH(int, workers);
    QFETCH(QString, choice);
    QFETCH(QString, written);
    thresher::ui::ModelDocument doc;
    thresher::ui::TrainingPage page(&doc);
    auto* box = page.findChild<QComboBox*>("device");
    QVERIFY(box);
    RunSpec spec = slurm_spec();
    spec.cluster = {};
    spec.cluster.workers_per_node = workers;
    spec.training.device = thresher::DeviceList::parse(spec_device.toStdString());
    page.set_spec(spec);
    QCOMPARE(box->currentData().toString(), choice);
    RunSpec out = spec;
    out.training.device = {};
    page.apply_to(out);
    QCOMPARE(QString::fromStdString(out.training.device.text()), written);
    // Another spec after it: the earlier spec's own item does not linger.
    spec.training.device = {};
    page.set_spec(spec);
    QCOMPARE(box->currentData().toString(), QString("cpu"));
    QCOMPARE(box->findData(written == "cpu" || choice == "cuda" || choice == "one-per-worker" ? "<none>" : written), -1);
    // One GPU per worker follows the workers per node.
    box->setCurrentIndex(box->findData("one-per-worker"));
    spec.cluster.workers_per_node = 4;
    page.set_spec(spec);
    box->setCurrentIndex(box->findData("one-per-worker"));
    page.apply_to(out);
    QCOMPARE(QString::fromStdString(out.training.device.text()), QString("cuda:0,cuda:1,cuda:2,cuda:3"));
    out.validate();
}

QTEST_MAIN(TestTrainingPage)
#include "test_training_page.moc"
