// The shard header's bytes and the index's JSON, each checked field by field where it is parsed.
#include "data/shard_format.h"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace thresher::data {

namespace {

static_assert(std::endian::native == std::endian::little, "shard files are little-endian, like the model file");

constexpr char kMagic[8] = {'T', 'H', 'R', 'S', 'H', 'R', 'D', '\0'};

template <typename T>
void put(std::string& out, T v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

template <typename T>
T take(const unsigned char*& p) {
    T v;
    std::memcpy(&v, p, sizeof(T));
    p += sizeof(T);
    return v;
}

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return a / b + (a % b != 0); }

}  // namespace

std::uint64_t ShardHeader::record_bytes() const {
    return 4 * (std::uint64_t{feature_floats} + target_floats + label_ints) + 8;
}

std::uint64_t ShardHeader::block_records(std::uint32_t k) const {
    const std::uint64_t begin = std::uint64_t{k} * batch;
    return begin >= records ? 0 : std::min<std::uint64_t>(batch, records - begin);
}

std::uint64_t ShardHeader::block_offset(std::uint32_t k) const {
    return kShardHeaderBytes + 4 * std::uint64_t{blocks} + std::uint64_t{k} * batch * record_bytes();
}

std::uint64_t ShardHeader::file_bytes() const {
    return kShardHeaderBytes + 4 * std::uint64_t{blocks} + records * record_bytes();
}

std::string encode_shard_header(const ShardHeader& h) {
    std::string out(kMagic, sizeof kMagic);
    put(out, h.version);
    put(out, h.batch);
    put(out, h.records);
    put(out, h.blocks);
    put(out, h.feature_floats);
    put(out, h.target_floats);
    put(out, h.label_ints);
    put(out, h.header_crc);
    put(out, std::uint32_t{0});  // reserved
    return out;
}

ShardHeader parse_shard_header(const std::string& file, const unsigned char* bytes, std::size_t size,
                               std::uint64_t file_bytes) {
    auto fail = [&](const std::string& what) { throw DataError(file + ": not a usable shard: " + what); };
    if (size < kShardHeaderBytes || file_bytes < kShardHeaderBytes)
        fail("truncated: " + std::to_string(std::min<std::uint64_t>(size, file_bytes)) + " bytes, the header alone takes " +
             std::to_string(kShardHeaderBytes));
    if (std::memcmp(bytes, kMagic, sizeof kMagic) != 0) fail("bad magic (expected THRSHRD, a file written by thresher-engine export)");
    const unsigned char* p = bytes + sizeof kMagic;
    ShardHeader h;
    h.version = take<std::uint32_t>(p);
    h.batch = take<std::uint32_t>(p);
    h.records = take<std::uint64_t>(p);
    h.blocks = take<std::uint32_t>(p);
    h.feature_floats = take<std::uint32_t>(p);
    h.target_floats = take<std::uint32_t>(p);
    h.label_ints = take<std::uint32_t>(p);
    h.header_crc = take<std::uint32_t>(p);
    const auto reserved = take<std::uint32_t>(p);
    if (h.version != kShardVersion)
        fail("version " + std::to_string(h.version) + ", this engine reads version " + std::to_string(kShardVersion));
    if (reserved != 0) fail("reserved header bytes are not zero");
    if (h.batch == 0) fail("batch size 0");
    if (h.records == 0) fail("no records");
    if (h.feature_floats == 0) fail("0 features per record");
    for (auto [n, what] : {std::pair{h.feature_floats, "features"}, {h.target_floats, "targets"}, {h.label_ints, "labels"}})
        if (n > kMaxShardValuesPerRecord) fail(std::to_string(n) + " " + what + " per record, more than 2^28");
    if (h.records > file_bytes / h.record_bytes())
        fail(std::to_string(h.records) + " records of " + std::to_string(h.record_bytes()) + " bytes cannot fit in its " +
             std::to_string(file_bytes) + " bytes (truncated?)");
    if (h.blocks != ceil_div(h.records, h.batch))
        fail(std::to_string(h.blocks) + " blocks for " + std::to_string(h.records) + " records in batches of " +
             std::to_string(h.batch));
    if (h.file_bytes() != file_bytes)
        fail(std::string(file_bytes < h.file_bytes() ? "truncated: " : "trailing bytes: ") + std::to_string(file_bytes) +
             " bytes, the header says " + std::to_string(h.file_bytes()));
    return h;
}

Dataset ShardIndex::describe(const ShardPart& part) const {
    Dataset ds;
    ds.name = part.name;
    ds.shape = layout.shape;
    ds.count = part.records;
    ds.num_classes = layout.num_classes;
    ds.target_size = layout.target_size;
    ds.steps = layout.steps;
    ds.step_features = layout.step_features;
    ds.target_steps = layout.target_steps;
    return ds;
}

bool is_shard_folder(const std::string& folder) {
    std::error_code ec;
    return std::filesystem::is_directory(folder, ec) && std::filesystem::is_regular_file(folder + "/" + kShardIndexName, ec);
}

