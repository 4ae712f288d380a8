// RunSpec: reading, validating and writing the run-spec JSON (launcher/README.md documents it).
// Validation walks the JSON once with a reader that knows its JSON path, so every error says
// where: "runs/x.json: cluster.hosts[1].port: must be an integer in 1..65535, got 0". Then
// validate() checks the typed values (ranges, files, checks across sections) with the same words,
// so a spec built in code (the app's form) gets the same errors as the file it would write.
#include "run_spec.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QSaveFile>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

#include "codec/residual.h"
#include "core/error.h"
#include "hostfile.h"

namespace thresher::launcher {

namespace {

constexpr double kMaxExactInteger = 9007199254740992.0;  // 2^53: JSON numbers are doubles

// The ranges, written once: the JSON reader checks a number against them as it reads, and
// validate() checks the typed value, with the same words.
struct IntRule {
    qint64 lo, hi;
    const char* what;
};
constexpr IntRule kPositive{1, std::numeric_limits<int>::max(), "a positive integer"};
constexpr IntRule kSeed{0, qint64(kMaxExactInteger), "a non-negative integer below 2^53"};
constexpr IntRule kLimit{1, qint64(kMaxExactInteger), "a positive integer"};
constexpr IntRule kStaleness{0, 1000, "a whole number from 0 to 1000, or \"off\""};
constexpr IntRule kThreads{0, 4096, "a non-negative integer (0: automatic)"};
constexpr IntRule kTopK{0, 1 << 20, "a non-negative integer (0: off)"};
constexpr IntRule kSteps{1, 1 << 20, "an integer in 1..2^20"};  // the engine's --steps (config::kMaxImportSteps)
constexpr IntRule kPort{1, 65535, "an integer in 1..65535"};
constexpr IntRule kUpTo1024{1, 1024, "an integer in 1..1024"};
constexpr IntRule kGpus{0, 1024, "an integer in 0..1024"};
constexpr IntRule kSlurmNodes{1, 100000, "an integer in 1..100000"};
struct NumberRule {
    double lo, hi;
    bool hi_open;
    const char* what;
    bool holds(double d) const { return std::isfinite(d) && d >= lo && d <= hi && !(hi_open && d == hi); }
};
constexpr NumberRule kRate{0, 1e6, false, "megabits per second in 0.008..1000000 (0: unlimited)"};
constexpr NumberRule kDelay{0, 10000, false, "milliseconds in 0..10000"};
constexpr NumberRule kLoss{0, 1, true, "a probability in [0, 1)"};
const QStringList kStrategies{"gradient-sharing", "parameter-averaging", "single"};
const QStringList kOverlaps{"off", "send", "encode"};
const QStringList kNormalizations{"none", "standardize", "minmax"};
const QStringList kTopologies{"auto", "mesh", "relay", "tree"};
const QStringList kShardPlacements{"shared", "per-node"};
const QString kTimeSyntax = "must be a positive Slurm time limit (minutes, \"MM:SS\", \"HH:MM:SS\", \"D-HH\", "
                            "\"D-HH:MM\" or \"D-HH:MM:SS\"), got ";
const QString kSbatchArg = "must be one sbatch option on one line, e.g. \"--mem=4G\", got ";
const QString kNetworkMask = "must be an IPv4 network in CIDR form, e.g. \"10.0.0.0/24\", got ";

QString describe(const QJsonValue& v) {
    switch (v.type()) {
    case QJsonValue::Null: return "null";
    case QJsonValue::Bool: return v.toBool() ? "true" : "false";
    case QJsonValue::Double: return QString::number(v.toDouble(), 'g', 15);
    case QJsonValue::String: {
        const QString s = v.toString();
        return "\"" + (s.size() > 60 ? s.left(57) + "..." : s) + "\"";
    }
    case QJsonValue::Array: return "an array";
    case QJsonValue::Object: return "an object";
    case QJsonValue::Undefined: break;
    }
    return "nothing";
}

// One JSON object of the spec, with its JSON path ("training", "cluster.hosts[1]"). Every read
// checks the type and range and throws a SpecError naming source, path and the offending value.
class Reader {
public:
    Reader(const QJsonObject& o, QString path, const QString& source, const QStringList& known)
        : o_(o), path_(std::move(path)), source_(source) {
        for (auto it = o.begin(); it != o.end(); ++it)
            if (!known.contains(it.key())) fail(it.key(), "unknown field (known: " + known.join(", ") + ")");
    }

    [[noreturn]] void fail(const QString& key, const QString& message) const {
        throw SpecError((source_ + ": " + at(key) + ": " + message).toStdString());
    }
    QString at(const QString& key) const { return path_.isEmpty() ? key : path_ + "." + key; }
    bool has(const QString& key) const { return o_.contains(key); }
    QJsonValue value(const QString& key) const { return o_.value(key); }

