// `thresher-engine devices` lists every backend this build has: each registered kind shows up,
// with its devices, or -- built but with nothing to run on (no driver, no device) -- as the bare
// kind, marked unusable, with the reason. Then asking for that kind fails with an error, not a
// crash. On a build without CUDA only "cpu" is registered and listed.
#include <QtTest>

#include "backend/registry.h"
#include "core/error.h"

using namespace thresher;

class TestDeviceListing : public QObject {
    Q_OBJECT
private Q_SLOTS:
    void every_built_backend_is_listed_usable_or_with_its_reason() {
        const auto kinds = backend::registered_backends();
        const auto listed = backend::list_devices();
        QVERIFY(!kinds.empty());
        for (const auto& kind : kinds) {
            bool seen = false, usable = false;
            for (const auto& d : listed) {
                if (d.name != kind && d.name.rfind(kind + ":", 0) != 0) continue;
                seen = true;
                usable = usable || d.usable;
                QVERIFY2(!d.description.empty(), d.name.c_str());
                if (!d.usable) {
                    QVERIFY2(!d.reason.empty(), (d.name + ": unusable without a reason").c_str());
                    QCOMPARE(d.name, kind);  // no device to name
                    qInfo("%s: %s; not usable: %s", kind.c_str(), d.description.c_str(), d.reason.c_str());
                }
            }
            QVERIFY2(seen, ("backend " + kind + " is built but `devices` does not list it").c_str());
            if (!usable) QVERIFY_THROWS_EXCEPTION(Error, backend::create_backend(kind));
        }
        // The CPU backend is always built and always usable.
        bool cpu = false;
        for (const auto& d : listed) cpu = cpu || (d.name == "cpu" && d.usable);
        QVERIFY(cpu);
    }
};

QTEST_APPLESS_MAIN(TestDeviceListing)
#include "test_device_listing.moc"
