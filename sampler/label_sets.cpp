#include "sampler/label_sets.hpp"

#include <algorithm>
#include <cstring>

namespace shardgnn {

LabelSets::LabelSets(const Shard& shard) : row_bytes_(label_row_bytes(shard.num_classes)), words_((shard.num_classes + 63) / 64) {
  if (shard.info == nullptr) {  // a dataset folder: one part, the shard itself
    first_ = {0, shard.graph.num_nodes()};
    bits_.push_back(Array<std::uint8_t>(nullptr, shard.label_bits.data(), shard.label_bits.size()));
    return;
  }
  const PartitionInfo& info = *shard.info;
  for (PartId k = 0; k < info.book.parts(); ++k) {
    first_.push_back(info.book.begin(k));
    bits_.push_back(load_part_label_bits(info, k));
  }
  first_.push_back(info.book.num_nodes());
}

void LabelSets::fetch(std::span<const NodeId> nodes, std::vector<std::int64_t>& out) const {
  out.assign(nodes.size() * static_cast<std::size_t>(words_), 0);
  const auto row = static_cast<std::size_t>(row_bytes_);
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const NodeId v = nodes[i];
    const auto k = static_cast<std::size_t>(std::upper_bound(first_.begin(), first_.end(), v) - first_.begin()) - 1;
    // Bytes in order make little-endian words: byte b's bit j is label 8b + j, bit 8(b % 8) + j
    // of word b / 8.
    std::memcpy(out.data() + i * static_cast<std::size_t>(words_), bits_[k].data() + static_cast<std::size_t>(v - first_[k]) * row, row);
  }
}

}  // namespace shardgnn
