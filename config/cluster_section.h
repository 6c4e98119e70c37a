// Reading a job's [cluster] section, and holding the rest of the job against the mode it names:
// model parallelism against the model, L-BFGS against the mode (config/mode_traits.h's lbfgs
// rule). Internal to dtrain_config, like toml_reader.h.
//
//   ReadCluster(cluster_reader, &job.cluster);
//   CheckElastic(job.cluster, cluster_reader);      // once the scheduler is read (slurm_job.h)
//   CheckModelParallel(job, cluster_reader);        // once [model] and [train] are read
//   CheckLbfgs(job, optimizer_reader, cluster_reader);
//
// Each reports at the key it holds against, and not again for a key that failed to read.
#pragma once

#include "config/job.h"
#include "config/toml_reader.h"

namespace dtrain::config::internal {

// Every [cluster] key but the scheduler's (config/slurm_job.h), compression's included
// (config/compression_section.h); backup_workers below the workers, and only where
// ClusterConfig::BackupWorkersApply (each refusal says why it cannot apply there).
void ReadCluster(TableReader& r, ClusterConfig* c);
// cluster.min_workers within 1 .. workers and cluster.max_workers at least workers, each below
// (or above) workers only where a job can train elastically (ClusterConfig::ElasticApplies): whole
// replicas of mode "sync" on the ring or on parameter servers (with backup workers on one), or
// of mode "local", uncompressed, whichever scheduler places them.
void CheckElastic(const ClusterConfig& c, TableReader& cluster);
// Model parallelism fits the model: an MLP whose layers (or units) split K ways, micro-batches
// only in a pipeline and no larger than a batch, no gradient clipping across partitions.
void CheckModelParallel(const JobConfig& job, TableReader& cluster);
// L-BFGS only in the modes that run it, on a whole model with a fixed objective; a mode that runs
// only L-BFGS names it.
void CheckLbfgs(const JobConfig& job, TableReader& optimizer, TableReader& cluster);

}  // namespace dtrain::config::internal