    QString string(const QString& key, const QString& fallback) const {
        if (!has(key)) return fallback;
        const QJsonValue v = value(key);
        if (!v.isString() || v.toString().trimmed().isEmpty())
            fail(key, "must be a non-empty string, got " + describe(v));
        return v.toString();
    }
    QString required_string(const QString& key) const {
        if (!has(key)) fail(key, "missing (a non-empty string)");
        return string(key, {});
    }
    QString one_of(const QString& key, const QString& fallback, const QStringList& choices) const {
        const QString s = string(key, fallback);
        if (!choices.contains(s)) fail(key, "must be one of " + choices.join(", ") + "; got " + describe(value(key)));
        return s;
    }
    // An integer in [lo, hi]; `what` is how the message words the range.
    qint64 integer(const QString& key, qint64 fallback, qint64 lo, qint64 hi, const QString& what) const {
        if (!has(key)) return fallback;
        const QJsonValue v = value(key);
        const double d = v.toDouble();
        if (!v.isDouble() || !std::isfinite(d) || d != std::floor(d) || d < double(lo) || d > double(hi))
            fail(key, "must be " + what + ", got " + describe(v));
        return static_cast<qint64>(d);
    }
    qint64 integer(const QString& key, qint64 fallback, const IntRule& rule) const {
        return integer(key, fallback, rule.lo, rule.hi, rule.what);
    }
    int positive_int(const QString& key, int fallback) const { return int(integer(key, fallback, kPositive)); }
    std::optional<qint64> optional_integer(const QString& key, const IntRule& rule) const {
        if (!has(key)) return std::nullopt;
        return integer(key, 0, rule);
    }
    std::optional<double> optional_positive_number(const QString& key) const {
        if (!has(key)) return std::nullopt;
        const QJsonValue v = value(key);
        if (!v.isDouble() || !std::isfinite(v.toDouble()) || v.toDouble() <= 0)
            fail(key, "must be a positive number, got " + describe(v));
        return v.toDouble();
    }
    bool boolean(const QString& key, bool fallback) const {
        if (!has(key)) return fallback;
        if (!value(key).isBool()) fail(key, "must be true or false, got " + describe(value(key)));
        return value(key).toBool();
    }
    Reader object(const QString& key, const QStringList& known) const {
        const QJsonValue v = value(key);
        if (!v.isObject()) fail(key, "must be an object, got " + describe(v));
        return Reader(v.toObject(), at(key), source_, known);
    }

private:
    QJsonObject o_;
    QString path_;
    const QString& source_;
};

// The engine's codec's errors, which name the field (its JSON path) themselves.
[[noreturn]] void fail_with(const QString& source, const ConfigError& e) {
    throw SpecError((source + ": ").toStdString() + e.what());
}

// The codec reads nlohmann::json: the value is converted as it is (no trip through text).
nlohmann::json to_nlohmann(const QJsonValue& v) {
    switch (v.type()) {
        case QJsonValue::Bool: return v.toBool();
        case QJsonValue::Double: {
            const double d = v.toDouble();
            // Integers stay integers (QJson keeps every number as a double).
            if (d == std::floor(d) && std::abs(d) < 9007199254740992.0) return static_cast<std::int64_t>(d);
            return d;
        }
        case QJsonValue::String: return v.toString().toStdString();
        case QJsonValue::Array: {
            nlohmann::json a = nlohmann::json::array();
            for (const auto& e : v.toArray()) a.push_back(to_nlohmann(e));
            return a;
        }
        case QJsonValue::Object: {
            nlohmann::json o = nlohmann::json::object();
            const QJsonObject obj = v.toObject();
            for (auto it = obj.begin(); it != obj.end(); ++it) o[it.key().toStdString()] = to_nlohmann(it.value());
            return o;
        }
        default: return nullptr;
    }
}

// training.threshold_algorithm: a string or an object, typed by the engine's codec.
dist::ThresholdSpec read_threshold_algorithm(const Reader& t, const QString& source) {
    if (!t.has("threshold_algorithm")) return {};
    try {
        return dist::threshold_spec_from_json(to_nlohmann(t.value("threshold_algorithm")),
                                              t.at("threshold_algorithm").toStdString());
    } catch (const ConfigError& e) {
        fail_with(source, e);
    }
}

TrainingSettings read_training(const Reader& t, const QString& source) {
    TrainingSettings s;
    s.strategy = t.one_of("strategy", s.strategy, kStrategies);
    s.epochs = t.positive_int("epochs", s.epochs);
    s.batch = t.positive_int("batch", s.batch);
    s.seed = t.optional_integer("seed", kSeed);
    s.threshold = t.optional_positive_number("threshold");
    s.threshold_algorithm = read_threshold_algorithm(t, source);
    s.residual = t.string("residual", s.residual);
    if (t.has("max_staleness")) {
        if (t.value("max_staleness").isString()) {
            if (t.value("max_staleness").toString() != "off")
                t.fail("max_staleness", "must be a whole number of iterations (0: synchronous) or \"off\", got " +
                                            describe(t.value("max_staleness")));
            s.max_staleness.reset();
        } else {
            s.max_staleness = int(t.integer("max_staleness", 0, kStaleness));
        }
    }
    s.overlap_comm = t.one_of("overlap_comm", s.overlap_comm, kOverlaps);
    s.averaging_frequency = t.positive_int("averaging_frequency", s.averaging_frequency);
    s.save_updater = t.boolean("save_updater", s.save_updater);
    s.limit = t.optional_integer("limit", kLimit);
    s.threads = int(t.integer("threads", s.threads, kThreads));
    if (t.has("augment")) {
        const QString text = t.string("augment", {});
        try {
            s.augment = spec::Augmentation::parse(text.toStdString());
        } catch (const ConfigError& e) {
            t.fail("augment", QString::fromUtf8(e.what()));
        }
    }
    s.normalize = t.one_of("normalize", s.normalize, kNormalizations);
    if (t.has("top_k")) s.top_k = int(t.integer("top_k", 0, kTopK));
    s.shard_placement = *parse_shard_placement(t.one_of("shard_placement", placement_text(s.shard_placement), kShardPlacements));
    if (t.has("device")) {
        const QString text = t.string("device", {});
        try {
            s.device = DeviceList::parse(text.toStdString(), t.at("device").toStdString());
        } catch (const ConfigError& e) {
            fail_with(source, e);
        }
    }
    return s;
}

SshHost read_host(const Reader& h) {
    SshHost host;
    host.address = h.required_string("address");
    host.port = int(h.integer("port", host.port, kPort));
    host.user = h.string("user", {});
    host.identity_file = h.string("identity_file", {});
    host.workers = h.positive_int("workers", host.workers);
    return host;
}

// "10.0.0.0/24": an IPv4 address and a prefix length 0..32 (the engine parses it again, for
// what it means; this only catches a typo before a job waits in a queue for it).
bool is_ipv4_cidr(const QString& text) {
    const QStringList parts = text.split('/');
    if (parts.size() != 2) return false;
    bool ok = false;
    const int prefix = parts[1].toInt(&ok);
    if (!ok || prefix < 0 || prefix > 32) return false;
    const QStringList octets = parts[0].split('.');
    if (octets.size() != 4) return false;
    for (const QString& o : octets) {
        const int v = o.toInt(&ok);
        if (!ok || v < 0 || v > 255 || o.isEmpty()) return false;
    }
    return true;
}

SlurmSettings read_slurm(const Reader& c) {
    SlurmSettings s;
    s.partition = c.string("partition", {});
    s.tasks_per_node = int(c.integer("tasks_per_node", s.tasks_per_node, kUpTo1024));
    s.cpus_per_task = c.positive_int("cpus_per_task", s.cpus_per_task);
    s.gpus_per_node = int(c.integer("gpus_per_node", s.gpus_per_node, kGpus));
    if (c.has("time")) {
        s.time = parse_slurm_time(c.string("time", {}));
        if (!s.time || s.time->count() <= 0) c.fail("time", kTimeSyntax + describe(c.value("time")));
    }
    s.account = c.string("account", {});
    s.qos = c.string("qos", {});
    s.constraint = c.string("constraint", {});
    if (c.has("sbatch_args")) {
        const QJsonValue v = c.value("sbatch_args");
        if (!v.isArray()) c.fail("sbatch_args", "must be an array of sbatch options (strings), got " + describe(v));
        const QJsonArray args = v.toArray();
        for (int i = 0; i < args.size(); ++i) {
            const QString key = QString("sbatch_args[%1]").arg(i);
            if (!args[i].isString() || !args[i].toString().startsWith('-') || args[i].toString().contains('\n'))
                c.fail(key, kSbatchArg + describe(args[i]));
            s.sbatch_args << args[i].toString();
        }
    }
    if (c.has("network_mask")) {
        s.network_mask = c.string("network_mask", {});
        if (!is_ipv4_cidr(s.network_mask))
            c.fail("network_mask", kNetworkMask + describe(c.value("network_mask")));
    }
    const QString stage = c.one_of("stage", "auto", {"auto", "always", "never"});
    s.stage = stage == "always" ? SlurmSettings::Stage::Always
              : stage == "never" ? SlurmSettings::Stage::Never : SlurmSettings::Stage::Auto;
    return s;
}

// A number within `rule` (a plain JSON number).
double bounded_number(const Reader& r, const QString& key, double fallback, const NumberRule& rule) {
    if (!r.has(key)) return fallback;
    const QJsonValue v = r.value(key);
    if (!v.isDouble() || !rule.holds(v.toDouble())) r.fail(key, QString("must be ") + rule.what + ", got " + describe(v));
    return v.toDouble();
}

// A rate is 0 (unlimited) or at least 8 kbit/s.
bool rate_holds(double mbit) { return kRate.holds(mbit) && !(mbit > 0 && mbit < 0.008); }

ClusterSettings::Link read_link(const Reader& r) {
    ClusterSettings::Link link;
    link.rate_mbit = bounded_number(r, "rate_mbit", 0, kRate);
    if (!rate_holds(link.rate_mbit))
        r.fail("rate_mbit", QString("must be ") + kRate.what + ", got " + describe(r.value("rate_mbit")));
    link.delay_ms = bounded_number(r, "delay_ms", 0, kDelay);
    link.loss = bounded_number(r, "loss", 0, kLoss);
    return link;
}

const QStringList kSlurmFields{"partition", "tasks_per_node", "cpus_per_task", "gpus_per_node", "time", "account",
                               "qos", "constraint", "sbatch_args", "network_mask", "stage"};

ClusterSettings read_cluster(const Reader& c, const RunSpec& spec) {
    ClusterSettings s;
    const QString kind = c.one_of("kind", "local", {"local", "ssh", "slurm"});
    s.topology = c.one_of("topology", s.topology, kTopologies);
    s.fanout = int(c.integer("fanout", s.fanout, kUpTo1024));
    if (c.has("link")) s.link = read_link(c.object("link", {"rate_mbit", "delay_ms", "loss"}));
    if (kind != "slurm")
        for (const QString& slurm_only : kSlurmFields)
            if (c.has(slurm_only)) c.fail(slurm_only, "only for \"kind\": \"slurm\"");
    if (kind == "local" || kind == "slurm") {
        // Re-read with the fields these clusters know, so ssh fields here are reported.
        s.nodes = c.positive_int("nodes", s.nodes);
        s.workers_per_node = c.positive_int("workers_per_node", s.workers_per_node);
        for (const char* ssh_only : {"hosts", "hostfile"})
            if (c.has(ssh_only)) c.fail(ssh_only, "only for \"kind\": \"ssh\"");
        if (kind == "slurm") {
            s.nodes = int(c.integer("nodes", s.nodes, kSlurmNodes));
            s.kind = ClusterSettings::Kind::Slurm;
            s.slurm = read_slurm(c);
        }
        return s;
    }
    s.kind = ClusterSettings::Kind::Ssh;
    for (const char* local_only : {"nodes", "workers_per_node"})
        if (c.has(local_only))
            c.fail(local_only, "only for \"kind\": \"local\" or \"slurm\" (SSH hosts give their own \"workers\")");
    if (c.has("hosts")) {
        const QJsonValue v = c.value("hosts");
        if (!v.isArray()) c.fail("hosts", "must be an array of host objects, got " + describe(v));
        const QJsonArray hosts = v.toArray();
        for (int i = 0; i < hosts.size(); ++i) {
            const QString key = QString("hosts[%1]").arg(i);
            if (!hosts[i].isObject()) c.fail(key, "must be an object {address, port, user, identity_file, workers}, got " + describe(hosts[i]));
            s.hosts.append(read_host(Reader(hosts[i].toObject(), c.at(key), spec.source,
                                            {"address", "port", "user", "identity_file", "workers"})));
        }
    }
    if (c.has("hostfile")) {
        s.hostfile = c.string("hostfile", {});
        try {
            s.hostfile_hosts = read_hostfile(spec.resolve(s.hostfile), s.hostfile);
        } catch (const SpecError& e) {
            c.fail("hostfile", QString::fromStdString(e.what()));
        }
    }
    return s;  // validate() checks the hosts together
}

// validate()'s checks on typed values; messages as the reader's: "<source>: <path>: <problem>".
class Checker {
public:
    explicit Checker(const QString& source) : source_(source) {}
    [[noreturn]] void fail(const QString& path, const QString& message) const {
        throw SpecError((source_ + ": " + path + ": " + message).toStdString());
    }
    void integer(const QString& path, qint64 v, const IntRule& rule) const {
        if (v < rule.lo || v > rule.hi) fail(path, QString("must be %1, got %2").arg(rule.what).arg(v));
    }
    void number(const QString& path, double v, const NumberRule& rule, bool holds) const {
        if (!holds) fail(path, QString("must be ") + rule.what + ", got " + describe(QJsonValue(v)));
    }
    void one_of(const QString& path, const QString& v, const QStringList& choices) const {
        if (!choices.contains(v)) fail(path, "must be one of " + choices.join(", ") + "; got " + describe(QJsonValue(v)));
    }
    void non_empty(const QString& path, const QString& v) const {
        if (v.trimmed().isEmpty()) fail(path, "must be a non-empty string, got " + describe(QJsonValue(v)));
    }
    // Optional text: empty means unset, but blanks alone are a mistake.
    void non_empty_if_set(const QString& path, const QString& v) const {
        if (!v.isEmpty()) non_empty(path, v);
    }
    // The engine's codec checks, naming `path` themselves.
    template <class F>
    void codec(F check) const {
        try {
            check();
        } catch (const ConfigError& e) {
            fail_with(source_, e);
        }
    }

private:
    const QString& source_;
};

void validate_training(const Checker& c, const TrainingSettings& t) {
    c.one_of("training.strategy", t.strategy, kStrategies);
    c.integer("training.epochs", t.epochs, kPositive);
    c.integer("training.batch", t.batch, kPositive);
    if (t.seed) c.integer("training.seed", *t.seed, kSeed);
    if (t.threshold && !(std::isfinite(*t.threshold) && *t.threshold > 0))
        c.fail("training.threshold", "must be a positive number, got " + describe(QJsonValue(*t.threshold)));
    // As thresher-engine puts --threshold into --threshold-algorithm, for gradient sharing only.
    if (t.strategy == "gradient-sharing")
        c.codec([&] {
            (void)dist::resolve_threshold(t.threshold_algorithm, t.threshold,
                                          {"training.threshold_algorithm", "training.threshold"});
        });
    c.codec([&] { (void)dist::parse_residual_processor(t.residual.toStdString(), "training.residual"); });
    if (t.max_staleness) c.integer("training.max_staleness", *t.max_staleness, kStaleness);
    c.one_of("training.overlap_comm", t.overlap_comm, kOverlaps);
    if (t.overlap_comm == "encode" && t.max_staleness == 0)
        c.fail("training.overlap_comm", "\"encode\" needs max_staleness 1 or more, or \"off\" (with 0 every gradient must "
                                        "see the previous step's updates, its own included; \"send\" works with any)");
    c.integer("training.averaging_frequency", t.averaging_frequency, kPositive);
    if (t.limit) c.integer("training.limit", *t.limit, kLimit);
    c.integer("training.threads", t.threads, kThreads);
    c.one_of("training.normalize", t.normalize, kNormalizations);
    if (t.top_k) c.integer("training.top_k", *t.top_k, kTopK);
}

void validate_slurm(const Checker& c, const SlurmSettings& s) {
    c.non_empty_if_set("cluster.partition", s.partition);
    c.integer("cluster.tasks_per_node", s.tasks_per_node, kUpTo1024);
    c.integer("cluster.cpus_per_task", s.cpus_per_task, kPositive);
    c.integer("cluster.gpus_per_node", s.gpus_per_node, kGpus);
    if (s.time && s.time->count() <= 0) c.fail("cluster.time", kTimeSyntax + describe(QJsonValue(format_slurm_time(*s.time))));
    for (int i = 0; i < s.sbatch_args.size(); ++i)
        if (!s.sbatch_args[i].startsWith('-') || s.sbatch_args[i].contains('\n'))
            c.fail(QString("cluster.sbatch_args[%1]").arg(i), kSbatchArg + describe(QJsonValue(s.sbatch_args[i])));
    if (!s.network_mask.isEmpty() && !is_ipv4_cidr(s.network_mask))
        c.fail("cluster.network_mask", kNetworkMask + describe(QJsonValue(s.network_mask)));
}

void validate_cluster(const Checker& c, const ClusterSettings& s) {
    c.one_of("cluster.topology", s.topology, kTopologies);
    c.integer("cluster.fanout", s.fanout, kUpTo1024);
    c.number("cluster.link.rate_mbit", s.link.rate_mbit, kRate, rate_holds(s.link.rate_mbit));
    c.number("cluster.link.delay_ms", s.link.delay_ms, kDelay, kDelay.holds(s.link.delay_ms));
    c.number("cluster.link.loss", s.link.loss, kLoss, kLoss.holds(s.link.loss));
    switch (s.kind) {
    case ClusterSettings::Kind::Local:
        c.integer("cluster.nodes", s.nodes, kPositive);
        c.integer("cluster.workers_per_node", s.workers_per_node, kPositive);
        return;
    case ClusterSettings::Kind::Slurm:
        c.integer("cluster.nodes", s.nodes, kSlurmNodes);
        c.integer("cluster.workers_per_node", s.workers_per_node, kPositive);
        validate_slurm(c, s.slurm);
        return;
    case ClusterSettings::Kind::Ssh: break;
    }
    for (int i = 0; i < s.hosts.size(); ++i) {
        const QString at = QString("cluster.hosts[%1].").arg(i);
        c.non_empty(at + "address", s.hosts[i].address);
        c.integer(at + "port", s.hosts[i].port, kPort);
        c.integer(at + "workers", s.hosts[i].workers, kPositive);
    }
    if (s.hosts.isEmpty() && s.hostfile_hosts.isEmpty())
        c.fail("cluster.hosts", "an SSH cluster needs at least one host (\"hosts\" or \"hostfile\")");
    // The engine takes one --workers-per-node for every node.
    const auto all = s.all_hosts();
    for (int i = 1; i < all.size(); ++i)
        if (all[i].workers != all[0].workers) {
            const QString key = i < s.hosts.size() ? QString("cluster.hosts[%1].workers").arg(i) : QString("cluster.hostfile");
            c.fail(key, QString("every host needs the same number of workers (the engine's --workers-per-node is "
                                "one number): %1 has %2, %3 has %4")
                            .arg(all[0].address).arg(all[0].workers).arg(all[i].address).arg(all[i].workers));
        }
}

// The text form, unless it would fill a gap with a default (a spec read from an object with
// only a decay, say): then the object form, so the spec reads back as it was.
QJsonValue threshold_json(const dist::ThresholdSpec& spec) {
    const std::string text = dist::to_text(spec);
    if (dist::parse_threshold_spec(text) == spec) return QString::fromStdString(text);
    return QJsonDocument::fromJson(QByteArray::fromStdString(dist::to_json(spec).dump())).object();
}

}  // namespace

const char* to_string(ClusterSettings::Kind kind) {
    switch (kind) {
    case ClusterSettings::Kind::Local: return "local";
    case ClusterSettings::Kind::Ssh: return "ssh";
    case ClusterSettings::Kind::Slurm: return "slurm";
    }
    return "?";
}

std::optional<std::chrono::seconds> parse_slurm_time(const QString& text) {
    // sbatch(1) --time: "minutes", "minutes:seconds", "hours:minutes:seconds", "days-hours",
    // "days-hours:minutes", "days-hours:minutes:seconds".
    const QString t = text.trimmed();
    qint64 days = 0;
    QString rest = t;
    const bool has_days = t.contains('-');
    if (has_days) {
        bool ok = false;
        days = t.section('-', 0, 0).toLongLong(&ok);
        if (!ok || days < 0 || t.count('-') != 1) return std::nullopt;
        rest = t.section('-', 1);
    }
    const QStringList parts = rest.split(':');
    if (parts.size() > 3) return std::nullopt;
    // No field may exceed the limit below even counted in seconds: checked before the fields are
    // multiplied into seconds, which overflowed for "7777777777777777777:0" (tests/fuzz found it).
    constexpr qint64 kMaxSeconds = qint64(365) * 100 * 86400;
    QList<qint64> v;
    for (const QString& p : parts) {
        bool ok = false;
        const qint64 n = p.toLongLong(&ok);
        if (!ok || n < 0 || n > kMaxSeconds || p.isEmpty() || p.startsWith('+')) return std::nullopt;
        v << n;
    }
    qint64 seconds = 0;
    if (has_days) {  // D-HH, D-HH:MM, D-HH:MM:SS
        seconds = v[0] * 3600 + (v.size() > 1 ? v[1] * 60 : 0) + (v.size() > 2 ? v[2] : 0);
    } else if (v.size() == 1) {  // MM
        seconds = v[0] * 60;
    } else if (v.size() == 2) {  // MM:SS
        seconds = v[0] * 60 + v[1];
    } else {  // HH:MM:SS
        seconds = v[0] * 3600 + v[1] * 60 + v[2];
    }
    if (days > 365 * 100 || seconds > kMaxSeconds) return std::nullopt;
    return std::chrono::seconds(days * 86400 + seconds);
}

QString format_slurm_time(std::chrono::seconds limit) {
    const qint64 s = limit.count();
    return QString("%1-%2:%3:%4").arg(s / 86400).arg(s % 86400 / 3600, 2, 10, QChar('0'))
        .arg(s % 3600 / 60, 2, 10, QChar('0')).arg(s % 60, 2, 10, QChar('0'));
}

RunSpec RunSpec::load(const QString& path) {
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) throw SpecError((path + ": cannot read: " + f.errorString()).toStdString());
    return from_json(f.readAll(), path, QFileInfo(path).absolutePath());
}

