#include "datasets/fileio.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <sys/file.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <sstream>

#include "datasets/error.hpp"
#include "datasets/json_util.hpp"
#include "datasets/memory_limit.hpp"

namespace fs = std::filesystem;

namespace shardgnn {

namespace {

std::string errno_text() { return std::strerror(errno); }

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

// A name no other writer (thread, process, or process on another node sharing the filesystem)
// will pick, and that says who made it: ".tmp-<host>-<pid>-<n>".
std::string unique_suffix() {
  static std::atomic<unsigned> counter{0};
  return ".tmp-" + host_name() + "-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
}

// The process that made a temporary name of `base` (see unique_suffix), if `name` is exactly one
// (".tmp-<host>-<pid>-<n>", optionally ".old"), and whether it made it on this host.
struct Maker {
  bool ours = false;  // a temporary of `base`, made on this host
  bool old = false;   // a folder swapped out by commit_dir_atomic
  long pid = 0;
};
Maker maker_of(const std::string& name, const std::string& base) {
  const std::string head = base + ".tmp-";
  if (name.rfind(head, 0) != 0) return {};
  std::string rest = name.substr(head.size());
  const bool old = rest.size() > 4 && rest.compare(rest.size() - 4, 4, ".old") == 0;
  if (old) rest.resize(rest.size() - 4);
  // <host>-<pid>-<n>; the host may hold dashes, so parse from the right.
  auto digits = [](const std::string& t) { return !t.empty() && t.size() <= 9 && t.find_first_not_of("0123456789") == std::string::npos; };
  const auto last = rest.rfind('-');
  if (last == std::string::npos || last == 0 || !digits(rest.substr(last + 1))) return {};
  const auto mid = rest.rfind('-', last - 1);
  if (mid == std::string::npos) return {};
  const std::string pid = rest.substr(mid + 1, last - mid - 1);
  if (!digits(pid) || rest.substr(0, mid) != host_name()) return {};
  return {true, old, std::stol(pid)};
}

void fsync_path(const std::string& path, bool directory) {
  int fd = ::open(path.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) throw InputError(path, "", "cannot open to sync: " + errno_text());
  int rc = ::fsync(fd);
  int saved = errno;
  ::close(fd);
  if (rc != 0) {
    errno = saved;
    throw InputError(path, "", "fsync failed: " + errno_text());
  }
}

// ---- Mapped files, for the SIGBUS handler: slots claimed with a sentinel begin (1) while filled.
struct MappedRange {
  std::atomic<std::uintptr_t> begin{0};  // 0: free, 1: being filled or emptied
  std::atomic<std::uintptr_t> end{0};
  char path[496];
};
constexpr int kMappedRanges = 4096;
MappedRange g_mapped[kMappedRanges];

MappedRange* record_mapping(const void* addr, std::size_t size, const std::string& path) {
  for (MappedRange& r : g_mapped) {
    std::uintptr_t free = 0;
    if (!r.begin.compare_exchange_strong(free, 1)) continue;
    std::snprintf(r.path, sizeof r.path, "%s", path.c_str());
    r.end.store(reinterpret_cast<std::uintptr_t>(addr) + size);
    r.begin.store(reinterpret_cast<std::uintptr_t>(addr), std::memory_order_release);
    return &r;
  }
  return nullptr;  // more mappings than slots: that one's fault stays a plain SIGBUS
}

void forget_mapping(MappedRange* r) {
  if (!r) return;
  r->begin.store(1);
  r->end.store(0);
  r->begin.store(0, std::memory_order_release);
}

// Async-signal-safe pieces of the handler's line.
void put(char*& at, const char* end, const char* text) {
  while (*text && at < end) *at++ = *text++;
}
void put_number(char*& at, const char* end, unsigned long long v) {
  char digits[24];
  int n = 0;
  do digits[n++] = static_cast<char>('0' + v % 10);
  while ((v /= 10) != 0);
  while (n > 0 && at < end) *at++ = digits[--n];
}

void on_sigbus(int sig, siginfo_t* info, void*) {
  const auto addr = reinterpret_cast<std::uintptr_t>(info->si_addr);
  for (const MappedRange& r : g_mapped) {
    const std::uintptr_t begin = r.begin.load(std::memory_order_acquire);
    if (begin <= 1 || addr < begin || addr >= r.end.load()) continue;
    char line[1024];
    char* at = line;
    const char* end = line + sizeof line - 1;
    put(at, end, "shardgnn: error: ");
    put(at, end, r.path);
    put(at, end, " changed under the running job: byte ");
    put_number(at, end, addr - begin);
    put(at, end, " of the ");
    put_number(at, end, r.end.load() - begin);
    put(at, end, " mapped is gone; the file ");
    struct stat st {};
    if (::stat(r.path, &st) == 0) {
      put(at, end, "is ");
      put_number(at, end, static_cast<unsigned long long>(st.st_size));
      put(at, end, " bytes now (truncated or rewritten in place)");
    } else {
      put(at, end, "is no longer there");
    }
    put(at, end, "; ending the job (status ");
    put_number(at, end, kExitFileChanged);
    put(at, end, ")\n");
    [[maybe_unused]] const ssize_t w = ::write(2, line, static_cast<std::size_t>(at - line));
    ::_exit(kExitFileChanged);
  }
  // Not a mapping of ours: the default action, at once.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

// Ours, in front of whatever a library set since (UCX sets its own at MPI start-up).
void guard_mapped_files() {
  struct sigaction now {};
  if (::sigaction(SIGBUS, nullptr, &now) == 0 && (now.sa_flags & SA_SIGINFO) && now.sa_sigaction == on_sigbus) return;
  struct sigaction sa {};
  sa.sa_sigaction = on_sigbus;
  sa.sa_flags = SA_SIGINFO;
  sigemptyset(&sa.sa_mask);
  ::sigaction(SIGBUS, &sa, nullptr);
}

// A read-only shared mapping of the first `size` bytes of `fd` (which the caller closes: the
// mapping keeps its own reference to the file), unmapped by its keeper; empty for size 0, which
// mmap refuses.
MappedFile map_open_file(int fd, std::size_t size, const std::string& path) {
  MappedFile out;
  out.path = path;
  if (size == 0) return out;
  void* addr = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  if (addr == MAP_FAILED) throw InputError(path, "", "cannot map file: " + errno_text());
  out.bytes = {static_cast<const std::byte*>(addr), size};
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec);
  MappedRange* range = record_mapping(addr, size, ec ? path : absolute.string());
  guard_mapped_files();
  out.keeper = std::shared_ptr<const void>(addr, [size, range](const void* p) {
    forget_mapping(range);
    ::munmap(const_cast<void*>(p), size);
  });
  return out;
}

// Random reads (a sampler's rows, a gather's features) miss the TLB on nearly every access with
// 4 KiB pages. Asked for 2 MiB pages, the kernel reads what the page cache lacks into 2 MiB
// folios and maps those with 2 MiB pages (Linux 6.x on XFS, and on ext4 from 6.16; seen as
// FilePmdMapped in /proc/PID/smaps) where the mapping's address and the file offset agree modulo
// 2 MiB. Pages already cached keep their folios (drop_page_cache).
// The kernel then also reads a missing page's whole 2 MiB around it, even for random reads: so
// only while the files this process maps with the hint take at most half the memory it may use
// (a rank maps its shard and those of its node-local ranks), not for files that would be read
// piecemeal through a page cache too small to keep them. A mapping gives its share back when it
// goes (a merged shard's parts are mapped again end to end). Wraps `m.keeper` to do so.
std::atomic<int> g_hints_off{0};  // live HugePageHintsOff objects

void hint_huge_pages(MappedFile& m) {
#if defined(__linux__)
  const std::size_t size = m.bytes.size();
  if (size < (std::size_t{2} << 20) || g_hints_off.load() > 0) return;
  const int before = errno;
  static const std::uint64_t usable = [] {
    try {
      return usable_memory_bytes();
    } catch (const std::exception&) {  // a hint: no memory figure, no huge pages
      return std::uint64_t{0};
    }
  }();
  static std::atomic<std::uint64_t> hinted{0};  // bytes of live mappings asked for
  if (hinted.fetch_add(size) + size <= usable / 2) {
    // madvise takes whole pages; an end-to-end mapping's bytes start inside one.
    const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    const auto begin = reinterpret_cast<std::uintptr_t>(m.bytes.data()) / page * page;
    const auto end = (reinterpret_cast<std::uintptr_t>(m.bytes.data()) + size + page - 1) / page * page;
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
    m.keeper = std::shared_ptr<const void>(m.keeper.get(), [inner = m.keeper, size](const void*) mutable {
      inner.reset();
      hinted.fetch_sub(size);
    });
  } else {
    hinted.fetch_sub(size);
  }
  errno = before;
#else
  (void)m;
#endif
}

}  // namespace

HugePageHintsOff::HugePageHintsOff() { g_hints_off.fetch_add(1); }
HugePageHintsOff::~HugePageHintsOff() { g_hints_off.fetch_sub(1); }

MappedFile map_file(const std::string& path) {
  std::error_code ec;
  auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw InputError(path, "", "no such file");
  if (fs::is_directory(status)) throw InputError(path, "", "is a folder, expected a file");
  // A FIFO would block the open below, and a device or socket maps nothing sensible.
  if (!fs::is_regular_file(status)) throw InputError(path, "", "not a regular file");
  // Plain POSIX mapping: Boost.Iostreams' mapped_file did the same, but loading it pulled four
  // compression libraries into every process, adding resident memory for no use of ours.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path, "", "cannot open file: " + errno_text());
  // The size of the file opened (not of whatever the path named a moment before: a file replaced
  // in between would map short and fault past its end).
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const std::string err = errno_text();
    ::close(fd);
    throw InputError(path, "", "cannot read its size: " + err);
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  MappedFile out;
  try {
    out = map_open_file(fd, size, path);
  } catch (...) {
    ::close(fd);
    throw;
  }
  ::close(fd);
  hint_huge_pages(out);
  return out;
}

std::optional<MappedFile> map_end_to_end(std::span<const FilePiece> pieces) {
  const auto page = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
  std::vector<const FilePiece*> parts;
  std::uint64_t total = 0;
  for (const FilePiece& p : pieces) {
    if (p.bytes == 0) continue;
    if (!parts.empty() && p.offset % page != (parts.front()->offset + total) % page) return std::nullopt;
    parts.push_back(&p);
    total += p.bytes;
  }
  if (parts.empty()) return MappedFile{};
  constexpr std::uint64_t kHuge = std::uint64_t{2} << 20;
  auto down = [&](std::uint64_t x) { return x / page * page; };
  auto up = [&](std::uint64_t x) { return (x + page - 1) / page * page; };
  // Out of address space or of mappings (vm.max_map_count): the caller copies instead.
  auto out_of_room = [] { return errno == ENOMEM; };
  // The first file's offset 0 at a 2 MiB boundary, as the kernel places a lone file's mapping, so
  // that the first part's 2 MiB folios map with 2 MiB pages.
  const std::uint64_t first_off = parts.front()->offset;
  const std::size_t reserved = static_cast<std::size_t>(up(first_off + total) + kHuge);
  void* raw = ::mmap(nullptr, reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) {
    if (out_of_room()) return std::nullopt;
    throw InputError(parts.front()->path, "", "cannot reserve " + std::to_string(reserved) + " bytes of addresses: " + errno_text());
  }
  auto ranges = std::make_shared<std::vector<MappedRange*>>();
  ranges->reserve(parts.size());
  std::shared_ptr<const void> keeper(raw, [reserved, ranges](const void* p) {
    for (MappedRange* r : *ranges) forget_mapping(r);
    ::munmap(const_cast<void*>(p), reserved);
  });
  const std::uint64_t base = (reinterpret_cast<std::uintptr_t>(raw) + kHuge - 1) / kHuge * kHuge;
  const std::uint64_t start = base + first_off;  // the first piece's first byte
  auto with_file = [](const FilePiece& p, auto&& f) {
    const int fd = ::open(p.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw InputError(p.path, "", "cannot open file: " + errno_text());
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const std::string err = errno_text();
      ::close(fd);
      throw InputError(p.path, "", "cannot read its size: " + err);
    }
    if (static_cast<std::uint64_t>(st.st_size) < p.offset + p.bytes) {
      ::close(fd);
      throw InputError(p.path, "", "shorter than the " + std::to_string(p.offset + p.bytes) + " bytes it had when it was loaded");
    }
    bool done = false;
    try {
      done = f(fd);
    } catch (...) {
      ::close(fd);
      throw;
    }
    ::close(fd);
    return done;
  };
  // Each piece's pages from its file, in order; a page two pieces share is mapped from the later
  // one here and replaced below.
  std::vector<std::uint64_t> seams;
  std::uint64_t at = start;
  for (const FilePiece* p : parts) {
    const std::uint64_t file_from = down(p->offset), len = up(p->offset + p->bytes) - file_from;
    const std::uint64_t addr = at - (p->offset - file_from);
    const bool mapped = with_file(*p, [&](int fd) {
      if (::mmap(reinterpret_cast<void*>(addr), len, PROT_READ, MAP_SHARED | MAP_FIXED, fd, static_cast<off_t>(file_from)) != MAP_FAILED) return true;
      if (out_of_room()) return false;
      throw InputError(p->path, "", "cannot map file: " + errno_text());
    });
    if (!mapped) return std::nullopt;
    std::error_code ec;
    const fs::path absolute = fs::absolute(p->path, ec);
    ranges->push_back(record_mapping(reinterpret_cast<void*>(addr), len, ec ? p->path : absolute.string()));
    if (at != start && at % page != 0 && (seams.empty() || seams.back() != down(at))) seams.push_back(down(at));
    at += p->bytes;
  }
  guard_mapped_files();
  if (seams.empty()) {
    MappedFile out{parts.front()->path, std::move(keeper), {reinterpret_cast<const std::byte*>(start), static_cast<std::size_t>(total)}};
    hint_huge_pages(out);
    return out;
  }
  // A page where pieces meet holds the end of one and the start of the next: copied into a
  // memory file (not anonymous memory, so that dropping its pages, Array::release_pages, reads
  // them back rather than zeros).
  const int mem = ::memfd_create("shardgnn-seams", MFD_CLOEXEC);
  if (mem < 0) throw InputError(parts.front()->path, "", "cannot create a memory file: " + errno_text());
  struct CloseMem {
    int fd;
    ~CloseMem() { ::close(fd); }
  } close_mem{mem};
  if (::ftruncate(mem, static_cast<off_t>(seams.size() * page)) != 0) throw InputError(parts.front()->path, "", "cannot size a memory file: " + errno_text());
  std::vector<std::byte> bytes(page);
  for (std::size_t s = 0; s < seams.size(); ++s) {
    const std::uint64_t pg = seams[s];
    std::fill(bytes.begin(), bytes.end(), std::byte{0});
    std::uint64_t from = start;
    for (const FilePiece* p : parts) {
      const std::uint64_t lo = std::max(pg, from), hi = std::min(pg + page, from + p->bytes);
      if (lo < hi)
        with_file(*p, [&](int fd) {
          const ssize_t n = ::pread(fd, bytes.data() + (lo - pg), hi - lo, static_cast<off_t>(p->offset + (lo - from)));
          if (n != static_cast<ssize_t>(hi - lo))
            throw InputError(p->path, "byte " + std::to_string(p->offset + (lo - from)), n < 0 ? "cannot read: " + errno_text() : std::string("cannot read: the file ends early"));
          return true;
        });
      from += p->bytes;
    }
    if (::pwrite(mem, bytes.data(), page, static_cast<off_t>(s * page)) != static_cast<ssize_t>(page))
      throw InputError(parts.front()->path, "", "cannot fill a memory file: " + errno_text());
    if (::mmap(reinterpret_cast<void*>(pg), page, PROT_READ, MAP_SHARED | MAP_FIXED, mem, static_cast<off_t>(s * page)) == MAP_FAILED) {
      if (out_of_room()) return std::nullopt;
      throw InputError(parts.front()->path, "", "cannot map a memory file: " + errno_text());
    }
  }
  MappedFile out{parts.front()->path, std::move(keeper), {reinterpret_cast<const std::byte*>(start), static_cast<std::size_t>(total)}};
  hint_huge_pages(out);
  return out;
}

SpillFile::SpillFile(const std::string& dir) : dir_(dir) {
  std::string name = (fs::path(dir) / "shardgnn-spill-XXXXXX").string();
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) throw InputError(dir, "", "cannot create a spill file: " + errno_text());
  ::unlink(name.c_str());
  file_ = ::fdopen(fd, "wb");
  if (file_ == nullptr) {
    const std::string err = errno_text();
    ::close(fd);
    throw InputError(dir, "", "cannot open a spill file: " + err);
  }
  std::setvbuf(file_, nullptr, _IOFBF, std::size_t{8} << 20);  // few, large writes
}

