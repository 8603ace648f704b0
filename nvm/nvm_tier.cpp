#include "nvm/nvm_tier.hpp"

#include <cassert>
#include <cstring>
#include <limits>

#include "common/error.hpp"
#include "common/fixed_name.hpp"
#include "common/random_id.hpp"
#include "nvm/nvm_page_checksum.hpp"

namespace tristore {

NvmTier::NvmTier(std::unique_ptr<NvmDevice> device, const NvmLayout& layout,
                 std::uint64_t database_id, std::function<void(SlotId)> before_page_read)
    : device_(std::move(device)),
      layout_(layout),
      database_id_(database_id),
      header_lines_(reinterpret_cast<NvmSlotHeaderLine*>(device_->base() + layout.headers_offset)),
      slots_(device_->base() + layout.slots_offset),
      slots_end_(slots_ + layout.slot_count * kPageSize),
      before_page_read_(std::move(before_page_read)) {}

std::unique_ptr<NvmTier> NvmTier::create(const NvmTierOptions& options) {
  // 1. Fit the layout into the requested size before creating anything.
  if (options.architecture.size() > kNvmArchitectureNameBytes)
    fail("architecture name '{}' is longer than {} bytes", options.architecture,
         kNvmArchitectureNameBytes);
  const std::uint64_t log_bytes = align_up(options.log_bytes, kNvmAlignment);
  const std::uint64_t file_bytes = options.device.size_bytes;
  const std::uint64_t slot_count = NvmLayout::max_slots(file_bytes, log_bytes);
  if (slot_count == 0)
    fail("NVM size of {} bytes is too small: superblock, {} log bytes and one 16 KiB slot need {}",
         file_bytes, log_bytes, NvmLayout::compute(1, log_bytes).end);
  if (slot_count > std::numeric_limits<SlotId>::max())
    fail("NVM size of {} bytes holds more slots than a 32-bit slot id can name", file_bytes);
  const NvmLayout layout = NvmLayout::compute(slot_count, log_bytes);

  // 2. Map a fresh file.
  NvmDeviceOptions device_options = options.device;
  device_options.create = true;
  auto device = std::make_unique<NvmDevice>(device_options);

  // 3. Mark every slot free, persisted before the superblock makes the file valid.
  auto* lines = reinterpret_cast<NvmSlotHeaderLine*>(device->base() + layout.headers_offset);
  for (std::uint64_t id = 0; id < slot_count; ++id)
    lines[id] = NvmSlotHeaderLine::free_slot(static_cast<SlotId>(id));
  device->persist(lines, slot_count * sizeof(NvmSlotHeaderLine));

  // 4. Write the superblock last: a crash while formatting leaves no valid file behind.
  const std::uint64_t database_id =
      options.database_id != 0 ? options.database_id : random_nonzero_id();
  NvmSuperblock superblock{};
  superblock.magic = kNvmMagic;
  superblock.format_version = kNvmFormatVersion;
  superblock.page_size = kPageSize;
  superblock.slot_count = slot_count;
  superblock.log_bytes = log_bytes;
  superblock.database_id = database_id;
  superblock.file_bytes = device->size();
  store_fixed_name(superblock.architecture, options.architecture);
  superblock.checksum = superblock.compute_checksum();
  std::memcpy(device->base(), &superblock, sizeof(superblock));
  device->persist(device->base(), sizeof(superblock));

  auto tier = std::unique_ptr<NvmTier>(
      new NvmTier(std::move(device), layout, database_id, options.before_page_read));
  tier->load_headers();
  return tier;
}

std::unique_ptr<NvmTier> NvmTier::open(const NvmTierOptions& options) {
  // 1. Map the existing file.
  NvmDeviceOptions device_options = options.device;
  device_options.create = false;
  auto device = std::make_unique<NvmDevice>(device_options);
  const std::string& path = device->path();

  // 2. Is it ours, intact, and of a format we read?
  NvmSuperblock superblock{};
  if (device->size() < sizeof(superblock)) fail("{} is not a tristore NVM file", path);
  std::memcpy(&superblock, device->base(), sizeof(superblock));
  if (superblock.magic != kNvmMagic) fail("{} is not a tristore NVM file", path);
  if (superblock.checksum != superblock.compute_checksum())
    fail("{}: corrupt superblock (checksum mismatch)", path);
  if (superblock.format_version != kNvmFormatVersion)
    fail("{}: NVM format version {} is not supported (expected {})", path,
         superblock.format_version, kNvmFormatVersion);
  if (superblock.page_size != kPageSize)
    fail("{}: page size {} does not match this build's {}", path, superblock.page_size, kPageSize);

  // 3. Does it belong to the database the caller opens, and to its architecture?
  if (const std::string_view stored = fixed_name(superblock.architecture);
      !options.architecture.empty() && stored != options.architecture)
    fail("{} holds a {} database, not {}", path, stored.empty() ? "nameless" : stored,
         options.architecture);
  if (options.database_id != 0 && superblock.database_id != options.database_id)
    fail("{} belongs to database {}, not {}", path, superblock.database_id, options.database_id);

  // 4. Is it whole?
  if (device->size() < superblock.file_bytes)
    fail("{} is truncated: {} bytes, its superblock says {}", path, device->size(),
         superblock.file_bytes);
  if (device->size() != superblock.file_bytes)
    fail("{} is {} bytes, its superblock says {}", path, device->size(), superblock.file_bytes);
  const NvmLayout layout = NvmLayout::compute(superblock.slot_count, superblock.log_bytes);
  if (superblock.slot_count == 0 || superblock.slot_count > std::numeric_limits<SlotId>::max() ||
      superblock.log_bytes % kNvmAlignment != 0 || superblock.log_bytes > superblock.file_bytes ||
      layout.end > superblock.file_bytes)
    fail("{}: corrupt superblock (slot count {} and log size {} do not fit {} bytes)", path,
         superblock.slot_count, superblock.log_bytes, superblock.file_bytes);

  // 5. Rebuild the header mirror and the free list from the persisted headers.
  auto tier = std::unique_ptr<NvmTier>(
      new NvmTier(std::move(device), layout, superblock.database_id, options.before_page_read));
  tier->load_headers();
  return tier;
}

void NvmTier::load_headers() {
  // 1. Each slot's current header. A torn update leaves the previous version, so a slot with
  //    no intact version is corruption, not a crash: refuse it rather than lose its page.
  mirror_.resize(layout_.slot_count);
  unmirrored_.clear();
  for (std::uint64_t id = 0; id < layout_.slot_count; ++id) {
    const auto slot = static_cast<SlotId>(id);
    const NvmSlotHeaderLine::Reading reading = header_lines_[id].read(slot);
    if (!reading.current)
      fail("{}: corrupt header of NVM slot {} (neither of its two versions is intact)",
           device_->path(), id);
    mirror_[id] = *reading.current;
    // A line a crash (or a flipped byte) left with one intact version: mend_header_mirrors.
    if (!reading.mirrored) unmirrored_.push_back(slot);
  }
  // 2. The free list, lowest ids on top; what needs its content checked.
  free_slots_.clear();
  content_checked_.assign(layout_.slot_count, 0);
  changed_in_place_.assign(layout_.slot_count, 0);
  for (std::uint64_t id = layout_.slot_count; id-- > 0;) {
    if (mirror_[id].is_free()) free_slots_.push_back(static_cast<SlotId>(id));
    if (!mirror_[id].has_page_checksum()) content_checked_[id] = 1;
  }
}

void NvmTier::mend_header_mirrors() {
  for (const SlotId slot : unmirrored_) stage_mirror(slot);
  if (!unmirrored_.empty()) device_->fence();
  unmirrored_.clear();
}

bool NvmTier::header_valid(SlotId id) const {
  assert(id < layout_.slot_count);
  const std::optional<NvmSlotHeader> persisted = header_lines_[id].current(id);
  return persisted && *persisted == mirror_[id];
}

NvmSlotHeader NvmTier::stage_header(SlotId id, const NvmSlotHeader& content) {
  assert(id < layout_.slot_count);
  if (!unmirrored_.empty()) [[unlikely]]
    mend_header_mirrors();
  // The place of the newest version (the previous mirror): the other place holds the previous
  // update's fenced first write, which a crash tearing this one leaves intact.
  NvmSlotHeader next = content;
  next.sequence = mirror_[id].sequence + 2;
  NvmSlotHeaderVersion* target = &header_lines_[id].version_for(next.sequence);
  const NvmSlotHeaderVersion version = NvmSlotHeaderVersion::make(id, next);
  device_->write(reinterpret_cast<std::byte*>(target), &version, sizeof(version));
  device_->flush(target, sizeof(version));
  return next;
}

void NvmTier::stage_mirror(SlotId id) {
  NvmSlotHeader copy = mirror_[id];
  copy.sequence = mirror_[id].sequence + 1;
  NvmSlotHeaderVersion* target = &header_lines_[id].version_for(copy.sequence);
  const NvmSlotHeaderVersion version = NvmSlotHeaderVersion::make(id, copy);
  // The line the update itself wrote, still in the CPU cache: counted and charged once, there.
  std::memcpy(target, &version, sizeof(version));
  device_->flush(target, sizeof(version));
  mirror_[id].sequence = copy.sequence;
}

void NvmTier::write_header(SlotId id, PageId page_id, Lsn lsn, bool dirty_vs_ssd,
                           std::optional<std::uint32_t> page_checksum) {
  NvmSlotHeader content{page_id, lsn, dirty_vs_ssd ? NvmSlotHeader::kDirtyVsSsd : 0u, 0,
                        page_checksum.value_or(0)};
  if (page_checksum) content.flags |= NvmSlotHeader::kPageChecksumValid;
  if ((mirror_[id].flags & NvmSlotHeader::kCatalogBound) != 0 && mirror_[id].page_id == page_id) {
    content.flags |= mirror_[id].flags & NvmSlotHeader::kCatalogBound;
    content.lsn = mirror_[id].lsn;
  }
  write_content(id, content);
}

void NvmTier::free_with_catalog(SlotId id) {
  NvmSlotHeader content = mirror_[id];
  content.flags = (content.flags & ~NvmSlotHeader::kNewPage) | NvmSlotHeader::kFreedWithCatalog;
  content.lsn = claim_generation_.load(kRelaxed);
  persist_header(id, content);
}

void NvmTier::keep_page(SlotId id) {
  NvmSlotHeader content = mirror_[id];
  content.flags &= ~NvmSlotHeader::kFreedWithCatalog;
  persist_header(id, content);
}

void NvmTier::claim_for_new_page(SlotId id, PageId page_id) {
  write_content(
      id, NvmSlotHeader{page_id, claim_generation_.load(kRelaxed), NvmSlotHeader::kNewPage, 0, 0});
}

void NvmTier::write_content(SlotId id, const NvmSlotHeader& content) {
  persist_header(id, content);
  mark_content_checked(id);
  flag(changed_in_place_, id).store(0, kRelaxed);
}

void NvmTier::persist_header(SlotId id, const NvmSlotHeader& content) {
  const NvmSlotHeader next = stage_header(id, content);
  device_->fence();
  mirror_[id] = next;
  stage_mirror(id);
}

void NvmTier::free_slots(std::span<const SlotId> ids) {
  for (SlotId id : ids) mirror_[id].sequence = stage_header(id, NvmSlotHeader{}).sequence;
  device_->fence();
  for (SlotId id : ids) {
    mirror_[id] = NvmSlotHeader{kInvalidPageId, 0, 0, mirror_[id].sequence, 0};
    stage_mirror(id);
    mark_content_checked(id);
    flag(changed_in_place_, id).store(0, kRelaxed);
  }
  const std::lock_guard lock(free_slots_latch_);
  free_slots_.insert(free_slots_.end(), ids.begin(), ids.end());
}

void NvmTier::check_content(SlotId id) {
  assert(id < layout_.slot_count);
  if (mirror_[id].has_page_checksum()) device_->charge_read(slot(id), kPageSize);
  check_copy(id, slot(id));
}

void NvmTier::check_copy(SlotId id, const std::byte* page) {
  assert(id < layout_.slot_count);
  const NvmSlotHeader& header = mirror_[id];
  if (header.has_page_checksum()) {
    const std::uint32_t computed = nvm_page_checksum(page);
    if (computed != header.page_checksum)
      fail(
          "{}: page {} in NVM slot {} is corrupt (checksum {:#010x}, its slot header says "
          "{:#010x})",
          device_->path(), header.page_id, id, computed, header.page_checksum);
  }
  mark_content_checked(id);
}

void NvmTier::seal_pages() {
  std::vector<SlotId> sealed;
  for (std::uint64_t id = 0; id < layout_.slot_count; ++id) {
    const NvmSlotHeader& header = mirror_[id];
    if (header.is_free() || (header.has_page_checksum() &&
                             flag(changed_in_place_, static_cast<SlotId>(id)).load(kRelaxed) == 0))
      continue;
    const auto slot_id = static_cast<SlotId>(id);
    device_->charge_read(slot(slot_id), kPageSize);
    NvmSlotHeader content = header;
    content.page_checksum = nvm_page_checksum(slot(slot_id));
    content.flags |= NvmSlotHeader::kPageChecksumValid;
    content.sequence = stage_header(slot_id, content).sequence;
    sealed.push_back(slot_id);
    mirror_[id] = content;  // the fence below comes before anything relies on it
  }
  if (sealed.empty()) return;
  device_->fence();
  for (const SlotId id : sealed) {
    stage_mirror(id);
    flag(changed_in_place_, id).store(0, kRelaxed);
  }
}

}  // namespace tristore
