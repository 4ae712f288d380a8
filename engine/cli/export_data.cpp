#include "cli/export_data.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "config/model_format.h"
#include "core/error.h"
#include "data/shard_writer.h"
#include "train/task.h"

namespace thresher::cli {

namespace {

nlohmann::json part_summary(const data::ShardPart& p) {
    std::uint64_t bytes = 0;
    for (const auto& s : p.shards) bytes += s.bytes;
    return {{"records", p.records}, {"shards", p.shards.size()}, {"bytes", bytes}};
}

}  // namespace

void export_data_command(const ExportDataOptions& o, events::EventWriter& events, std::ostream& out, std::ostream& log) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::exists(o.out, ec) && !(fs::is_directory(o.out, ec) && fs::is_empty(o.out, ec)))
        throw ConfigError("export: --out " + o.out + " exists and is not an empty folder; choose a new folder");
    if (o.batch == 0) throw ConfigError("export: --batch must be at least 1");

    data::DataSplit split;
    std::uint64_t seed = o.seed.value_or(0);
    if (!o.model.empty()) {
        const auto imported = config::import_model_file(o.model, o.import);
        seed = o.seed.value_or(imported.model.seed);
        split = train::load_data_for(o.data, imported.model, o.images, {}, o.sequences);
    } else {
        data::DataOptions options;
        options.images = o.images;
        try {
            split = data::load_data(o.data, options);
        } catch (const Error& e) {
            // Image folders, sequences and text take their shape from a model: say where it goes.
            throw ConfigError(std::string(e.what()) + " (export: give --model M to read the data as training M would)");
        }
    }
    if (data::is_shard_folder(o.data)) log << "export: " << o.data << " is a shard set already; writing it again\n";

    data::ShardWriteOptions w;
    w.batch = o.batch;
    w.shards = o.shards;
    w.seed = seed;
    w.progress = [&](const std::string& part, std::uint64_t done, std::uint64_t total) {
        events.emit(events::DataProgress{"export " + part, done, total});
        log << "export: " << part << " " << done << "/" << total << " records\n";
    };
    if (fs::create_directories(o.out, ec); ec) throw Error("export: --out " + o.out + ": cannot create the folder: " + ec.message());
    const data::ShardIndex index = data::write_shard_set(split, o.out, o.data, std::move(w));

    nlohmann::json summary{{"exported", o.out}, {"batch", o.batch}, {"seed", seed}, {"train", part_summary(index.train)}};
    if (index.has_test) summary["test"] = part_summary(index.test);
    out << summary.dump() << std::endl;
}

}  // namespace thresher::cli
