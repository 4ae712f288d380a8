// libFuzzer target for the CSV parser. The first two bytes choose the options (header mode,
// label column, classification or regression, class count, delimiter), the rest is the text,
// so one corpus explores every option combination.
#include "core/error.h"
#include "data/csv_reader.h"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2) return 0;
    thresher::data::CsvOptions o;
    o.header = data[0] % 3 - 1;
    o.classification = (data[0] >> 2) & 1;
    o.label_column = ((data[0] >> 3) & 7) - 4;
    static constexpr char kDelimiters[] = {',', ';', '\t', ' '};
    o.delimiter = kDelimiters[data[0] >> 6];
    o.num_classes = data[1] % 16;
    const std::string_view text(reinterpret_cast<const char*>(data + 2), size - 2);
    try {
        const thresher::data::Dataset ds = thresher::data::parse_csv(text, "fuzz.csv", o);
        const std::size_t width = ds.shape.size();
        if (ds.features.size() != ds.count * width ||
            ds.targets.size() != ds.count * ds.target_size)
            __builtin_trap();
        if (ds.is_classification() && ds.labels.size() != ds.count) __builtin_trap();
    } catch (const thresher::Error&) {
    }
    return 0;
}
