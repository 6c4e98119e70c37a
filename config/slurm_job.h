// Reading a job's placement by Slurm: [cluster] scheduler and the [slurm] section (partition,
// account, time_limit, qos, options), and what the rest of [cluster] may say with it. Internal
// to dtrain_config, like toml_reader.h.
//
//   ReadSlurm(cluster_reader, slurm_reader, &job.cluster, &job.slurm);
//   WriteSlurm(job.slurm, w);                      // the [slurm] section, as ReadSlurm reads it
//
// A job with scheduler = "slurm" names no hosts and no placement (Slurm places it); [slurm]
// without it is refused, key by key, since nothing would read it. The names and the time limit
// are checked here so that a typo fails `dtrain validate`, not an allocation an hour later.
#pragma once

#include "config/job.h"
#include "config/toml_reader.h"
#include "config/toml_text.h"

namespace dtrain::config::internal {

void ReadSlurm(TableReader& cluster, TableReader& slurm, ClusterConfig* c, SlurmConfig* s);

void WriteSlurm(const SlurmConfig& s, TomlWriter& w);

}  // namespace dtrain::config::internal
