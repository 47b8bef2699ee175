// Built instead of rocksdb_target.cc when librocksdb-dev is not installed.

#include "bench/target.h"

namespace grove::bench {

StatusOr<std::unique_ptr<Target>> OpenRocksDbTarget(const TargetUri&, const TargetOptions&) {
  return Status::Unavailable(
      "this grove-bench was built without RocksDB (install librocksdb-dev "
      "and rebuild)");
}

}  // namespace grove::bench