QJsonObject parse_json_object(const QByteArray& text, const QString& source, const QString& what) {
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(text, &err);
    if (err.error != QJsonParseError::NoError) {
        const QByteArray before = text.left(err.offset);
        const int line = int(before.count('\n')) + 1;
        const int column = int(err.offset - (before.lastIndexOf('\n') + 1)) + 1;
        throw SpecError(QString("%1:%2:%3: invalid JSON: %4").arg(source).arg(line).arg(column).arg(err.errorString()).toStdString());
    }
    if (!doc.isObject()) throw SpecError((source + ": " + what + " is a JSON object").toStdString());
    return doc.object();
}

RunSpec RunSpec::from_json(const QByteArray& text, const QString& source, const QString& base_dir) {
    return from_json(parse_json_object(text, source, "a run spec"), source, base_dir);
}

RunSpec RunSpec::from_json(const QJsonObject& o, const QString& source, const QString& base_dir) {
    RunSpec spec;
    spec.source = source;
    spec.base_dir = base_dir;
    if (o.value("format").toString() != "thresher-run")
        throw SpecError((source + ": format: must be \"thresher-run\", got " + describe(o.value("format")) +
                         (o.contains("layers") ? " (this looks like a model file; a run spec names it in \"model\")" : ""))
                            .toStdString());
    const Reader r(o, {}, spec.source,
                   {"format", "version", "name", "model", "model_steps", "data", "training", "cluster", "udp_port", "save"});
    if (r.integer("version", 0, 1, 1, "1 (the only version so far)") != 1) r.fail("version", "missing (1)");
    spec.name = r.string("name", QFileInfo(source).completeBaseName());
    if (spec.name.isEmpty()) spec.name = "run";

    if (!r.has("model")) r.fail("model", "missing (a model file path, or an inline model object)");
    const QJsonValue model = r.value("model");
    if (model.isObject()) {
        spec.model_inline = model.toObject();
        if (spec.model_inline.isEmpty()) r.fail("model", "the inline model is empty");
    } else if (model.isString() && !model.toString().trimmed().isEmpty()) {
        spec.model_path = model.toString();
    } else {
        r.fail("model", "must be a model file path or an inline model object, got " + describe(model));
    }
    if (const auto steps = r.optional_integer("model_steps", kSteps)) spec.model_steps = int(*steps);

    spec.data = r.string("data", spec.data);
    if (r.has("training"))
        spec.training = read_training(r.object("training", {"strategy", "epochs", "batch", "seed", "threshold",
                                                            "threshold_algorithm", "residual", "max_staleness", "overlap_comm", "averaging_frequency",
                                                            "save_updater", "limit", "threads", "device", "augment", "normalize", "top_k",
                                                            "shard_placement"}),
                                      spec.source);
    if (r.has("cluster"))
        spec.cluster = read_cluster(r.object("cluster", QStringList{"kind", "nodes", "workers_per_node", "hosts", "hostfile",
                                                                     "topology", "fanout", "link"} + kSlurmFields),
                                    spec);
    spec.udp_port = int(r.integer("udp_port", spec.udp_port, kPort));
    spec.save = r.string("save", {});
    spec.validate();
    return spec;
}

