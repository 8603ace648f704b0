#pragma once
// Small databases with committed rows, where the regions of their files lie, and what reading
// them back gives: the intact rows, a one-line Error, or something wrong (a missing, changed or
// extra row). Shared by the page-corruption regression tests and the corruption sweep.
#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/splitmix64.hpp"
#include "engine/buffered_database.hpp"
#include "engine/database.hpp"
#include "engine/log_header.hpp"
#include "engine/table.hpp"
#include "nvm/nvm_layout.hpp"
#include "ssd/ssd_layout.hpp"
#include "ssd/superblock.hpp"
#include "tests/test_support.hpp"
#include "tiers/frame_pool.hpp"

namespace tristore::corruption_test {

inline constexpr const char* kTable = "rows";

// 64 bytes, every one derived from the key and the row's version.
struct Row {
  std::uint64_t key;
  std::uint64_t version;
  std::array<std::uint64_t, 6> payload;
  bool operator==(const Row&) const = default;
};

inline Row row_for(std::uint64_t key, std::uint64_t version) {
  Row row{key, version, {}};
  std::uint64_t state = key * 1000003 + version;
  for (std::uint64_t& word : row.payload) word = splitmix64_next(state);
  return row;
}

inline Config config_for(Architecture architecture, const testing_support::DatabaseFiles& files,
                         bool create) {
  Config config;
  config.architecture = architecture;
  config.nvm_path = files.nvm;
  config.ssd_path = files.ssd;
  config.nvm_bytes = 8 * kMiB;
  config.ssd_bytes = 8 * kMiB;
  // A small pool: most pages live in NVM or on SSD, where they can be damaged.
  config.dram_bytes = 16 * FramePool::kSlabBytes;
  config.open_mode = create ? OpenMode::kCreateReplacing : OpenMode::kOpenExisting;
  return config;
}

// `rows` rows inserted, every third of the first half updated to version 1 after a checkpoint
// (pages changed since it, and pages not), committed; then closed, or dropped as by a crash
// (restart must redo from the log). after_checkpoint runs right after the checkpoint.
inline void build(const Config& config, std::uint64_t rows, bool crash,
                  const std::function<void()>& after_checkpoint = {}) {
  auto db = Database::open(config);
  auto table = db->create_table<std::uint64_t, Row>(kTable);
  for (std::uint64_t k = 0; k < rows; ++k) table.insert(k, row_for(k, 0));
  db->checkpoint();
  if (after_checkpoint) after_checkpoint();
  for (std::uint64_t k = 0; k < rows / 2; k += 3) table.update(k, row_for(k, 1));
  if (crash) db->simulate_crash_on_close();
}

// What build(rows) left at `key`; keys from `rows` on were inserted later at version 0.
inline Row expected_row(std::uint64_t key, std::uint64_t built_rows) {
  return row_for(key, key < built_rows / 2 && key % 3 == 0 ? 1 : 0);
}

enum class Outcome { kIntact, kError, kWrong };
struct ReadBack {
  Outcome outcome;
  std::string detail;  // the Error's message, or what was wrong
};

// Opens the database and reads every row by key and by a full scan: rows [0, rows), of which
// build made the first built_rows (0: all).
inline ReadBack read_back(const Config& config, std::uint64_t rows, std::uint64_t built_rows = 0) {
  if (built_rows == 0) built_rows = rows;
  try {
    auto db = Database::open(config);
    db->simulate_crash_on_close();  // a damaged database is only read
    auto table = db->open_table<std::uint64_t, Row>(kTable);
    for (std::uint64_t k = 0; k < rows; ++k) {
      Row row;
      if (!table.get(k, row)) return {Outcome::kWrong, "row " + std::to_string(k) + " missing"};
      if (!(row == expected_row(k, built_rows)))
        return {Outcome::kWrong, "row " + std::to_string(k) + " has other bytes"};
    }
    std::uint64_t next = 0;
    std::string wrong;
    table.scan(0, rows + 10, [&](const std::uint64_t& key, const Row& row) {
      if (key != next || !(row == expected_row(key, built_rows))) {
        wrong = "scan: key " + std::to_string(key) + " where " + std::to_string(next) + " belongs";
        return false;
      }
      ++next;
      return true;
    });
    if (!wrong.empty()) return {Outcome::kWrong, wrong};
    if (next != rows) return {Outcome::kWrong, "scan saw " + std::to_string(next) + " rows"};
    return {Outcome::kIntact, ""};
  } catch (const Error& error) {
    const std::string message = error.what();
    if (message.empty() || message.find('\n') != std::string::npos)
      return {Outcome::kWrong, "not a one-line Error: " + message};
    return {Outcome::kError, message};
  }
}

// Raw file access for damaging the files.
inline std::vector<std::byte> read_bytes(const std::string& path, std::uint64_t offset,
                                         std::size_t length) {
  std::vector<std::byte> bytes(length);
  std::ifstream file(path, std::ios::binary);
  file.seekg(static_cast<std::streamoff>(offset));
  file.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(length));
  return bytes;
}
inline void write_bytes(const std::string& path, std::uint64_t offset, const void* bytes,
                        std::size_t length) {
  const int fd = ::open(path.c_str(), O_WRONLY);
  if (fd < 0) throw std::runtime_error("open " + path);
  const ssize_t written = ::pwrite(fd, bytes, length, static_cast<off_t>(offset));
  ::close(fd);
  if (written != static_cast<ssize_t>(length)) throw std::runtime_error("pwrite " + path);
}
inline void flip_byte(const std::string& path, std::uint64_t offset) {
  std::byte byte = read_bytes(path, offset, 1)[0] ^ std::byte{0x5a};
  write_bytes(path, offset, &byte, 1);
}
inline void zero_line(const std::string& path, std::uint64_t offset) {
  const std::array<std::byte, 64> zeros{};
  write_bytes(path, offset / 64 * 64, zeros.data(), zeros.size());
}
inline void zero_range(const std::string& path, std::uint64_t offset, std::size_t length) {
  const std::vector<std::byte> zeros(length);
  write_bytes(path, offset, zeros.data(), zeros.size());
}

