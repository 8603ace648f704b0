// DirectFile: whole-block O_DIRECT I/O that refuses misaligned and short transfers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include "common/error.hpp"
#include "ssd/aligned_page_buffer.hpp"
#include "ssd/direct_file.hpp"
#include "tests/test_support.hpp"

using namespace tristore;
using testing_support::error_of;
using testing_support::TempDir;

namespace {}  // namespace

TEST(SsdDirectFile, AlignedBlocksRoundTrip) {
  TempDir dir;
  DirectFile file((dir.path / "f").string(), DirectFile::Mode::kCreate);
  file.reserve(4 * 4096);
  EXPECT_EQ(file.size(), 4u * 4096);
  AlignedPageBuffer out(8192), in(8192);
  for (std::size_t i = 0; i < out.size(); ++i) out.data()[i] = static_cast<std::byte>(i * 31);
  file.write_exact(4096, out.data(), out.size());
  file.sync_data();
  file.read_exact(4096, in.data(), in.size());
  EXPECT_EQ(std::memcmp(in.data(), out.data(), out.size()), 0);
}

TEST(SsdDirectFile, MisalignedOffsetLengthOrBufferIsRefused) {
  TempDir dir;
  DirectFile file((dir.path / "f").string(), DirectFile::Mode::kCreate);
  file.reserve(4 * 4096);
  AlignedPageBuffer buffer(8192);
  std::string message = error_of([&] { file.read_exact(512, buffer.data(), 4096); });
  EXPECT_EQ(message.rfind("misaligned read on SSD file", 0), 0u) << message;
  EXPECT_NE(message.find("offset 512"), std::string::npos) << message;
  EXPECT_NE(error_of([&] { file.read_exact(0, buffer.data(), 100); }).find("misaligned read"),
            std::string::npos);
  EXPECT_NE(error_of([&] { file.read_exact(0, buffer.data() + 8, 4096); }).find("misaligned"),
            std::string::npos);
  EXPECT_NE(error_of([&] { file.write_exact(4095, buffer.data(), 4096); }).find("misaligned write"),
            std::string::npos);
}

TEST(SsdDirectFile, ReadPastEndIsAShortReadError) {
  TempDir dir;
  DirectFile file((dir.path / "f").string(), DirectFile::Mode::kCreate);
  file.reserve(2 * 4096);
  AlignedPageBuffer buffer(8192);
  std::string message = error_of([&] { file.read_exact(4096, buffer.data(), 8192); });
  EXPECT_NE(message.find("short read"), std::string::npos) << message;
  EXPECT_NE(message.find("got 4096 of 8192 bytes"), std::string::npos) << message;
}

TEST(SsdDirectFile, OpenOfMissingFileSaysSo) {
  TempDir dir;
  std::string path = (dir.path / "missing").string();
  EXPECT_EQ(error_of([&] { DirectFile(path, DirectFile::Mode::kOpen); }),
            "SSD file " + path + " does not exist");
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(SsdDirectFile, CreateTruncatesAndMoveKeepsTheDescriptor) {
  TempDir dir;
  std::string path = (dir.path / "f").string();
  {
    DirectFile file(path, DirectFile::Mode::kCreate);
    file.reserve(8 * 4096);
  }
  DirectFile created(path, DirectFile::Mode::kCreate);
  EXPECT_EQ(created.size(), 0u);
  DirectFile moved(std::move(created));
  moved.reserve(4096);
  EXPECT_EQ(moved.size(), 4096u);
  EXPECT_NE(error_of([&] { DirectFile(path, DirectFile::Mode::kOpen); }).find("in use"),
            std::string::npos);
}
