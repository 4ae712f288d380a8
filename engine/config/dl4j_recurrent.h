// DL4J's sequence layers, read into Thresher's (engine/config/README.md, "DL4J sequence layers"):
//   LSTM                      -> lstm (tanh cell, sigmoid gates: others are refused)
//   GravesLSTM                -> lstm with peepholes
//   GravesBidirectionalLSTM   -> lstm with peepholes, bidirectional "sum" (DL4J adds the two directions)
//   Bidirectional(LSTM | GravesLSTM | SimpleRnn), mode CONCAT / ADD / MUL / AVERAGE
//                             -> that layer, bidirectional concat / sum / mul / average
//   LastTimeStep(<recurrent>), Bidirectional(LastTimeStep(<recurrent>))
//                             -> the layer with return_sequences false
//   SimpleRnn                 -> simple_rnn (tanh, relu or sigmoid)
//   EmbeddingLayer, EmbeddingSequenceLayer -> embedding (nIn is the vocabulary)
// DL4J recurrent layers always return every step; a LastTimeStep wrapper (or LastTimeStepVertex,
// dl4j_import.cpp) keeps each sample's last valid step instead.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "config/import_support.h"
#include "config/model_config.h"

namespace thresher::config {

// What wraps a layer in a conf: Bidirectional ("fwd"/"bwd", "mode") and LastTimeStep
// ("underlying"), peeled off by dl4j_unwrap_sequence_layer.
struct Dl4jWrapping {
    std::string bidirectional_mode;  // "" when not wrapped, else the file's "mode" (CONCAT by default)
    bool last_time_step = false;
    // LastTimeStep inside the Bidirectional (Bidirectional(LastTimeStep(LSTM))): each direction's
    // own last step, the backward one after reading back to step 0 (Thresher's return_sequences
    // false); outside it, the backward direction's output at the last step, after one step.
    bool last_step_inside = false;
    std::string label;  // "Bidirectional(LSTM)", "LastTimeStep(LSTM)", or ""
};

// Follows Bidirectional and LastTimeStep wrappers (in any nesting) to the layer they wrap;
// `w` records them. Throws ConfigError through `p` when a wrapper lacks its layer, or when a
// Bidirectional's two directions are of different classes. Returns the wrapped layer object.
std::optional<import::Typed> dl4j_unwrap_sequence_layer(const import::Place& p, import::Typed t, Dl4jWrapping& w);

// Reads a recurrent (LSTM, GravesLSTM, GravesBidirectionalLSTM, SimpleRnn) or embedding layer
// body at `p` into `l` (type, units, directions, return_sequences, peepholes, vocabulary).
// `activation(key)` reads an activation field in either DL4J spelling. Returns the number of
// steps the layer states for its input (EmbeddingSequenceLayer's "inputLength"), or 0.
int read_dl4j_sequence_layer(import::Place& p, const std::string& cls, const Dl4jWrapping& w, LayerConfig& l,
                             const std::function<ActivationSpec(const char* key)>& activation);

}  // namespace thresher::config

namespace thresher::config {

// Where element j of a recurrent layer's DL4J parameters (all of the layer's, read as one run)
// sits in Thresher's slice of that layer. Per direction (forward first; GravesBidirectionalLSTM's
// WF, RWF, bF, WB, RWB, bB and Bidirectional's fW ... bb are both in this order):
//   W  [nIn, G·H] 'f', RW [H, G·H (+3 peephole columns for Graves)] 'f', b [1, G·H]
// DL4J's LSTM gate blocks are (cell input, forget, output, input gate) (LSTMHelpers: "IFOG",
// its "input modulation" gate last); Thresher's oneDNN order is (input gate, forget, cell input,
// output). GravesLSTM's peephole columns 4H, 4H+1, 4H+2 feed the forget, output and input gates;
// Thresher's P rows are (input, forget, output). SimpleRnn (G = 1) is W, RW, b as they are.
// Worked example, LSTM nIn 2, H 1: DL4J W = [a0 a1 | f0 f1 | o0 o1 | i0 i1] (column-major),
// Thresher W = [i0 f0 a0 o0 ; i1 f1 a1 o1] (row c = input feature c).
std::size_t dl4j_recurrent_index(const LayerConfig& l, std::size_t j);

}  // namespace thresher::config
