// A folder for run specs and sweep files to resolve their relative paths against, for the fuzzers
// that read them (fuzz_run_spec, fuzz_sweep_spec): RunSpec checks that a model file exists, so
// under a folder that does not exist every spec naming its model by path (the shipped examples:
// "../models/lenet.json") is refused, and the fuzzer never gets past that last check. This one
// holds models/lenet.json and models/mlp.json beside specs/, the folder returned; made once per
// process (its id in the name), removed when the fuzzer exits normally. specs/base.json is a
// local run spec for a sweep file's "base" to name.
#pragma once

#include <QDir>
#include <QFile>
#include <QString>
#include <unistd.h>

namespace thresher::fuzz {

inline const QString& spec_base_dir() {
    struct Scratch {
        QString root = QDir::temp().filePath(QString("thresher-fuzz-specs-%1").arg(::getpid()));
        QString specs = root + "/specs";
        Scratch() {
            QDir().mkpath(specs);
            QDir().mkpath(root + "/models");
            for (const char* name : {"lenet.json", "mlp.json"}) {
                QFile f(root + "/models/" + name);
                if (f.open(QIODevice::WriteOnly)) f.write("{}");  // only its existence is checked
            }
            QFile base(specs + "/base.json");
            if (base.open(QIODevice::WriteOnly))
                base.write(R"({"format": "thresher-run", "version": 1, "name": "base", "model": "../models/mlp.json",
                               "data": "fashion-mnist", "training": {"epochs": 1, "batch": 32, "threads": 1},
                               "cluster": {"kind": "local", "nodes": 1, "workers_per_node": 1}})");
        }
        ~Scratch() { QDir(root).removeRecursively(); }
    };
    static const Scratch scratch;
    return scratch.specs;
}

}  // namespace thresher::fuzz