SpillFile::~SpillFile() {
  if (file_ != nullptr) std::fclose(file_);
}

void SpillFile::append(const void* data, std::size_t bytes) {
  if (bytes > 0 && std::fwrite(data, 1, bytes, file_) != bytes)
    throw InputError(dir_, "", "cannot write a spill file (" + std::to_string(size_) + " bytes in): " + errno_text());
  size_ += bytes;
}

MappedFile SpillFile::map() {
  if (std::fflush(file_) != 0) throw InputError(dir_, "", "cannot write a spill file (" + std::to_string(size_) + " bytes in): " + errno_text());
  MappedFile out = map_open_file(::fileno(file_), size_, dir_);
  std::fclose(file_);
  file_ = nullptr;
  return out;
}

void write_file_atomic(const std::string& path, const std::function<void(std::FILE*)>& fill) {
  remove_stale_temporaries(path);
  const std::string tmp = path + unique_suffix();
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw InputError(path, "", "cannot create file: " + errno_text());
  try {
    fill(f);
    if (std::fflush(f) != 0 || std::ferror(f)) throw InputError(path, "", "write failed: " + errno_text());
    if (::fsync(::fileno(f)) != 0) throw InputError(path, "", "fsync failed: " + errno_text());
  } catch (...) {
    std::fclose(f);
    std::remove(tmp.c_str());
    throw;
  }
  if (std::fclose(f) != 0) {
    std::remove(tmp.c_str());
    throw InputError(path, "", "close failed: " + errno_text());
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = errno_text();
    std::remove(tmp.c_str());
    throw InputError(path, "", "rename failed: " + err);
  }
  fsync_dir(fs::absolute(path).parent_path().string());
}