namespace {

nlohmann::json part_json(const ShardPart& p) {
    nlohmann::json shards = nlohmann::json::array();
    for (const auto& s : p.shards)
        shards.push_back({{"file", s.file}, {"records", s.records}, {"bytes", s.bytes}, {"crc32", s.crc32}});
    return {{"name", p.name}, {"records", p.records}, {"shards", shards}};
}

// "DIR/index.json: path: problem" for every field, as launcher/run_spec.cpp's Reader does.
class IndexReader {
public:
    explicit IndexReader(std::string where) : where_(std::move(where)) {}
    [[noreturn]] void fail(const std::string& path, const std::string& problem) const {
        throw DataError(where_ + ": " + path + ": " + problem);
    }
    const nlohmann::json& field(const nlohmann::json& obj, const std::string& path, const char* key) const {
        if (!obj.is_object()) fail(path, "expected an object");
        auto it = obj.find(key);
        if (it == obj.end()) fail(path + "." + key, "missing");
        return *it;
    }
    std::uint64_t count(const nlohmann::json& obj, const std::string& path, const char* key, std::uint64_t max) const {
        const auto& v = field(obj, path, key);
        if (!v.is_number_unsigned()) fail(path + "." + key, "expected a whole number >= 0, got " + v.dump());
        const auto n = v.get<std::uint64_t>();
        if (n > max) fail(path + "." + key, std::to_string(n) + " is more than " + std::to_string(max));
        return n;
    }
    std::string text(const nlohmann::json& obj, const std::string& path, const char* key) const {
        const auto& v = field(obj, path, key);
        if (!v.is_string()) fail(path + "." + key, "expected a string, got " + v.dump());
        return v.get<std::string>();
    }
    std::vector<std::string> texts(const nlohmann::json& obj, const std::string& path, const char* key) const {
        const auto& v = field(obj, path, key);
        if (!v.is_array()) fail(path + "." + key, "expected an array of strings");
        std::vector<std::string> out;
        for (const auto& s : v) {
            if (!s.is_string()) fail(path + "." + key, "expected an array of strings, got " + s.dump());
            out.push_back(s.get<std::string>());
        }
        return out;
    }

private:
    std::string where_;
};

// A shard's file must stay inside the set's folder: "<part>/<name>", no other folders, no "..".
bool plain_shard_name(const std::string& file, const std::string& part) {
    if (file.size() <= part.size() + 1 || file.compare(0, part.size() + 1, part + "/") != 0) return false;
    const std::string name = file.substr(part.size() + 1);
    if (name == "." || name == "..") return false;
    for (char c : name)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
    return true;
}

ShardPart read_part(const IndexReader& r, const nlohmann::json& j, const std::string& path, std::uint32_t batch,
                    std::uint64_t record_bytes) {
    ShardPart p;
    p.name = r.text(j, path, "name");
    p.records = r.count(j, path, "records", UINT64_MAX);
    const auto& shards = r.field(j, path, "shards");
    if (!shards.is_array() || shards.empty()) r.fail(path + ".shards", "expected a non-empty array");
    if (shards.size() > kMaxShardsPerPart) r.fail(path + ".shards", std::to_string(shards.size()) + " shards, more than 1000000");
    std::uint64_t total = 0;
    for (std::size_t i = 0; i < shards.size(); ++i) {
        const std::string at = path + ".shards[" + std::to_string(i) + "]";
        ShardEntry e;
        e.file = r.text(shards[i], at, "file");
        const std::string part_folder = path.substr(path.rfind('.') + 1);
        if (!plain_shard_name(e.file, part_folder))
            r.fail(at + ".file", "\"" + e.file + "\" is not a plain file name inside " + part_folder + "/");
        e.records = r.count(shards[i], at, "records", UINT64_MAX);
        e.bytes = r.count(shards[i], at, "bytes", UINT64_MAX);
        e.crc32 = static_cast<std::uint32_t>(r.count(shards[i], at, "crc32", UINT32_MAX));
        if (e.records == 0) r.fail(at + ".records", "a shard holds at least one record");
        // The file's size follows from its records (shard_format.h): an index that claims more
        // records than its bytes can hold is refused before anything is sized by it.
        if (e.records > e.bytes / record_bytes || e.bytes != kShardHeaderBytes + 4 * ((e.records + batch - 1) / batch) + e.records * record_bytes)
            r.fail(at + ".bytes", std::to_string(e.bytes) + " bytes cannot hold " + std::to_string(e.records) + " records of " +
                                      std::to_string(record_bytes) + " bytes in batches of " + std::to_string(batch));
        // Whole batches: only the part's last shard may end in a short block.
        if (i + 1 < shards.size() && e.records % batch != 0)
            r.fail(at + ".records", std::to_string(e.records) + " is not a whole number of batches of " + std::to_string(batch));
        if (e.records > UINT64_MAX - total) r.fail(at + ".records", "the records overflow");
        total += e.records;
        p.shards.push_back(std::move(e));
    }
    if (total != p.records)
        r.fail(path + ".records", std::to_string(p.records) + ", but its shards hold " + std::to_string(total));
    return p;
}

}  // namespace

