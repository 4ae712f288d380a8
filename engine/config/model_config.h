// ModelConfig: what a network is, independent of any backend. Parsed from Thresher's own JSON
// (documented in engine/config/README.md; the DL4J and Keras importers produce the same struct),
// validated before anything runs, with every layer's input/output shape and parameter count
// inferred. Errors are ConfigErrors naming the source, the layer and the field:
//   lenet.json: layers[2] (convolution): "kernel": must be two positive integers, got [5,0]
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/lr_schedule.h"
#include "vocab/activation.h"
#include "vocab/updater.h"

namespace thresher::config {

// The vocabulary a config shares with the backends (engine/vocab: config links no backend).
using vocab::Activation;
using vocab::ActivationSpec;
using vocab::UpdaterKind;
using vocab::UpdaterSpec;

// C x H x W; flat features are {n, 1, 1}. A sequence (seq_spec.md) has h = w = 1, c features per
// step and t > 0 steps, laid out time-major with features contiguous: (step s, feature f) at
// s * c + f. t = 0 means "not a sequence".
struct Shape {
    int c = 0, h = 1, w = 1;
    int t = 0;
    std::size_t size() const { return static_cast<std::size_t>(c) * h * w * (t > 0 ? t : 1); }
    bool flat() const { return h == 1 && w == 1 && t == 0; }
    bool sequence() const { return t > 0; }
    bool operator==(const Shape&) const = default;
    std::string str() const;  // "1x28x28", "500" or "100 steps x 64"
};
// A sequence of `steps` x `features`.
inline Shape sequence_shape(int steps, int features) { return Shape{features, 1, 1, steps}; }

// PRelu: a learned leaky ReLU (Keras PReLU, DL4J PReLULayer), one alpha per input position except
// along its shared axes. Activation: an activation on its own, without parameters (Keras
// Activation, DL4J ActivationLayer); as the last layer it is the output and carries the loss
// (DL4J LossLayer). ZeroPadding, Cropping, Upsampling: an image's borders added (zeros) or cut
// off, or each pixel repeated (nearest neighbour); no parameters (Keras ZeroPadding2D, Cropping2D,
// UpSampling2D; DL4J ZeroPaddingLayer, Cropping2D, Upsampling2D).
//
// Vertices join branches of a graph (engine/config/README.md, "Graphs"): Add, Subtract, Multiply,
// Average and Maximum combine inputs of one shape element by element (Keras Add ..., DL4J
// ElementWiseVertex); Concatenate stacks its inputs' channels (flat inputs: their features; Keras
// Concatenate on the channel axis, DL4J MergeVertex); Subset keeps a range of channels (DL4J
// SubsetVertex). None has parameters.
//
// DepthwiseConvolution: each input channel convolved on its own by depth_multiplier kernels
// (Keras DepthwiseConv2D, DL4J DepthwiseConvolution2D): in_c * multiplier output channels, the
// outputs of channel c at c * multiplier + m. SeparableConvolution: that, then a 1x1 convolution
// to `units` filters with the bias and activation (Keras SeparableConv2D, DL4J
// SeparableConvolution2D). TransposedConvolution: the adjoint of a convolution, upsampling by its
// stride (Keras Conv2DTranspose, DL4J Deconvolution2D); weights [in_c x filters x kh x kw] as
// PyTorch's ConvTranspose2d and ONNX's ConvTranspose hold them.
enum class LayerType { Dense, Convolution, Subsampling, BatchNorm, Dropout, Output, PRelu, Activation,
                       ZeroPadding, Cropping, Upsampling,
                       Add, Subtract, Multiply, Average, Maximum, Concatenate, Subset,
                       DepthwiseConvolution, SeparableConvolution, TransposedConvolution, Reshape, Permute,
                       Lstm, Gru, SimpleRnn, Embedding, Convolution1d, RepeatVector };
// Recurrent layers (lstm, gru, simple_rnn): one oneDNN RNN primitive over all steps.
bool is_recurrent(LayerType);
// How a bidirectional recurrent layer joins its two directions' outputs (Keras's merge_mode).
enum class BiMode { None, Concat, Sum, Mul, Average };
// Convolution and its depthwise and separable forms (a window over the image with a kernel).
bool is_convolution(LayerType);
// True for the vertex types (several inputs or a channel subset, no parameters).
bool is_vertex(LayerType);
// Causal: convolution1d only, padding (k - 1) * dilation before the first step (Keras "causal").
enum class ConvMode { Truncate, Same, Causal };
enum class LossKind { MultiClassCrossEntropy, NegativeLogLikelihood, BinaryCrossEntropy, MSE, MAE };
enum class WeightInit { Xavier, XavierUniform, Relu, Normal, Uniform, Zero };

// Where a parameter block sits inside a layer's slice of the flat parameter buffer.
// Depthwise: a separable convolution's per-channel kernels (its Weight is the 1x1 pointwise one).
// Recurrent: a recurrent layer's R (hidden to gates); Peephole: an lstm's P [3 x H]. A
// bidirectional layer has its forward direction's blocks first, then the backward ones'.
enum class ParamRole { Weight, Bias, Gamma, Beta, RunningMean, RunningVar, Alpha, Depthwise, Recurrent, Peephole };
struct ParamBlock {
    ParamRole role;
    std::size_t offset = 0;  // within the layer's slice
    std::size_t size = 0;
    bool trainable() const { return role != ParamRole::RunningMean && role != ParamRole::RunningVar; }
};

struct LayerConfig {
    LayerType type = LayerType::Dense;
    std::string name;  // optional, for messages and the UI
    // Where an imported layer came from, in the file's own terms ("config.layers[2]" and
    // "Conv2D \"conv2d_1\""): messages name it first, Thresher's numbering only in parentheses.
    // Not saved (Thresher JSON has no such field).
    std::string origin, origin_what;

