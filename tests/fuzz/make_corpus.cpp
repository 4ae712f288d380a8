// fuzz_make_corpus DIR: writes the seeds of tests/fuzz/corpus that need the project's own writers
// into DIR/<fuzzer>/ -- sealed datagrams, bulk-channel handshakes and frames, encoded updates, the
// node-to-node payloads, a model file -- each with the steering bytes its fuzzer expects in front
// (every fuzzer's header comment says what they are). Keys and run ids are the fuzzers' own.
// The committed corpus was made with it (corpus/README.md); run it again after a format changes.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include "codec/encoded_update.h"
#include "dist/masters/evaluation_payload.h"
#include "dist/masters/join_protocol.h"
#include "dist/masters/node_link_control.h"
#include "dist/masters/predictions_wire.h"
#include "dist/masters/round_payload.h"
#include "dist/masters/update_payload.h"
#include "dist/net/bulk_wire.h"
#include "dist/net/datagram.h"
#include "eval/binary_scores.h"
#include "eval/classification.h"
#include "nn/model_file.h"
#include "train/evaluation.h"

namespace fs = std::filesystem;
using namespace thresher;
using namespace thresher::dist;
using Bytes = std::vector<std::uint8_t>;

namespace {

fs::path g_root;

void write(const std::string& fuzzer, const std::string& name, std::initializer_list<std::span<const std::uint8_t>> parts) {
    fs::create_directories(g_root / fuzzer);
    std::ofstream out(g_root / fuzzer / name, std::ios::binary);
    for (auto part : parts) out.write(reinterpret_cast<const char*>(part.data()), static_cast<std::streamsize>(part.size()));
    if (!out) throw std::runtime_error("cannot write " + (g_root / fuzzer / name).string());
}
Bytes steer(std::initializer_list<std::uint8_t> b) { return Bytes(b); }

EncodedUpdate sparse_update(std::uint32_t n) {
    EncodedUpdate u;
    u.format = EncodedUpdate::Format::Sparse;
    u.length = n;
    u.threshold = 0.25f;
    u.sparse = {2, -5, 9, static_cast<std::int32_t>(n)};
    u.count = static_cast<std::uint32_t>(u.sparse.size());
    return u;
}
EncodedUpdate bitmap_update(std::uint32_t n) {
    EncodedUpdate u;
    u.format = EncodedUpdate::Format::Bitmap;
    u.length = n;
    u.threshold = 0.125f;
    u.bitmap.assign(bitmap_words(n), 0);
    u.bitmap[0] = 0x4024;  // +τ at 1, −τ at 2, +τ at 7 (encoded_update.h's example)
    u.count = 3;
    return u;
}

// fuzz_datagram: [mode][datagram]; mode 0 takes the datagram as it is.
void datagrams() {
    const Secret key(Bytes(32, 0xA7));
    DatagramHeader h;
    h.run_id = 0x54485253'00000001ull;
    h.sender = 1;
    h.message_id = 1;
    h.sender_incarnation = 1000;
    h.dest_incarnation = 2000;
    h.type = static_cast<std::uint8_t>(MessageType::Heartbeat);
    write("fuzz_datagram", "heartbeat", {steer({0}), seal(h, {}, key)});
    node_link_control::Control done;
    done.kind = node_link_control::kDone;
    done.originated = 12;
    done.evaluated = 0;
    h.type = static_cast<std::uint8_t>(MessageType::Control);
    h.message_id = 7;
    write("fuzz_datagram", "control-done", {steer({0}), seal(h, node_link_control::pack_control(done), key)});
    h.type = 0x81;  // the transport's hello, to a peer not known yet
    h.dest_incarnation = 0;
    h.message_id = 0;
    write("fuzz_datagram", "hello", {steer({0}), seal(h, steer({1}), key)});
    h.type = static_cast<std::uint8_t>(MessageType::Update);
    h.dest_incarnation = 2000;
    h.message_id = 9;
    h.chunk_index = 1;
    h.chunk_count = 3;
    write("fuzz_datagram", "update-chunk", {steer({0}), seal(h, serialize(sparse_update(64)), key)});
}

// fuzz_bulk_wire: [mode][step][handshake][frame header][body][body MAC]; mode 0: as they are,
// frames from the connector ('c').
void bulk_frames() {
    using namespace bulk_wire;
    const Secret key(Bytes(32, 0x5C));
    Hello h;
    h.run_id = 0x54485248'00000007ull;
    h.from = 1;
    h.to = 0;
    h.from_inc = 111;
    h.nonce_c.fill(0x11);
    h.step = 1;
    write("fuzz_bulk_wire", "hello-step1", {steer({0, 0}), pack_hello(h, key)});
    h.step = 2;
    h.from = 0;
    h.to = 1;
    h.from_inc = 222;
    h.to_inc = 111;
    h.nonce_a.fill(0x22);
    write("fuzz_bulk_wire", "hello-step2", {steer({0, 1}), pack_hello(h, key)});
    h.step = 3;
    h.from = 1;
    h.to = 0;
    h.from_inc = 111;
    h.to_inc = 222;
    const HelloBytes step3 = pack_hello(h, key);
    const Key k = frame_key(key, step3, 'c');
    auto frame = [&](const std::string& name, MessageType type, std::uint64_t seq, const Bytes& payload) {
        const FrameHead head = pack_frame_head(k, type, seq, payload.size());
        std::array<std::uint8_t, kMac> tag{};
        hmac(k, {std::span<const std::uint8_t>(head.data(), kFrameHeader), payload}, tag.data());
        write("fuzz_bulk_wire", name, {steer({0, 2}), step3, head, payload, tag});
    };
    // The fuzzer's run: 6 parameters, 2 of updater state, 3 nodes.
    frame("frame-params-request", MessageType::ParamsRequest, 1, pack_join_request(111));
    JoinReply start;
    start.incarnation = 111;
    start.members = {true, true, false};
    frame("frame-params-start", MessageType::Params, 1, pack_join_reply(start));
    frame("frame-average", MessageType::Average, 2, pack_sums(4, 2, {1, 2, 3, 4, 5, 6}, {0.5, 0.25}));
    frame("frame-average-result", MessageType::AverageResult, 3, pack_sums(4, 6, {6, 5, 4, 3, 2, 1}, {1, 1}));
}

// fuzz_encoded_update: the serialized update alone.
void encoded_updates() {
    write("fuzz_encoded_update", "sparse", {serialize(sparse_update(64))});
    write("fuzz_encoded_update", "bitmap", {serialize(bitmap_update(40))});
}

// fuzz_join_payload: [nodes - 1][parameters][payload].
void join_payloads() {
    write("fuzz_join_payload", "request", {steer({2, 4}), pack_join_request(0x1234)});
    JoinReply r;
    r.incarnation = 0x1234;
    r.members = {true, false, true};
    write("fuzz_join_payload", "start", {steer({2, 4}), pack_join_reply(r)});
    r.kind = JoinReply::Kind::Snapshot;
    r.rejoin = true;
    r.state.position = {1, 40, 15};
    r.state.params = {0.5f, -1.f, 2.f, 0.f};
    r.state.updater_state = {0.1f, 0.2f};
    write("fuzz_join_payload", "snapshot", {steer({2, 4}), pack_join_reply(r)});
    JoinReply refused;
    refused.kind = JoinReply::Kind::Refused;
    refused.incarnation = 0x1234;
    refused.reason = "the run is finishing";
    write("fuzz_join_payload", "refused", {steer({2, 4}), pack_join_reply(refused)});
}

// fuzz_round_payload: [mode][payload]; mode bit 0: replace (an AverageResult) or add (an Average).
void round_payloads() {
    const Bytes sums = pack_sums(5, 2, {0.5, 1.5, -2, 3}, {0.25, 0.125});
    write("fuzz_round_payload", "average", {steer({0}), sums});
    write("fuzz_round_payload", "average-result", {steer({1}), pack_sums(9, 4, {1, 2, 3}, {})});
}

// fuzz_control_payload: the payload alone, one per kind.
void control_payloads() {
    using namespace node_link_control;
    Control c;
    c.kind = kDone;
    c.originated = 40;
    c.first = 3;
    c.evaluated = 1;
    write("fuzz_control_payload", "done", {pack_control(c)});
    Bytes old_done = pack_control(c);
    old_done.resize(old_done.size() - 4);  // an engine from before "done" carried its epoch
    write("fuzz_control_payload", "done-without-epoch", {old_done});
    c = {};
    c.kind = kJoined;
    c.epoch = 2;
    c.iteration = 300;
    c.rejoin = true;
    write("fuzz_control_payload", "joined", {pack_control(c)});
    c = {};
    c.kind = kStop;
    c.reason = "the controller cannot rejoin a running run";
    write("fuzz_control_payload", "stop", {pack_control(c)});
    c = {};
    c.kind = kLeft;
    write("fuzz_control_payload", "left", {pack_control(c)});
    c = {};
    c.kind = kFinished;
    write("fuzz_control_payload", "finished", {pack_control(c)});
    c = {};
    c.kind = kRoundAck;
    c.round = 17;
    write("fuzz_control_payload", "round-ack", {pack_control(c)});
    c.kind = kResultAsk;
    write("fuzz_control_payload", "result-ask", {pack_control(c)});
    c = {};
    c.kind = kGone;
    c.reason = "node 0 heard nothing of this node for 10 s";
    write("fuzz_control_payload", "gone", {pack_control(c)});
    c = {};
    c.kind = kFirst;
    c.first = 12;
    write("fuzz_control_payload", "first", {pack_control(c)});
    c = {};
    c.kind = kResultAck;
    c.round = 17;
    write("fuzz_control_payload", "result-ack", {pack_control(c)});
}

// fuzz_update_payload: [cluster: nodes - 1 in the low 4 bits, workers per node - 1 above][receiving
// node][payload]: 3 nodes of 2 workers, received on node 0 from node 1's worker 3.
void update_payloads() {
    UpdateHeader h;
    h.origin = 1;
    h.incarnation = 555;
    h.sequence = 1;
    h.worker = 3;
    h.iteration = 10;
    Bytes payload;
    put_update_header(payload, h);
    const Bytes sparse = serialize(sparse_update(64));
    write("fuzz_update_payload", "sparse", {steer({0x12, 0}), payload, sparse});
    payload.clear();
    h.sequence = 2;
    h.worker = 2;
    put_update_header(payload, h);
    const Bytes bitmap = serialize(bitmap_update(40));
    write("fuzz_update_payload", "bitmap", {steer({0x12, 0}), payload, bitmap});
}

// fuzz_evaluation_payload: [the controller's own part: 0 a 3-class one, 1 a binary one][payload].
void evaluation_payloads() {
    const std::vector<std::int32_t> predicted{0, 2, 1, 1}, labels{0, 2, 2, 1};
    eval::ClassificationEvaluator c(3);
    c.add_predictions(predicted.data(), labels.data(), labels.size());
    nlohmann::json part = c.to_json();
    part["loss"] = 0.75;
    part["loss_sum"] = 3.0;
    part["count"] = labels.size();
    write("fuzz_evaluation_payload", "classification", {steer({0}), pack_evaluation(0, part)});
    const std::vector<std::int32_t> binary_predicted{1, 0, 1}, binary_labels{1, 0, 0};
    const std::vector<float> scores{0.9f, 0.1f, 0.6f};
    eval::ClassificationEvaluator b(2);
    b.add_predictions(binary_predicted.data(), binary_labels.data(), binary_labels.size());
    eval::BinaryScores s;
    s.add(scores.data(), binary_labels.data(), binary_labels.size());
    nlohmann::json binary = b.to_json();
    train::add_binary_fields(binary, b, s);
    binary["auc_hist"] = s.to_json();
    binary["loss"] = 0.5;
    binary["loss_sum"] = 1.5;
    binary["count"] = 3;
    write("fuzz_evaluation_payload", "binary", {steer({1}), pack_evaluation(1, binary)});
}

// fuzz_predictions_wire: [outputs k][rows n][payload].
void predictions() {
    const std::vector<std::size_t> index{1, 4, 7};
    const std::vector<float> values{0.1f, 0.7f, 0.2f, 0.3f, 0.3f, 0.4f, 0.9f, 0.05f, 0.05f};
    write("fuzz_predictions_wire", "three-outputs", {steer({3, 10}), pack_predictions(index, values, 3)});
    write("fuzz_predictions_wire", "no-outputs", {steer({0, 5}), pack_predictions(std::vector<std::size_t>{0, 2}, {}, 0)});
}

// fuzz_model_file: [mode][file]; mode 0 leaves the file's CRC as it is.
void model_file() {
    nn::ModelFile f;
    f.config = config::ModelConfig::parse(
        R"({"name": "tiny", "input": {"size": 3}, "updater": {"type": "adam", "learning_rate": 0.01},
            "layers": [{"type": "dense", "units": 2, "activation": "relu"}, {"type": "output", "units": 2}]})",
        "tiny.json");
    f.params.assign(f.config.param_count(), 0.5f);
    f.updater_state.assign(2 * f.config.param_count(), 0.f);
    f.position = {1, 12, 7};
    const fs::path tmp = fs::temp_directory_path() / "thresher-corpus-model.thr";
    nn::save_model_file(tmp.string(), f);
    std::ifstream in(tmp, std::ios::binary);
    const Bytes bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    fs::remove(tmp);
    write("fuzz_model_file", "tiny-adam", {steer({0}), bytes});
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR (writes DIR/<fuzzer>/<seed>)\n", argv[0]);
        return 2;
    }
    g_root = argv[1];
    try {
        datagrams();
        bulk_frames();
        encoded_updates();
        join_payloads();
        round_payloads();
        control_payloads();
        update_payloads();
        evaluation_payloads();
        predictions();
        model_file();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fuzz_make_corpus: %s\n", e.what());
        return 1;
    }
    return 0;
}
