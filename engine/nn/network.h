// Network: a ModelConfig made runnable on a backend. Parameters, gradients and updater state each
// live in ONE contiguous backend buffer, laid out layer after layer (LayerConfig::param_offset),
// so gradient sharing can encode the update vector and averaging can average it in one go.
//
// One training iteration, as the training masters drive it:
//   compute_gradients(batch)   forward, loss, backward   -> gradients() holds dL/dθ
//   compute_update(iteration)  per-layer updater          -> gradients() now holds the update u
//   apply_update()             θ -= u
// Gradient sharing replaces the last step by its residual/threshold encoding of u.
//
// A graph runs the same way: the layer list is an execution order (every layer after the ones it
// reads), forward walks it, backward walks it back. Where a tensor fans out, the gradients its
// readers send back are summed. Gradient buffers are reused once the layer they belong to has
// run its backward pass: a stack needs two, a ResNet block one more per open branch. In inference
// (evaluate, predict) an output's buffer is reused once its last reader has run, so evaluating in
// batches of 256 costs a few layers' activations, not all of them. A model with several inputs
// reads one feature row per sample (the inputs side by side) and splits it; several outputs each
// take their columns of the target row, and the loss is the sum of their losses. Both schedules (which buffer
// each tensor lives in, which gradients must be summed) are made once per model.
// A shared layer (LayerConfig::shares) runs with its owner's parameter slice; the parameter
// gradients of all its calls are summed into that slice. Batch norm shared: each call moves the
// running statistics from the same values towards its own batch's, and the moves add up (Keras
// applies them one after the other; the two differ by (1 - decay)^2 terms).
// Also once per model: which tensors stay in the backend's native image layout (a chain of
// convolutions, batch norm, pooling and element-wise layers; choose_layouts) and which batch
// norms apply the ReLU layer after them (choose_fusions). Parameters are always NCHW/OIHW.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "nn/layer_step.h"
#include "nn/vertex_step.h"
#include "config/model_config.h"

namespace thresher::nn {

// A run of parameters that share one updater configuration.
struct UpdateSegment {
    std::size_t offset = 0, size = 0;  // in the parameter buffer
    std::size_t state_offset = 0;      // in the updater-state buffer
    backend::UpdaterSpec spec;
    bool trainable = true;             // false: batch-norm running statistics
};

class Network {
public:
    Network(config::ModelConfig config, backend::Backend& backend);

    const config::ModelConfig& config() const { return config_; }
    backend::Backend& backend() { return backend_; }
    std::size_t param_count() const { return params_.size(); }
    std::size_t updater_state_size() const { return state_.size(); }
    const std::vector<UpdateSegment>& segments() const { return segments_; }

    // Draws fresh parameters from the config's weight init and `seed`; clears updater state.
    void init_params(std::uint64_t seed);

    float* params() { return params_.data(); }
    float* gradients() { return grads_.data(); }
    float* updater_state() { return state_.data(); }
    std::vector<float> get_params() const;
    void set_params(const std::vector<float>&);
    std::vector<float> get_updater_state() const;
    void set_updater_state(const std::vector<float>&);
    std::vector<float> get_gradients() const;

    // Forward in training mode, loss, backward. `features`/`targets` are host arrays of `batch`
    // samples; `seed` drives dropout masks. Returns the batch's mean loss.
    double compute_gradients(const float* features, const float* targets, int batch, std::uint64_t seed);
    // Forward and loss only, in the given mode (finite-difference checks, evaluation); the
    // outputs also land in `out` ([batch x outputs], host) when it is given.
    double loss(const float* features, const float* targets, int batch, std::uint64_t seed,
                backend::Mode mode, float* out = nullptr);
    // The updater step of `iteration` (0-based), at the learning rate the config's schedule gives
    // for (iteration, the epoch set_epoch last gave); constant without a schedule.
    void compute_update(long iteration);
    void apply_update();
    // The epoch in progress, for schedules by epoch; the runner sets it as each epoch begins.
    void set_epoch(int epoch) { epoch_ = epoch; }
    int epoch() const { return epoch_; }
    // The model-wide learning rate compute_update(iteration) uses (the model updater's).
    double learning_rate(long iteration) const;