    int units = 0;                      // dense/output: outputs; convolution: filters; a last activation layer: its features (inferred)
    std::array<int, 2> kernel{0, 0};    // convolution, subsampling
    std::array<int, 2> stride{1, 1};
    std::array<int, 2> padding{0, 0};   // truncate mode only
    std::array<int, 2> dilation{1, 1};  // convolution
    ConvMode mode = ConvMode::Truncate;
    bool max_pool = true;               // subsampling: max or average
    bool global = false;                // subsampling over the whole image (kernel = input height x width)
    ActivationSpec activation{};
    LossKind loss = LossKind::MultiClassCrossEntropy;  // output, or an activation layer that is last
    float retain = 0.5f;                // dropout: probability of keeping an activation
    bool spatial = false;               // dropout: one draw per channel of a sample (Keras SpatialDropout2D)
    float bn_eps = 1e-5f;
    float bn_decay = 0.9f;              // running = decay * running + (1 - decay) * batch
    // prelu: which of channels, height, width share one alpha; the value every alpha starts at.
    std::array<bool, 3> prelu_shared{false, false, false};
    float prelu_init = 0.f;
    std::array<int, 4> margins{0, 0, 0, 0};  // zero_padding, cropping: top, bottom, left, right
    std::array<int, 2> scale{1, 1};          // upsampling: rows and columns per input pixel
    std::array<int, 2> subset{0, 0};         // subset: first and last channel kept (inclusive, DL4J's form)
    int depth_multiplier = 1;                // depthwise/separable convolution: kernels per input channel
    // reshape: the new shape, and whether values are counted channels last (Keras's order, the
    // values move) or channels first (Thresher's and DL4J's order: the same values, a new shape).
    Shape reshape_to{};
    bool channels_last_order = false;
    // permute: output axis k (channels, height, width) is input axis permute_axes[k] (0 channels,
    // 1 height, 2 width).
    std::array<int, 3> permute_axes{0, 1, 2};
    // Sequences (seq_spec.md). lstm/gru/simple_rnn: `units` H; whether every step's output is
    // kept (else the last valid step's); how two directions join. lstm: peepholes (DL4J
    // GravesLSTM) and the forget gate's initial bias. gru: reset after the recurrent matmul
    // (oneDNN's linear-before-reset; Keras >= 2.3's default). simple_rnn: `activation`. lstm/gru:
    // the cell's (lstm: cell input and output; gru: candidate) and the gates' activations, both
    // spelled in JSON as `activation` / `gate_activation`; their own fields (not `activation`,
    // which defaults to identity) so a LayerConfig built without naming them gets tanh and sigmoid.
    bool return_sequences = false;
    BiMode bidirectional = BiMode::None;
    bool peepholes = false;
    float forget_bias = 1.f;
    bool reset_after = true;
    ActivationSpec cell_activation{Activation::Tanh, 0.01f};
    ActivationSpec gate_activation{Activation::Sigmoid, 0.01f};
    // Dropout inside a recurrent layer while training (Keras's `dropout` / `recurrent_dropout`,
    // Gal & Ghahramani's variational form): the probability of keeping each input feature, and
    // each unit of the state the recurrence reads, with one mask per sample for all its steps
    // (per direction). 1: none. JSON `input_retain` / `recurrent_retain`, like dropout's `retain`.
    float input_retain = 1.f;
    float recurrent_retain = 1.f;
    // Keras's go_backwards (one direction only): the layer reads each sample from its last valid
    // step back to its first; with return_sequences its outputs come in that reading order, right-
    // aligned as Keras's are (a sample of length L gets T - L zero steps first), and the steps
    // after L are padding as for any layer. JSON `go_backwards`.
    bool go_backwards = false;
    int vocabulary = 0;  // embedding: ids 0..V-1 (`units` E per id)
    int repeat = 0;      // repeat_vector: the steps it makes of one vector