namespace {

// Writes all of `bytes` at `offset` of the open `fd` (pwrite may write less than asked); an
// InputError naming `path` when it cannot, the descriptor closed.
void pwrite_all(int fd, const std::string& path, std::uint64_t offset, std::span<const std::byte> bytes) {
  for (std::size_t done = 0; done < bytes.size();) {
    const ssize_t n = ::pwrite(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n <= 0) {
      const std::string err = std::strerror(errno);
      ::close(fd);
      throw InputError(path, "byte " + std::to_string(offset + done), "write failed (disk full?): " + err);
    }
    done += static_cast<std::size_t>(n);
  }
}

}  // namespace

void create_filled_file(const std::string& path, std::span<const std::byte> head, std::uint64_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw InputError(path, "", std::string("cannot create: ") + std::strerror(errno));
  if (::ftruncate(fd, static_cast<off_t>(size)) != 0) {
    const std::string err = std::strerror(errno);
    ::close(fd);
    throw InputError(path, "", "cannot size it: " + err);
  }
  pwrite_all(fd, path, 0, head);
  if (::close(fd) != 0) throw InputError(path, "", std::string("close failed: ") + std::strerror(errno));
}

void write_at(const std::string& path, std::uint64_t offset, std::span<const std::byte> bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw InputError(path, "", std::string("cannot open for writing: ") + std::strerror(errno));
  pwrite_all(fd, path, offset, bytes);
  if (::fsync(fd) != 0) {
    const std::string err = std::strerror(errno);
    ::close(fd);
    throw InputError(path, "", "fsync failed: " + err);
  }
  if (::close(fd) != 0) throw InputError(path, "", std::string("close failed: ") + std::strerror(errno));
}