void RunSpec::validate() const {
    const Checker c(source);
    c.non_empty("name", name);
    if (model_is_inline() && model_inline.isEmpty()) c.fail("model", "the inline model is empty");
    if (!model_is_inline() && !QFileInfo(model_file()).isFile()) c.fail("model", "file not found: " + model_file());
    if (model_steps) c.integer("model_steps", *model_steps, kSteps);
    c.non_empty("data", data);
    validate_training(c, training);
    validate_cluster(c, cluster);
    c.integer("udp_port", udp_port, kPort);
    c.non_empty_if_set("save", save);

    // Checks across sections.
    const bool local = cluster.kind == ClusterSettings::Kind::Local;
    if (local && data != "fashion-mnist" && !QFileInfo::exists(data_argument()))
        c.fail("data", "not found: " + data_argument() + " (\"fashion-mnist\", a folder of IDX files or a CSV file)");
    if (local && udp_port + cluster.nodes - 1 > 65535)
        c.fail("udp_port", QString("%1 local nodes use ports %2..%3, past 65535").arg(cluster.nodes).arg(udp_port)
                               .arg(udp_port + cluster.nodes - 1));
    // Slurm tasks sharing a host take udp_port, udp_port + 1, … (SLURM_LOCALID).
    if (cluster.kind == ClusterSettings::Kind::Slurm && udp_port + cluster.slurm.tasks_per_node - 1 > 65535)
        c.fail("udp_port", QString("%1 tasks per node use ports %2..%3, past 65535").arg(cluster.slurm.tasks_per_node)
                               .arg(udp_port).arg(udp_port + cluster.slurm.tasks_per_node - 1));
    c.codec([&] { training.device.check_workers(workers_per_node(), "training.device"); });
    // Per-node placement splits a shard set's files between the nodes. A Slurm run's data may
    // live where only the cluster sees it, so there a folder not seen here is left to the engine.
    if (training.shard_placement == ShardPlacement::PerNode) {
        const bool shards = data != "fashion-mnist" && is_shard_folder(data_argument());
        const bool unseen_on_slurm = cluster.kind == ClusterSettings::Kind::Slurm && data != "fashion-mnist" &&
                                     !QFileInfo::exists(data_argument());
        if (!shards && !unseen_on_slurm)
            c.fail("training.shard_placement", "\"per-node\" needs a shard set as data (a folder with " + QString(kShardIndexName) +
                                                   " that thresher-engine export wrote), got " + describe(QJsonValue(data)));
    }
    if (training.strategy == "single" && total_workers() > 1)
        c.fail("training.strategy", QString("\"single\" trains one worker, but the cluster has %1 node(s) × %2 "
                                            "worker(s); use gradient-sharing or parameter-averaging")
                                        .arg(node_count()).arg(workers_per_node()));
}

