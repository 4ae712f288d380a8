// Keras sequence layers (issue 23) as Thresher's sequence layers (engine/config/README.md,
// "Sequences"), for the Keras importer (keras_import.cpp) and the Keras weight reader
// (weight_import.cpp):
//   LSTM, GRU (reset_after either way), SimpleRNN, Bidirectional(one of them) -> lstm, gru, simple_rnn
//   Embedding -> embedding;  Conv1D / Convolution1D -> convolution1d;  RepeatVector -> repeat_vector
//   MaxPooling1D, AveragePooling1D -> subsampling along time; GlobalMax/AveragePooling1D -> global
//   TimeDistributed(Dense), Keras 1 TimeDistributedDense -> dense at every step
//   Masking -> nothing (Thresher masks by each sample's length: the same for end padding; a note)
// What Thresher's fixed recurrent cells cannot run is refused naming the layer and the field:
// return_state, stateful, go_backwards, time_major, a recurrent_activation other than sigmoid
// (standalone Keras 2's default hard_sigmoid included), an LSTM/GRU activation other than tanh,
// dropout or recurrent_dropout inside the cell, Bidirectional merge_mode None.
// Keras's gate orders are Thresher's (LSTM i, f, c, o; GRU z, r, h), so kernels copy as they are;
// only GRU reset_after's [2, 3H] bias is folded into Thresher's [4H].
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/hdf5_file.h"
#include "config/import_support.h"
#include "config/model_config.h"

namespace thresher::config {

// The Keras class names handled here, and the same as a list for the "not supported" message.
bool is_keras_sequence_layer(const std::string& class_name);
extern const char* const kKerasSequenceLayers;

// For Bidirectional and TimeDistributed: the wrapped layer's class when Thresher cannot run it
// ("ConvLSTM2D"), so the importer names it with the other unsupported types, before any shape
// complaint; "" otherwise (and for every other layer).
std::string keras_unsupported_wrapped(const nlohmann::json& layer);

// Whether a model uses sequences at all (any layer above, also inside a wrapper): then an input of
// [steps, features] is a sequence rather than a one-channel image.
bool keras_model_has_sequences(const nlohmann::json& layers);

// What the tensor a layer reads is: flat features, a sequence, or (neither) an image.
struct KerasTensor {
    bool flat = false;
    bool sequence = false;
};

// A model input's "batch_input_shape" / "batch_shape" with no fixed number of steps ([null, null,
// 64]) in a sequence model: refused asking for a fixed length (Thresher plans for fixed T).
void check_fixed_steps(import::Place& p, const nlohmann::json& shape, const std::string& key, bool has_batch = true);

// Appends the Thresher layer for the Keras sequence layer `kind` whose config `p` reads (`base`
// carries its name and origin) and updates `tensor` to what the layer outputs.
void import_keras_sequence_layer(import::Place& p, const std::string& kind, LayerConfig base, bool keras3,
                                 KerasTensor& tensor, std::vector<LayerConfig>& layers);

// ---- weights

// One weight array as a Keras file holds it.
struct KerasWeight {
    std::string name;  // as the file names it ("lstm_1/kernel:0", "layers/lstm/cell/vars/0"), for messages
    Hdf5File::Floats value;
};

// True for the Thresher layer types whose Keras weights map_keras_sequence_weights reads.
bool is_keras_sequence_weight_layer(LayerType type);

// Copies layer i's Keras weights (kernel, recurrent_kernel, bias per direction, forward first;
// embeddings; a Conv1D kernel [k, in, filters]) into its slice of `params`, checking every shape;
// a mismatch names the layer as the file does and the array.
void map_keras_sequence_weights(const std::string& source, const ModelConfig& m, std::size_t i,
                                const std::vector<KerasWeight>& w, std::vector<float>& params);

// Keras 3's model.weights.h5 keeps a recurrent layer's variables in its cell
// (<layer>/cell/vars, Bidirectional: <layer>/forward_layer/cell/vars then backward_layer) and a
// TimeDistributed's in its inner layer (<layer>/layer/vars): the groups to read for the layer at
// `base` (".../<layer>"), in order; {base + "/vars"} for any other layer.
std::vector<std::string> keras3_variable_groups(const Hdf5File& f, const std::string& base, const LayerConfig& l);

}  // namespace thresher::config