void write_text_file_atomic(const std::string& path, const std::string& text) {
  write_file_atomic(path, [&](std::FILE* f) {
    if (std::fwrite(text.data(), 1, text.size(), f) != text.size()) throw InputError(path, "", "write failed (disk full?)");
  });
}

namespace {

// Whether `folder` holds a shardgnn dataset or partitioned dataset: its metadata file names its
// format, which is all --force may replace.
bool holds_shardgnn_output(const fs::path& folder) {
  for (const auto& [file, format] : {std::pair{"meta.json", "shardgnn-dataset"}, {"partition.json", "shardgnn-partition"}, {"predictions.json", "shardgnn-predictions"}}) {
    std::error_code ec;
    const fs::path path = folder / file;
    if (!fs::is_regular_file(path, ec)) continue;
    try {
      const boost::json::value v = read_json_file(path.string());
      if (v.is_object() && json_string(v.get_object(), "format", path.string()) == format) return true;
    } catch (const InputError&) {
      // not ours, or not readable: either way not something --force may replace
    }
  }
  return false;
}

// The folder (or file) a path names, absolute, without a trailing separator.
fs::path target_of(const std::string& path) {
  fs::path target = fs::absolute(path).lexically_normal();
  if (!target.has_filename()) target = target.parent_path();
  return target;
}

}  // namespace