QJsonObject RunSpec::to_json() const {
    QJsonObject t{{"strategy", training.strategy},
                  {"epochs", training.epochs},
                  {"batch", training.batch},
                  {"threshold_algorithm", threshold_json(training.threshold_algorithm)},
                  {"residual", training.residual},
                  {"averaging_frequency", training.averaging_frequency},
                  {"save_updater", training.save_updater},
                  {"threads", training.threads}};
    if (training.seed) t["seed"] = double(*training.seed);
    if (training.threshold) t["threshold"] = *training.threshold;
    if (training.max_staleness != TrainingSettings{}.max_staleness)
        t["max_staleness"] = training.max_staleness ? QJsonValue(*training.max_staleness) : QJsonValue("off");
    if (training.overlap_comm != "off") t["overlap_comm"] = training.overlap_comm;
    if (training.limit) t["limit"] = double(*training.limit);
    if (training.device != DeviceList{}) t["device"] = QString::fromStdString(training.device.text());
    if (training.augment.active()) t["augment"] = QString::fromStdString(training.augment.text());
    if (training.normalize != "none") t["normalize"] = training.normalize;
    if (training.top_k) t["top_k"] = *training.top_k;
    if (training.shard_placement != ShardPlacement::Shared) t["shard_placement"] = placement_text(training.shard_placement);

    QJsonObject c{{"kind", to_string(cluster.kind)}};
    if (cluster.topology != "auto") c["topology"] = cluster.topology;
    if (cluster.topology == "tree") c["fanout"] = cluster.fanout;
    if (cluster.link.active())
        c["link"] = QJsonObject{{"rate_mbit", cluster.link.rate_mbit}, {"delay_ms", cluster.link.delay_ms}, {"loss", cluster.link.loss}};
    if (cluster.kind == ClusterSettings::Kind::Local || cluster.kind == ClusterSettings::Kind::Slurm) {
        c["nodes"] = cluster.nodes;
        c["workers_per_node"] = cluster.workers_per_node;
    }
    if (cluster.kind == ClusterSettings::Kind::Slurm) {
        const SlurmSettings& sl = cluster.slurm;
        if (!sl.partition.isEmpty()) c["partition"] = sl.partition;
        c["tasks_per_node"] = sl.tasks_per_node;
        c["cpus_per_task"] = sl.cpus_per_task;
        c["gpus_per_node"] = sl.gpus_per_node;
        if (sl.time) c["time"] = format_slurm_time(*sl.time);
        if (!sl.account.isEmpty()) c["account"] = sl.account;
        if (!sl.qos.isEmpty()) c["qos"] = sl.qos;
        if (!sl.constraint.isEmpty()) c["constraint"] = sl.constraint;
        if (!sl.sbatch_args.isEmpty()) c["sbatch_args"] = QJsonArray::fromStringList(sl.sbatch_args);
        if (!sl.network_mask.isEmpty()) c["network_mask"] = sl.network_mask;
        if (sl.stage != SlurmSettings::Stage::Auto)
            c["stage"] = sl.stage == SlurmSettings::Stage::Always ? "always" : "never";
    } else if (cluster.kind == ClusterSettings::Kind::Ssh) {
        QJsonArray hosts;
        for (const auto& h : cluster.hosts) {
            QJsonObject o{{"address", h.address}, {"port", h.port}, {"workers", h.workers}};
            if (!h.user.isEmpty()) o["user"] = h.user;
            if (!h.identity_file.isEmpty()) o["identity_file"] = h.identity_file;
            hosts.append(o);
        }
        if (!hosts.isEmpty()) c["hosts"] = hosts;
        if (!cluster.hostfile.isEmpty()) c["hostfile"] = cluster.hostfile;
    }

    QJsonObject o{{"format", "thresher-run"},
                  {"version", 1},
                  {"name", name},
                  {"data", data},
                  {"training", t},
                  {"cluster", c},
                  {"udp_port", udp_port}};
    o["model"] = model_is_inline() ? QJsonValue(model_inline) : QJsonValue(model_path);
    if (model_steps) o["model_steps"] = *model_steps;
    if (!save.isEmpty()) o["save"] = save;
    return o;
}

