// numpy .npz archives: a zip of .npy members, stored or deflated, zip64 included. Only the
// members asked for are read (and their CRC checked); nothing is ever unpickled.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "datasets/fileio.hpp"
#include "datasets/npy.hpp"

namespace shardgnn {

class NpzArchive {
 public:
  // Maps the file and reads the zip central directory. Throws InputError on anything malformed.
  explicit NpzArchive(const std::string& path);

  const std::string& path() const noexcept { return file_.path; }
  // Member names without the ".npy" suffix, in archive order.
  std::vector<std::string> members() const;
  bool contains(const std::string& name) const { return entries_.count(name) > 0; }

  // Reads one member: stored members are zero-copy views of the mapping, deflated ones are
  // inflated into memory; the CRC-32 is verified either way. A missing member is an error naming it.
  NpyBuffer read(const std::string& name) const;
  // Reads one member as a stream: stored members are viewed in the mapping, deflated ones inflated
  // a few MiB at a time each time the data are read. Only the header is read here; the CRC-32 is
  // checked as the last piece has been handed over, so nothing built from the pieces may be
  // committed before the data source returns.
  NpyStream stream(const std::string& name) const;

 private:
  struct Entry {
    std::uint16_t method = 0;
    std::uint16_t flags = 0;
    std::uint32_t crc = 0;
    std::uint64_t compressed = 0;
    std::uint64_t uncompressed = 0;
    std::uint64_t local_offset = 0;
    std::size_t order = 0;
  };
  // A member's entry and its compressed bytes, checked against the file.
  struct Located {
    const Entry* entry;
    std::span<const std::byte> raw;
    std::uint64_t data_off;
  };
  Located locate(const std::string& name) const;

  MappedFile file_;
  std::map<std::string, Entry> entries_;
};

}  // namespace shardgnn
