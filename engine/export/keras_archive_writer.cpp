// Keras 3's model.save("m.keras") layout (keras/src/saving/saving_lib.py), from the plan: a zip,
// entries stored (Keras's zipfile default), in Keras's order:
//   metadata.json     {"keras_version": "3.6.0", "date_saved": "2025-01-31@12:00:00"}
//   config.json       the Sequential as Keras 3 serialises it (keras_config.cpp)
//   model.weights.h5  /vars (the model's own variables: none), and per layer of model.layers
//                     /layers/<name>/vars/0, /1, ... in the order the layer creates them
//                     (kernel, bias; gamma, beta, moving_mean, moving_variance; alpha)
// <name> is not the layer's name but Keras's snake_case of its class, numbered per class in
// order ("dense", "dense_1", "conv2d", "max_pooling2d"): saving_lib addresses a container's
// layers so, because automatic layer names differ between two builds of one model.
#include <zip.h>

#include <chrono>
#include <ctime>
#include <map>
#include <memory>

#include "export/hdf5_image.h"
#include "export/keras_model.h"
#include "export/model_export.h"

namespace thresher::model_export {

namespace {

std::string keras3_weights(const KerasModel& k, const std::string& what) {
    Hdf5Image h5(what);
    h5.group("vars");
    std::map<std::string, int> used;  // per snake_case class name, as saving_lib counts
    for (const auto& l : k.layers) {
        const std::string base = keras_snake_case(l.class_name);
        const int n = used.contains(base) ? ++used[base] : (used[base] = 0);
        const std::string vars = "layers/" + (n ? base + "_" + std::to_string(n) : base) + "/vars";
        h5.group(vars);
        for (std::size_t i = 0; i < l.weights.size(); ++i) h5.floats(vars + "/" + std::to_string(i), l.weights[i].dims, l.weights[i].values);
    }
    return h5.finish();
}

std::string now_as_keras_writes_it() {
    const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm local{};
    localtime_r(&t, &local);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d@%H:%M:%S", &local);
    return text;
}

struct ArchiveDiscard {
    void operator()(zip_t* z) const { zip_discard(z); }
};
struct SourceFree {
    void operator()(zip_source_t* s) const { zip_source_free(s); }
};

// The zip built in memory (libzip writing into a buffer source), so the caller writes it durably.
std::string zip_bytes(const std::vector<std::pair<std::string, std::string>>& entries, const std::string& what) {
    const auto fail = [&](const std::string& step, const char* why) -> std::string {
        throw ExportError(what + ": libzip could not " + step + ": " + (why ? why : "unknown error"));
    };
    zip_error_t error;
    zip_error_init(&error);
    std::unique_ptr<zip_source_t, SourceFree> buffer(zip_source_buffer_create(nullptr, 0, 0, &error));
    if (!buffer) fail("create a buffer", zip_error_strerror(&error));
    std::unique_ptr<zip_t, ArchiveDiscard> archive(zip_open_from_source(buffer.get(), ZIP_TRUNCATE, &error));
    if (!archive) fail("open an archive in memory", zip_error_strerror(&error));
    zip_source_keep(buffer.get());  // the archive frees its source on close; the bytes are read after
    for (const auto& [name, bytes] : entries) {
        zip_source_t* src = zip_source_buffer(archive.get(), bytes.data(), bytes.size(), 0);
        if (!src) fail("add " + name, zip_strerror(archive.get()));
        const zip_int64_t index = zip_file_add(archive.get(), name.c_str(), src, ZIP_FL_ENC_UTF_8);
        if (index < 0) {
            zip_source_free(src);
            fail("add " + name, zip_strerror(archive.get()));
        }
        if (zip_set_file_compression(archive.get(), static_cast<zip_uint64_t>(index), ZIP_CM_STORE, 0) != 0)
            fail("store " + name, zip_strerror(archive.get()));
    }
    if (zip_close(archive.get()) != 0) fail("write the archive", zip_strerror(archive.get()));
    archive.release();  // closed: zip_close freed it

    zip_source_t* src = buffer.get();
    if (zip_source_open(src) != 0) fail("reopen the archive's bytes", zip_error_strerror(zip_source_error(src)));
    std::string out;
    char chunk[1 << 16];
    for (;;) {
        const zip_int64_t n = zip_source_read(src, chunk, sizeof chunk);
        if (n < 0) {
            zip_source_close(src);
            fail("read the archive's bytes", zip_error_strerror(zip_source_error(src)));
        }
        if (n == 0) break;
        out.append(chunk, static_cast<std::size_t>(n));
    }
    zip_source_close(src);
    zip_error_fini(&error);
    return out;
}

}  // namespace

KerasBytes keras_archive_bytes(const ExportableModel& m) {
    auto k = planned_keras_model(m, KerasDialect::Keras3);
    fill_keras_weights(k, m);
    const std::string what = m.source + " as Keras .keras";
    nlohmann::json metadata{{"keras_version", kKeras3Version}, {"date_saved", now_as_keras_writes_it()}};
    // Keras reads only the version; the labels travel with the model for its user.
    if (!m.class_names.empty()) metadata["class_names"] = m.class_names;
    const std::vector<std::pair<std::string, std::string>> entries{
        {"metadata.json", metadata.dump()},
        {"config.json", keras3_config(k).dump()},
        {"model.weights.h5", keras3_weights(k, what + ": model.weights.h5")},
    };
    return {zip_bytes(entries, what), k.layers.size()};
}

}  // namespace thresher::model_export