void check_output_dir(const std::string& dir, bool replace) {
  const fs::path target = target_of(dir);
  std::error_code ec;
  if (fs::exists(target, ec)) {
    if (!fs::is_directory(target)) throw InputError(dir, "", "exists and is not a folder");
    if (fs::is_empty(target)) return;
    if (!replace) throw InputError(dir, "", "output folder exists and is not empty (pass --force to replace it)");
    if (!holds_shardgnn_output(target))
      throw InputError(dir, "", "exists and holds no shardgnn dataset, partitioned dataset or predictions (no meta.json, partition.json or predictions.json of ours): --force replaces only those; remove it yourself or choose another folder");
    claim_folder(target.string(), /*hold=*/false);  // refused now, not after the work, while a job reads it
  }
}

std::vector<std::string> remove_stale_temporaries(const std::string& path) {
  const fs::path target = target_of(path);
  std::vector<std::string> removed;
  std::error_code ec;
  const std::string base = target.filename().string();
  std::vector<std::pair<fs::path, long>> stale;  // and the process that left it
  for (fs::directory_iterator it(target.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
    const Maker m = maker_of(it->path().filename().string(), base);
    // Only what a process of this host made, and only once that process is gone.
    if (!m.ours || m.pid <= 0 || m.pid == ::getpid() || ::kill(static_cast<pid_t>(m.pid), 0) == 0 || errno != ESRCH) continue;
    // A swapped-out folder with no folder in its place is the only complete copy (its writer
    // died between the two renames of commit_dir_atomic): it goes back.
    std::error_code there;
    if (m.old && !fs::exists(target, there)) {
      std::error_code mv;
      fs::rename(it->path(), target, mv);
      if (!mv) {
        std::fprintf(stderr, "shardgnn: restored %s from %s, left by process %ld, which no longer runs\n", target.c_str(), it->path().c_str(), m.pid);
        continue;
      }
    }
    stale.emplace_back(it->path(), m.pid);
  }
  for (const auto& [path, pid] : stale) {
    std::error_code rm;
    fs::remove_all(path, rm);
    if (!rm) {
      removed.push_back(path.string());
      std::fprintf(stderr, "shardgnn: removed %s, left by process %ld, which no longer runs\n", path.c_str(), pid);
    }
  }
  return removed;
}

std::string begin_dir_atomic(const std::string& dir, bool replace) {
  check_output_dir(dir, replace);
  remove_stale_temporaries(dir);
  const fs::path target = target_of(dir);
  std::error_code ec;
  fs::create_directories(target.parent_path(), ec);
  if (ec) throw InputError(dir, "", "cannot create parent folder: " + ec.message());
  const fs::path tmp = target.string() + unique_suffix();
  // A folder of that name is a stale one of an earlier process that had this PID.
  if (!fs::create_directory(tmp, ec) && !ec) {
    fs::remove_all(tmp, ec);
    fs::create_directory(tmp, ec);
  }
  if (ec) throw InputError(dir, "", "cannot create temporary folder: " + ec.message());
  return tmp.string();
}

void commit_dir_atomic(const std::string& tmp, const std::string& dir, bool replace) {
  const fs::path target = target_of(dir);
  std::error_code ec;
  try {
    // A folder that appeared at `dir` since begin_dir_atomic is refused as it would have been then.
    check_output_dir(dir, replace);
    // Every file and folder of the new tree, so the rename publishes durable contents.
    for (const auto& entry : fs::recursive_directory_iterator(tmp))
      if (entry.is_regular_file() || entry.is_directory()) fsync_path(entry.path().string(), entry.is_directory());
    fsync_path(tmp, true);
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
  if (fs::exists(target, ec)) {
    // No job of this host may start reading the old folder while it is swapped out.
    try {
      claim_folder(target.string(), /*hold=*/true);
    } catch (...) {
      fs::remove_all(tmp, ec);
      throw;
    }
    // Swap the old folder out, put the new one in, then remove the old one: a crash in between
    // leaves either the old or the new folder complete, never a mix.
    const fs::path old = target.string() + unique_suffix() + ".old";
    fs::rename(target, old, ec);
    if (ec) {
      release_folder(target.string());
      fs::remove_all(tmp, ec);
      throw InputError(dir, "", "cannot move the existing folder aside");
    }
    fs::rename(tmp, target, ec);
    if (ec) {
      fs::rename(old, target, ec);
      release_folder(target.string());
      fs::remove_all(tmp, ec);
      throw InputError(dir, "", "cannot rename the new folder into place");
    }
    fs::remove_all(old, ec);
    release_folder(target.string());
  } else {
    fs::rename(tmp, target, ec);
    if (ec) {
      std::string msg = ec.message();
      fs::remove_all(tmp, ec);
      throw InputError(dir, "", "cannot rename the new folder into place: " + msg);
    }
  }
  fsync_dir(target.parent_path().string());
}

void write_dir_atomic(const std::string& dir, bool replace, const std::function<void(const std::string&)>& fill) {
  const std::string tmp = begin_dir_atomic(dir, replace);
  try {
    fill(tmp);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  commit_dir_atomic(tmp, dir, replace);
}

std::string confined_path(const std::string& folder, const std::string& name, const std::string& json_path, const std::string& key, bool want_folder,
                          bool subfolders) {
  const std::string where = "key '" + key + "'";
  const fs::path rel(name);
  bool plain = !name.empty() && name.find('\0') == std::string::npos && rel.is_relative();
  for (const auto& part : rel) plain = plain && part != ".." && part != "." && !part.empty();
  if (!subfolders) plain = plain && name.find('/') == std::string::npos;
  if (!plain)
    throw InputError(json_path, where, quote_token(name) + ", expected a " + (subfolders ? "relative path without '..'" : "plain file name") + " inside " + folder);
  const std::string path = (fs::path(folder) / rel).string();
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st))
    throw InputError(path, "", "missing, though " + fs::path(json_path).filename().string() + " lists it (" + where + ")");
  if (want_folder ? !fs::is_directory(st) : !fs::is_regular_file(st))
    throw InputError(path, "", std::string("not a ") + (want_folder ? "folder" : "regular file") + ", though " + fs::path(json_path).filename().string() + " lists it (" + where + ")");
  return path;
}

std::uint32_t crc32_of(std::span<const std::byte> bytes, std::uint32_t crc) {
  uLong c = crc;
  const auto* p = reinterpret_cast<const Bytef*>(bytes.data());
  std::size_t left = bytes.size();
  // zlib's length argument is 32-bit on some platforms: feed it in 1 GiB pieces.
  while (left > 0) {
    uInt n = static_cast<uInt>(std::min<std::size_t>(left, std::size_t{1} << 30));
    c = ::crc32(c, p, n);
    p += n;
    left -= n;
  }
  return static_cast<std::uint32_t>(c);
}

std::uint32_t crc32_concat(std::uint32_t first, std::uint32_t second, std::uint64_t second_bytes) {
  return static_cast<std::uint32_t>(::crc32_combine(first, second, static_cast<z_off_t>(second_bytes)));
}

std::uint32_t crc32_of_file(const std::string& path) {
  MappedFile m = map_file(path);
  return crc32_of(m.bytes);
}

void fsync_dir(const std::string& dir) { fsync_path(dir, true); }

bool advise_populate(const void* data, std::size_t bytes) noexcept {
#if defined(__linux__)
#ifndef MADV_POPULATE_READ
  constexpr int MADV_POPULATE_READ = 22;  // Linux 5.14; older headers lack the name
#endif
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (bytes == 0 || page_size <= 0) return bytes == 0;
  const auto page = static_cast<std::uintptr_t>(page_size);
  const auto begin = reinterpret_cast<std::uintptr_t>(data) & ~(page - 1);
  const auto end = reinterpret_cast<std::uintptr_t>(data) + bytes;
  const int saved = errno;
  const bool ok = ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_READ) == 0;
  errno = saved;
  return ok;
#else
  (void)data;
  return bytes == 0;
#endif
}

