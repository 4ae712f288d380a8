#include "dist/masters/cluster_node.h"

#include "core/error.h"

namespace thresher::dist {

ClusterNode::ClusterNode(std::unique_ptr<Transport> transport, std::unique_ptr<Stream> bulk,
                         const train::ClusterShape& shape, events::EventWriter* events, ClusterNodeOptions options)
    : shape_(shape), events_(events), options_(std::move(options)), transport_(std::move(transport)),
      bulk_(std::move(bulk)) {
    if (options_.strategy != "gradient-sharing" && options_.strategy != "parameter-averaging")
        throw ConfigError("--strategy " + options_.strategy +
                          ": a multi-node run needs gradient-sharing or parameter-averaging");
    if (!transport_) throw Error("a cluster node needs a transport");
}

train::MasterFactory ClusterNode::factory() {
    return [this](const config::ModelConfig& config) -> std::unique_ptr<train::TrainingMaster> {
        if (!transport_) throw Error("a cluster node's master factory was called twice");
        link_ = std::make_unique<NodeLink>(std::move(transport_), shape_, config.param_count(), events_, std::move(bulk_),
                                           *options_.clock);
        // Late and restarted nodes join mid-run with gradient sharing; averaging only at the start.
        const bool sharing = options_.strategy == "gradient-sharing";
        link_->set_join_policy(sharing, options_.join_wait);
        link_->set_topology(options_.topology);
        link_->set_deadlines(options_.deadlines);
        NodeLink* link = link_.get();
        std::unique_ptr<train::TrainingMaster> master;
        if (sharing) {
            auto gs = std::make_unique<GradientSharing>(shape_, config.param_count(), options_.sharing, link->outbox());
            gs->set_clock(*options_.clock);
            link->attach(*gs);
            gs->set_remote_drain([link] { link->drain_remote(); });
            gs->set_reconcile([link](const std::vector<nn::Network*>& nets) { link->reconcile(nets); });
            master = std::move(gs);
        } else {
            auto pa = std::make_unique<ParameterAveraging>(shape_, options_.averaging, link->reducer());
            pa->set_clock(*options_.clock);
            master = std::move(pa);
        }
        master->set_traffic_source([link] { return link->traffic(); });
        master->set_finish_source([link] { return link->reconcile_report(); });
        master->set_on_finished([link] { link->finished(); });
        master->set_topology(topology_name(options_.topology));
        master->set_evaluation_merger({shape_.node_rank, shape_.nodes, [link](int epoch, const nlohmann::json& local) {
                                           return link->gather_evaluation(epoch, local);
                                       }});
        master->set_membership({[link](const std::atomic<bool>* stop) { return link->join(stop); },
                                [link](const nn::Network& net, const train::RunPosition& position) {
                                    link->after_step(net, position);
                                }});
        link->start();
        return master;
    };
}

}  // namespace thresher::dist
