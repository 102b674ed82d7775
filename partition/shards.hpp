// The partitioned dataset on disk: partition.json (method, parameters, the range partition book,
// quality metrics, a checksum per file) plus part-<k>/ per shard holding, as .npy:
//   indptr      int64 [n_k + 1]   CSR over the shard's owned nodes (local row = global - offset)
//   indices     int64 [m_k]       neighbours, as new global ids (rows sorted)
//   features    float32 [n_k, F]  labels int64 [n_k]
//   train_idx, val_idx, test_idx  int64, new global ids of owned nodes
//   halo_nodes  int64 [h_k]       the remote nodes the shard's edges reach (sorted global ids)
//   halo_owner  int32 [h_k]       their owning part
//   orig_ids    int64 [n_k]       each owned node's id in the source dataset
//   edge_weights int64 [m_k]      when the dataset has them
// The umbrella of its four pieces: partition.json's schema, the writer, the loaders and the
// verifier.
#pragma once

#include "partition/partition_info.hpp"
#include "partition/shard_loader.hpp"
#include "partition/shard_writer.hpp"
#include "partition/verify.hpp"
