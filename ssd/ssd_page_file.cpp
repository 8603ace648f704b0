#include "ssd/ssd_page_file.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <mutex>

#include "common/checksum.hpp"
#include "common/fixed_name.hpp"
#include "common/page_format.hpp"
#include "common/random_id.hpp"
#include "ssd/aligned_page_buffer.hpp"
#include "ssd/allocation_bitmap.hpp"
#include "ssd/direct_file.hpp"
#include "ssd/page_checksum.hpp"
#include "ssd/ssd_crash_simulator.hpp"
#include "ssd/ssd_layout.hpp"
#include "ssd/superblock.hpp"
#include "ssd/write_behind_queue.hpp"

namespace tristore {

static_assert(SsdPageFile::kMetadataSize == Superblock::kMetadataSize);
static_assert(kPageSize % kDirectIoAlignment == 0);

namespace {

// Emulated device latency: a busy-wait, since sleeping overshoots by tens of microseconds.
void wait_ns(std::uint32_t nanoseconds) {
  if (nanoseconds == 0) return;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::nanoseconds(nanoseconds);
  while (std::chrono::steady_clock::now() < deadline) {
  }
}

void count(std::uint64_t& counter) {
  std::atomic_ref<std::uint64_t>(counter).fetch_add(1, std::memory_order_relaxed);
}

// One O_DIRECT-aligned page per thread: writes stamp a copy, reads of unaligned buffers bounce.
std::byte* scratch_page() {
  thread_local AlignedPageBuffer buffer(kPageSize);
  return buffer.data();
}

}  // namespace

struct SsdPageFile::State {
  SsdOptions options;
  std::unique_ptr<SsdCrashSimulator> crash;  // outlives `file`, which reports to it
  DirectFile file;
  SsdLayout layout;
  Superblock superblock;            // in memory: what the next sync() persists
  Superblock persisted_superblock;  // what the newest valid copy on disk holds
  mutable std::mutex allocation_mutex;
  AllocationBitmap bitmap;
  AllocationBitmap claims;                   // allocated since the last confirm_claims
  std::vector<PageId> claims_after_confirm;  // claim_at_next_confirm's pages
  bool bitmap_dirty = false;
  Counters counters;
  // Last: destroyed first, it writes what is queued through `file`.
  std::unique_ptr<WriteBehindQueue> write_behind;

  State(const SsdOptions& options, DirectFile file, const SsdLayout& layout)
      : options(options),
        file(std::move(file)),
        layout(layout),
        bitmap(layout.page_capacity),
        claims(layout.page_capacity) {
    if (options.write_behind_pages != 0)
      write_behind = std::make_unique<WriteBehindQueue>(
          options.write_behind_pages, options.write_behind_threads,
          [this](PageId id, const std::byte* page) { write_stamped(id, page); });
  }

  // `page`'s bytes with the header naming `id` and carrying the checksum.
  static void stamp(PageId id, const std::byte* page, std::byte* stamped) {
    std::memcpy(stamped, page, kPageSize);
    PageHeader header;
    std::memcpy(&header, stamped, sizeof(header));
    header.page_id = id;
    header.checksum = 0;
    std::memcpy(stamped, &header, sizeof(header));
    header.checksum = page_checksum(stamped);
    std::memcpy(stamped, &header, sizeof(header));
  }
  void write_stamped(PageId id, const std::byte* stamped) {
    file.write_exact(layout.page_offset(id), stamped, kPageSize);
    wait_ns(options.write_latency_ns);
  }

  [[noreturn]] void fail_range(const char* operation, PageId id) const {
    fail("{} of SSD page {} out of range: {} holds {} pages", operation, id, options.path,
         layout.page_capacity);
  }
  [[noreturn]] void fail_unallocated(const char* operation, PageId id) const {
    fail("{} of SSD page {} which is not allocated in {}", operation, id, options.path);
  }