    // The sequence lengths of layer `layer`'s output in the last forward pass (one per sample),
    // empty when it is not a sequence.
    const std::vector<int>& lengths_of(std::size_t layer) const {
        static const std::vector<int> none;
        return layer < lengths_.size() ? lengths_[layer] : none;
    }
    // Inference: outputs (probabilities for classifiers) into `out`, [batch x outputs], host
    // (outputs = ModelConfig::target_size(): a per-step output gives all its steps).
    void predict(const float* features, int batch, float* out);

private:
    // One batch size's steps: a LayerStep or a VertexStep per layer.
    struct Plan {
        std::vector<std::unique_ptr<LayerStep>> layers;
        std::vector<std::unique_ptr<VertexStep>> vertices;
    };
    // Where backward writes dL/d(input k) of a layer: straight into the input's gradient buffer
    // (the first reader to get there), or into a scratch buffer that is then added to it.
    struct GradientTarget {
        int scratch = -1;  // -1: direct
    };
    void schedule_backward();
    void schedule_inference();
    // Which layer outputs live in the backend's native image layout (backend.h ImageLayout).
    void choose_layouts();
    // Which batch norms apply the ReLU layer after them (StepPlan::fuse_relu).
    void choose_fusions();
    backend::ImageLayout layout_of(int source) const;
    // The steps for `batch`, with the buffers `mode` needs sized for it.
    Plan& plan(int batch, backend::Mode mode);
    // Where layer `layer`'s output lives in `mode` (training: its own buffer; inference: a pooled one).
    float* output_of(std::size_t layer, backend::Mode mode);
    const float* input_of(int source, backend::Mode mode);
    // Runs the forward pass; the outputs are then in output_of(o) for each of output_layers.
    void forward(const float* features, int batch, const StepContext& ctx);
    // Reads each sequence input's lengths from the feature rows and validates them (DataError
    // naming the input and the sample), then propagates them to every layer (lengths_).
    void read_lengths(const float* features, int batch);
    // Zeroes a sequence tensor of layer `layer`'s output shape at each sample's padded steps.
    void zero_padded(std::size_t layer, float* values, int batch);
    // The same for any sequence tensor of `shape` with these lengths.
    void zero_steps(const config::Shape& shape, const std::vector<int>& lengths, float* values, int batch);
    // The sum of the outputs' losses (host_out_ holds their values side by side); with keep_delta
    // each output's dL/d(pre-activation) lands in its delta slot.
    double output_loss(const float* targets, int batch, bool keep_delta, backend::Mode mode);

    config::ModelConfig config_;
    backend::Backend& backend_;
    backend::Buffer params_, grads_, state_;
    std::vector<UpdateSegment> segments_;
    std::map<int, Plan> plans_;
    int epoch_ = 0;
    int capacity_ = 0;                       // batch size the activation buffers hold
    std::vector<backend::Buffer> acts_;      // output of each layer
    // dL/d(output) of layer i lives in deltas_[delta_slot_[i]] from its first reader's backward to
    // its own; targets_[i][k] says how layer i's backward delivers to its input k.
    std::vector<int> delta_slot_;
    std::vector<std::vector<GradientTarget>> targets_;
    int slot_count_ = 0, scratch_count_ = 0;
    std::vector<backend::Buffer> deltas_, scratch_;
    // Shared layers: param_scratch_[i] says layer i's backward writes its parameter gradient into
    // param_grads_ and adds it to its owner's slice (a later call of the same parameters wrote
    // the slice first); param_scratch_size_ is the largest such slice.
    std::vector<bool> param_scratch_;
    std::size_t param_scratch_size_ = 0;
    backend::Buffer param_grads_;
    // Inference: layer i's output in infer_[infer_slot_[i]], a buffer shared with outputs whose
    // last reader has run before layer i (ResNet: 3 buffers for 28 layers).
    std::vector<int> infer_slot_;
    int infer_slot_count_ = 0, infer_capacity_ = 0;
    std::vector<backend::Buffer> infer_;
    std::vector<bool> native_;               // layer i's output (and its gradient) in the native layout
    // Training: layer i's output is layer shares_output_[i]'s (a ReLU fused into the batch norm
    // before it), or its own (-1).
    std::vector<int> shares_output_;
    // The current batch's model inputs: the staged features, or with several inputs each input's
    // columns copied out of them (split_, one buffer per input).
    std::vector<const float*> input_;
    std::vector<backend::Buffer> split_;
    int split_capacity_ = 0;
    // Host copies for the loss: all outputs side by side ([batch x output_size]), one output's
    // values, targets and delta.
    std::vector<float> host_out_, host_one_, host_targets_, host_delta_;
    // Sequences (seq_spec.md): each model input's lengths, then each layer output's (empty when
    // not a sequence), host, one per sample of the current batch; and for a per-step loss the
    // valid steps' values, targets and deltas packed together.
    std::vector<std::vector<int>> input_lengths_, lengths_;
    std::vector<float> host_valid_, host_valid_targets_, host_valid_delta_;
    bool any_sequence_input_ = false, any_sequence_ = false;  // a sequence input; any sequence tensor
};

}  // namespace thresher::nn
