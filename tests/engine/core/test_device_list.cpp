// DeviceList: `--device` / RunSpec `training.device`, one device for every worker of a node or
// one per worker; parsed once, refused naming the setting and the entry.
#include <QtTest>

#include "core/device_list.h"
#include "core/error.h"

using thresher::ConfigError;
using thresher::DeviceList;

class TestDeviceList : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void accepted_data();
    void accepted();
    void refused_data();
    void refused();
    void one_device_or_one_per_worker();
};

void TestDeviceList::accepted_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QStringList>("devices");
    QTest::newRow("cpu") << "cpu" << QStringList{"cpu"};
    QTest::newRow("cuda") << "cuda" << QStringList{"cuda"};
    QTest::newRow("cuda:1") << "cuda:1" << QStringList{"cuda:1"};
    QTest::newRow("two GPUs") << "cuda:0,cuda:1" << QStringList{"cuda:0", "cuda:1"};
    QTest::newRow("blanks around entries") << " cuda:2 , cuda:3 " << QStringList{"cuda:2", "cuda:3"};
    QTest::newRow("mixed kinds") << "cpu,cuda:0" << QStringList{"cpu", "cuda:0"};
}

void TestDeviceList::accepted() {
    QFETCH(QString, text);
    QFETCH(QStringList, devices);
    const auto list = DeviceList::parse(text.toStdString());
    QStringList got;
    for (const auto& d : list.devices()) got << QString::fromStdString(d);
    QCOMPARE(got, devices);
    QCOMPARE(QString::fromStdString(list.text()), devices.join(','));
    QCOMPARE(DeviceList::parse(list.text()), list);  // text() reads back as the same list
}

void TestDeviceList::refused_data() {
    QTest::addColumn<QString>("text");
    QTest::addColumn<QString>("expected");
    QTest::newRow("empty") << "" << "training.device \"\": an empty entry";
    QTest::newRow("trailing comma") << "cuda:0," << "training.device \"cuda:0,\": an empty entry";
    QTest::newRow("index not a number") << "cuda:x" << "entry \"cuda:x\" is not a device";
    QTest::newRow("negative index") << "cuda:-1" << "entry \"cuda:-1\" is not a device";
    QTest::newRow("no kind") << ":1" << "entry \":1\" is not a device";
    QTest::newRow("upper case") << "CUDA" << "entry \"CUDA\" is not a device";
    QTest::newRow("absurd index") << "cuda:123456" << "entry \"cuda:123456\" is not a device";
    QTest::newRow("a pasted file is quoted bounded") << QString(5000, 'x') + "!" << "...\"";
}

void TestDeviceList::refused() {
    QFETCH(QString, text);
    QFETCH(QString, expected);
    try {
        DeviceList::parse(text.toStdString(), "training.device");
        QFAIL("accepted");
    } catch (const ConfigError& e) {
        const QString message = e.what();
        QVERIFY2(message.startsWith("training.device "), qPrintable(message));
        QVERIFY2(message.contains(expected), qPrintable(message));
        QVERIFY2(message.contains("such as cpu, cuda or cuda:1"), qPrintable(message));
        QVERIFY2(message.size() < 400, qPrintable(QString("%1 characters").arg(message.size())));
    }
}

void TestDeviceList::one_device_or_one_per_worker() {
    const auto one = DeviceList::parse("cuda:1");
    one.check_workers(4);
    for (int w = 0; w < 4; ++w) QCOMPARE(one.for_worker(w), std::string("cuda:1"));
    const auto each = DeviceList::parse("cuda:0,cuda:1");
    each.check_workers(2);
    QCOMPARE(each.for_worker(0), std::string("cuda:0"));
    QCOMPARE(each.for_worker(1), std::string("cuda:1"));
    try {
        each.check_workers(3, "--device");
        QFAIL("two devices accepted for three workers");
    } catch (const ConfigError& e) {
        QCOMPARE(QString(e.what()), QString("--device \"cuda:0,cuda:1\" lists 2 devices for 3 worker(s) on this node: "
                                            "give one device for all of them, or one per worker"));
    }
    QCOMPARE(DeviceList().text(), std::string("cpu"));  // the default
}

QTEST_APPLESS_MAIN(TestDeviceList)
#include "test_device_list.moc"