    // The graph: the names of the layers (or the model's input) this one reads, in order. Empty
    // means the layer before it (the model's input for the first layer): a layer stack names none.
    std::vector<std::string> inputs;
    // A shared layer (Keras calling one layer on several tensors, a siamese network): the name of
    // an earlier layer of the same type and settings whose parameters this one uses. It owns no
    // slice of the flat buffer (param_count 0, param_offset the owner's), so the masters see each
    // weight once; the network sums the gradients of every call into the owner's slice.
    std::string shares;

    // Overrides of the model-wide defaults (DL4J allows these per layer).
    std::optional<WeightInit> weight_init;
    std::optional<UpdaterSpec> updater;
    std::optional<float> l1, l2;

    // Inferred by ModelConfig::infer_shapes().
    Shape in_shape, out_shape;
    std::array<int, 4> pads{0, 0, 0, 0};  // top, left, bottom, right (after mode is applied)
    std::vector<ParamBlock> blocks;
    std::size_t param_count = 0;
    std::size_t param_offset = 0;  // of this layer's slice in the model's buffer
    bool declares_loss = false;    // "loss" given: only an output may (an activation layer ending a branch, an image output)
    bool is_output = false;        // a model output (no layer reads it): its loss's derivative arrives folded through its activation
    // Resolved `inputs`: the index of each input's layer, or a model input: kModelInput for the
    // first, model_input(k) for input k (negative numbers, so `source >= 0` means a layer).
    std::vector<int> sources;
    // Resolved `shares`: the index of the layer that owns the parameters (never itself a sharer:
    // a chain resolves to its first layer), or -1.
    int shares_index = -1;
    static constexpr int kModelInput = -1;
    static constexpr int model_input(std::size_t k) { return -1 - static_cast<int>(k); }
    static constexpr std::size_t input_index(int source) { return static_cast<std::size_t>(-1 - source); }

    // The values the loss compares with the targets (an output's): units for flat features,
    // channels x height x width for an image output.
    int output_width() const { return static_cast<int>(out_shape.size()); }
    // An output that is an image: its loss applies at every pixel (engine/config/README.md).
    bool image_output() const { return is_output && !out_shape.flat() && !out_shape.sequence(); }

