#include "cli/inspect.h"

#include <cstring>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <sstream>

#include "config/model_format.h"
#include "nn/model_file.h"

namespace thresher::cli {

namespace {

std::string task_of(const config::ModelConfig& m) {
    const auto& out = m.main_output();
    // An image output: the loss at every pixel (engine/config/README.md, image outputs).
    if (out.image_output())
        return (m.is_classifier() ? "per-pixel classification (segmentation), " : "image regression, ") + out.out_shape.str() + " per sample";
    if (out.loss == config::LossKind::BinaryCrossEntropy) return out.output_width() == 1 ? "binary classification" : "multi-label classification";
    if (m.is_classifier()) return "classification";
    return "regression";
}

// "1x28x28", or for several inputs "image 1x28x28, meta 4".
std::string inputs_text(const config::ModelConfig& m) {
    if (m.extra_inputs.empty()) return m.input.str();
    std::string s;
    for (std::size_t k = 0; k < m.input_count(); ++k)
        s += (k ? ", " : "") + m.input_name_of(k) + " " + m.input_shape(k).str();
    return s;
}

// "dense 500 relu", "convolution 20 5x5 stride 1x1 truncate identity": what Thresher runs.
std::string describe(const config::LayerConfig& l) {
    std::ostringstream s;
    s << config::to_string(l.type);
    auto pair = [](const std::array<int, 2>& p) { return std::to_string(p[0]) + "x" + std::to_string(p[1]); };
    switch (l.type) {
        case config::LayerType::Dense:
        case config::LayerType::Output:
            s << " " << l.units << " " << config::to_string(l.activation.kind);
            if (l.type == config::LayerType::Output) s << " loss " << config::to_string(l.loss);
            break;
        case config::LayerType::Convolution:
        case config::LayerType::DepthwiseConvolution:
        case config::LayerType::SeparableConvolution:
        case config::LayerType::TransposedConvolution:
            if (l.type != config::LayerType::DepthwiseConvolution) s << " " << l.units;
            if (l.type == config::LayerType::DepthwiseConvolution || l.type == config::LayerType::SeparableConvolution)
                s << " x" << l.depth_multiplier << " per channel";
            if (l.type == config::LayerType::TransposedConvolution) s << " transposed";
            s << " " << pair(l.kernel) << " stride " << pair(l.stride)
              << (l.mode == config::ConvMode::Same ? " same " : " truncate ") << config::to_string(l.activation.kind);
            break;
        case config::LayerType::Subsampling:
            s << (l.max_pool ? " max " : " avg ") << pair(l.kernel) << " stride " << pair(l.stride)
              << (l.mode == config::ConvMode::Same ? " same" : "");
            break;
        case config::LayerType::BatchNorm: s << " eps " << config::decimal(l.bn_eps) << " decay " << config::decimal(l.bn_decay); break;
        case config::LayerType::Dropout: s << " retain " << config::decimal(l.retain) << (l.spatial ? " spatial (whole channels)" : ""); break;
        case config::LayerType::PRelu:
            s << " " << l.blocks.at(0).size << (l.blocks.at(0).size == 1 ? " alpha" : " alphas");
            for (std::size_t a = 0; a < 3; ++a)
                if (l.prelu_shared[a]) s << (a == 0 ? " shared channels" : a == 1 ? " shared height" : " shared width");
            break;
        case config::LayerType::Activation:
            s << " " << config::to_string(l.activation.kind);
            if (l.is_output) s << " loss " << config::to_string(l.loss);
            break;
        case config::LayerType::ZeroPadding:
        case config::LayerType::Cropping:
            s << " top " << l.margins[0] << " bottom " << l.margins[1] << " left " << l.margins[2] << " right " << l.margins[3];
            break;
        case config::LayerType::Upsampling: s << " " << pair(l.scale) << " nearest"; break;
        case config::LayerType::Subset: s << " channels " << l.subset[0] << " to " << l.subset[1]; break;
        case config::LayerType::Reshape: s << " to " << l.reshape_to.str() << (l.channels_last_order ? " channels last" : ""); break;
        case config::LayerType::Permute: {
            static const char* axis[] = {"channels", "height", "width"};
            s << " to " << axis[l.permute_axes[0]] << ", " << axis[l.permute_axes[1]] << ", " << axis[l.permute_axes[2]];
            break;
        }
        case config::LayerType::Add:
        case config::LayerType::Subtract:
        case config::LayerType::Multiply:
        case config::LayerType::Average:
        case config::LayerType::Maximum:
        case config::LayerType::Concatenate: break;
        case config::LayerType::Lstm:
        case config::LayerType::Gru:
        case config::LayerType::SimpleRnn:
            s << " " << l.units << (l.return_sequences ? " every step" : " last step");
            if (l.bidirectional != config::BiMode::None) s << " bidirectional " << config::to_string(l.bidirectional);
            if (l.type == config::LayerType::Lstm && l.peepholes) s << " peepholes";
            if (l.type == config::LayerType::Gru) s << (l.reset_after ? " reset after" : " reset before");
            if (l.type == config::LayerType::SimpleRnn) s << " " << config::to_string(l.activation.kind);
            break;
        case config::LayerType::Embedding: s << " " << l.vocabulary << " ids x " << l.units; break;
        case config::LayerType::Convolution1d:
            s << " " << l.units << " kernel " << l.kernel[0] << " stride " << l.stride[0] << " dilation " << l.dilation[0] << " "
              << config::to_string(l.mode) << " " << config::to_string(l.activation.kind);
            break;
        case config::LayerType::RepeatVector: s << " " << l.repeat << " times"; break;
    }
    if (l.activation.kind == config::Activation::LeakyRelu) s << " alpha " << config::decimal(l.activation.alpha);
    // An image output other than an activation layer (a convolution, an upsampling): its loss.
    if (l.declares_loss && l.type != config::LayerType::Activation && l.type != config::LayerType::Output)
        s << " loss " << config::to_string(l.loss);
    return s.str();
}

// A trained Thresher model (.thr) or any file the importers read.
config::ImportResult read_for_inspect(const std::string& path, const config::ImportOptions& import) {
    std::ifstream in(path, std::ios::binary);
    char magic[8] = {};
    in.read(magic, sizeof magic);
    if (in.gcount() != 8 || std::memcmp(magic, "THRMODL", 8) != 0) return config::import_model_file(path, import);
    auto file = nn::load_model_file(path);
    config::check_steps_given(file.config, import, path);
    config::ImportResult r;
    r.model = std::move(file.config);
    r.params = std::move(file.params);
    return r;
}

}  // namespace

void inspect_command(const std::string& model_path, bool json, std::ostream& out, std::ostream& log,
                     const config::ImportOptions& import) {
    const auto r = read_for_inspect(model_path, import);
    for (const auto& note : r.notes) log << model_path << ": " << note << "\n";
    log.flush();
    const auto& m = r.model;
    const auto config = m.to_json();
    if (json) {
        nlohmann::json layers = nlohmann::json::array();
        for (std::size_t i = 0; i < m.layers.size(); ++i) {
            const auto& l = m.layers[i];
            nlohmann::json o = config["layers"][i];
            o["index"] = i;
            if (!l.origin.empty()) o["file_location"] = l.origin;
            if (!l.origin_what.empty()) o["file_layer"] = l.origin_what;
            o["input_shape"] = l.in_shape.str();
            o["output_shape"] = l.out_shape.str();
            o["params"] = l.param_count;
            layers.push_back(std::move(o));
        }
        nlohmann::json j{{"file", model_path},          {"format", config::to_string(r.format)},
                         {"name", m.name},              {"input", inputs_text(m)},
                         {"params", m.param_count()},   {"task", task_of(m)},
                         {"loss", config::to_string(m.main_output().loss)},
                         {"updater", config["updater"]}, {"weight_init", config["weight_init"]},
                         {"l1", config::decimal(m.l1)},     {"l2", config::decimal(m.l2)},
                         {"layers", layers},            {"notes", r.notes},
                         {"weights", !r.params.empty()},
                         {"config", config}};
        // The updater's "schedule" holds the fields; this is the same in words.
        j["schedule"] = m.lr_schedule ? nlohmann::json(m.lr_schedule->describe()) : nlohmann::json();
        out << j.dump() << std::endl;
        return;
    }
    out << "model \"" << m.name << "\" (" << config::to_string(r.format) << "): input " << inputs_text(m) << ", "
        << m.param_count() << " parameters, " << task_of(m) << ", loss " << config::to_string(m.main_output().loss) << "\n";
    if (!r.params.empty()) out << "weights: " << r.params.size() << " parameters from the file (training starts from them)\n";
    out << "updater " << config["updater"].dump() << ", weight init " << config::to_string(m.weight_init);
    if (m.l1 != 0.f) out << ", l1 " << config::decimal(m.l1);
    if (m.l2 != 0.f) out << ", l2 " << config::decimal(m.l2);
    out << "\n";
    if (m.lr_schedule) out << "learning-rate schedule: " << m.lr_schedule->describe() << "\n";
    for (std::size_t i = 0; i < m.layers.size(); ++i) {
        const auto& l = m.layers[i];
        std::string from = l.origin.empty() ? l.name : l.origin + " " + l.origin_what;
        out << "  " << std::setw(2) << i << "  " << std::left << std::setw(52) << from << std::right << "  "
            << std::left << std::setw(40) << describe(l) << std::right << "  " << l.out_shape.str() << "  ("
            << l.param_count << " params)";
        if (l.updater) out << "  updater " << config["layers"][i]["updater"].dump();
        if (l.weight_init) out << "  init " << config::to_string(*l.weight_init);
        if (l.l1) out << "  l1 " << config::decimal(*l.l1);
        if (l.l2) out << "  l2 " << config::decimal(*l.l2);
        if (!l.inputs.empty()) {  // a graph: the layers it reads
            out << "  <-";
            for (std::size_t k = 0; k < l.inputs.size(); ++k) out << (k ? ", " : " ") << l.inputs[k];
        }
        if (!l.shares.empty()) out << "  shares " << l.shares << "'s parameters";  // 0 params of its own
        out << "\n";
    }
    if (!r.notes.empty()) out << r.notes.size() << " import note(s) on stderr: what was approximated or left out\n";
    out.flush();
}

}  // namespace thresher::cli
