// SshLauncher: the run's coordinator on the launcher's (GUI or main) thread; the hosts' work
// happens in HostNode threads, whose callbacks are queued into this object's thread.
#include "ssh_launcher.h"

#include <QFile>
#include <QJsonDocument>
#include <QMetaObject>
#include <exception>
#include <mutex>

#include "host_node.h"
#include "local_launcher.h"
#include "preflight.h"
#include "run_secret.h"

namespace thresher::launcher::ssh {

namespace {

// A value computed once by whichever host thread asks first; the others wait for it. A failure
// is remembered and rethrown to every asker (each host then reports it under its own name).
template <typename T>
class Once {
public:
    explicit Once(std::function<T()> make) : make_(std::move(make)) {}
    T get() {
        std::call_once(flag_, [this] {
            try {
                value_ = make_();
            } catch (...) {
                error_ = std::current_exception();
            }
        });
        if (error_) std::rethrow_exception(error_);
        return value_;
    }

private:
    std::function<T()> make_;
    std::once_flag flag_;
    T value_;
    std::exception_ptr error_;
};

struct RunState {
    RunState(std::function<StagedTree()> b, std::function<StagedTree()> d) : bundle(std::move(b)), data(std::move(d)) {}
    Once<StagedTree> bundle;
    Once<StagedTree> data;
};

}  // namespace

SshLauncher::SshLauncher(LaunchOptions options, QObject* parent) : Launcher(parent), options_(std::move(options)) {}

SshLauncher::~SshLauncher() {
    for (auto& h : hosts_) h->stop(true);
    hosts_.clear();  // joins each thread; their queued callbacks die with this object
}

void SshLauncher::launch(const RunSpec& spec) {
    hosts_.clear();
    ready_.clear();
    done_.clear();
    started_ = false;

    if (spec.cluster.kind != ClusterSettings::Kind::Ssh)
        return fail_now(kExitCouldNotStart, spec.source + ": cluster.kind is not \"ssh\"; SshLauncher runs SSH clusters only");
    const QList<SshHost> hosts = spec.cluster.all_hosts();
    if (hosts.isEmpty()) return fail_now(kExitCouldNotStart, spec.source + ": cluster.hosts: an SSH cluster needs at least one host");
    const QString engine = LocalLauncher::find_engine(options_.engine);
    if (engine.isEmpty())
        return fail_now(kExitCouldNotStart, "thresher-engine not found next to this program or on $PATH; name it with --engine");

    QByteArray model_json;
    if (spec.model_is_inline()) {
        model_json = QJsonDocument(spec.model_inline).toJson();
    } else {
        QFile f(spec.model_file());
        if (!f.open(QIODevice::ReadOnly))
            return fail_now(kExitCouldNotStart, "cannot read the model " + spec.model_file() + ": " + f.errorString());
        model_json = f.readAll();
    }
    const QString data_path = spec.data == "fashion-mnist"
                                  ? (qEnvironmentVariableIsEmpty("THRESHER_FASHION_MNIST")
                                         ? QString("/usr/share/datasets/fashion-mnist")
                                         : qEnvironmentVariable("THRESHER_FASHION_MNIST"))
                                  : spec.data_argument();
    auto state = std::make_shared<RunState>([engine] { return engine_bundle(engine); },
                                            [data_path] { return data_tree(data_path); });
    run_state_ = state;
    const QByteArray secret = make_run_secret();
    const QByteArray run_nonce = make_run_nonce();

    ready_.assign(static_cast<size_t>(hosts.size()), false);
    done_.assign(static_cast<size_t>(hosts.size()), false);
    HostCallbacks callbacks;
    // Each callback runs on a host thread and only queues a call into this object's thread.
    callbacks.log = [this](int, const QString& line) {
        QMetaObject::invokeMethod(this, [this, line] { Q_EMIT logLine(line); }, Qt::QueuedConnection);
    };
    callbacks.events = [this](int, const QList<QJsonObject>& events) {
        QMetaObject::invokeMethod(this, [this, events] {
            for (const auto& e : events) Q_EMIT event(e);
        }, Qt::QueuedConnection);
    };
    callbacks.ready = [this](int rank) {
        QMetaObject::invokeMethod(this, [this, rank] { host_ready(rank); }, Qt::QueuedConnection);
    };
    callbacks.done = [this](int rank, const HostOutcome& outcome) {
        QMetaObject::invokeMethod(this, [this, rank, outcome] { host_done(rank, outcome); }, Qt::QueuedConnection);
    };
    const SshLaunchOptions& o = options_.ssh;
    const bool per_node = spec.training.shard_placement == ShardPlacement::PerNode;
    for (int rank = 0; rank < hosts.size(); ++rank) {
        HostPlan plan;
        plan.rank = rank;
        plan.address = hosts[rank].address;
        plan.target = target_for(hosts[rank], o.accept_new_host_keys);
        plan.target.known_hosts_file = o.known_hosts_file.toStdString();
        plan.target.ssh_config_file = o.ssh_config_file.toStdString();
        plan.target.connect_timeout_s = o.connect_timeout_s;
        plan.ask_secret = o.ask_secret;
        plan.spec = spec;
        plan.remote_cache = o.remote_cache;
        plan.model_json = model_json;
        plan.secret = secret;
        plan.run_nonce = run_nonce;
        plan.bundle = [state] { return state->bundle.get(); };
        // Per-node shard placement: each node gets its own subset (its own hash), made on its
        // host's thread; otherwise one tree for all, hashed once.
        if (per_node)
            plan.data = [data_path, rank, world = spec.node_count()] { return shard_subset_tree(data_path, rank, world); };
        else
            plan.data = [state] { return state->data.get(); };
        plan.grace_ms = options_.grace_ms;
        plan.start_timeout_s = o.start_timeout_s;
        plan.heartbeat_timeout_s = o.heartbeat_timeout_s;
        Q_EMIT logLine(QString("[launcher] host %1 %2: connecting").arg(rank).arg(plan.address));
        hosts_.push_back(std::make_unique<HostNode>(std::move(plan), callbacks));
    }
}

void SshLauncher::host_ready(int rank) {
    ready_[static_cast<size_t>(rank)] = true;
    if (stopping() || started_) return;
    for (bool r : ready_)
        if (!r) return;
    started_ = true;
    Q_EMIT logLine(QString("[launcher] all %1 host(s) ready after %2 s: starting the engines")
                       .arg(hosts_.size()).arg(elapsed_s()));
    for (auto& h : hosts_) h->go();
}

void SshLauncher::host_done(int rank, const HostOutcome& outcome) {
    done_[static_cast<size_t>(rank)] = true;
    const QString label = hosts_[static_cast<size_t>(rank)]->label();
    if (!failure() && !stopping()) {
        if (outcome.kind == HostOutcome::Kind::Failed) {
            QString summary = outcome.message;
            if (!outcome.stderr_tail.isEmpty()) summary += "; its last stderr lines:\n  " + outcome.stderr_tail.join("\n  ");
            record_failure(outcome.engine_started ? (outcome.exit_code > 0 ? outcome.exit_code : 1) : kExitCouldNotStart, summary);
        } else if (outcome.kind == HostOutcome::Kind::Ended && outcome.exit_code != 0) {
            QString summary = label + (outcome.exit_code < 0 ? QString(" ended without an exit status")
                                                              : QString(" exited with code %1").arg(outcome.exit_code));
            summary += outcome.stderr_tail.isEmpty() ? QString(" (nothing on stderr)")
                                                     : "; its last stderr lines:\n  " + outcome.stderr_tail.join("\n  ");
            record_failure(outcome.exit_code > 0 ? outcome.exit_code : 1, summary);
        }
        // A failing host ends the others: before the start nothing runs yet (setup is called
        // off); afterwards per stop_on_node_failure.
        if (failure() && (!started_ || options_.stop_on_node_failure)) halt_after_failure(!started_);
    } else if (outcome.kind == HostOutcome::Kind::Failed) {
        Q_EMIT logLine("[launcher] " + outcome.message);
    }
    finish_if_done();
}

void SshLauncher::halt(bool now) {
    for (size_t i = 0; i < hosts_.size(); ++i)
        if (!done_[i]) hosts_[i]->stop(now);
}

void SshLauncher::finish_if_done() {
    if (!running()) return;
    for (bool d : done_)
        if (!d) return;
    run_state_.reset();
    conclude(QString("%1 host(s) finished in %2 s").arg(hosts_.size()).arg(elapsed_s()),
             QString("stopped after %1 s; the engines on all %2 host(s) ended").arg(elapsed_s()).arg(hosts_.size()),
             started_ && hosts_.size() > 1 ? QString("the other hosts' engines were stopped") : QString());
}

}  // namespace thresher::launcher::ssh
