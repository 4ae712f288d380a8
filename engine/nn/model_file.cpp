#include "nn/model_file.h"

#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/durable_file.h"
#include "config/json_fields.h"
#include "core/error.h"

namespace thresher::nn {

namespace {

constexpr char kMagic[8] = {'T', 'H', 'R', 'M', 'O', 'D', 'L', '\0'};
constexpr std::uint32_t kVersion = 1;

template <typename T>
void put(std::string& out, const T& v) {
    out.append(reinterpret_cast<const char*>(&v), sizeof(T));
}

class Reader {
public:
    Reader(const std::string& path, const std::string& bytes) : path_(path), bytes_(bytes) {}
    template <typename T>
    T get(const char* what) {
        T v;
        need(sizeof(T), what);
        std::memcpy(&v, bytes_.data() + pos_, sizeof(T));
        pos_ += sizeof(T);
        return v;
    }
    void floats(std::vector<float>& v, std::size_t n, const char* what) {
        // Counted in floats: n * 4 wraps for n >= 2^62, and a wrapped size would pass a byte check.
        if (n > (bytes_.size() - pos_) / sizeof(float))
            throw ModelFileError(path_ + ": truncated at byte " + std::to_string(pos_) + ": " + what + " needs " +
                                 std::to_string(n) + " floats (4 bytes each), " + std::to_string(bytes_.size() - pos_) +
                                 " bytes left");
        v.resize(n);
        if (n) std::memcpy(v.data(), bytes_.data() + pos_, n * sizeof(float));
        pos_ += n * sizeof(float);
    }
    std::string text(std::size_t n, const char* what) {
        need(n, what);
        std::string s = bytes_.substr(pos_, n);
        pos_ += n;
        return s;
    }
    std::size_t pos() const { return pos_; }

private:
    void need(std::size_t n, const char* what) {
        if (n > bytes_.size() - pos_)
            throw ModelFileError(path_ + ": truncated at byte " + std::to_string(pos_) + ": " + what +
                                 " needs " + std::to_string(n) + " bytes, " +
                                 std::to_string(bytes_.size() - pos_) + " left");
    }
    const std::string& path_;
    const std::string& bytes_;
    std::size_t pos_ = 0;
};

// A whole number in [0, max] from the header. nlohmann's get<int>() casts whatever is there: a
// float such as 1e30 (undefined behaviour) or a negative count as a size_t (2^64 - 1).
std::uint64_t count_field(const nlohmann::json& object, const char* key, std::uint64_t max, const std::string& where) {
    const auto& v = object.at(key);
    if (v.is_number_unsigned() && v.get<std::uint64_t>() <= max) return v.get<std::uint64_t>();
    if (v.is_number_integer() && v.get<std::int64_t>() >= 0 && static_cast<std::uint64_t>(v.get<std::int64_t>()) <= max)
        return static_cast<std::uint64_t>(v.get<std::int64_t>());
    throw ModelFileError(where + "\"" + key + "\" must be a whole number in [0, " + std::to_string(max) + "], got " +
                         config::json_summary(v));
}

}  // namespace

void save_model_file(const std::string& path, const ModelFile& m) {
    nlohmann::json header{{"config", m.config.to_json()},
                          {"params", m.params.size()},
                          {"updater_state", m.updater_state.size()},
                          {"training",
                           {{"epoch", m.position.epochs_done},
                            {"iteration", m.position.iterations},
                            {"seed", m.position.seed}}},
                          {"normalization",
                           {{"kind", m.normalization.kind},
                            {"shift", m.normalization.shift},
                            {"scale", m.normalization.scale}}}};
    if (!m.class_names.empty()) header["class_names"] = m.class_names;
    if (!m.vocabulary.empty()) header["vocabulary"] = m.vocabulary;
    const std::string h = header.dump();
    std::string out(kMagic, sizeof(kMagic));
    put(out, kVersion);
    put(out, static_cast<std::uint64_t>(h.size()));
    out += h;
    out.append(reinterpret_cast<const char*>(m.params.data()), m.params.size() * sizeof(float));
    out.append(reinterpret_cast<const char*>(m.updater_state.data()), m.updater_state.size() * sizeof(float));
    put(out, crc32_of(out.data(), out.size()));
    try {
        write_file_durably(path, out);
    } catch (const Error& e) {
        throw ModelFileError(e.what());  // "<path>: <step> failed (<reason>)"
    }
}

ModelFile load_model_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw ModelFileError(path + ": cannot open model file (" + std::strerror(errno) + ")");
    std::stringstream ss;
    ss << f.rdbuf();
    const std::string bytes = ss.str();
    Reader r(path, bytes);
    const std::string magic = r.text(sizeof(kMagic), "magic");
    if (std::memcmp(magic.data(), kMagic, sizeof(kMagic)) != 0)
        throw ModelFileError(path + ": not a Thresher model file (bad magic at byte 0)");
    const auto version = r.get<std::uint32_t>("version");
    if (version != kVersion)
        throw ModelFileError(path + ": model file version " + std::to_string(version) +
                             ", this engine reads version " + std::to_string(kVersion));
    if (bytes.size() < sizeof(std::uint32_t) + r.pos())
        throw ModelFileError(path + ": truncated: no checksum");
    const std::size_t body = bytes.size() - sizeof(std::uint32_t);
    std::uint32_t stored;
    std::memcpy(&stored, bytes.data() + body, sizeof(stored));
    const auto actual = crc32_of(bytes.data(), body);
    const auto header_len = r.get<std::uint64_t>("header length");
    if (header_len > body - r.pos())
        throw ModelFileError(path + ": truncated: header of " + std::to_string(header_len) +
                             " bytes does not fit in the file");
    if (stored != actual)
        throw ModelFileError(path + ": checksum mismatch (file corrupt or truncated)");
    ModelFile m;
    nlohmann::json header;
    try {
        header = config::parse_json_text(r.text(header_len, "header"), path + " (header)");
        m.config = config::ModelConfig::from_json(header.at("config"), path + " (embedded config)");
        const std::string where = path + ": bad header: ";
        const auto p = static_cast<std::size_t>(count_field(header, "params", SIZE_MAX, where));
        const auto s = static_cast<std::size_t>(count_field(header, "updater_state", SIZE_MAX, where));
        if (p != m.config.param_count())
            throw ModelFileError(path + ": header says " + std::to_string(p) +
                                 " parameters, its config has " + std::to_string(m.config.param_count()));
        r.floats(m.params, p, "parameters");
        r.floats(m.updater_state, s, "updater state");
        const auto& t = header.at("training");
        m.position.epochs_done = static_cast<int>(count_field(t, "epoch", INT_MAX, where + "training."));
        m.position.iterations = static_cast<long>(count_field(t, "iteration", LONG_MAX, where + "training."));
        m.position.seed = count_field(t, "seed", UINT64_MAX, where + "training.");
        if (header.contains("normalization")) {
            const auto& n = header.at("normalization");
            m.normalization.kind = n.at("kind").get<std::string>();
            m.normalization.shift = n.at("shift").get<std::vector<float>>();
            m.normalization.scale = n.at("scale").get<std::vector<float>>();
            if (m.normalization.active() && (m.normalization.shift.size() != m.config.input_size() ||
                                             m.normalization.scale.size() != m.config.input_size()))
                throw ModelFileError(path + ": normalization has " + std::to_string(m.normalization.shift.size()) +
                                     " features, the model's input " + std::to_string(m.config.input_size()));
        }
        if (header.contains("class_names")) {
            m.class_names = header.at("class_names").get<std::vector<std::string>>();
            // A binary classifier has one output and two classes.
            const auto outputs = static_cast<std::size_t>(m.config.output_size());
            const std::size_t classes = outputs == 1 ? 2 : outputs;
            if (m.class_names.size() != classes)
                throw ModelFileError(path + ": class_names has " + std::to_string(m.class_names.size()) +
                                     " names, the model has " + std::to_string(classes) + " classes");
        }
        if (header.contains("vocabulary")) m.vocabulary = header.at("vocabulary").get<std::vector<std::string>>();
    } catch (const nlohmann::json::exception& e) {
        throw ModelFileError(path + ": bad header: " + e.what());
    } catch (const ConfigError& e) {
        throw ModelFileError(e.what());  // names the file already: "<path> (header):1:3: ..."
    }
    if (r.pos() != body)
        throw ModelFileError(path + ": " + std::to_string(body - r.pos()) + " unexpected bytes before the checksum");
    return m;
}

}  // namespace thresher::nn
