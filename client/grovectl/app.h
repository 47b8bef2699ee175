#pragma once

// grovectl's command line (CLI11): global connection options, one subcommand per action.
// RunGrovectl is main() with the streams passed in, so that tests can drive it.

#include <iosfwd>

namespace grove::grovectl {

int RunGrovectl(int argc, const char* const* argv, std::istream& in, std::ostream& out,
                std::ostream& err);

}  // namespace grove::grovectl