void drop_page_cache(const std::string& path) noexcept {
#if defined(__linux__)
  const int saved = errno;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  }
  errno = saved;
#else
  (void)path;
#endif
}

namespace {
// madvise works on whole pages: the range shrunk inward to the pages fully inside it.
void advise_inner_pages(const void* data, std::size_t bytes, int advice) noexcept {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  auto begin = (reinterpret_cast<std::uintptr_t>(data) + page - 1) & ~(page - 1);
  auto end = (reinterpret_cast<std::uintptr_t>(data) + bytes) & ~(page - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, advice);
}
}  // namespace

void advise_dontneed(const void* data, std::size_t bytes) noexcept {
  // madvise, not posix_madvise: glibc makes POSIX_MADV_DONTNEED a no-op. For a read-only file
  // mapping, MADV_DONTNEED only drops pages from this process; the file is untouched.
  advise_inner_pages(data, bytes, MADV_DONTNEED);
}

void advise_random(const void* data, std::size_t bytes) noexcept { advise_inner_pages(data, bytes, MADV_RANDOM); }

namespace {

std::mutex g_folders_mutex;
std::map<std::pair<dev_t, ino_t>, int> g_held;  // this process's shared holds: folder -> fd
std::map<std::string, int> g_claimed;           // exclusive claims by path, until release_folder

// "process 4242 (shardgnn-train /data/p4 ...)" for each other process of this host holding a
// flock on the file with `st`'s inode, from /proc/locks.
std::string lock_holders(const struct stat& st) {
  std::ifstream locks("/proc/locks");
  std::string line, out;
  const std::string inode = ":" + std::to_string(st.st_ino);
  while (std::getline(locks, line)) {
    if (line.find("FLOCK") == std::string::npos || line.find("->") != std::string::npos) continue;
    std::istringstream in(line);
    std::string id, kind, advisory, mode, dev;
    long pid = 0;
    if (!(in >> id >> kind >> advisory >> mode >> pid >> dev)) continue;
    if (dev.size() < inode.size() || dev.compare(dev.size() - inode.size(), inode.size(), inode) != 0 || pid == ::getpid()) continue;
    std::ifstream cmd("/proc/" + std::to_string(pid) + "/cmdline");
    std::string args((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
    std::replace(args.begin(), args.end(), '\0', ' ');
    while (!args.empty() && args.back() == ' ') args.pop_back();
    if (args.size() > 120) args = args.substr(0, 117) + "...";
    if (out.find("process " + std::to_string(pid) + " ") != std::string::npos) continue;
    out += (out.empty() ? "" : ", ") + std::string("process ") + std::to_string(pid) + (args.empty() ? "" : " (" + args + ")");
  }
  return out.empty() ? "another process" : out;
}

int open_folder(const std::string& dir, struct stat& st) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0 && ::fstat(fd, &st) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

void hold_folder(const std::string& dir) {
  struct stat st {};
  const int fd = open_folder(dir, st);
  if (fd < 0) return;  // the loader names what is missing
  std::lock_guard<std::mutex> lock(g_folders_mutex);
  const auto key = std::make_pair(st.st_dev, st.st_ino);
  if (g_held.count(key)) {
    ::close(fd);
    return;
  }
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0) {
    const std::string who = errno == EWOULDBLOCK ? lock_holders(st) : std::string();
    ::close(fd);
    if (!who.empty()) throw InputError(dir, "", "is being replaced (--force) by " + who + ": wait for it to finish");
    return;  // a filesystem without flock: nothing to hold
  }
  g_held.emplace(key, fd);
}

void claim_folder(const std::string& dir, bool hold) {
  struct stat st {};
  const int fd = open_folder(dir, st);
  if (fd < 0) return;
  std::lock_guard<std::mutex> lock(g_folders_mutex);
  // This process's own hold (it read what it replaces) goes: its mappings keep the old files.
  if (const auto it = g_held.find({st.st_dev, st.st_ino}); it != g_held.end()) {
    ::close(it->second);
    g_held.erase(it);
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const bool busy = errno == EWOULDBLOCK;
    const std::string who = busy ? lock_holders(st) : std::string();
    ::close(fd);
    if (busy) throw InputError(dir, "", "is in use on this host by " + who + "; --force replaces it once no job reads it");
    return;
  }
  if (!hold) {
    ::close(fd);
    return;
  }
  if (const auto it = g_claimed.find(dir); it != g_claimed.end()) ::close(it->second);
  g_claimed[dir] = fd;
}

void release_folder(const std::string& dir) {
  std::lock_guard<std::mutex> lock(g_folders_mutex);
  if (const auto it = g_claimed.find(dir); it != g_claimed.end()) {
    ::close(it->second);
    g_claimed.erase(it);
  }
}

}  // namespace shardgnn
