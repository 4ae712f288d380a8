// Text from a character model a run saved, as the app's Run ▸ Sample text… asks for it:
//   predict --model-file MODEL --sample LENGTH --temperature T --sample-seed S [--prime TEXT]
// answered by one record {"event":"sample","prime","text","length","temperature","seed"}
// (engine/train/text_sampling.h), or by the engine's refusal ("… has no character vocabulary:
// only a model trained on a text corpus (.txt) can sample text"). Run through an EngineJob.
#pragma once

#include <QString>
#include <QStringList>
#include <chrono>

#include "engine_job.h"

namespace thresher::launcher {

struct SampleRequest {
    QString model;
    int length = 300;
    double temperature = 0.8;
    QString prime;  // empty: the engine draws one character
    quint64 seed = 1;
};

struct SampleResult {
    bool ok = false;
    QString prime, text;  // ok only
    QString error;
};

QStringList sample_arguments(const SampleRequest& request);
SampleResult read_sample(const EngineJobResult& job);

// The job's kind; sampling a few hundred characters takes well under a second, so a minute is
// generous even for a large model on a loaded machine.
const EngineJob::Kind& sample_job_kind();
inline constexpr std::chrono::milliseconds kSampleDeadline{60000};

}  // namespace thresher::launcher