    // "layers[2] (convolution)", or for an imported layer
    // "config.layers[3] (Conv2D \"conv2d_1\"; Thresher layers[2] convolution)".
    std::string label(std::size_t index) const;
};

// A model input after the first (a model with several inputs: Keras's input_layers, DL4J's
// networkInputs).
struct ExtraInput {
    std::string name;
    Shape shape;
};

struct ModelConfig {
    std::string name = "model";
    std::uint64_t seed = 12345;
    Shape input;
    // What layers call the model's input in their "inputs" (Keras's InputLayer name).
    std::string input_name = "input";
    // Further inputs. A sample's features are the inputs' features side by side, in this order
    // (input first): the data reads one row, the network splits it.
    std::vector<ExtraInput> extra_inputs;
    // The model's outputs by name, in the order their outputs and targets sit side by side
    // (Keras's output_layers order). Empty: the layers no one reads, in list order. Resolved into
    // output_layers by resolve_graph.
    std::vector<std::string> outputs;
    std::vector<std::size_t> output_layers;
    UpdaterSpec updater{};
    // Drives every layer's learning rate when set ("updater": {"schedule": ...}); the updaters'
    // learning_rate then holds its value at iteration 0.
    std::optional<LrSchedule> lr_schedule;
    WeightInit weight_init = WeightInit::Xavier;
    float l1 = 0.f, l2 = 0.f;
    std::vector<LayerConfig> layers;

    std::size_t param_count() const;
    // Several inputs: their count, the shape and name of input k (0 is `input`), and the features
    // one sample carries (all inputs together).
    std::size_t input_count() const { return 1 + extra_inputs.size(); }
    const Shape& input_shape(std::size_t k) const { return k == 0 ? input : extra_inputs.at(k - 1).shape; }
    const std::string& input_name_of(std::size_t k) const { return k == 0 ? input_name : extra_inputs.at(k - 1).name; }
    // A sequence input's part of the row is 1 + T*C floats: its length first (seq_spec.md).
    std::size_t input_size() const;
    // The shape a source (LayerConfig::sources) carries: a layer's output or a model input's.
    const Shape& shape_of(int source) const;
    // The main output (the first of output_layers): what evaluation scores and the task follows.
    const LayerConfig& main_output() const;
    // All outputs' values side by side (one output: its units). A per-step output counts its
    // units once (the classes of one step); target_size() counts its T * units.
    int output_size() const;
    // The targets one sample carries: each output's units, times its steps for a per-step one.
    std::size_t target_size() const;
    bool is_classifier() const;  // the main output has a cross-entropy loss
    // True when some layer reads other than the layer before it (a graph, not a stack).
    bool is_graph() const;

    // Parses and validates Thresher JSON; `source` names the file in messages.
    static ModelConfig parse(std::string_view text, const std::string& source);
    static ModelConfig from_json(const nlohmann::json& j, const std::string& source);
    // Reads a file in any supported format (Thresher, DL4J or Keras JSON, by content); the
    // import notes are dropped here: import_model_file() in model_format.h returns them.
    static ModelConfig load(const std::string& path);
    nlohmann::json to_json() const;

    // Resolves every layer's inputs (sources), then fills in_shape/out_shape/pads/blocks/
    // param_count/param_offset; throws on a mismatch, an unknown or later input, or a layer no
    // one reads.
    void infer_shapes(const std::string& source);
    // Resolves `inputs` into `sources` (engine/config/graph.cpp); infer_shapes calls it.
    void resolve_graph(const std::string& source);
    // A table of layers with shapes and parameter counts, for people.
    std::string summary() const;

    // The updater/regularisation that applies to a layer (its override or the model default).
    UpdaterSpec effective_updater(std::size_t layer) const;
    WeightInit effective_weight_init(std::size_t layer) const;
    // The learning rate of layer's updater at (iteration, epoch): the schedule's value, or the
    // updater's constant learning rate.
    double learning_rate_at(std::size_t layer, long iteration, int epoch) const;
};

// A float as the double with the same shortest decimal (0.01f -> 0.01, not 0.009999999776482582),
// so saved configs, events and messages show the number the user wrote.
double decimal(float v);

std::string_view to_string(LayerType);
std::string_view to_string(BiMode);
std::string_view to_string(ConvMode);
std::string_view to_string(Activation);
std::string_view to_string(LossKind);
std::string_view to_string(WeightInit);
std::string_view to_string(UpdaterKind);

}  // namespace thresher::config
