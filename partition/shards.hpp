// The partitioned dataset on disk: partition.json (method, parameters, the range partition book,
// quality metrics, a checksum per file) plus part-<k>/ per shard holding, as .npy:
//   indptr      int64 [n_k + 1]   CSR over the shard's owned nodes (local row = global - offset)
//   indices     int32 [m_k]       neighbours, as new global ids (rows sorted; with relation ids,
//                                 sorted within each relation's run); int64 beyond 2^31 nodes
//   features    float32 [n_k, F]  (or float16/bfloat16 bits: --feature-dtype)
//   labels      int8 [n_k]        the smallest type that holds the classes (label_dtype)
//   train_idx, val_idx, test_idx  int32, new global ids of owned nodes; int64 beyond 2^31 nodes
//   halo_nodes  int32 [h_k]       the remote nodes the shard's edges reach (sorted global ids); int64 beyond 2^31 nodes
//   halo_owner  int32 [h_k]       their owning part
//   orig_ids    int32 [n_k]       each owned node's id in the source dataset; int64 beyond 2^31 nodes
//   edge_weights int64 [m_k]      when the dataset has them
//   edge_relations int8 [m_k]     each entry's relation when the dataset stores them
//                                 (relation_dtype: int16 or int32 for more relations)
// indices, features, labels, orig_ids, edge_weights and edge_relations start where the same array of the parts
// before would end, modulo a page (shard_writer.cpp), so that a rank serving several parts maps
// them end to end.
// The umbrella of its four pieces: partition.json's schema, the writer, the loaders and the
// verifier.
#pragma once

#include "partition/partition_info.hpp"
#include "partition/shard_loader.hpp"
#include "partition/shard_writer.hpp"
#include "partition/verify.hpp"
