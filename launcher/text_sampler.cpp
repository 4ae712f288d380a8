#include "text_sampler.h"

namespace thresher::launcher {

QStringList sample_arguments(const SampleRequest& request) {
    QStringList args{"predict",       "--model-file", request.model, "--sample", QString::number(request.length),
                     "--temperature", QString::number(request.temperature, 'g', 6), "--sample-seed",
                     QString::number(request.seed)};
    // "--prime=TEXT" in one argument: a prime that starts with "-" is not read as an option.
    if (!request.prime.isEmpty()) args << "--prime=" + request.prime;
    return args;
}

SampleResult read_sample(const EngineJobResult& job) {
    SampleResult r;
    r.ok = job.ok;
    r.error = job.error;
    if (!job.ok) return r;
    r.prime = job.record.value("prime").toString();
    r.text = job.record.value("text").toString();
    return r;
}

const EngineJob::Kind& sample_job_kind() {
    static const EngineJob::Kind kind{"predict", "text", "sample record", "nothing was sampled"};
    return kind;
}

}  // namespace thresher::launcher
