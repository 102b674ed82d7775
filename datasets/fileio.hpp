// Small file helpers shared by readers and writers: read-only memory maps, atomic file and folder
// writes, CRC-32 checksums.
#pragma once

#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace shardgnn {

// A read-only memory mapping of a whole file. An empty file maps to an empty span.
struct MappedFile {
  std::string path;
  std::shared_ptr<const void> keeper;
  std::span<const std::byte> bytes;
};
MappedFile map_file(const std::string& path);

// While one lives, map_file asks for no 2 MiB pages (see fileio.cpp): for mappings about to be
// replaced (a merged shard's parts, mapped again end to end), which would take the budget of
// pages the replacements should get.
class HugePageHintsOff {
 public:
  HugePageHintsOff();
  ~HugePageHintsOff();
  HugePageHintsOff(const HugePageHintsOff&) = delete;
  HugePageHintsOff& operator=(const HugePageHintsOff&) = delete;
};

// `bytes` bytes of the file at `path` from `offset`.
struct FilePiece {
  std::string path;
  std::uint64_t offset = 0, bytes = 0;
};
// The pieces mapped read-only at consecutive addresses, as if one file held them end to end,
// without reading them: what a rank serving several parts of a partition makes of each array of
// theirs. Possible when every piece starts at a file offset congruent, modulo the page size, to
// the bytes of the pieces before it (the partition writer places its arrays so, for 4 KiB pages:
// npy_header's `data_at`); nullopt otherwise, or when the process is out of addresses or
// mappings, for the caller to copy. A page where two pieces meet is the one copied page. Files
// shorter than their pieces are InputErrors.
std::optional<MappedFile> map_end_to_end(std::span<const FilePiece> pieces);

// A mapped file truncated (or rewritten in place) while a process reads it makes the next read of
// a page past its new end a SIGBUS. map_file records every mapping, and a SIGBUS handler (set with
// each mapping, after whatever MPI's libraries installed) turns such a fault into one line naming
// the file, its size then and now, and exit status kExitFileChanged instead of a bare signal.
constexpr int kExitFileChanged = 74;

// Folders in use. A job's reader holds a shared lock (flock) on each dataset and partitioned
// folder it loads, for the life of the process; replacing such a folder (`--force`) asks for it
// exclusively and is refused while a process of this host holds it, naming that process. Locks
// are per host: a job on another node sharing the filesystem is not seen.
// Takes the shared lock on `dir` (an InputError when a writer is replacing it).
void hold_folder(const std::string& dir);
// An InputError naming the processes that hold `dir`, unless none does (this process's own hold
// is let go: it is about to replace what it read). `hold`: keep the exclusive lock until
// release_folder (during the swap) instead of only testing for it.
void claim_folder(const std::string& dir, bool hold);
void release_folder(const std::string& dir);

// A file for data a process would rather not hold in memory: created in `dir` and unlinked at
// once, so nothing stays behind however the process ends; appended to through a buffer, then
// mapped read-only (its pages are then page cache, which the kernel can write back and drop,
// not anonymous memory). Errors (a full disk) are InputErrors naming the folder.
class SpillFile {
 public:
  explicit SpillFile(const std::string& dir);
  ~SpillFile();
  SpillFile(const SpillFile&) = delete;
  SpillFile& operator=(const SpillFile&) = delete;
  void append(const void* data, std::size_t bytes);
  // Everything appended, mapped (once); the file goes when the last holder of `keeper` lets go.
  MappedFile map();

 private:
  std::string dir_;
  std::FILE* file_ = nullptr;
  std::size_t size_ = 0;
};

// Writes a file atomically: `fill` writes into a temporary file in the same folder, which is then
// fsynced and renamed over `path`. On any exception the temporary file is removed.
void write_file_atomic(const std::string& path, const std::function<void(std::FILE*)>& fill);

// write_file_atomic for a text already in memory.
void write_text_file_atomic(const std::string& path, const std::string& text);

// A file that several processes fill, each its own byte ranges: create_filled_file makes it (its
// `head`, then zeros up to `size`, sparse); write_at writes a range of it in place and fsyncs
// it. Ranges written by separate pwrites are safe on shared filesystems (NFS, Lustre) where two
// nodes' writes into one page through shared mappings are not. Errors are InputErrors naming the
// file.
void create_filled_file(const std::string& path, std::span<const std::byte> head, std::uint64_t size);
void write_at(const std::string& path, std::uint64_t offset, std::span<const std::byte> bytes);

// Builds a folder atomically: `fill` populates a fresh temporary sibling folder, whose files are
// fsynced before it is renamed to `dir`. If `dir` exists it must be empty, or `replace` must be
// set and `dir` hold a shardgnn dataset or partitioned dataset (the old folder is then swapped out
// and removed only after the new one is in place).
// On any exception nothing is left behind.
void write_dir_atomic(const std::string& dir, bool replace, const std::function<void(const std::string& tmp_dir)>& fill);
// write_dir_atomic in two steps, for a folder that several processes fill: begin checks `dir`
// as write_dir_atomic does and creates the temporary folder (returned); commit fsyncs it and puts
// it in place of `dir` (checked again: a folder that appeared meanwhile is refused unless
// `replace`), removing it on failure. Between them the caller removes it on failure.
std::string begin_dir_atomic(const std::string& dir, bool replace);
void commit_dir_atomic(const std::string& tmp, const std::string& dir, bool replace);
// write_dir_atomic's refusal on its own, to refuse before a long computation: an InputError when
// `dir` is a file, or a non-empty folder and not `replace`, or a non-empty folder holding no
// shardgnn dataset or partitioned dataset (its meta.json or partition.json).
void check_output_dir(const std::string& dir, bool replace);

// The path of a file or folder that metadata (`json_path`, key `key`) names inside `folder`,
// checked before anything reads it: `name` must be relative, without `..` (or, unless
// `subfolders`, any `/`), and name an existing regular file (a folder when `want_folder`).
// Anything else is an InputError, so metadata cannot send a reader to /etc/passwd or /dev/zero
// (a symbolic link inside the folder is followed: whoever can place one can edit the files too).
std::string confined_path(const std::string& folder, const std::string& name, const std::string& json_path, const std::string& key,
                          bool want_folder = false, bool subfolders = false);

// Removes the temporary siblings of `path` (a file or folder; see write_file_atomic and
// write_dir_atomic) that a process of this host left when it died, saying so on stderr; returns
// their paths. Temporaries of live processes, or made on another host, are left alone.
std::vector<std::string> remove_stale_temporaries(const std::string& path);

// CRC-32 (zlib's polynomial) of a byte range and of a whole file.
std::uint32_t crc32_of(std::span<const std::byte> bytes, std::uint32_t crc = 0);
std::uint32_t crc32_of_file(const std::string& path);
// The CRC-32 of two byte ranges one after the other, from theirs and the second's length (zlib's
// crc32_combine): pieces written by several processes give the whole file's.
std::uint32_t crc32_concat(std::uint32_t first, std::uint32_t second, std::uint64_t second_bytes);

// Asks the kernel to drop the page cache of a file written and fsynced here (a hint; pages
// another process still maps stay). Its next reader then reads it back in the folio size that
// reader asks for: map_file asks for 2 MiB pages (files of 2 MiB or more, while those a process
// maps take at most half its usable memory), which a writer's small writes never give.
void drop_page_cache(const std::string& path) noexcept;

// fsyncs a folder so a rename inside it is durable.
void fsync_dir(const std::string& dir);

}  // namespace shardgnn