  void check_allocated(const char* operation, PageId id) const {
    if (id >= layout.page_capacity) [[unlikely]]
      fail_range(operation, id);
    std::lock_guard lock(allocation_mutex);
    if (!bitmap.test(id)) [[unlikely]]
      fail_unallocated(operation, id);
  }

  // Writes generation g's bitmap copy, makes it durable, then its superblock copy.
  void persist_generation(std::uint64_t generation);
  [[noreturn]] void fail_verification(PageId id, const std::byte* bytes, std::byte* page) const;
};

void SsdPageFile::State::persist_generation(std::uint64_t generation) {
  // 1. Snapshot both bitmaps under the lock, so allocations may go on meanwhile.
  AlignedPageBuffer bitmap_bytes(layout.bitmap_bytes());
  {
    const std::size_t half = layout.claims_offset_in_copy();
    std::lock_guard lock(allocation_mutex);
    bitmap.store({bitmap_bytes.data(), half});
    claims.store({bitmap_bytes.data() + half, half});
    bitmap_dirty = false;
  }
  // 2. The bitmap copy this generation owns; the other copy still backs the older superblock.
  //    One fdatasync makes it durable together with every data page written so far.
  superblock.generation = generation;
  file.write_exact(layout.bitmap_offset(superblock.copy()), bitmap_bytes.data(),
                   bitmap_bytes.size());
  file.sync_data();
  // 3. The superblock copy, one 4 KiB block: a torn write leaves it failing its checksum, and
  //    open() then falls back to the other copy.
  superblock.bitmap_checksum = crc32c(bitmap_bytes.data(), bitmap_bytes.size());
  superblock.seal();
  AlignedPageBuffer block(sizeof(Superblock));
  std::memcpy(block.data(), &superblock, sizeof(Superblock));
  file.write_exact(layout.superblock_offset(superblock.copy()), block.data(), block.size());
  file.sync_data();
  persisted_superblock = superblock;
  if (options.on_generation_durable) options.on_generation_durable(generation);
}

void SsdPageFile::State::fail_verification(PageId id, const std::byte* bytes,
                                           std::byte* page) const {
  PageHeader header;
  std::memcpy(&header, bytes, sizeof(header));
  std::uint32_t computed = page_checksum(bytes);
  bool all_zero =
      std::all_of(bytes, bytes + kPageSize, [](std::byte b) { return b == std::byte{0}; });
  std::memset(page, 0, kPageSize);
  if (header.checksum != computed) {
    throw ChecksumMismatch(
        fmt::format("SSD page {} of {} fails its checksum (stored {:#010x}, computed {:#010x}): {}",
                    id, options.path, header.checksum, computed,
                    all_zero ? "it reads as zeros (never written, or the write was lost)"
                             : "torn or corrupt write"),
        id, ChecksumMismatch::Kind::kBadChecksum);
  }
  throw ChecksumMismatch(fmt::format("SSD page {} of {} holds page {} (misdirected write)", id,
                                     options.path, header.page_id),
                         id, ChecksumMismatch::Kind::kWrongPageId);
}

SsdPageFile::SsdPageFile(std::unique_ptr<State> state) : state_(std::move(state)) {}
SsdPageFile::~SsdPageFile() = default;

std::unique_ptr<SsdPageFile> SsdPageFile::create(const SsdOptions& options) {
  // 1. Geometry from the requested size; refuse sizes that hold no page.
  if (options.path.empty()) fail("SSD file path is empty");
  if (options.architecture.size() > Superblock::kArchitectureNameBytes)
    fail("architecture name '{}' is longer than {} bytes", options.architecture,
         Superblock::kArchitectureNameBytes);
  SsdLayout layout = SsdLayout::for_size(options.size_bytes);
  if (layout.page_capacity == 0)
    fail("SSD size {} bytes is too small for {}: it needs at least {} bytes", options.size_bytes,
         options.path, SsdLayout::kMinPages * kPageSize);
  // 2. The file, truncated and reserved on disk before any memory is sized by it; a failed
  //    create leaves no half-made file behind.
  DirectFile file(options.path, DirectFile::Mode::kCreate);
  std::unique_ptr<State> state;
  try {
    std::unique_ptr<SsdCrashSimulator> crash;
    if (options.crash_simulation) {
      crash = std::make_unique<SsdCrashSimulator>(file);
      file.attach_crash_simulator(crash.get());
    }
    file.reserve(layout.file_size());
    state = std::make_unique<State>(options, std::move(file), layout);
    state->crash = std::move(crash);
    // 3. Both superblock copies (generations 0 and 1), each with its empty bitmap.
    Superblock& superblock = state->superblock;
    superblock.size_bytes = layout.size_bytes;
    superblock.page_capacity = layout.page_capacity;
    superblock.bitmap_pages = layout.bitmap_pages;
    superblock.file_size = layout.file_size();
    superblock.database_id = options.database_id != 0 ? options.database_id : random_nonzero_id();
    store_fixed_name(superblock.architecture, options.architecture);
    state->persist_generation(0);
    state->persist_generation(1);
    state->file.sync_directory();
  } catch (const Error&) {
    std::error_code ignored;
    std::filesystem::remove(options.path, ignored);
    throw;
  }
  return std::unique_ptr<SsdPageFile>(new SsdPageFile(std::move(state)));
}

std::unique_ptr<SsdPageFile> SsdPageFile::open(const SsdOptions& options) {
  // 1. The file and its first page, which holds both superblock copies.
  if (options.path.empty()) fail("SSD file path is empty");
  DirectFile file(options.path, DirectFile::Mode::kOpen);
  std::uint64_t file_size = file.size();
  if (file_size < kPageSize)
    fail("SSD file {} is {} bytes, too short for a superblock ({})", options.path, file_size,
         "truncated, or not a tristore SSD file");
  AlignedPageBuffer first_page(kPageSize);
  file.read_exact(0, first_page.data(), kPageSize);

  // 2. The trustworthy copies, newest generation first.
  Superblock copies[2];
  SuperblockState states[2];
  for (unsigned copy = 0; copy < 2; ++copy) {
    states[copy] = decode_superblock(
        {first_page.data() + SsdLayout::superblock_offset(copy), sizeof(Superblock)}, copies[copy]);
  }
  if (states[0] == SuperblockState::kBadMagic && states[1] == SuperblockState::kBadMagic)
    fail("{} is not a tristore SSD file (bad magic)", options.path);
  if (states[0] != SuperblockState::kValid && states[1] != SuperblockState::kValid)
    fail("SSD file {} is corrupt: both superblock copies fail their checksum", options.path);
  unsigned order[2] = {0, 1};
  bool both_valid = states[0] == SuperblockState::kValid && states[1] == SuperblockState::kValid;
  if (states[0] != SuperblockState::kValid ||
      (both_valid && copies[1].generation > copies[0].generation))
    std::swap(order[0], order[1]);

  // 3. The newest copy must describe this file and the database the caller expects.
  const Superblock& newest = copies[order[0]];
  check_superblock(newest, file_size, options.path);
  if (const std::string_view stored = fixed_name(newest.architecture);
      !options.architecture.empty() && stored != options.architecture)
    fail("SSD file {} holds a {} database, not {}", options.path,
         stored.empty() ? "nameless" : stored, options.architecture);
  if (options.database_id != 0 && newest.database_id != options.database_id)
    fail("SSD file {} belongs to another database (id {:#x}, expected {:#x})", options.path,
         newest.database_id, options.database_id);
  if (options.size_bytes != 0 && newest.size_bytes != options.size_bytes)
    fail("SSD file {} was created with {} bytes, not the {} bytes asked for", options.path,
         newest.size_bytes, options.size_bytes);

  // 4. The bitmap of the newest generation whose bitmap passes; the older one if the newest
  //    generation's bitmap is damaged.
  SsdLayout layout = newest.layout();
  AlignedPageBuffer bitmap_bytes(layout.bitmap_bytes());
  auto state = std::make_unique<State>(options, std::move(file), layout);
  for (unsigned index = 0; index < (both_valid ? 2u : 1u); ++index) {
    const Superblock& candidate = copies[order[index]];
    if (candidate.size_bytes != newest.size_bytes || candidate.database_id != newest.database_id)
      continue;
    state->file.read_exact(layout.bitmap_offset(candidate.copy()), bitmap_bytes.data(),
                           bitmap_bytes.size());
    if (crc32c(bitmap_bytes.data(), bitmap_bytes.size()) != candidate.bitmap_checksum) continue;
    const std::size_t half = layout.claims_offset_in_copy();
    if (!state->bitmap.load({bitmap_bytes.data(), half}) ||
        !state->claims.load({bitmap_bytes.data() + half, half}) ||
        !state->claims.subset_of(state->bitmap))
      continue;
    // An older generation than one sync() completed: its bitmap lacks what was allocated
    // since, and the pages holding those allocations would read as unallocated later.
    if (options.durable_generation && candidate.generation < *options.durable_generation)
      fail(
          "SSD file {} is corrupt: the superblock or bitmap copy of generation {} fails its "
          "checksum, and the intact copy of generation {} is older than what was synced",
          options.path, *options.durable_generation, candidate.generation);
    state->superblock = candidate;
    state->persisted_superblock = candidate;
    if (options.crash_simulation) {
      state->crash = std::make_unique<SsdCrashSimulator>(state->file);
      state->file.attach_crash_simulator(state->crash.get());
    }
    return std::unique_ptr<SsdPageFile>(new SsdPageFile(std::move(state)));
  }
  fail("SSD file {} is corrupt: no allocation bitmap copy passes its checksum and bounds check",
       options.path);
}

std::unique_ptr<SsdPageFile> SsdPageFile::create_or_open(const SsdOptions& options) {
  return options.create ? create(options) : open(options);
}

std::uint64_t SsdPageFile::database_id() const { return state_->superblock.database_id; }
std::uint64_t SsdPageFile::page_capacity() const { return state_->layout.page_capacity; }
const std::string& SsdPageFile::path() const { return state_->options.path; }
bool SsdPageFile::direct_io() const { return state_->file.direct_io(); }
const Counters& SsdPageFile::counters() const { return state_->counters; }
SsdCrashSimulator* SsdPageFile::crash_simulator() { return state_->crash.get(); }

std::uint64_t SsdPageFile::pages_in_use() const {
  std::lock_guard lock(state_->allocation_mutex);
  return state_->bitmap.in_use();
}

PageId SsdPageFile::allocate() {
  std::lock_guard lock(state_->allocation_mutex);
  PageId id = state_->bitmap.allocate_lowest();
  if (id == kInvalidPageId) [[unlikely]]
    fail("SSD full ({} pages) in {}", state_->layout.page_capacity, state_->options.path);
  state_->claims.set(id);
  state_->bitmap_dirty = true;
  return id;
}

void SsdPageFile::free(PageId id) {
  if (id >= state_->layout.page_capacity) [[unlikely]]
    state_->fail_range("free", id);
  std::lock_guard lock(state_->allocation_mutex);
  if (!state_->bitmap.test(id)) [[unlikely]]
    state_->fail_unallocated("free", id);
  state_->bitmap.clear(id);
  if (state_->claims.test(id)) state_->claims.clear(id);
  state_->bitmap_dirty = true;
}

void SsdPageFile::confirm_claims() {
  State& state = *state_;
  std::lock_guard lock(state.allocation_mutex);
  if (state.claims.in_use() == 0 && state.claims_after_confirm.empty()) return;
  state.claims.clear_all();
  for (const PageId id : state.claims_after_confirm)
    if (state.bitmap.test(id)) state.claims.set(id);
  state.claims_after_confirm.clear();
  state.bitmap_dirty = true;
}

void SsdPageFile::claim_at_next_confirm(PageId id) {
  if (id >= state_->layout.page_capacity) [[unlikely]]
    state_->fail_range("claim", id);
  std::lock_guard lock(state_->allocation_mutex);
  state_->claims_after_confirm.push_back(id);
}

std::vector<PageId> SsdPageFile::claimed_pages() const {
  std::vector<PageId> pages;
  std::lock_guard lock(state_->allocation_mutex);
  state_->claims.for_each_set([&](PageId id) { pages.push_back(id); });
  return pages;
}

bool SsdPageFile::is_allocated(PageId id) const {
  if (id >= state_->layout.page_capacity) return false;
  std::lock_guard lock(state_->allocation_mutex);
  return state_->bitmap.test(id);
}

void SsdPageFile::read(PageId id, std::byte* page) {
  State& state = *state_;
  if (page == nullptr) [[unlikely]]
    fail("read of SSD page {} into a null buffer", id);
  state.check_allocated("read", id);
  if (state.options.before_read) [[unlikely]]
    state.options.before_read(id);
  if (state.write_behind != nullptr && state.write_behind->copy_if_queued(id, page)) {
    count(state.counters.ssd_reads_queued);
    return;
  }
  std::byte* target = is_direct_io_aligned(page) ? page : scratch_page();
  state.file.read_exact(state.layout.page_offset(id), target, kPageSize);
  wait_ns(state.options.read_latency_ns);
  count(state.counters.ssd_pages_read);
  PageHeader header;
  std::memcpy(&header, target, sizeof(header));
  if (header.checksum != page_checksum(target) || header.page_id != id) [[unlikely]]
    state.fail_verification(id, target, page);
  if (target != page) std::memcpy(page, target, kPageSize);
}

void SsdPageFile::write(PageId id, const std::byte* page) {
  State& state = *state_;
  if (page == nullptr) [[unlikely]]
    fail("write of SSD page {} from a null buffer", id);
  state.check_allocated("write", id);
  if (state.write_behind != nullptr) state.write_behind->wait_until_written(id);
  std::byte* stamped = scratch_page();
  State::stamp(id, page, stamped);
  state.write_stamped(id, stamped);
  count(state.counters.ssd_pages_written);
}

void SsdPageFile::write_behind(PageId id, const std::byte* page) {
  State& state = *state_;
  if (state.write_behind == nullptr) return write(id, page);
  if (page == nullptr) [[unlikely]]
    fail("write of SSD page {} from a null buffer", id);
  state.check_allocated("write", id);
  const bool waited =
      state.write_behind->push(id, [&](std::byte* stamped) { State::stamp(id, page, stamped); });
  count(state.counters.ssd_pages_written);
  if (waited) count(state.counters.ssd_write_behind_waits);
}

void SsdPageFile::sync() {
  // A new generation only when the bitmap or the metadata changed; it makes the data pages
  // durable before its superblock, so a superblock never vouches for pages still in flight.
  State& state = *state_;
  if (state.write_behind != nullptr) state.write_behind->drain();
  count(state.counters.ssd_syncs);
  bool metadata_changed =
      std::memcmp(state.superblock.metadata, state.persisted_superblock.metadata,
                  sizeof(state.superblock.metadata)) != 0;
  bool bitmap_changed;
  {
    std::lock_guard lock(state.allocation_mutex);
    bitmap_changed = state.bitmap_dirty;
  }
  if (metadata_changed || bitmap_changed)
    state.persist_generation(state.persisted_superblock.generation + 1);
  else
    state.file.sync_data();
}

std::span<std::byte> SsdPageFile::metadata() { return state_->superblock.metadata; }
std::span<const std::byte> SsdPageFile::metadata() const { return state_->superblock.metadata; }

}  // namespace tristore
