// Runs a libFuzzer target's entry point over files, without libFuzzer: the regression test of
// every committed corpus and crash input (SQLite's fuzzcheck idea). Arguments are files or
// directories (read recursively; a missing directory is skipped, since git keeps no empty
// regressions/<target>/). A directory named after `--corpus` must hold at least one input: an
// empty or missing seed corpus would make the test pass while testing nothing. A finding traps,
// which fails the test with the file named just before.
//
//   fuzz_<target>_replay [--corpus DIR]... [FILE_OR_DIR]...

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

// Appends the files under `dir` (README.md files aside); returns how many it found.
size_t CollectDirectory(const fs::path& dir, std::vector<fs::path>* inputs) {
  size_t n = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file() && e.path().filename() != "README.md") {
      inputs->push_back(e.path());
      ++n;
    }
  }
  return n;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--corpus") == 0) {
      if (++i == argc) {
        std::fprintf(stderr, "%s: --corpus needs a directory\n", argv[0]);
        return 2;
      }
      const fs::path corpus(argv[i]);
      if (!fs::is_directory(corpus) || CollectDirectory(corpus, &inputs) == 0) {
        std::fprintf(stderr,
                     "%s: the seed corpus %s is empty or missing, so this test would replay "
                     "nothing; regenerate it with scripts/fuzz.sh --seeds and commit it\n",
                     argv[0], corpus.c_str());
        return 1;
      }
      continue;
    }
    const fs::path p(argv[i]);
    if (fs::is_directory(p)) {
      CollectDirectory(p, &inputs);
    } else if (fs::exists(p)) {
      inputs.push_back(p);
    }
  }
  std::sort(inputs.begin(), inputs.end());
  for (const fs::path& p : inputs) {
    std::fprintf(stderr, "replaying %s\n", p.c_str());
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    const std::string bytes = s.str();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu inputs\n", inputs.size());
  return 0;
}
