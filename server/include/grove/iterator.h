#pragma once

// Iterator over a key range, forward or reverse (ScanOptions).
//
// Consistency: an iterator sees every key that was present for the whole time it ran and never a
// key twice; keys written while it runs may or may not appear. It is not a point-in-time snapshot.
//
// Errors (a checksum failure, an IO error) make Valid() false and status() non-OK.
//
// Thread safety: one thread at a time per iterator. Destroy it before its Db.

#include <cstdint>

#include "grove/slice.h"
#include "grove/status.h"

namespace grove {

class Iterator {
 public:
  virtual ~Iterator() = default;

  // Positioned on an entry. False at the end or after an error.
  virtual bool Valid() const = 0;
  // Moves to the next key in the iterator's direction. REQUIRES: Valid().
  virtual void Next() = 0;
  // REQUIRES: Valid(). The slices stay valid until the next call to Next() or destruction.
  virtual Slice key() const = 0;
  virtual Slice value() const = 0;
  // REQUIRES: Valid(). Unix ms from which the entry reads as absent; 0: never (and for
  // keys-only iterators, which do not read the entry's metadata).
  virtual uint64_t expires_ms() const { return 0; }
  // REQUIRES: Valid(). The entry's version (WriteResult::version of the write that set it); 0
  // for keys-only iterators and values written before versions existed.
  virtual uint64_t version() const { return 0; }
  virtual Status status() const = 0;
};

}  // namespace grove
