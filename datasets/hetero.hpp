// Typed graphs from outside and from generators: the IGB-Het schema's synthetic graph, a
// knowledge graph of many relations on one type, and the readers of OGB's heterogeneous raw layout (ogbn-mag) and IGB-Het's numpy layout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/builder.hpp"
#include "datasets/dataset.hpp"

namespace shardgnn {

// `data generate hetero`: IGB-Het's schema (Khatua et al., "IGB: Addressing The Gaps In Labeling,
// Features, Heterogeneity, and Size of Public Graph Datasets for Deep Learning Research", KDD 2023)
// of papers, authors, institutes and fields of study, with cites, written_by, affiliated_to and
// topic, and their reverses (rev_written_by, rev_affiliated_to, rev_topic; cites is undirected,
// as IGB-Het stores it). Every node has a latent class; a paper's class is its label. A drawn
// neighbour shares the drawer's class with probability `homophily`, else is of any class; features
// are the class's Gaussian mean plus noise, weak on their own, so the label shows in a paper's
// authors, topics and citations as well as in its own features.
struct HeteroOptions {
  std::int64_t papers = 100000;
  int classes = 19;                 // IGB-Het's 19-class labels
  // Drawn per paper (per author for affiliations); a paper draws floor(x) or floor(x) + 1 to
  // average x. IGB-Het full: 14.8 citations, 2.7 authors, 3.9 topics per paper, 1 institute an author.
  double cites = 10, authors = 3, topics = 4, affiliations = 1;
  double homophily = 0.4;
  int feature_dim = 128;            // each featured type's width (ogbn-mag's 128; IGB-Het's is 1024)
  std::vector<std::string> featureless;  // types stored without features (learnable embeddings)
  double separation = 0.12;         // std-dev of the class means, per feature
  double noise = 1.0;               // std-dev of a node's noise around its class mean
  double train_fraction = 0.6, val_fraction = 0.2;  // of the papers; the rest is test
  std::uint64_t seed = 1;
};

// How many nodes of each type (paper, author, institute, fos) a graph of `papers` papers has:
// IGB-Het's counts (tiny, small, medium, full) interpolated in log-log; below tiny's 100k papers
// in tiny's proportions.
std::vector<std::int64_t> hetero_type_counts(std::int64_t papers);

// The generated graph, its CSR built by build_csr in memory, or through build_csr_external's bucket
// files in `scratch` within about `memory` bytes when `scratch` is not empty (the graph's arrays
// are then views of files there). Features and labels are held in memory.
Dataset generate_hetero(const HeteroOptions& options, const std::string& scratch = {}, std::uint64_t memory = 0);
// Entries (directed, after symmetrising) the generator expects: sizes the in-memory check.
double hetero_expected_draws(const HeteroOptions& options);

// `data generate kg`: a knowledge graph of one type, `entity`, and `relations` relations r0, r1,
// ... between entities, each with its reverse rev_r<i>, stored with a relation id per edge (several
// relations join the one pair of types). Every entity has a latent class, its label. Relation r
// joins an entity of class c to one of class (c + r) mod `classes` with probability `signal`, else
// to any entity; features are the class's mean plus noise, weak alone. With as many relations as
// classes (the default) an entity's neighbours over all relations, reverses included, hold every
// class alike whatever its own, so only the relation an edge came by tells the class: a relational
// model (R-GCN, R-GAT) can learn it, a model of features alone or one blind to relations cannot.
struct KgOptions {
  std::int64_t entities = 20000;
  int relations = 8;
  int classes = 8;
  double degree = 2;          // edges drawn per entity and relation (floor(x) or floor(x) + 1)
  double signal = 0.8;        // probability that an edge follows its relation's class shift
  int feature_dim = 32;
  double separation = 0.1;    // std-dev of the class means, per feature
  double noise = 1.0;         // std-dev of an entity's features around its class mean
  double train_fraction = 0.6, val_fraction = 0.2;
  std::uint64_t seed = 1;
};

// The generated graph, built in memory (build_csr with relation ids).
Dataset generate_kg(const KgOptions& options);
// generate_kg's refusal of options it cannot make (one InputError), without the work.
void check_kg(const KgOptions& options);
// Edges the generator draws (before symmetrising): sizes the in-memory check.
double kg_expected_draws(const KgOptions& options);

}  // namespace shardgnn
