// The layers of DESIGN.md, checked by reading includes: every #include of engine/, launcher/, ui/
// and app/ against the table in layer_rules.cpp (which folder may include which, no Qt in the
// engine, no oneDNN or CUDA in the front ends). A synthetic tree with one violation of each kind
// shows the check can fail and what it says; then the real tree must have none.
#include <QtTest>

#include <filesystem>
#include <fstream>

#include "layer_check.h"
#include "layer_rules.h"
#include "source_dir.h"

using namespace layering;
namespace fs = std::filesystem;

namespace {

void write(const fs::path& root, const std::string& file, const std::string& text) {
    fs::create_directories((root / file).parent_path());
    std::ofstream(root / file) << text;
}

}  // namespace

class TestLayering : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void table_is_a_hierarchy();
    void table_keeps_the_never_rules();
    void layer_of_a_file_data();
    void layer_of_a_file();
    void reads_include_directives();
    void reports_each_kind_of_violation();
    void source_tree_keeps_the_layers();
};

// Every folder a layer sits on is in the table, and no layer reaches back to itself.
void TestLayering::table_is_a_hierarchy() {
    for (const auto& layer : layers()) {
        for (const auto& below : layer.sits_on) {
            QVERIFY2(layer_of(below) == below, qPrintable(QString::fromStdString(layer.folder + " sits on " + below + ", not in the table")));
            QVERIFY2(!allowed_from(below).contains(layer.folder),
                     qPrintable(QString::fromStdString(layer.folder + " and " + below + " form a cycle")));
        }
    }
}

// The table must not allow what DESIGN.md forbids outright, whatever is added to it later.
void TestLayering::table_keeps_the_never_rules() {
    for (const auto& layer : layers())
        for (const auto& reached : allowed_from(layer.folder))
            if (const NeverRule* rule = broken_never_rule(layer.folder, reached))
                QFAIL(qPrintable(QString::fromStdString(layer.folder + " may reach " + reached + ": " + rule->why)));
}

void TestLayering::layer_of_a_file_data() {
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("layer");
    QTest::newRow("interface") << "engine/backend/backend.h" << "engine/backend";
    QTest::newRow("a backend") << "engine/backend/cuda/kernels.h" << "engine/backend/cuda";
    QTest::newRow("dist folder") << "engine/dist/masters/node_link.cpp" << "engine/dist/masters";
    QTest::newRow("a launcher's subfolder") << "launcher/ssh/ssh_session.h" << "launcher";
    QTest::newRow("the launcher's command line") << "launcher/cli/main.cpp" << "launcher/cli";
    QTest::newRow("ui model") << "ui/model/run_session.h" << "ui/model";
    QTest::newRow("a widget") << "ui/run_page.h" << "ui";
    QTest::newRow("folder name is a whole word") << "engine/configs/x.h" << "";
    QTest::newRow("dist itself") << "engine/dist/x.h" << "";
    QTest::newRow("outside") << "tests/engine/x.cpp" << "";
}

void TestLayering::layer_of_a_file() {
    QFETCH(QString, file);
    QFETCH(QString, layer);
    QCOMPARE(QString::fromStdString(layer_of(file.toStdString()).value_or("")), layer);
}

void TestLayering::reads_include_directives() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path root = dir.path().toStdString();
    write(root, "a.cpp",
          "#include \"core/error.h\"\n"
          "  #  include <QString>\n"
          "// #include \"commented/out.h\"\n"
          "#define X \"#include\"\n"
          "#include\t\"cuda/kernels.h\"  // why\n");
    const auto got = read_includes(root / "a.cpp");
    QCOMPARE(got.size(), std::size_t{3});
    QCOMPARE(got[0].line, 1);
    QCOMPARE(QString::fromStdString(got[0].name), QString("core/error.h"));
    QVERIFY(!got[0].angled);
    QCOMPARE(got[1].line, 2);
    QCOMPARE(QString::fromStdString(got[1].name), QString("QString"));
    QVERIFY(got[1].angled);
    QCOMPARE(got[2].line, 5);
    QCOMPARE(QString::fromStdString(got[2].name), QString("cuda/kernels.h"));
}

// One violation of each kind, and the words a developer sees for it.
void TestLayering::reports_each_kind_of_violation() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const fs::path root = dir.path().toStdString();
    write(root, "engine/backend/backend.h", "#include \"codec/encoder.h\"\n");
    write(root, "engine/codec/encoder.h", "#include \"vocab/activation.h\"\n");
    write(root, "engine/vocab/activation.h", "#pragma once\n");
    write(root, "engine/nn/network.h", "#include \"backend/backend.h\"\n");
    write(root, "engine/config/model_config.h",
          "#include \"vocab/activation.h\"\n#include \"backend/backend.h\"\n#include <QString>\n");
    write(root, "engine/data/batch.h", "#include \"nn/network.h\"\n");
    write(root, "launcher/ssh/session.cpp", "#include \"session.h\"\n#include \"nn/network.h\"\n#include <cudnn.h>\n");
    write(root, "launcher/ssh/session.h", "#pragma once\n");
    write(root, "ui/page.cpp", "#include \"session.h\"\n#include \"generated.h\"\n");
    write(root, "engine/stray/x.h", "#include \"nn/network.h\"\n");

    const TreeReport report = check_tree(root);
    const QStringList expected = {
        "engine/config/model_config.h:2: #include \"backend/backend.h\" reaches engine/backend: never config → "
        "backend: configs are read where no backend is linked (the app links config)",
        "engine/config/model_config.h:3: #include <QString>: never anything in engine/ → Qt: the engine is copied "
        "to bare cluster nodes",
        "engine/data/batch.h:1: #include \"nn/network.h\" reaches engine/nn, which engine/data does not sit on (it "
        "may include engine/core, engine/data, engine/spec)",
        "engine/stray/x.h: in no layer of tests/layering/layer_rules.cpp (add its folder there)",
        "launcher/ssh/session.cpp:2: #include \"nn/network.h\" reaches engine/nn: never launcher or ui → backend, nn "
        "or dist: they see the engine only through its command line and events",
        "launcher/ssh/session.cpp:3: #include <cudnn.h>: never launcher or ui → oneDNN or CUDA: the launcher and "
        "the UI never link them",
        "ui/page.cpp:2: #include \"generated.h\": names no file of the tree (looked beside ui/page.cpp and in engine, "
        "launcher, launcher/slurm, launcher/ssh, launcher/sweep, ui, ui/model), so its layer is unknown",
    };
    QStringList got;
    for (const auto& v : report.violations) got << QString::fromStdString(v);
    QCOMPARE(got, expected);
    QCOMPARE(report.files, std::size_t{10});
}

void TestLayering::source_tree_keeps_the_layers() {
    const fs::path root = test_support::source_dir().toStdString();
    const TreeReport report = check_tree(root);
    // A wrong source folder would find nothing and pass: the tree has hundreds of files.
    QVERIFY2(report.files > 300, qPrintable(QString("only %1 source files under %2").arg(report.files).arg(QString::fromStdString(root.string()))));
    qInfo("%zu files, %zu includes checked", report.files, report.includes);
    if (!report.violations.empty()) {
        QString all;
        for (const auto& v : report.violations) all += "\n  " + QString::fromStdString(v);
        QFAIL(qPrintable(QString("includes that break DESIGN.md's layers (%1):%2").arg(report.violations.size()).arg(all)));
    }
}

QTEST_GUILESS_MAIN(TestLayering)
#include "test_layering.moc"