std::string shard_index_json(const ShardIndex& x) {
    const auto& l = x.layout;
    nlohmann::json j{{"format", "thresher-shards"},
                     {"version", kShardVersion},
                     {"source", x.source},
                     {"batch", x.batch},
                     {"seed", x.seed},
                     {"layout",
                      {{"shape", {l.shape.channels, l.shape.height, l.shape.width}},
                       {"num_classes", l.num_classes},
                       {"target_size", l.target_size},
                       {"steps", l.steps},
                       {"step_features", l.step_features},
                       {"target_steps", l.target_steps},
                       {"labels", l.labels}}},
                     {"class_names", x.class_names},
                     {"vocabulary", x.vocabulary},
                     {"train", part_json(x.train)}};
    if (x.has_test) j["test"] = part_json(x.test);
    return j.dump(1) + "\n";
}

ShardIndex parse_shard_index(const std::string& folder, const std::string& json_text) {
    const IndexReader r(folder + "/" + kShardIndexName);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(json_text);
    } catch (const nlohmann::json::exception& e) {
        r.fail("$", std::string("not JSON: ") + e.what());
    }
    if (r.text(j, "$", "format") != "thresher-shards") r.fail("$.format", "expected \"thresher-shards\"");
    if (const auto v = r.count(j, "$", "version", UINT32_MAX); v != kShardVersion)
        r.fail("$.version", std::to_string(v) + ", this engine reads version " + std::to_string(kShardVersion));
    ShardIndex x;
    x.folder = folder;
    x.source = r.text(j, "$", "source");
    x.batch = static_cast<std::uint32_t>(r.count(j, "$", "batch", 1u << 24));
    if (x.batch == 0) r.fail("$.batch", "must be at least 1");
    x.seed = r.count(j, "$", "seed", UINT64_MAX);
    const auto& l = r.field(j, "$", "layout");
    const auto& shape = r.field(l, "$.layout", "shape");
    if (!shape.is_array() || shape.size() != 3) r.fail("$.layout.shape", "expected [channels, height, width]");
    int dims[3];
    for (int i = 0; i < 3; ++i) {
        if (!shape[i].is_number_unsigned() || shape[i].get<std::uint64_t>() == 0 || shape[i].get<std::uint64_t>() > (1u << 24))
            r.fail("$.layout.shape", "expected three whole numbers in [1, 2^24], got " + shape.dump());
        dims[i] = static_cast<int>(shape[i].get<std::uint64_t>());
    }
    x.layout.shape = {dims[0], dims[1], dims[2]};
    if (x.layout.shape.size() > kMaxShardValuesPerRecord) r.fail("$.layout.shape", "more than 2^28 features per sample");
    x.layout.num_classes = static_cast<int>(r.count(l, "$.layout", "num_classes", 1u << 24));
    x.layout.target_size = r.count(l, "$.layout", "target_size", kMaxShardValuesPerRecord);
    x.layout.steps = static_cast<int>(r.count(l, "$.layout", "steps", 1u << 24));
    x.layout.step_features = static_cast<int>(r.count(l, "$.layout", "step_features", 1u << 24));
    x.layout.target_steps = static_cast<int>(r.count(l, "$.layout", "target_steps", 1u << 24));
    const auto& labels = r.field(l, "$.layout", "labels");
    if (!labels.is_boolean()) r.fail("$.layout.labels", "expected true or false");
    x.layout.labels = labels.get<bool>();
    x.class_names = r.texts(j, "$", "class_names");
    x.vocabulary = r.texts(j, "$", "vocabulary");
    if (x.layout.target_size > kMaxShardValuesPerRecord) r.fail("$.layout.target_size", "more than 2^28");
    const std::uint64_t record_bytes = 4 * (x.layout.shape.size() + x.layout.target_size + x.layout.label_ints()) + 8;
    x.train = read_part(r, r.field(j, "$", "train"), "$.train", x.batch, record_bytes);
    if (j.contains("test")) {
        x.has_test = true;
        x.test = read_part(r, j["test"], "$.test", x.batch, record_bytes);
    }
    return x;
}

ShardIndex read_shard_index(const std::string& folder) {
    const std::string path = folder + "/" + kShardIndexName;
    std::ifstream in(path, std::ios::binary);
    if (!in) throw DataError(path + ": cannot be opened");
    // An index lists at most a million shards of ~100 bytes of JSON each.
    constexpr std::uintmax_t kMaxIndexBytes = 256u << 20;
    std::error_code ec;
    const auto size = std::filesystem::file_size(path, ec);
    if (ec || size > kMaxIndexBytes) throw DataError(path + ": larger than 256 MiB; not an index written by export");
    std::stringstream text;
    text << in.rdbuf();
    return parse_shard_index(folder, text.str());
}

}  // namespace thresher::data