// Where things lie in a closed NVM file (nvm/nvm_layout.hpp).
struct NvmFileMap {
  NvmLayout layout{};
  std::vector<SlotId> occupied;  // slots whose current header names a page
  std::vector<PageId> page_of;   // per occupied slot
  LogHeader log{};               // the current log header copy

  std::uint64_t slot_offset(SlotId slot) const {
    return layout.slots_offset + std::uint64_t{slot} * kPageSize;
  }
  std::uint64_t header_line_offset(SlotId slot) const {
    return layout.headers_offset + std::uint64_t{slot} * sizeof(NvmSlotHeaderLine);
  }
  std::uint64_t log_record_offset(Lsn lsn) const {
    return layout.log_offset + kLogRecordAreaOffset + lsn % log.capacity;
  }
};

inline NvmFileMap map_nvm_file(const std::string& path) {
  NvmFileMap map;
  NvmSuperblock superblock;
  std::memcpy(&superblock, read_bytes(path, 0, sizeof(superblock)).data(), sizeof(superblock));
  map.layout = NvmLayout::compute(superblock.slot_count, superblock.log_bytes);
  const std::vector<std::byte> lines = read_bytes(
      path, map.layout.headers_offset, superblock.slot_count * sizeof(NvmSlotHeaderLine));
  for (SlotId slot = 0; slot < superblock.slot_count; ++slot) {
    NvmSlotHeaderLine line;
    std::memcpy(&line, lines.data() + slot * sizeof(line), sizeof(line));
    if (std::optional<NvmSlotHeader> header = line.current(slot); header && !header->is_free()) {
      map.occupied.push_back(slot);
      map.page_of.push_back(header->page_id);
    }
  }
  const std::vector<std::byte> copies =
      read_bytes(path, map.layout.log_offset, kLogHeaderCopies * sizeof(LogHeader));
  for (std::uint64_t copy = 0; copy < kLogHeaderCopies; ++copy) {
    LogHeader header;
    std::memcpy(&header, copies.data() + copy * sizeof(header), sizeof(header));
    if (header.valid() && (!map.log.valid() || header.generation > map.log.generation))
      map.log = header;
  }
  return map;
}

// Where things lie in a closed SSD file (ssd/ssd_layout.hpp).
struct SsdFileMap {
  SsdLayout layout{};
  unsigned newest_copy = 0;  // of the superblock and bitmap
  std::vector<PageId> allocated;
};

inline SsdFileMap map_ssd_file(const std::string& path) {
  SsdFileMap map;
  Superblock copies[2];
  bool valid[2];
  const std::vector<std::byte> first = read_bytes(path, 0, 2 * sizeof(Superblock));
  for (unsigned copy = 0; copy < 2; ++copy)
    valid[copy] = decode_superblock({first.data() + copy * sizeof(Superblock), sizeof(Superblock)},
                                    copies[copy]) == SuperblockState::kValid;
  map.newest_copy = valid[1] && (!valid[0] || copies[1].generation > copies[0].generation) ? 1 : 0;
  const Superblock& newest = copies[map.newest_copy];
  map.layout = newest.layout();
  const std::vector<std::byte> bitmap =
      read_bytes(path, map.layout.bitmap_offset(newest.copy()), map.layout.bitmap_bytes());
  for (PageId id = 0; id < map.layout.page_capacity; ++id)
    if ((std::to_integer<unsigned>(bitmap[id / 8]) >> (id % 8)) & 1u) map.allocated.push_back(id);
  return map;
}

}  // namespace tristore::corruption_test
