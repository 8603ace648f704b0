#pragma once
// Thrown when a page read from SSD fails verification: a torn or corrupt write (bad checksum)
// or a misdirected one (the page carries another page's id). Recovery above decides what to do;
// the bytes are never handed out as data.
#include <cstdint>
#include <string>

#include "common/error.hpp"
#include "common/types.hpp"

namespace tristore {

class ChecksumMismatch : public Error {
 public:
  enum class Kind { kBadChecksum, kWrongPageId };

  ChecksumMismatch(const std::string& message, PageId page_id, Kind kind)
      : Error(message), page_id_(page_id), kind_(kind) {}

  PageId page_id() const { return page_id_; }
  Kind kind() const { return kind_; }

 private:
  PageId page_id_;
  Kind kind_;
};

}  // namespace tristore