void RunSpec::save_to(const QString& path) const {
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(QJsonDocument(to_json()).toJson(QJsonDocument::Indented)) < 0 ||
        !f.commit())
        throw SpecError((path + ": cannot write: " + f.errorString()).toStdString());
}

QString RunSpec::resolve(const QString& path) const {
    if (path.isEmpty() || QDir::isAbsolutePath(path)) return path;
    return QDir::cleanPath(QDir(base_dir.isEmpty() ? QDir::currentPath() : base_dir).absoluteFilePath(path));
}

QString RunSpec::model_file() const { return model_is_inline() ? QString() : resolve(model_path); }
QString RunSpec::data_argument() const { return data == "fashion-mnist" ? data : resolve(data); }
QString RunSpec::save_file() const { return resolve(save); }

int RunSpec::node_count() const {
    switch (cluster.kind) {
    case ClusterSettings::Kind::Local: return cluster.nodes;
    case ClusterSettings::Kind::Slurm: return cluster.nodes * cluster.slurm.tasks_per_node;
    case ClusterSettings::Kind::Ssh: break;
    }
    return int(cluster.all_hosts().size());
}

int RunSpec::workers_per_node() const {
    if (cluster.kind != ClusterSettings::Kind::Ssh) return cluster.workers_per_node;
    const auto hosts = cluster.all_hosts();
    return hosts.isEmpty() ? 1 : hosts.first().workers;  // validated: the same on every host
}

}  // namespace thresher::launcher
