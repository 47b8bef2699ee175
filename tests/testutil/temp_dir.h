#pragma once

// Scratch directories for tests. A TempDir lives under $TMPDIR (default /tmp) and is removed with
// its contents when the object dies, unless GROVE_KEEP_TEST_DIRS is set (then its path is printed
// so a failing run's data can be inspected).

#include <string>

namespace grove::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A whole file's bytes ("" when it cannot be read), and writing them back (replacing the file).
std::string ReadFileBytes(const std::string& path);
void WriteFileBytes(const std::string& path, const std::string& bytes);

}  // namespace grove::testing
